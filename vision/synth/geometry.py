"""3D geometry of the synthetic table: pinhole camera, dice as cubes, painter's order.

World frame: the table is the plane z = 0, z points up, units are millimetres.
Camera frame (OpenCV): x right, y down, z forward; pixel centres at integer coordinates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .model import Camera, Die

# Face index f = value - 1.  Opposite faces sum to 7: 1/6 = +z/-z, 2/5 = +x/-x, 3/4 = +y/-y.
# Seen from outside, 1-2-3 run counter-clockwise around their common corner (western dice).
FACE_NORMALS = np.array(
    [[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, -1, 0], [-1, 0, 0], [0, 0, -1]], dtype=np.float64)
# Texture axes of each face: u = texture column direction, v = row direction, u x v = -normal,
# so a face texture reads un-mirrored when the face is seen from outside.
FACE_U = np.array(
    [[1, 0, 0], [0, 1, 0], [-1, 0, 0], [1, 0, 0], [0, -1, 0], [1, 0, 0]], dtype=np.float64)
FACE_V = np.array(
    [[0, -1, 0], [0, 0, -1], [0, 0, -1], [0, 0, -1], [0, 0, -1], [0, 1, 0]], dtype=np.float64)

_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                  dtype=np.float64)
_OCTANT_DIRS = np.array(
    [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1],
     [2, 1, 1], [1, 2, 1], [1, 1, 2]], dtype=np.float64)
_OCTANT_DIRS /= np.linalg.norm(_OCTANT_DIRS, axis=1, keepdims=True)
# Unit-cube sample points of a cube with rounded corners: (vertex, direction) pairs.
_ROUND_BASE = np.repeat(_SIGNS, len(_OCTANT_DIRS), axis=0)
_ROUND_DIRS = (_SIGNS[:, None, :] * _OCTANT_DIRS[None, :, :]).reshape(-1, 3)


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rot_axis(axis: np.ndarray, a: float) -> np.ndarray:
    """Rodrigues: rotation by angle a (radians) about unit axis."""
    x, y, z = axis / np.linalg.norm(axis)
    c, s, t = math.cos(a), math.sin(a), 1 - math.cos(a)
    return np.array([[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
                     [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
                     [t * x * z - s * y, t * y * z + s * x, t * z * z + c]])


_ALIGN = [np.eye(3), rot_y(-math.pi / 2), rot_x(math.pi / 2), rot_x(-math.pi / 2),
          rot_y(math.pi / 2), rot_x(math.pi)]


def align_up(face: int) -> np.ndarray:
    """Rotation that turns face index `face` (value - 1) to point up (+z)."""
    return _ALIGN[face]


# ---------------------------------------------------------------------------
# Camera
# ---------------------------------------------------------------------------


class CameraModel:
    """Pinhole camera built from a `Camera` description."""

    def __init__(self, cam: Camera) -> None:
        self.cam = cam
        self.width, self.height = cam.width, cam.height
        t, yaw, roll = (math.radians(cam.tilt_deg), math.radians(cam.yaw_deg),
                        math.radians(cam.roll_deg))
        x = np.array([1.0, 0.0, 0.0])
        z = np.array([0.0, math.sin(t), -math.cos(t)])
        y = np.cross(z, x)
        rz = rot_z(yaw)  # yaw turns the whole camera about the table normal
        x, y, z = rz @ x, rz @ y, rz @ z
        cr, sr = math.cos(roll), math.sin(roll)
        x, y = cr * x + sr * y, -sr * x + cr * y
        self.R = np.stack([x, y, z])  # world -> camera rows
        target = np.array([cam.target[0], cam.target[1], 0.0])
        self.C = target - cam.distance_mm * z
        self.f = cam.focal_px
        self.cx = (cam.width - 1) / 2.0
        self.cy = (cam.height - 1) / 2.0
        self.K = np.array([[self.f, 0, self.cx], [0, self.f, self.cy], [0, 0, 1.0]])

    def to_cam(self, pts: np.ndarray) -> np.ndarray:
        return (np.asarray(pts, dtype=np.float64) - self.C) @ self.R.T

    def project(self, pts: np.ndarray) -> np.ndarray:
        """World points (N,3) -> pixel coordinates (N,2) (no lens distortion)."""
        pc = self.to_cam(pts)
        z = np.maximum(pc[:, 2], 1e-3)
        return np.stack([self.f * pc[:, 0] / z + self.cx, self.f * pc[:, 1] / z + self.cy], 1)

    def depth(self, pts: np.ndarray) -> np.ndarray:
        return self.to_cam(pts)[:, 2]

    def plane_homography(self, z: float = 0.0) -> np.ndarray:
        """3x3 homography from table-plane coordinates (x, y) at height z to pixels."""
        rc = self.R @ (np.array([0.0, 0.0, z]) - self.C)
        m = np.column_stack([self.R[:, 0], self.R[:, 1], rc])
        return self.K @ m

    def unproject_to_plane(self, uv: np.ndarray, z: float = 0.0) -> np.ndarray:
        """Pixels (N,2) -> points (N,3) on the horizontal plane at height z."""
        uv = np.atleast_2d(np.asarray(uv, dtype=np.float64))
        d_cam = np.stack([(uv[:, 0] - self.cx) / self.f, (uv[:, 1] - self.cy) / self.f,
                          np.ones(len(uv))], 1)
        d = d_cam @ self.R  # camera -> world directions
        dz = np.where(np.abs(d[:, 2]) < 1e-9, -1e-9, d[:, 2])
        s = (z - self.C[2]) / dz
        s = np.where(s > 0, s, 1e6)  # above the horizon: far away
        return self.C[None, :] + s[:, None] * d

    def project_polygon(self, pts: np.ndarray, near: float = 5.0) -> np.ndarray:
        """Project a planar world polygon, clipping it against the near plane first."""
        pc = self.to_cam(pts)
        out: list[np.ndarray] = []
        n = len(pc)
        for i in range(n):
            a, b = pc[i], pc[(i + 1) % n]
            ina, inb = a[2] >= near, b[2] >= near
            if ina:
                out.append(a)
            if ina != inb:
                t = (near - a[2]) / (b[2] - a[2])
                out.append(a + t * (b - a))
        if not out:
            return np.zeros((0, 2))
        q = np.array(out)
        return np.stack([self.f * q[:, 0] / q[:, 2] + self.cx,
                         self.f * q[:, 1] / q[:, 2] + self.cy], 1)


# ---------------------------------------------------------------------------
# Dice
# ---------------------------------------------------------------------------


def die_value_index(die: Die) -> int:
    """Face index (value - 1) of the face the die was set up with pointing up."""
    from vision.synth.model import ART_SETS

    if isinstance(die.value, str):
        return ART_SETS[die.style.art].index(die.value)
    return int(die.value) - 1


def die_rotation(die: Die) -> np.ndarray:
    r = rot_z(math.radians(die.yaw_deg)) @ align_up(die_value_index(die))
    if die.tilt_deg:
        d = math.radians(die.tilt_dir_deg)
        axis = np.array([-math.sin(d), math.cos(d), 0.0])  # top tips toward tilt_dir
        r = rot_axis(axis, math.radians(die.tilt_deg)) @ r
    return r


@dataclass
class DiePose:
    """A die placed in the world."""

    R: np.ndarray  # local -> world rotation
    center: np.ndarray  # world centre (3,)
    size: float
    radius: float  # corner rounding radius (mm)

    @property
    def normals(self) -> np.ndarray:
        return FACE_NORMALS @ self.R.T

    def vertices(self) -> np.ndarray:
        return self.center + (_SIGNS * (self.size / 2)) @ self.R.T

    def rounded_points(self) -> np.ndarray:
        """Points on the rounded-corner cube surface (enough for a silhouette hull)."""
        h = self.size / 2 - self.radius
        local = _ROUND_BASE * h + _ROUND_DIRS * self.radius
        return self.center + local @ self.R.T

    def top_face(self) -> int:
        return int(np.argmax(self.normals[:, 2]))

    def face_center(self, f: int) -> np.ndarray:
        return self.center + self.normals[f] * (self.size / 2)

    def face_corners(self, f: int) -> np.ndarray:
        """World corners of face f in texture order (0,0), (T,0), (T,T), (0,T)."""
        u = self.R @ FACE_U[f]
        v = self.R @ FACE_V[f]
        c = self.face_center(f)
        h = self.size / 2
        return np.stack([c - h * u - h * v, c + h * u - h * v, c + h * u + h * v,
                         c - h * u + h * v])

    def face_axes(self, f: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.R @ FACE_NORMALS[f], self.R @ FACE_U[f], self.R @ FACE_V[f]


def die_pose(die: Die) -> DiePose:
    r = die_rotation(die)
    radius = die.style.corner * die.size_mm
    local = _SIGNS * (die.size_mm / 2)
    low = float(np.min(local @ r.T, axis=0)[2])
    # rounded corners lift a tilted die a little less than the sharp cube would
    center = np.array([die.x, die.y, die.z_mm - low])
    return DiePose(R=r, center=center, size=die.size_mm, radius=radius)


def shadow_points(pts: np.ndarray, light_dir: np.ndarray, z: float = 0.0) -> np.ndarray:
    """Project world points along the light direction onto the plane at height z."""
    lz = max(light_dir[2], 0.05)
    t = (pts[:, 2] - z) / lz
    return pts - t[:, None] * light_dir[None, :]


# ---------------------------------------------------------------------------
# 2D / 3D convex overlap (placement) and painter's order
# ---------------------------------------------------------------------------


def square_footprint(x: float, y: float, size: float, yaw_deg: float,
                     grow: float = 0.0) -> np.ndarray:
    h = size / 2 + grow
    a = math.radians(yaw_deg)
    c, s = math.cos(a), math.sin(a)
    corners = np.array([[-h, -h], [h, -h], [h, h], [-h, h]])
    return corners @ np.array([[c, s], [-s, c]]) + np.array([x, y])


def rect_footprint(x: float, y: float, w: float, h: float, yaw_deg: float) -> np.ndarray:
    a = math.radians(yaw_deg)
    c, s = math.cos(a), math.sin(a)
    corners = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    return corners @ np.array([[c, s], [-s, c]]) + np.array([x, y])


def convex_overlap_2d(a: np.ndarray, b: np.ndarray, eps: float = 1e-6) -> bool:
    """Separating-axis test of two convex polygons (vertices in order)."""
    for poly in (a, b):
        n = len(poly)
        for i in range(n):
            e = poly[(i + 1) % n] - poly[i]
            axis = np.array([-e[1], e[0]])
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() + eps or pb.max() <= pa.min() + eps:
                return False
    return True


def boxes_overlap_3d(a: DiePose, b: DiePose, eps: float = 1e-6) -> bool:
    """Separating-axis test of two cubes (15 axes, vectorised)."""
    d = float(np.linalg.norm(a.center - b.center))
    if d >= (a.size + b.size) * 0.8661:  # bounding spheres apart
        return False
    if d < (a.size + b.size) * 0.5 - 1e-3:
        return True  # inscribed spheres overlap
    ea, eb = a.R.T, b.R.T  # rows: box axes
    # the nine cross products of a's axes with b's, as np.cross computes them (without
    # its overhead, which made this test a tenth of a scene's sampling)
    (a0, a1, a2), (b0, b1, b2) = ea.T[:, :, None], eb.T[:, None, :]
    cr = np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1).reshape(9, 3)
    axes = np.concatenate([ea, eb, cr])
    n = np.linalg.norm(axes, axis=1)
    axes = axes[n > 1e-9] / n[n > 1e-9, None]
    pa = a.vertices() @ axes.T  # (8, k)
    pb = b.vertices() @ axes.T
    sep = (pa.max(0) <= pb.min(0) + eps) | (pb.max(0) <= pa.min(0) + eps)
    return not bool(sep.any())


def _drawn_before(a: DiePose, b: DiePose, cam_pos: np.ndarray) -> bool | None:
    """True if a must be painted before b, False if after, None if no face plane separates."""
    tol = 0.02 * min(a.size, b.size)
    for p, q, sign in ((a, b, True), (b, a, False)):
        verts = q.vertices()
        for f in range(6):
            n = p.normals[f]
            c = p.face_center(f)
            if np.all((verts - c) @ n >= -tol):
                cam_outside = float((cam_pos - c) @ n) > 0
                # q lies outside p's face plane: if the camera is outside too, q is in front
                return sign if cam_outside else not sign
    return None


def painter_order(poses: Sequence[DiePose], cam: CameraModel) -> list[int]:
    """Indices of dice far to near, using separating face planes, depth as tie-break."""
    n = len(poses)
    depth = [float(cam.depth(p.center[None])[0]) for p in poses]
    before: list[set[int]] = [set() for _ in range(n)]  # before[j] = dice to paint before j
    for i in range(n):
        for j in range(i + 1, n):
            if np.linalg.norm(poses[i].center - poses[j].center) > 1.8 * (
                    poses[i].size + poses[j].size):
                continue
            r = _drawn_before(poses[i], poses[j], cam.C)
            if r is None:
                r = depth[i] > depth[j]
            if r:
                before[j].add(i)
            else:
                before[i].add(j)
    order: list[int] = []
    left = set(range(n))
    while left:
        ready = [i for i in left if not (before[i] & left)]
        if not ready:  # cycle: fall back to depth
            ready = list(left)
        i = max(ready, key=lambda k: depth[k])
        order.append(i)
        left.remove(i)
    return order


#: A cable is drawn as straight pieces this long (mm).
CABLE_STEP_MM = 6.0


def cable_path(x: float, y: float, yaw_deg: float, length_mm: float, seed: int) -> np.ndarray:
    """The centre line (N x 2, mm) of a cable lying on the table from (x, y), first heading
    `yaw_deg`: it bends slowly, as a cable left on a table does (the bend drifts, from
    `seed`)."""
    rng = np.random.default_rng([seed, 3])
    steps = max(2, round(length_mm / CABLE_STEP_MM))
    bend = np.cumsum(rng.normal(0.0, 0.05, steps)) + rng.normal(0.0, 0.08)
    heading = math.radians(yaw_deg) + np.cumsum(np.clip(bend, -0.35, 0.35))
    moves = CABLE_STEP_MM * np.column_stack([np.cos(heading), np.sin(heading)])
    return np.vstack([[x, y], np.array([x, y]) + np.cumsum(moves, axis=0)])
