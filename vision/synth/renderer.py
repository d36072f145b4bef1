"""Render a `Scene` to a BGR photo plus exact `SceneLabel`s (numpy + OpenCV only)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.reading import DieLabel, SceneLabel

from .geometry import (
    CameraModel,
    DiePose,
    cable_path,
    die_pose,
    painter_order,
    rot_z,
    shadow_points,
)
from .model import (
    ART_SETS,
    Camera,
    Die,
    DieStyle,
    Lighting,
    Occluder,
    Prop,
    Scene,
    Surface,
    Table,
    Tray,
)
from .textures import (
    bevel_profile,
    face_texture,
    render_surface,
    rounded_cover,
    surface_tile,
    texture_size,
    tile_noise,
)

SHIFT = 4  # sub-pixel bits for cv2 polygon drawing
ID_OCCLUDER = 1  # id buffer: 0 background, 1 hand/cup/tray rim, 8*(i+1)+f die i face f
BODY = 6  # id offset of a die's rounded body (between the faces)


def light_vector(lighting: Lighting) -> np.ndarray:
    az, el = math.radians(lighting.azimuth_deg), math.radians(lighting.elevation_deg)
    return np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])


@dataclass
class _Ctx:
    cam: CameraModel
    light: np.ndarray
    ambient: float
    gloss: float
    img: np.ndarray  # float32 HxWx3
    ids: np.ndarray  # uint16 HxW

    @property
    def shape(self) -> tuple[int, int]:
        return self.img.shape[0], self.img.shape[1]

    def irradiance(self, n: np.ndarray) -> float:
        return self.ambient + (1 - self.ambient) * max(0.0, float(n @ self.light))


# ---------------------------------------------------------------------------
# Drawing helpers
# ---------------------------------------------------------------------------


def _mul3(img: np.ndarray, m: np.ndarray) -> None:
    """img (HxWxC float32: 3 channels, or several pictures' side by side) *= m (HxW) in
    place, without slow numpy broadcasting."""
    cv2.multiply(img, cv2.merge([m] * img.shape[2]), dst=img)


def _blend3(img: np.ndarray, other: np.ndarray, a: np.ndarray) -> None:
    """img = img * (1 - a) + other * a in place (a: HxW coverage)."""
    a3 = cv2.merge([a, a, a])
    cv2.add(img, cv2.multiply(cv2.subtract(other, img), a3), dst=img)


def _roi(pts: np.ndarray, w: int, h: int, pad: int = 2) -> tuple[int, int, int, int] | None:
    if len(pts) == 0:
        return None
    x0 = max(0, int(math.floor(pts[:, 0].min())) - pad)
    y0 = max(0, int(math.floor(pts[:, 1].min())) - pad)
    x1 = min(w, int(math.ceil(pts[:, 0].max())) + pad + 1)
    y1 = min(h, int(math.ceil(pts[:, 1].max())) + pad + 1)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1, y1


def _poly_mask(polys: list[np.ndarray], roi: tuple[int, int, int, int]) -> np.ndarray:
    x0, y0, x1, y1 = roi
    m = np.zeros((y1 - y0, x1 - x0), np.uint8)
    for p in polys:  # one at a time: fillPoly would XOR overlapping polygons
        if len(p) >= 3:
            q = np.round((p - [x0, y0]) * (1 << SHIFT)).astype(np.int32)
            cv2.fillPoly(m, [q], 255, cv2.LINE_AA, SHIFT)
    return m.astype(np.float32) * (1 / 255)


def _fill_ids(ids: np.ndarray, pts: np.ndarray, value: int) -> None:
    if len(pts) >= 3:
        cv2.fillPoly(ids, [np.round(pts * (1 << SHIFT)).astype(np.int32)], int(value),
                     cv2.LINE_8, SHIFT)


def _fill_poly(ctx: _Ctx, pts: np.ndarray, color: np.ndarray, id_value: int | None = None,
               alpha: float = 1.0) -> None:
    h, w = ctx.shape
    roi = _roi(pts, w, h)
    if roi is None:
        return
    x0, y0, x1, y1 = roi
    m = _poly_mask([pts], roi)[..., None] * alpha
    sub = ctx.img[y0:y1, x0:x1]
    sub *= 1 - m
    sub += m * np.asarray(color, np.float32)
    if id_value is not None:
        _fill_ids(ctx.ids, pts, id_value)


def _quad_homography(size_w: int, size_h: int, quad: np.ndarray,
                     origin: tuple[int, int]) -> np.ndarray:
    src = np.array([[-0.5, -0.5], [size_w - 0.5, -0.5], [size_w - 0.5, size_h - 0.5],
                    [-0.5, size_h - 0.5]], np.float32)
    dst = (quad - np.array(origin, np.float64)).astype(np.float32)
    return cv2.getPerspectiveTransform(src, dst)


def _blit(ctx: _Ctx, premul: np.ndarray, quad: np.ndarray,
          roi: tuple[int, int, int, int]) -> np.ndarray:
    """Warp a premultiplied BGRA texture onto quad; returns the warped alpha of the ROI."""
    x0, y0, x1, y1 = roi
    warped = _warp(premul, quad, roi)
    a = warped[..., 3]
    sub = ctx.img[y0:y1, x0:x1]
    inv = 1 - a
    cv2.multiply(sub, cv2.merge([inv, inv, inv]), dst=sub)
    cv2.add(sub, warped[..., :3], dst=sub)
    return a


def _draw_convex_faces(ctx: _Ctx, faces: list[tuple[np.ndarray, np.ndarray]],
                       centroid: np.ndarray, id_value: int | None = None,
                       spec: float = 0.0) -> None:
    """Draw the camera-facing faces of a convex solid: faces = [(3D polygon, BGR albedo)]."""
    cam_pos = ctx.cam.C
    for poly, color in faces:
        fc = poly.mean(axis=0)
        n = np.cross(poly[1] - poly[0], poly[2] - poly[0])
        nn = np.linalg.norm(n)
        if nn < 1e-9:
            continue
        n /= nn
        if n @ (fc - centroid) < 0:
            n = -n
        if n @ (cam_pos - fc) <= 0:
            continue
        shade = ctx.irradiance(n)
        col = np.asarray(color, np.float32) * shade
        if spec > 0:
            v = cam_pos - fc
            hv = ctx.light + v / np.linalg.norm(v)
            col = col + spec * max(0.0, float(n @ hv / np.linalg.norm(hv))) ** 30
        _fill_poly(ctx, ctx.cam.project_polygon(poly), col, id_value)


def _box_faces(center: np.ndarray, rot: np.ndarray, half: np.ndarray) -> list[np.ndarray]:
    s = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], np.float64)
    faces = []
    for axis in range(3):
        a, b = [k for k in range(3) if k != axis]
        for sign in (-1, 1):
            local = np.zeros((4, 3))
            local[:, axis] = sign * half[axis]
            local[:, a] = s[:, 0] * half[a]
            local[:, b] = s[:, 1] * half[b]
            faces.append(center + local @ rot.T)
    return faces


def _prism(p0: np.ndarray, p1: np.ndarray, radius: float, sides: int,
           phase: float = 0.0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Polygon faces of a prism (or cylinder) from p0 to p1; also its two end rings."""
    axis = p1 - p0
    axis = axis / np.linalg.norm(axis)
    ref = np.array([0.0, 0.0, 1.0]) if abs(axis[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(axis, ref)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    ang = phase + np.arange(sides) * 2 * np.pi / sides
    ring = radius * (np.cos(ang)[:, None] * e1 + np.sin(ang)[:, None] * e2)
    r0, r1 = p0 + ring, p1 + ring
    faces = [np.stack([r0[i], r0[(i + 1) % sides], r1[(i + 1) % sides], r1[i]])
             for i in range(sides)]
    return faces, r0, r1


# ---------------------------------------------------------------------------
# Shadows
# ---------------------------------------------------------------------------


Shadow = tuple[np.ndarray, tuple[int, int, int, int]]  # coverage in a ROI, ROI


def _shadow_layer(ctx: _Ctx, hulls: list[tuple[np.ndarray, float, float]]) -> Shadow | None:
    """Soft shadow coverage of world point clouds: (points, blur_px, strength) -> ROI layer."""
    h, w = ctx.shape
    parts = []
    for pts, blur, strength in hulls:
        sp = shadow_points(pts, ctx.light)
        px = ctx.cam.project(sp)
        if len(px) < 3:
            continue
        hull = cv2.convexHull(px.astype(np.float32))[:, 0, :]
        pad = int(3 * blur) + 3
        roi = _roi(hull, w, h, pad)
        if roi is not None:
            parts.append((hull, blur, strength, roi))
    if not parts:
        return None
    rx0 = min(p[3][0] for p in parts)
    ry0 = min(p[3][1] for p in parts)
    rx1 = max(p[3][2] for p in parts)
    ry1 = max(p[3][3] for p in parts)
    layer = np.zeros((ry1 - ry0, rx1 - rx0), np.float32)
    for hull, blur, strength, roi in parts:
        m = _poly_mask([hull], roi)
        if blur > 0.3:
            m = cv2.GaussianBlur(m, (0, 0), blur)
        x0, y0, x1, y1 = roi
        sub = layer[y0 - ry0:y1 - ry0, x0 - rx0:x1 - rx0]
        np.maximum(sub, m * strength, out=sub)
    return layer, (rx0, ry0, rx1, ry1)


def _apply_shadow(ctx: _Ctx, shadow: Shadow | None) -> None:
    if shadow is None:
        return
    layer, (x0, y0, x1, y1) = shadow
    lit = ctx.ambient + (1 - ctx.ambient) * max(float(ctx.light[2]), 0.0)
    k = 1 - ctx.ambient / max(lit, 1e-3)  # how much of the light a shadow takes away
    sub = ctx.img[y0:y1, x0:x1]
    _mul3(sub, (1 - k * layer).astype(np.float32))


# ---------------------------------------------------------------------------
# Static background: table, tray, props (cached)
# ---------------------------------------------------------------------------


@dataclass
class Background:
    image: np.ndarray  # float32 HxWx3, read-only
    front: tuple[np.ndarray, np.ndarray] | None  # premultiplied BGR + alpha of front tray rim


def _table_image(ctx: _Ctx, table: Table, lighting: Lighting) -> np.ndarray:
    cam = ctx.cam
    h, w = ctx.shape
    img = render_surface(table.surface, cam.plane_homography(0.0), w, h)
    lit = ctx.ambient + (1 - ctx.ambient) * max(float(ctx.light[2]), 0.0)
    img *= lit
    if table.surface.gloss > 0:
        gx, gy = np.meshgrid(np.linspace(0, w - 1, 33), np.linspace(0, h - 1, 25))
        p = cam.unproject_to_plane(np.stack([gx.ravel(), gy.ravel()], 1))
        v = cam.C - p
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        refl = np.stack([-v[:, 0], -v[:, 1], v[:, 2]], 1)
        s = np.clip(refl @ ctx.light, 0, 1) ** 40 * table.surface.gloss
        s = cv2.resize(s.reshape(gx.shape).astype(np.float32), (w, h))
        cv2.add(img, cv2.merge([s * 0.8] * 3), dst=img)
    if table.edge_deg is not None:
        a = math.radians(table.edge_deg)
        n = np.array([math.cos(a), math.sin(a)])
        t = np.array([-n[1], n[0]])
        big = 20000.0
        e = n * table.edge_mm
        rect = np.array([[*(e + t * big), 0], [*(e - t * big), 0],
                         [*(e - t * big - n * big), 0], [*(e + t * big - n * big), 0]])
        poly = cam.project_polygon(rect)
        inside = (_poly_mask([poly], (0, 0, w, h)) if len(poly) >= 3
                  else np.zeros((h, w), np.float32))
        rng = np.random.default_rng(table.surface.seed + 99)
        room = cv2.resize(tile_noise(rng, 16, 4, 4, 12), (w, h))
        room_img = cv2.merge([(1 + 0.25 * room) * c for c in table.beyond]).astype(np.float32)
        _blend3(img, room_img, 1 - inside)
    return img


def _tray_boxes(tray: Tray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(center, rotation, half size, inward normal) of the four rim walls."""
    r = rot_z(math.radians(tray.yaw_deg))
    c = np.array([tray.x, tray.y, 0.0])
    rw, rh = tray.rim_width_mm, tray.rim_height_mm
    w, d = tray.width_mm, tray.depth_mm
    out = []
    for sx in (-1, 1):
        ctr = np.array([sx * (w / 2 + rw / 2), 0, rh / 2])
        out.append((c + r @ ctr, r, np.array([rw / 2, d / 2 + rw, rh / 2]),
                    r @ np.array([-sx, 0.0, 0.0])))
    for sy in (-1, 1):
        ctr = np.array([0, sy * (d / 2 + rw / 2), rh / 2])
        out.append((c + r @ ctr, r, np.array([w / 2, rw / 2, rh / 2]),
                    r @ np.array([0.0, -sy, 0.0])))
    return out


@functools.lru_cache(maxsize=16)
def _surface_color(s: Surface) -> np.ndarray:
    return surface_tile(s).reshape(-1, 3).mean(axis=0)


def _draw_prop(ctx: _Ctx, p: Prop) -> None:
    r = rot_z(math.radians(p.yaw_deg))
    c = np.array([p.x, p.y, 0.0])
    col = np.array(p.color, np.float32)
    if p.kind == "coin":
        rad = p.length_mm / 2
        faces, _, top = _prism(c, c + [0, 0, p.height_mm], rad, 28)
        _draw_convex_faces(ctx, [(f, col * 0.8) for f in faces] + [(top, col)],
                           c + [0, 0, p.height_mm / 2], spec=0.4)
        inner = c + [0, 0, p.height_mm] + (top - c - [0, 0, p.height_mm]) * 0.82
        _fill_poly(ctx, ctx.cam.project(inner), col * ctx.irradiance(np.array([0, 0, 1.0])) *
                   0.8, alpha=0.6)
    elif p.kind == "pencil":
        rad = p.width_mm / 2
        axis = r @ np.array([1.0, 0, 0])
        z = np.array([0, 0, rad * math.cos(math.pi / 6)])
        a = c - axis * p.length_mm / 2 + z
        tip0 = c + axis * (p.length_mm / 2 - 18) + z
        parts = []
        fl, _, _ = _prism(a - axis * 14, a - axis * 6, rad * 0.95, 12)
        parts.append(([(f, np.array((0.6, 0.55, 0.9), np.float32)) for f in fl],
                      a - axis * 10))
        fl, _, _ = _prism(a - axis * 6, a, rad * 1.0, 12)
        parts.append(([(f, np.array((0.7, 0.7, 0.7), np.float32)) for f in fl], a - axis * 3))
        fl, _, ring = _prism(a, tip0, rad, 6, math.pi / 6)
        parts.append(([(f, col) for f in fl], (a + tip0) / 2))
        wood = np.array((0.55, 0.75, 0.9), np.float32)
        tip = tip0 + axis * 18
        cone = [np.stack([ring[i], ring[(i + 1) % 6], tip]) for i in range(6)]
        parts.append(([(f, wood) for f in cone], tip0 + axis * 6))
        order = sorted(parts, key=lambda q: -float(ctx.cam.depth(q[1][None])[0]))
        for faces, ctr in order:
            _draw_convex_faces(ctx, faces, ctr)
        lead = tip0 + axis * 13
        cone2 = [np.stack([lead + (ring[i] - tip0) * 0.3, lead + (ring[(i + 1) % 6] - tip0) * 0.3,
                           tip]) for i in range(6)]
        _draw_convex_faces(ctx, [(f, np.array((0.2, 0.2, 0.22), np.float32)) for f in cone2],
                           lead + axis * 2)
    elif p.kind == "cable":
        _draw_cable(ctx, p)
    elif p.kind in ("block", "mat", "label"):
        half = np.array([p.length_mm / 2, p.width_mm / 2, p.height_mm / 2])
        ctr = c + [0, 0, p.height_mm / 2]
        faces = _box_faces(ctr, r, half)
        side = np.array(p.color if p.kind == "label" else p.color2, np.float32)
        _draw_convex_faces(ctx, [(f, side) for f in faces[:4]], ctr)
        top = faces[5]  # +z face: corners (-,-), (+,-), (+,+), (-,+)
        quad = ctx.cam.project(top)
        h, w = ctx.shape
        roi = _roi(quad, w, h)
        if roi is None:
            return
        tex = (_block_texture(p) if p.kind == "block" else
               _label_texture(p) if p.kind == "label" else _mat_texture(p))
        shade = ctx.irradiance(np.array([0, 0, 1.0]))
        premul = np.dstack([tex * shade, np.ones(tex.shape[:2], np.float32)])
        _blit(ctx, premul, quad, roi)


def _draw_cable(ctx: _Ctx, p: Prop) -> None:
    """A round cable along its path, piece by piece from the farthest, with its ferrite
    bead (a thicker cylinder a few pieces long) where it has one."""
    path = cable_path(p.x, p.y, p.yaw_deg, p.length_mm, p.seed)
    rad = p.width_mm / 2
    points = np.column_stack([path, np.full(len(path), rad)])
    last = len(points) - 2
    # (from, to, radius, colour, which end rings show: the cable's own ends, the bead's)
    pieces = [(points[i], points[i + 1], rad, np.array(p.color, np.float32),
               (i == 0, i == last)) for i in range(len(points) - 1)]
    if p.height_mm > 0 and len(points) > 6:
        at = int(np.random.default_rng([p.seed, 4]).integers(1, len(points) - 5))
        bead = p.height_mm / 2
        lift = np.array([0.0, 0.0, bead - rad])
        pieces.append((points[at] + lift, points[at + 4] + lift, bead,
                       np.array(p.color2, np.float32), (True, True)))
    pieces.sort(key=lambda q: -float(ctx.cam.depth(((q[0] + q[1]) / 2)[None])[0]))
    for a, b, radius, colour, ends in pieces:
        faces, ring0, ring1 = _prism(a, b, radius, 8)
        faces += [ring for ring, shown in zip((ring0, ring1), ends, strict=True) if shown]
        _draw_convex_faces(ctx, [(f, colour) for f in faces], (a + b) / 2, spec=0.3)


@functools.lru_cache(maxsize=8)
def _label_texture(p: Prop) -> np.ndarray:
    """A paper tag: a barcode of random bars over most of its length, a line of digits
    under it."""
    tw = 200
    th = max(24, round(tw * p.width_mm / p.length_mm))
    img = np.empty((th, tw, 3), np.float32)
    img[:] = p.color
    ink = tuple(float(c) for c in p.color2)
    rng = np.random.default_rng([p.seed, 5])
    x, end = int(0.1 * tw), int(0.9 * tw)
    top, bottom = int(0.12 * th), int(0.72 * th)
    while x < end:
        bar = int(rng.integers(1, 5))
        if rng.random() < 0.55:
            img[top:bottom, x:x + bar] = ink
        x += bar + int(rng.integers(1, 4))
    digit = max(2, th // 8)
    for x in range(int(0.12 * tw), int(0.88 * tw), 2 * digit):
        cv2.rectangle(img, (x, bottom + digit), (x + digit, bottom + 2 * digit), ink, -1)
    return img


@functools.lru_cache(maxsize=8)
def _block_texture(p: Prop) -> np.ndarray:
    """A Kniffel score sheet: white paper, header, grid of boxes."""
    tw, th = 160, max(40, round(160 * p.width_mm / p.length_mm))
    img = np.full((th, tw, 3), 0.93, np.float32)
    ink = tuple(float(c) for c in p.color)
    cv2.rectangle(img, (4, 4), (tw - 5, th // 7), ink, -1)
    rows, cols = 18, 7
    for i in range(rows + 1):
        y = th // 7 + 4 + i * (th - th // 7 - 10) // rows
        cv2.line(img, (6, y), (tw - 7, y), ink, 1, cv2.LINE_AA)
    for j in range(cols + 1):
        x = 6 + j * (tw - 13) // cols if j else 6
        cv2.line(img, (x, th // 7 + 4), (x, th - 6), ink, 1, cv2.LINE_AA)
    rng = np.random.default_rng(p.seed)
    for _ in range(rng.integers(0, 20)):  # some handwritten scores
        x = int(rng.integers(40, tw - 10))
        y = int(rng.integers(th // 7 + 8, th - 8))
        cv2.line(img, (x, y), (x + 4, y - 3), (0.5, 0.2, 0.1), 1, cv2.LINE_AA)
    return img


@functools.lru_cache(maxsize=8)
def _mat_texture(p: Prop) -> np.ndarray:
    tile = surface_tile(Surface(kind="felt", color=p.color, seed=p.seed, contrast=0.8))
    return np.ascontiguousarray(tile[:96, :96])


@functools.lru_cache(maxsize=4)
def background(camera: Camera, table: Table, tray: Tray | None, props: tuple[Prop, ...],
               lighting: Lighting) -> Background:
    """The static part of a scene (depends on camera, table, tray, props and light only)."""
    cam = CameraModel(camera)
    h, w = camera.height, camera.width
    ctx = _Ctx(cam, light_vector(lighting), lighting.ambient, lighting.gloss,
               np.zeros((h, w, 3), np.float32), np.zeros((h, w), np.uint16))
    ctx.img = _table_image(ctx, table, lighting)
    flat = [p for p in props if p.kind == "mat"]
    for p in flat:
        _draw_prop(ctx, p)
    boxes = _tray_boxes(tray) if tray is not None else []
    if tray is not None:
        r = rot_z(math.radians(tray.yaw_deg))
        hw, hd = tray.width_mm / 2, tray.depth_mm / 2
        floor = np.array([tray.x, tray.y, 0]) + np.array(
            [[-hw, -hd, 0], [hw, -hd, 0], [hw, hd, 0], [-hw, hd, 0]]) @ r.T
        poly = cam.project_polygon(floor)
        if len(poly) >= 3:
            m = _poly_mask([poly], (0, 0, w, h))
            lit = ctx.ambient + (1 - ctx.ambient) * max(float(ctx.light[2]), 0.0)
            fimg = render_surface(tray.floor, cam.plane_homography(0.0), w, h) * np.float32(lit)
            _blend3(ctx.img, fimg, m)
    # static shadows: tray rim and props
    casters: list[tuple[np.ndarray, float, float]] = []
    for ctr, rot, half, _ in boxes:
        pts = np.concatenate([f for f in _box_faces(ctr, rot, half)])
        casters.append((pts, 3.0, 0.9))
    for p in props:
        if p.kind in ("coin", "pencil", "block"):
            hh = max(p.height_mm, p.width_mm if p.kind == "pencil" else 0)
            ext = np.array([p.length_mm / 2, p.width_mm / 2 if p.kind != "coin" else
                            p.length_mm / 2])
            rr = rot_z(math.radians(p.yaw_deg))
            corners = np.array([[sx * ext[0], sy * ext[1], z] for sx in (-1, 1)
                                for sy in (-1, 1) for z in (0, hh)])
            casters.append((np.array([p.x, p.y, 0]) + corners @ rr.T, 2.0, 0.8))
    _apply_shadow(ctx, _shadow_layer(ctx, casters))
    for p in props:
        if p.kind != "mat":
            _draw_prop(ctx, p)
    front_faces = []
    back = []
    for ctr, rot, half, n_in in boxes:
        inner_pt = ctr + n_in * (tray.rim_width_mm / 2 if tray else 0)  # on the inner wall
        (front_faces if float((cam.C - inner_pt) @ n_in) < 0 else back).append((ctr, rot, half))
    assert tray is not None or not boxes
    rim_col = _surface_color(tray.rim) if tray is not None else np.zeros(3, np.float32)
    back.sort(key=lambda b: -float(cam.depth(b[0][None])[0]))
    for ctr, rot, half in back:
        _draw_convex_faces(ctx, [(f, rim_col) for f in _box_faces(ctr, rot, half)], ctr)
    front = None
    if front_faces:
        layer = _Ctx(cam, ctx.light, ctx.ambient, ctx.gloss, np.zeros_like(ctx.img),
                     np.zeros((h, w), np.uint16))
        for ctr, rot, half in front_faces:
            _draw_convex_faces(layer, [(f, rim_col) for f in _box_faces(ctr, rot, half)], ctr,
                               id_value=ID_OCCLUDER)
        alpha = (layer.ids > 0).astype(np.float32)
        alpha = cv2.GaussianBlur(alpha, (3, 3), 0.5)
        front = (layer.img, alpha)
    img = np.ascontiguousarray(ctx.img, dtype=np.float32)
    img.setflags(write=False)
    return Background(img, front)


# ---------------------------------------------------------------------------
# Dice
# ---------------------------------------------------------------------------


@dataclass
class _DieDraw:
    hull: np.ndarray  # projected rounded silhouette (N,2), unclipped
    top: int
    top_quad: np.ndarray
    #: What tells the top face from each other face of the die: the drawn top face minus
    #: the same face painted as another (ROI x 5 x 3, linear light), and its ROI.
    marks: np.ndarray | None = None
    marks_roi: tuple[int, int, int, int] | None = None


def _contact_shadow(ctx: _Ctx, poses: list[DiePose], sizes_px: list[float]) -> None:
    h, w = ctx.shape
    for pose, spx in zip(poses, sizes_px, strict=True):
        if pose.center[2] > pose.size * 0.75:
            continue  # stacked: no contact with the table
        pts = pose.rounded_points()
        low = pts[pts[:, 2] < pose.center[2] - pose.size * 0.2]
        if len(low) < 3:
            continue
        foot = pose.center + (low - pose.center) * np.array([1.15, 1.15, 0.0])
        foot[:, 2] = 0.0
        foot[:, :2] = low[:, :2] + (low[:, :2] - pose.center[:2]) * 0.12
        px = ctx.cam.project(foot)
        hull = cv2.convexHull(px.astype(np.float32))[:, 0, :]
        blur = max(1.0, 0.1 * spx)
        roi = _roi(hull, w, h, int(3 * blur) + 2)
        if roi is None:
            continue
        m = cv2.GaussianBlur(_poly_mask([hull], roi), (0, 0), blur)
        x0, y0, x1, y1 = roi
        ctx.img[y0:y1, x0:x1] *= (1 - 0.45 * m)[..., None]


def _draw_die(ctx: _Ctx, index: int, die: Die, pose: DiePose) -> _DieDraw:
    cam = ctx.cam
    style = die.style
    h, w = ctx.shape
    hull = cv2.convexHull(cam.project(pose.rounded_points()).astype(np.float32))[:, 0, :]
    hull = hull.astype(np.float64)
    top = pose.top_face()
    top_quad = cam.project(pose.face_corners(top))
    out = _DieDraw(hull, top, top_quad)
    roi = _roi(hull, w, h)
    if roi is None:
        return out
    x0, y0, x1, y1 = roi
    size_px = math.sqrt(max(cv2.contourArea(hull.astype(np.float32)), 1.0))
    tex = texture_size(size_px)
    light = ctx.light
    base_id = 8 * (index + 1)
    normals = pose.normals
    visible = [f for f in range(6)
               if float(normals[f] @ (cam.C - pose.face_center(f))) > 1e-6]
    translucent = style.opacity < 0.999
    body = np.array(style.body, np.float32)
    # body between the faces (seen at the rounded corners and edges)
    shade = float(np.mean([ctx.irradiance(normals[f]) for f in visible])) if visible else \
        ctx.ambient
    body_col = body * shade * 0.78
    m = _poly_mask([hull], roi)[..., None]
    sub = ctx.img[y0:y1, x0:x1]
    if translucent:
        # the table seen through a coloured body, then the pips of the far faces
        tint = (body / max(float(body.max()), 0.05)) ** 1.6
        seen = cv2.GaussianBlur(sub, (0, 0), max(0.8, size_px / 25))  # refracted, blurred
        col = style.opacity * body_col + (1 - style.opacity) * seen * tint * 1.15
        sub *= 1 - m
        sub += m * col
        for f in range(6):
            if f in visible:
                continue
            cover_b = rounded_cover(tex, round(style.corner, 3))
            albedo, opacity = face_texture(style, f, tex)
            pipness = np.clip((opacity - style.opacity) / (1 - style.opacity), 0, 1)
            a_b = cover_b * pipness * 0.7
            rgb_b = albedo * tint * (ctx.ambient * 0.8)
            premul = np.dstack([rgb_b * a_b[..., None], a_b])
            _blit(ctx, premul, cam.project(pose.face_corners(f)), roi)
    else:
        sub *= 1 - m
        sub += m * body_col
    _fill_ids(ctx.ids, hull, base_id + BODY)
    # shading is smooth: compute it on a coarser grid than the texture
    sres = min(tex, 48)
    k, inv = bevel_profile(sres, round(style.corner, 3))
    cover = rounded_cover(tex, round(style.corner, 3))
    gloss = style.gloss * ctx.gloss
    for f in visible:
        n, u, v = pose.face_axes(f)
        nl, ul, vl = float(n @ light), float(u @ light), float(v @ light)
        diff = np.maximum((nl + k[None, :] * ul + k[:, None] * vl) * inv, 0)
        fc = pose.face_center(f)
        view = cam.C - fc
        hv = light + view / np.linalg.norm(view)
        hv /= np.linalg.norm(hv)
        nh, uh, vh = float(n @ hv), float(u @ hv), float(v @ hv)
        spec = np.maximum((nh + k[None, :] * uh + k[:, None] * vh) * inv, 0) ** style.shininess
        lum = ctx.ambient + (1 - ctx.ambient) * diff
        shading = np.dstack([lum, spec * gloss]).astype(np.float32)
        if sres != tex:
            shading = cv2.resize(shading, (tex, tex), interpolation=cv2.INTER_LINEAR)
        lum3 = cv2.merge([shading[..., 0]] * 3)
        rgb, alpha = _lit_face(style, f, tex, lum3, cover)
        spec_c = shading[..., 1] * cover
        premul = cv2.merge([rgb[..., 0] * alpha + spec_c, rgb[..., 1] * alpha + spec_c,
                            rgb[..., 2] * alpha + spec_c, alpha])
        quad = cam.project(pose.face_corners(f))
        under = ctx.img[y0:y1, x0:x1].copy() if f == top else None
        _blit(ctx, premul, quad, roi)
        _fill_ids(ctx.ids, quad, base_id + f)
        if under is not None:
            out.marks = _face_differences(style, top, tex, rgb, alpha, lum3, cover, quad,
                                          roi, under)
            out.marks_roi = roi
    return out


def _lit_face(style: DieStyle, face: int, tex: int, lum3: np.ndarray, cover: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Face `face` of a die painted in the light `lum3` (per texel): its colour and its
    alpha (`cover`: the rounded face's outline)."""
    albedo, opacity = face_texture(style, face, tex)
    rgb = cv2.multiply(albedo, lum3)
    if style.opacity < 0.999:  # translucent: scattered light makes the body glow a little
        rgb += albedo * (0.3 * (1 - opacity))[..., None]
    return rgb, cover * opacity


def _face_differences(style: DieStyle, top: int, tex: int, rgb: np.ndarray,
                      alpha: np.ndarray, lum3: np.ndarray, cover: np.ndarray,
                      quad: np.ndarray, roi: tuple[int, int, int, int],
                      under: np.ndarray) -> np.ndarray:
    """The drawn top face (`rgb`, `alpha`, over `under`: what lay there before) minus the
    same face painted as each other face, in the ROI (linear light): ROI x 5 x 3."""
    x0, y0, x1, y1 = roi
    marks = np.empty((y1 - y0, x1 - x0, 5, 3), np.float32)
    drawn = rgb * alpha[..., None]
    diff = np.empty((tex, tex, 4), np.float32)
    for k, other in enumerate(f for f in range(6) if f != top):
        rgb_other, alpha_other = _lit_face(style, other, tex, lum3, cover)
        np.subtract(drawn, rgb_other * alpha_other[..., None], out=diff[..., :3])
        np.subtract(alpha_other, alpha, out=diff[..., 3])
        warped = _warp(diff, quad, roi)
        # a translucent face lets another share of the table through
        marks[:, :, k] = warped[..., :3] + warped[..., 3:] * under
    return marks


def _warp(texture: np.ndarray, quad: np.ndarray, roi: tuple[int, int, int, int]) -> np.ndarray:
    """A texture warped onto `quad`, within the ROI (zero outside the quad)."""
    x0, y0, x1, y1 = roi
    th, tw = texture.shape[:2]
    return cv2.warpPerspective(texture, _quad_homography(tw, th, quad, (x0, y0)),
                               (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=0)


# ---------------------------------------------------------------------------
# Occluders: hand and cup
# ---------------------------------------------------------------------------


def _capsule(p0: np.ndarray, p1: np.ndarray, r0: float, r1: float | None = None,
             n: int = 12) -> np.ndarray:
    """Convex outline of a (tapered) capsule from p0 (radius r0) to p1 (radius r1)."""
    r1 = r0 if r1 is None else r1
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.stack([np.cos(t), np.sin(t)], 1)
    pts = np.concatenate([p0 + r0 * ring, p1 + r1 * ring]).astype(np.float32)
    return cv2.convexHull(pts)[:, 0, :].astype(np.float64)


def _hand_parts(o: Occluder) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """World polygons (N,3) of a flat-ish hand reaching in; (skin parts, sleeve parts)."""
    s = o.size_mm
    r = rot_z(math.radians(o.yaw_deg))[:2, :2]
    c = np.array([o.x, o.y])
    z = o.height_mm

    def world(p2: np.ndarray, zz: np.ndarray | float) -> np.ndarray:
        q = p2 @ r.T + c
        return np.column_stack([q, np.broadcast_to(zz, (len(q),))])

    t = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    palm = np.stack([0.52 * s * np.cos(t), 0.46 * s * np.sin(t)], 1)
    skin = [world(palm, z)]
    curl = 0.75 + 0.25 * (1 - abs(o.spread - 0.5) * 2)
    lengths = (0.5, 0.6, 0.57, 0.44)
    for i, ln in enumerate(lengths):
        yy = (i - 1.5) * 0.22 * s
        ang = math.radians((i - 1.5) * 12 * o.spread)
        base = np.array([-0.3 * s, yy])
        tip = base + ln * curl * s * np.array([-math.cos(ang), math.sin(ang)])
        skin.append(world(_capsule(base, tip, 0.105 * s, 0.085 * s), z - 4))
    side = 1 if o.spread >= 0.5 else -1
    tb = np.array([0.05 * s, side * 0.4 * s])
    tt = tb + 0.55 * s * np.array([-0.7, side * 0.75])
    skin.append(world(_capsule(tb, tt, 0.13 * s, 0.095 * s), z - 2))
    # forearm from the wrist out of the frame, rising toward the body
    wrist = np.array([[0.35 * s, -0.36 * s], [0.35 * s, 0.36 * s]])
    far = np.array([[5.0 * s, 0.48 * s], [5.0 * s, -0.48 * s]])
    arm2 = np.concatenate([wrist, far])
    arm_z = np.array([z, z, z + 1.8 * s, z + 1.8 * s])
    skin.append(world(arm2, arm_z))
    sleeve2 = np.array([[1.5 * s, -0.46 * s], [1.5 * s, 0.46 * s], [5.2 * s, 0.62 * s],
                        [5.2 * s, -0.62 * s]])
    sleeve = [world(sleeve2, np.array([z + 0.45 * s, z + 0.45 * s, z + 1.9 * s, z + 1.9 * s]))]
    return skin, sleeve


def _draw_hand(ctx: _Ctx, o: Occluder) -> None:
    h, w = ctx.shape
    skin, sleeve = _hand_parts(o)
    cam = ctx.cam
    # shadow on the table (and on dice: drawn before the hand, over everything)
    shadow_polys = [cam.project_polygon(shadow_points(p, ctx.light)) for p in skin + sleeve]
    shadow_polys = [p for p in shadow_polys if len(p) >= 3]
    blur = max(2.0, 0.004 * w * (1 + o.height_mm / 40))
    roi = _roi(np.concatenate(shadow_polys), w, h, int(3 * blur) + 2) if shadow_polys else None
    if roi is not None:
        sm = cv2.GaussianBlur(_poly_mask(shadow_polys, roi), (0, 0), blur)
        _apply_shadow(ctx, (sm * 0.85, roi))
    skin_px = [p for p in (cam.project_polygon(q) for q in skin) if len(p) >= 3]
    sleeve_px = [p for p in (cam.project_polygon(q) for q in sleeve) if len(p) >= 3]
    if not skin_px:
        return
    roi = _roi(np.concatenate(skin_px + sleeve_px), w, h)
    if roi is None:
        return
    x0, y0, x1, y1 = roi
    m_skin = _poly_mask(skin_px, roi)
    m_sleeve = _poly_mask(sleeve_px, roi)
    inside = (m_skin > 0.5).astype(np.uint8)
    # fake relief from the distance to the outline: rounded fingers, lit from the light side
    dist = cv2.distanceTransform(np.pad(inside, 1), cv2.DIST_L2,
                                 cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    palm_px = float(dist.max())
    rel = np.clip(dist / max(2.0, 0.35 * palm_px), 0, 1)
    height = np.sqrt(rel) * max(2.0, 0.35 * palm_px)
    height = cv2.GaussianBlur(height, (0, 0), max(1.0, palm_px / 30))
    gx = cv2.Sobel(height, cv2.CV_32F, 1, 0, ksize=3) / 8
    gy = cv2.Sobel(height, cv2.CV_32F, 0, 1, ksize=3) / 8
    lc = cam.R @ ctx.light  # light in camera coordinates: x right, y down, z forward
    ndl = (-gx * lc[0] - gy * lc[1] - lc[2]) / np.sqrt(gx * gx + gy * gy + 1)
    shade = ctx.ambient + (1 - ctx.ambient) * np.clip(ndl, 0, 1)
    rng = np.random.default_rng(int(abs(o.x * 7 + o.y * 13)) % 100000)
    tex = cv2.resize(tile_noise(rng, 16, 4), (x1 - x0, y1 - y0))
    shade = (shade * (1 + 0.05 * tex)).astype(np.float32)
    skin_img = cv2.merge([shade * c for c in o.color])
    # creases between fingers and around the palm
    crease = np.zeros_like(m_skin)
    for p in skin_px[1:]:
        q = np.round((p - [x0, y0]) * (1 << SHIFT)).astype(np.int32)
        cv2.polylines(crease, [q], True, 1.0, max(1, round(palm_px / 40)), cv2.LINE_AA, SHIFT)
    skin_img *= cv2.merge([1 - 0.25 * crease * inside] * 3)
    sub = ctx.img[y0:y1, x0:x1]
    _blend3(sub, skin_img, m_skin)
    up = ctx.irradiance(np.array([0.0, 0.0, 1.0]))
    sl = cv2.merge([(up * 0.85 * (1 + 0.1 * tex) * c).astype(np.float32) for c in o.color2])
    _blend3(sub, sl, m_sleeve)
    ctx.ids[y0:y1, x0:x1][(m_skin > 0.5) | (m_sleeve > 0.5)] = ID_OCCLUDER


def occluder_coverage(camera: Camera, o: Occluder) -> float:
    """Rough fraction of the frame an occluder covers (for placing hands and cups)."""
    cam = CameraModel(camera)
    w, h = camera.width, camera.height
    frame = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    if o.kind == "hand":
        skin, sleeve = _hand_parts(o)
        polys = [cam.project_polygon(p) for p in skin + sleeve]
    else:
        c = np.array([o.x, o.y, 0.0])
        _, r0, r1 = _prism(c, c + [0, 0, o.height_mm], o.size_mm / 2, 24)
        if cam.depth(r1).min() < 10:
            return 1.0
        polys = [cv2.convexHull(cam.project(np.concatenate([r0, r1])).astype(np.float32))[:, 0]]
    area = 0.0
    for p in polys:
        if len(p) < 3:
            continue
        hull = cv2.convexHull(np.asarray(p, np.float32))
        inter, _ = cv2.intersectConvexConvex(hull, frame)
        area += float(inter)
    return area / (w * h)


def _draw_cup(ctx: _Ctx, o: Occluder) -> None:
    rad = o.size_mm / 2
    c = np.array([o.x, o.y, 0.0])
    top_c = c + [0, 0, o.height_mm]
    faces, r0, r1 = _prism(c, top_c, rad, 40)
    pts = np.concatenate([r0, r1])
    spx = 0.004 * ctx.shape[1] * 3
    _apply_shadow(ctx, _shadow_layer(ctx, [(pts, spx, 0.95)]))
    col = np.array(o.color, np.float32)
    band = np.array(o.color2, np.float32)
    bfaces, _, _ = _prism(c + [0, 0, o.height_mm * 0.82], top_c, rad * 1.01, 40)
    _draw_convex_faces(ctx, [(f, col) for f in faces], c + [0, 0, o.height_mm / 2],
                       ID_OCCLUDER, spec=0.08)
    _draw_convex_faces(ctx, [(f, band) for f in bfaces], c + [0, 0, o.height_mm * 0.9],
                       ID_OCCLUDER)
    up = ctx.irradiance(np.array([0.0, 0.0, 1.0]))
    rim = ctx.cam.project(r1)
    _fill_poly(ctx, rim, band * up, ID_OCCLUDER)
    if o.open_top:
        inner = top_c + (r1 - top_c) * 0.88
        _fill_poly(ctx, ctx.cam.project(inner), col * 0.18)


# ---------------------------------------------------------------------------
# Photo effects
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _noise_bank() -> np.ndarray:
    return np.random.default_rng(12345).standard_normal((1280, 2048)).astype(np.float32)


def _noise_field(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    bank = _noise_bank()
    bh, bw = bank.shape
    if h > bh or w > bw:
        return rng.standard_normal((h, w), dtype=np.float32)
    y = int(rng.integers(0, bh - h + 1))
    x = int(rng.integers(0, bw - w + 1))
    n = bank[y:y + h, x:x + w]
    return n[::-1] if rng.random() < 0.5 else n


def _distortion_maps(cam: Camera) -> tuple[np.ndarray, np.ndarray, float]:
    w, h = cam.width, cam.height
    cx, cy, f = (w - 1) / 2, (h - 1) / 2, cam.focal_px
    rc2 = (cx * cx + cy * cy) / (f * f)
    zoom = 1 / (1 - cam.k1 * rc2) if cam.k1 < 0 else 1.0
    xs = (np.arange(w, dtype=np.float32) - cx) / f
    ys = (np.arange(h, dtype=np.float32) - cy) / f
    r2 = xs[None, :] ** 2 + ys[:, None] ** 2
    k = (1 - cam.k1 * r2) * zoom
    return (xs[None, :] * k * f + cx).astype(np.float32), (ys[:, None] * k * f + cy).astype(
        np.float32), zoom


def _distort_points(cam: Camera, pts: np.ndarray, zoom: float) -> np.ndarray:
    """Undistorted pixel -> distorted pixel (inverse of the remap)."""
    cx, cy, f = (cam.width - 1) / 2, (cam.height - 1) / 2, cam.focal_px
    p = (np.asarray(pts, np.float64) - [cx, cy]) / f
    ru = np.linalg.norm(p, axis=1)
    rd = ru.copy()
    for _ in range(20):
        rd = ru / (zoom * (1 - cam.k1 * rd * rd))
    scale = np.where(ru > 1e-12, rd / np.maximum(ru, 1e-12), 1 / zoom)
    return p * scale[:, None] * f + [cx, cy]


def _falloff(scene: Scene, h: int, w: int) -> np.ndarray | None:
    """The light gradient and vignette as one multiplier per pixel (None: flat)."""
    ph, li = scene.photo, scene.lighting
    if not (li.gradient or ph.vignette):
        return None
    sh, sw = max(2, h // 16), max(2, w // 16)
    ys, xs = np.mgrid[0:sh, 0:sw].astype(np.float32)
    xs = xs / (sw - 1) * 2 - 1
    ys = ys / (sh - 1) * 2 - 1
    mult = np.ones((sh, sw), np.float32)
    if li.gradient:
        a = math.radians(li.gradient_deg)
        mult *= 1 + li.gradient * (xs * math.cos(a) + ys * math.sin(a))
    if ph.vignette:
        mult *= 1 - ph.vignette * (xs ** 2 + ys ** 2) / 2
    return cv2.resize(mult, (w, h), interpolation=cv2.INTER_LINEAR)


def _optics(img: np.ndarray, scene: Scene, falloff: np.ndarray | None) -> np.ndarray:
    """The linear part of the camera: white balance, exposure and saturation, light
    falloff (`falloff`, the multiplier of this image's pixels), defocus, motion blur,
    sharpening. Linear, so it applies to a difference of two pictures as well; `img` may
    hold several pictures side by side as its channels (3 each)."""
    ph, li = scene.photo, scene.lighting
    gain = np.array(li.color, np.float32) * li.exposure
    lum = np.array([0.114, 0.587, 0.299], np.float32)
    sat = np.float32(ph.saturation)
    mat = (sat * np.eye(3, dtype=np.float32) + (1 - sat) * np.tile(lum, (3, 1))) * gain[None, :]
    h, w, channels = img.shape
    img = cv2.transform(img.reshape(h, w * (channels // 3), 3), mat).reshape(h, w, channels)
    if falloff is not None:
        _mul3(img, falloff)
    if ph.blur_px > 0.25:
        img = cv2.GaussianBlur(img, (0, 0), ph.blur_px)
    if ph.motion_px >= 2:
        n = int(round(ph.motion_px)) | 1
        kern = np.zeros((n, n), np.float32)
        kern[n // 2, :] = 1
        rot = cv2.getRotationMatrix2D(((n - 1) / 2, (n - 1) / 2), ph.motion_deg, 1.0)
        kern = cv2.warpAffine(kern, rot, (n, n))
        img = cv2.filter2D(img, -1, kern / max(float(kern.sum()), 1e-6))
    if ph.sharpen > 0:
        soft = cv2.GaussianBlur(img, (0, 0), 1.2)
        img = cv2.addWeighted(img, 1 + ph.sharpen, soft, -ph.sharpen, 0)
    return img


#: The sensor's colour noise: this share of `Photo.noise`, drawn on cells of this many pixels.
CHROMA_NOISE = 0.7
CHROMA_CELL = 4


def _luminance_noise(gray: np.ndarray, noise: float) -> np.ndarray:
    """The standard deviation of the sensor's grey noise at each pixel: it grows with the
    light (`gray`, 0..1) from a floor, as a camera's shot and read noise do."""
    sig = cv2.sqrt(np.clip(gray, 0, 1))
    sig *= 0.8 * noise
    sig += 0.6 * noise
    return sig


@dataclass
class _Exposure:
    out: np.ndarray  # the photo: uint8 BGR
    linear: np.ndarray  # the picture through the optics, before the sensor (float, 0..1)
    falloff: np.ndarray | None


def _photo(img: np.ndarray, scene: Scene, rng: np.random.Generator) -> _Exposure:
    """Light gradient, vignette, white balance, blur, noise, tone, JPEG -> uint8 BGR."""
    ph = scene.photo
    h, w = img.shape[:2]
    falloff = _falloff(scene, h, w)
    linear = _optics(img, scene, falloff)
    img = linear.copy()
    if ph.noise > 0:
        sig = _luminance_noise(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), ph.noise)
        sig *= _noise_field(rng, h, w)
        hh, ww = max(2, h // CHROMA_CELL), max(2, w // CHROMA_CELL)
        ch = np.dstack([_noise_field(rng, hh, ww) for _ in range(3)]) * (ph.noise * CHROMA_NOISE)
        ch = cv2.resize(ch, (w, h), interpolation=cv2.INTER_LINEAR)
        cv2.add(ch, cv2.merge([sig, sig, sig]), dst=ch)
        cv2.add(img, ch, dst=img)
    out = cv2.convertScaleAbs(img, alpha=255.0)
    if ph.gamma != 1:
        lut = np.clip(((np.arange(256) / 255.0) ** (1 / ph.gamma)) * 255 + 0.5, 0, 255)
        out = cv2.LUT(out, lut.astype(np.uint8))
    if ph.jpeg_quality:
        ok, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(ph.jpeg_quality)])
        if ok:
            out = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return _Exposure(out, linear, falloff)


#: What an observer needs besides the image to read a die: the face's marks must stand out
#: from the sensor noise and from a floor of this much (0..1 units per channel: about 5 of
#: 255 grey levels, a person's contrast threshold for small marks). JPEG at the qualities
#: rendered (45 and up) blurs marks more than it hides them: it is not counted as noise.
SEEING_FLOOR = 0.02


def _legibility(scene: Scene, draws: dict[int, _DieDraw], ids: np.ndarray,
                exposure: _Exposure) -> dict[int, float]:
    """Per die (index in scene.dice): how well the photo tells its top face from the die's
    nearest other face — the ideal observer's d' (signal over noise) for the difference
    between the two pictures, through the camera's optics, where the top face is seen
    (occluders masked; both pictures clipped to what the sensor records), against the sensor
    noise at each pixel and SEEING_FLOOR. A person reads far less well
    than the ideal observer: LEGIBLE says how much d' a die needs to be readable. (With
    lens distortion the marks are measured where they were drawn, before it: a few pixels
    off at the frame's edge.)"""
    ph = scene.photo
    h, w = ids.shape
    result = {}
    reach = int(math.ceil(3 * ph.blur_px + ph.motion_px + 4 + (4 if ph.sharpen else 0)))
    for i, d in draws.items():
        if d.marks is None or d.marks_roi is None:
            continue
        x0, y0, x1, y1 = d.marks_roi
        seen = ids[y0:y1, x0:x1] == 8 * (i + 1) + d.top
        if not seen.any():
            continue
        # the region the optics spread the marks over, within the frame
        rx0, ry0 = max(0, x0 - reach), max(0, y0 - reach)
        rx1, ry1 = min(w, x1 + reach), min(h, y1 + reach)
        linear = exposure.linear[ry0:ry1, rx0:rx1]
        falloff = None if exposure.falloff is None else exposure.falloff[ry0:ry1, rx0:rx1]
        lum_noise = _luminance_noise(cv2.cvtColor(linear, cv2.COLOR_BGR2GRAY), ph.noise)
        # the chroma noise is drawn on cells of CHROMA_CELL pixels: about 1 / CHROMA_CELL²
        # of its variance falls on one small mark's pixels
        var = (CHROMA_NOISE * ph.noise) ** 2 / CHROMA_CELL ** 2 + SEEING_FLOOR ** 2
        s2 = lum_noise ** 2
        # the marks of all other faces side by side as the channels of one picture, through
        # the optics at once (they are per channel and linear)
        k = d.marks.shape[2]
        marks = np.zeros((ry1 - ry0, rx1 - rx0, k, 3), np.float32)
        marks[y0 - ry0:y1 - ry0, x0 - rx0:x1 - rx0] = d.marks * seen[..., None, None]
        seen_marks = _optics(marks.reshape(ry1 - ry0, rx1 - rx0, 3 * k), scene, falloff)
        # what the sensor records of both pictures: highlights and shadows clip
        tiled = np.tile(linear, (1, 1, k))
        diff = (np.clip(tiled, 0, 1) - np.clip(tiled - seen_marks, 0, 1)).reshape(marks.shape)
        # noise covariance per pixel: var·I + s²·11ᵀ (the luminance noise is shared)
        b, g, r = diff[..., 0], diff[..., 1], diff[..., 2]
        total = b + g + r
        energy = (b * b + g * g + r * r) / var \
            - (s2 / (var * (var + 3 * s2)))[..., None] * total ** 2
        d2 = energy.sum(axis=(0, 1))
        result[i] = math.sqrt(max(float(d2.min()), 0.0))
    return result


# ---------------------------------------------------------------------------
# render()
# ---------------------------------------------------------------------------

MIN_VISIBLE = 0.2  # a die with less of its body visible is not labelled
TOP_VISIBLE = 0.5  # a die with less of its top face visible is flagged "unreadable"
#: ... as is a die whose top face the photo does not tell from another face well enough for
#: a person (_legibility: d' below this). Set by looking at the dice of the synthetic test
#: sets in order of d': below 30 nearly none could be read by eye (dark and noisy, or
#: blurred), from about 30 on most could; 1 % of the pip dice and 3 % of the animal dice
#: within the camera range are below.
LEGIBLE = 30.0
TILT_FLAG_DEG = 7.0


def _label_value(die: Die, face: int) -> int | str:
    return ART_SETS[die.style.art][face] if die.style.kind == "animals" else face + 1


def render(scene: Scene) -> tuple[np.ndarray, SceneLabel]:
    """Render the scene. Returns (BGR uint8 image, labels); deterministic for a scene."""
    cam_desc = scene.camera
    h, w = cam_desc.height, cam_desc.width
    bg = background(cam_desc, scene.table, scene.tray, scene.props, scene.lighting)
    cam = CameraModel(cam_desc)
    ctx = _Ctx(cam, light_vector(scene.lighting), scene.lighting.ambient,
               scene.lighting.gloss, bg.image.copy(), np.zeros((h, w), np.uint16))
    poses = [die_pose(d) for d in scene.dice]
    sizes_px = []
    for p in poses:
        d = cam.depth(p.center[None])[0]
        sizes_px.append(cam.f * p.size / max(d, 1.0))
    casters: list[tuple[np.ndarray, float, float]] = []
    for d, p, spx in zip(scene.dice, poses, sizes_px, strict=True):
        blur = max(0.6, scene.lighting.shadow_blur * spx * (1 + p.center[2] / p.size))
        casters.append((p.rounded_points(), blur, 0.4 + 0.6 * d.style.opacity))
    _apply_shadow(ctx, _shadow_layer(ctx, casters))
    _contact_shadow(ctx, poses, sizes_px)
    draws: dict[int, _DieDraw] = {}
    for i in painter_order(poses, cam):
        draws[i] = _draw_die(ctx, i, scene.dice[i], poses[i])
    if bg.front is not None:
        rgb, a = bg.front
        _blend3(ctx.img, rgb, a)
        ctx.ids[a > 0.5] = ID_OCCLUDER
    for o in scene.occluders:
        if o.kind == "hand":
            _draw_hand(ctx, o)
        else:
            _draw_cup(ctx, o)
    ids = ctx.ids
    zoom = 1.0
    img = ctx.img
    if cam_desc.k1:
        mx, my, zoom = _distortion_maps(cam_desc)
        img = cv2.remap(img, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        ids = cv2.remap(ids, mx, my, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT,
                        borderValue=0)
    rng = np.random.default_rng([scene.seed & 0xFFFFFFFF, 77])
    exposure = _photo(np.asarray(img, np.float32), scene, rng)
    legible = _legibility(scene, draws, ctx.ids, exposure)
    labels = _labels(scene, poses, draws, ids, zoom, legible)
    return exposure.out, SceneLabel(image="", width=w, height=h, dice=tuple(labels))


def _supported(i: int, poses: list[DiePose]) -> bool:
    """Does die i rest on another die (its lowest point on that die's top)?"""
    p = poses[i]
    low = float(p.vertices()[:, 2].min())
    for j, q in enumerate(poses):
        if j == i:
            continue
        top = float(q.vertices()[:, 2].max())
        near = np.linalg.norm(p.center[:2] - q.center[:2]) < 0.75 * (p.size + q.size)
        if near and abs(top - low) < 0.15 * p.size:
            return True
    return False


def _labels(scene: Scene, poses: list[DiePose], draws: dict[int, _DieDraw], ids: np.ndarray,
            zoom: float, legible: dict[int, float]) -> list[DieLabel]:
    cam_desc = scene.camera
    h, w = ids.shape
    counts = np.bincount(ids.ravel(), minlength=8 * (len(scene.dice) + 2))
    frame = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    labels = []
    for i, die in enumerate(scene.dice):
        d = draws[i]
        pose = poses[i]
        base = 8 * (i + 1)
        hull = d.hull.astype(np.float32)
        top_quad = d.top_quad
        center = pose.face_center(d.top)
        c2 = CameraModel(cam_desc).project(center[None])
        if cam_desc.k1:
            hull = _distort_points(cam_desc, hull, zoom).astype(np.float32)
            top_quad = _distort_points(cam_desc, top_quad, zoom)
            c2 = _distort_points(cam_desc, c2, zoom)
        full = float(cv2.contourArea(hull))
        inter, _ = cv2.intersectConvexConvex(hull, frame)
        in_frame = float(inter) / max(full, 1e-6)
        visible = int(counts[base:base + 7].sum())
        if visible < max(12, MIN_VISIBLE * full):
            continue
        roi = _roi(hull.astype(np.float64), w, h, 2)
        if roi is None:
            continue
        x0, y0, x1, y1 = roi
        sub = ids[y0:y1, x0:x1]
        ys, xs = np.nonzero((sub >= base) & (sub < base + 7))
        if len(xs) == 0:
            continue
        box = (float(xs.min() + x0), float(ys.min() + y0), float(xs.max() + x0 + 1),
               float(ys.max() + y0 + 1))
        top_area = float(cv2.contourArea(top_quad.astype(np.float32)))
        top_vis = int(counts[base + d.top]) / max(top_area, 1.0)
        up = pose.normals[d.top][2]
        flag: str | None = None
        if die.z_mm > 0.5 * die.size_mm and _supported(i, poses):
            flag = "stacked"
        elif die.z_mm > 0.2 * die.size_mm:
            flag = "unreadable"  # in the air (a throw)
        elif math.degrees(math.acos(min(1.0, up))) > TILT_FLAG_DEG:
            flag = "tilted"
        elif in_frame < 0.995:
            flag = "cut"
        elif top_vis < TOP_VISIBLE or visible < 0.6 * full or legible.get(i, 0.0) < LEGIBLE:
            flag = "unreadable"
        labels.append(DieLabel(value=_label_value(die, d.top), box=box,
                               center=(float(c2[0, 0]), float(c2[0, 1])), flag=flag,
                               legibility=legible.get(i)))
    return labels
