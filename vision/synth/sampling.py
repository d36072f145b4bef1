"""Random scenes: the distribution of tables, dice, light and cameras used for training data."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .geometry import (
    CameraModel,
    DiePose,
    boxes_overlap_3d,
    cable_path,
    convex_overlap_2d,
    die_pose,
    rect_footprint,
    square_footprint,
)
from .model import (
    ART_SETS,
    BGR,
    Camera,
    Die,
    DieStyle,
    Lighting,
    Occluder,
    Photo,
    Prop,
    Scene,
    Surface,
    Table,
    Tray,
)
from .renderer import occluder_coverage
from .textures import PATTERNED

KINDS = ("pips", "animals", "mixed")

RESOLUTIONS: tuple[tuple[int, int], ...] = (
    (640, 480), (800, 600), (800, 600), (960, 720), (1024, 768), (1280, 960), (1600, 1200),
    (854, 480), (960, 540), (1280, 720), (1280, 720), (1600, 900), (1920, 1080))

# body colours of pip dice (BGR) and whether they are dark
PIP_BODIES: dict[str, BGR] = {
    "white": (0.93, 0.94, 0.95), "ivory": (0.74, 0.88, 0.94), "black": (0.07, 0.07, 0.08),
    "red": (0.13, 0.1, 0.72), "green": (0.25, 0.52, 0.12), "blue": (0.62, 0.28, 0.08),
    "yellow": (0.08, 0.78, 0.93), "orange": (0.05, 0.42, 0.9), "purple": (0.5, 0.15, 0.4),
    "pink": (0.7, 0.55, 0.95), "grey": (0.55, 0.55, 0.55),
}
PIP_COLORS: dict[str, BGR] = {
    "black": (0.05, 0.05, 0.05), "white": (0.95, 0.95, 0.95), "red": (0.1, 0.08, 0.72),
    "gold": (0.2, 0.62, 0.85), "blue": (0.55, 0.2, 0.05), "green": (0.2, 0.45, 0.1),
    "silver": (0.75, 0.75, 0.75),
}
#: How worn a worn pip dice set is (`DieStyle.wear`, drawn uniformly between), whether
#: chance wears it (`random_pip_style`) or a training share does (`worn_again`).
PIP_WEAR = (0.2, 0.7)
ANIMAL_BODIES: dict[str, BGR] = {
    "wood": (0.5, 0.7, 0.85), "white": (0.93, 0.94, 0.95), "cream": (0.8, 0.92, 0.96),
    "pink": (0.85, 0.8, 0.98), "blue": (0.95, 0.85, 0.7), "mint": (0.8, 0.93, 0.78),
    "yellow": (0.6, 0.93, 0.98), "lilac": (0.95, 0.8, 0.88),
}
SKIN: tuple[BGR, ...] = ((0.62, 0.72, 0.9), (0.5, 0.62, 0.82), (0.38, 0.5, 0.7),
                         (0.25, 0.36, 0.52), (0.17, 0.24, 0.36))


def _lum(c: BGR) -> float:
    return 0.114 * c[0] + 0.587 * c[1] + 0.299 * c[2]


def _jit(rng: np.random.Generator, c: BGR, amount: float = 0.05) -> BGR:
    v = np.clip(np.array(c) * (1 + rng.normal(0, amount, 3)) + rng.normal(0, amount / 3), 0, 1)
    return (float(v[0]), float(v[1]), float(v[2]))


def _pick(rng: np.random.Generator, items: dict[str, BGR] | tuple[Any, ...],
          weights: list[float] | None = None) -> Any:
    keys = list(items.keys()) if isinstance(items, dict) else list(items)
    p = None if weights is None else np.array(weights) / sum(weights)
    k = keys[int(rng.choice(len(keys), p=p))]
    return items[k] if isinstance(items, dict) else k


# ---------------------------------------------------------------------------
# Dice styles
# ---------------------------------------------------------------------------


def random_pip_style(rng: np.random.Generator) -> DieStyle:
    finish = _pick(rng, ("plain", "translucent", "marbled"), [0.72, 0.16, 0.12])
    names = list(PIP_BODIES)
    w = [4, 2, 2.5, 2.5, 1.2, 1.2, 1, 0.7, 0.5, 0.5, 0.4]
    body_name = names[int(rng.choice(len(names), p=np.array(w) / sum(w)))]
    body = _jit(rng, PIP_BODIES[body_name], 0.06)
    body2 = _jit(rng, PIP_BODIES[_pick(rng, tuple(PIP_BODIES))], 0.1)
    opacity = 1.0
    if finish == "translucent":
        body = _jit(rng, PIP_BODIES[_pick(rng, ("red", "green", "blue", "yellow", "orange",
                                                "purple", "white", "grey"))], 0.08)
        opacity = float(rng.uniform(0.25, 0.55))
    if finish == "marbled":
        towards = np.array((0.95, 0.95, 0.95) if _lum(body) < 0.55 else (0.08, 0.08, 0.1))
        if rng.random() < 0.25:
            towards = np.array(PIP_BODIES[_pick(rng, ("white", "black", "yellow", "red"))])
        mixed = np.array(body) + (towards - np.array(body)) * rng.uniform(0.45, 0.85)
        body2 = (float(mixed[0]), float(mixed[1]), float(mixed[2]))
    # pip colour with contrast to the body
    cand = [k for k, c in PIP_COLORS.items() if abs(_lum(c) - _lum(body)) > 0.35]
    if finish == "translucent":
        cand = ["white", "white", "black", "gold"] if _lum(body) < 0.75 else ["black"]
    pip_name = str(rng.choice(cand)) if cand else ("black" if _lum(body) > 0.5 else "white")
    if pip_name in ("black", "white") or rng.random() < 0.5:
        pip = _jit(rng, PIP_COLORS[pip_name], 0.03)
    else:
        pip = PIP_COLORS[pip_name]
    r = float(rng.uniform(0.075, 0.115))
    spacing = float(min(rng.uniform(0.23, 0.3), 0.43 - r))
    one_pip: BGR | None = None
    one_r: float | None = None
    if rng.random() < 0.2 and _lum(body) > 0.45:
        one_pip = PIP_COLORS["red"]
    if rng.random() < 0.15:
        one_r = float(rng.uniform(0.13, 0.2))
    return DieStyle(
        kind="pips", body=body, body2=body2, finish=finish, opacity=opacity, pip=pip,
        pip_radius=r, pip_spacing=spacing, one_pip=one_pip, one_radius=one_r,
        engraved=bool(rng.random() < 0.7),
        wear=float(rng.uniform(*PIP_WEAR)) if rng.random() < 0.12 else 0.0,
        corner=float(rng.uniform(0.06, 0.2)),
        gloss=float(rng.uniform(0.4, 0.8) if finish == "translucent" else rng.uniform(0.05, 0.45)),
        shininess=float(rng.uniform(8, 40)),
        face_spin=tuple(int(x) for x in rng.integers(0, 4, 6)),  # type: ignore[arg-type]
        seed=int(rng.integers(0, 2**31)))


def random_animal_style(rng: np.random.Generator, art: str = "animals") -> DieStyle:
    name = _pick(rng, tuple(ANIMAL_BODIES), [3, 3, 1.5, 1, 1, 1, 1, 1])
    body = _jit(rng, ANIMAL_BODIES[name], 0.05)
    finish = "marbled" if name == "wood" and rng.random() < 0.7 else "plain"
    body2 = _jit(rng, (body[0] * 0.8, body[1] * 0.85, body[2] * 0.9), 0.03)
    mode = _pick(rng, ("color", "posterize", "outline", "mono"), [0.55, 0.15, 0.15, 0.15])
    ink = _jit(rng, _pick(rng, ((0.1, 0.1, 0.1), (0.45, 0.2, 0.1), (0.1, 0.1, 0.55),
                                (0.15, 0.35, 0.1), (0.1, 0.25, 0.45))), 0.05)
    hue = 0 if rng.random() < 0.7 else int(rng.integers(-12, 13)) % 180
    if rng.random() < 0.08:
        hue = int(rng.integers(0, 180))
    return DieStyle(
        kind="animals", body=body, body2=body2, finish=finish,
        engraved=False, wear=float(rng.uniform(0.2, 0.6)) if rng.random() < 0.1 else 0.0,
        corner=float(rng.uniform(0.06, 0.2)), gloss=float(rng.uniform(0.03, 0.3)),
        shininess=float(rng.uniform(6, 30)),
        face_spin=tuple(int(x) for x in rng.integers(0, 4, 6)),  # type: ignore[arg-type]
        art_scale=float(rng.uniform(0.62, 0.9)), art_rot_deg=float(rng.normal(0, 6)),
        art_hue=hue, art_sat=float(rng.uniform(0.6, 1.3)), art_mode=mode, ink=ink,
        art=art, seed=int(rng.integers(0, 2**31)))


def random_style(rng: np.random.Generator, kind: str, art: str = "animals") -> DieStyle:
    return random_animal_style(rng, art) if kind == "animals" else random_pip_style(rng)


# ---------------------------------------------------------------------------
# Surfaces, light, camera, photo
# ---------------------------------------------------------------------------


#: Tables printed with dots about as large as pips or with small motifs — a kitchen's
#: oilcloth, a tablecloth — are this share of the random tables (textures._motif_cloth).
#: Networks that never saw them find hundreds of dots as dice and misread dice on them;
#: trained with 0.15 they read such tables, and cloths never drawn, far better
#: (models/README.md, "Patterned table cloths").
PATTERNED_SHARE = 0.15
#: Cloth and print colours (BGR): blue, white, red, cream, green, black, yellow, grey.
_CLOTH_COLOURS = ((0.55, 0.3, 0.1), (0.93, 0.93, 0.93), (0.15, 0.15, 0.75),
                  (0.8, 0.92, 0.95), (0.2, 0.5, 0.15), (0.1, 0.1, 0.1), (0.2, 0.8, 0.9),
                  (0.5, 0.5, 0.5))


def random_surface(rng: np.random.Generator, kind: str | None = None) -> Surface:
    """A random table top, or one of `kind`. A patterned cloth replaces a random table by a
    draw of its own (from the table's seed), so that every other scene stayed as it was
    when patterned cloths were added."""
    if kind in PATTERNED:
        return _patterned_surface(rng, kind, int(rng.integers(0, 2**31)))
    surface = _plain_surface(rng, kind)
    if kind is None:
        side = np.random.default_rng([surface.seed, 1])
        if side.random() < PATTERNED_SHARE:
            return _patterned_surface(side, _pick(side, PATTERNED), surface.seed)
    return surface


def _patterned_surface(rng: np.random.Generator, kind: str, seed: int) -> Surface:
    base = int(rng.integers(len(_CLOTH_COLOURS)))
    other = (base + int(rng.integers(1, len(_CLOTH_COLOURS)))) % len(_CLOTH_COLOURS)
    return Surface(kind, _jit(rng, _CLOTH_COLOURS[base], 0.1),
                   _jit(rng, _CLOTH_COLOURS[other], 0.1), float(rng.uniform(100, 250)),
                   float(rng.uniform(0, 180)), float(rng.uniform(0.5, 1.5)),
                   int(rng.integers(2)), float(rng.uniform(0, 0.4) * (rng.random() < 0.4)),
                   seed)


def _felt(rng: np.random.Generator, kind: str, color: BGR, angle: float, seed: int
          ) -> Surface:
    """Felt or leather of `color`: a plain nap, no second colour."""
    return Surface(kind, color, (0, 0, 0), float(rng.uniform(80, 200)), angle,
                   float(rng.uniform(0.6, 1.5)), 0, 0.0, seed)


def _plain_surface(rng: np.random.Generator, kind: str | None = None) -> Surface:
    kind = kind or _pick(rng, ("wood", "felt", "paper", "cloth", "laminate", "leather"),
                         [3, 2, 1, 1.5, 2, 0.5])
    seed = int(rng.integers(0, 2**31))
    angle = float(rng.uniform(0, 180))
    if kind == "wood":
        t = rng.uniform(0, 1)
        light = np.array([0.45, 0.64, 0.8])
        dark = np.array([0.13, 0.22, 0.36])
        c = light * (1 - t) + dark * t
        if rng.random() < 0.15:  # grey / white-washed wood
            c = np.full(3, rng.uniform(0.45, 0.8)) * np.array([0.97, 1.0, 1.02])
        c2 = c * rng.uniform(0.55, 0.8)
        return Surface("wood", _jit(rng, tuple(c)), _jit(rng, tuple(c2)),
                       float(rng.uniform(150, 600)), angle, float(rng.uniform(0.5, 1.3)),
                       int(rng.integers(1, 5)), float(rng.uniform(0, 0.5) * (rng.random() < .4)),
                       seed)
    if kind in ("felt", "leather"):
        base = _pick(rng, ((0.2, 0.45, 0.12), (0.5, 0.3, 0.08), (0.12, 0.1, 0.5),
                           (0.1, 0.1, 0.1), (0.3, 0.3, 0.3), (0.15, 0.3, 0.45),
                           (0.35, 0.15, 0.3)))
        return _felt(rng, kind, _jit(rng, base, 0.15), angle, seed)
    if kind == "paper":
        return Surface("paper", _jit(rng, (0.9, 0.93, 0.94), 0.04),
                       _jit(rng, (0.85, 0.72, 0.55), 0.1), float(rng.uniform(100, 300)),
                       float(rng.choice([0, 90]) + rng.normal(0, 10)), 1.0,
                       int(rng.choice([0, 0, 1, 2])), 0.0, seed)
    if kind == "cloth":
        c1 = _jit(rng, (0.92, 0.92, 0.92), 0.05)
        c2 = _jit(rng, _pick(rng, ((0.15, 0.12, 0.7), (0.6, 0.3, 0.1), (0.2, 0.5, 0.15),
                                   (0.2, 0.2, 0.2), (0.4, 0.6, 0.8))), 0.1)
        pattern = int(rng.integers(1, 4)) if rng.random() < 0.5 else 0
        if not pattern:
            c1 = _jit(rng, tuple(rng.uniform(0.15, 0.9, 3)), 0.05)
        return Surface("cloth", c1, c2, float(rng.uniform(60, 200)), angle,
                       float(rng.uniform(0.5, 1.5)), pattern, 0.0, seed)
    base = _pick(rng, ((0.92, 0.92, 0.92), (0.6, 0.6, 0.6), (0.7, 0.82, 0.88),
                       (0.15, 0.15, 0.15), (0.4, 0.5, 0.55), (0.6, 0.5, 0.35)))
    dots = tuple(float(c) * rng.uniform(0.35, 0.75) for c in base)
    return Surface("laminate", _jit(rng, base, 0.06), _jit(rng, dots, 0.1),  # type: ignore[arg-type]
                   float(rng.uniform(200, 500)), angle, float(rng.uniform(0.5, 1.5)),
                   int(rng.random() < 0.3), float(rng.uniform(0.1, 0.6) * (rng.random() < 0.5)),
                   seed)


def random_lighting(rng: np.random.Generator, dim: bool = False) -> Lighting:
    t = rng.uniform(-1, 1)
    color = (1 + 0.18 * t, 1 + rng.normal(0, 0.03), 1 - 0.18 * t)  # BGR: t<0 warm
    return Lighting(
        azimuth_deg=float(rng.uniform(0, 360)), elevation_deg=float(rng.uniform(30, 85)),
        ambient=float(rng.uniform(0.3, 0.75)),
        color=(float(color[0]), float(color[1]), float(color[2])),
        exposure=float(rng.uniform(0.3, 0.55) if dim else rng.uniform(0.8, 1.2)),
        shadow_blur=float(rng.uniform(0.02, 0.25)),
        gradient=float(rng.uniform(0.05, 0.5)) if rng.random() < 0.5 else 0.0,
        gradient_deg=float(rng.uniform(0, 360)), gloss=float(rng.uniform(0.5, 1.5)))


def random_photo(rng: np.random.Generator, width: int, dim: bool = False) -> Photo:
    res = width / 800
    noise = float(rng.uniform(0.004, 0.025)) * (rng.uniform(2, 3.5) if dim else 1)
    return Photo(
        blur_px=float(rng.uniform(0.3, 1.3) * res) if rng.random() < 0.5 else 0.0,
        motion_px=float(rng.uniform(3, 9) * res) if rng.random() < 0.08 else 0.0,
        motion_deg=float(rng.uniform(0, 180)), noise=noise,
        jpeg_quality=int(rng.integers(45, 96)) if rng.random() < 0.75 else 0,
        vignette=float(rng.uniform(0.1, 0.5)) if rng.random() < 0.4 else 0.0,
        gamma=float(rng.uniform(0.85, 1.2)),
        sharpen=float(rng.uniform(0.3, 1.0)) if rng.random() < 0.25 else 0.0,
        saturation=float(rng.uniform(0.7, 1.25)))


def random_camera(rng: np.random.Generator, width: int, height: int, die_mm: float,
                  die_px: float | None = None, tilt_deg: float | None = None) -> Camera:
    if tilt_deg is None:
        tilt_deg = float(rng.uniform(0, 30) if rng.random() < 0.65 else rng.uniform(30, 60))
    hfov = math.radians(rng.uniform(50, 80))
    vfov = 2 * math.atan(math.tan(hfov / 2) * height / width)
    limit = math.radians(80 - tilt_deg)
    if vfov / 2 > limit:  # keep the horizon out of the picture
        vfov = 2 * limit
        hfov = 2 * math.atan(math.tan(vfov / 2) * width / height)
    f = width / 2 / math.tan(hfov / 2)
    if die_px is None:
        die_px = float(math.exp(rng.uniform(math.log(22), math.log(115))))
        die_px = min(die_px, min(width, height) / 4.5)
    dist = f * die_mm / die_px
    return Camera(width=width, height=height, focal_px=float(f), tilt_deg=float(tilt_deg),
                  yaw_deg=float(rng.uniform(0, 360)), roll_deg=float(rng.normal(0, 3)),
                  distance_mm=float(dist), target=(0.0, 0.0),
                  k1=float(rng.uniform(-0.12, 0.04)) if rng.random() < 0.15 else 0.0)


# ---------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------


class _Placer:
    """Keeps footprints of placed things and checks dice against frame and each other."""

    def __init__(self, cam: CameraModel, margin_px: float = 2.0) -> None:
        self.cam = cam
        self.margin = margin_px
        self.dice: list[Die] = []
        self.poses: list[DiePose] = []
        self.obstacles: list[np.ndarray] = []  # footprints of props / tray rim
        self.region: np.ndarray | None = None  # convex polygon dice must stay inside

    def in_frame(self, pose: DiePose) -> float:
        """Fraction (roughly) of the die's silhouette inside the frame."""
        px = self.cam.project(pose.vertices())
        w, h = self.cam.width, self.cam.height
        x0, y0 = px.min(axis=0)
        x1, y1 = px.max(axis=0)
        ix = max(0.0, min(x1, w - self.margin) - max(x0, self.margin))
        iy = max(0.0, min(y1, h - self.margin) - max(y0, self.margin))
        return ix * iy / max((x1 - x0) * (y1 - y0), 1e-6)

    def free(self, die: Die, pose: DiePose, gap: float = 0.2,
             ignore: int | None = None) -> bool:
        fp = square_footprint(die.x, die.y, die.size_mm * 1.0, die.yaw_deg, gap)
        if die.tilt_deg:
            fp = np.array(_hull2d(pose.vertices()[:, :2]))
        for j, p in enumerate(self.poses):
            if j == ignore:
                continue
            if abs(p.center[2] - pose.center[2]) > 0.9 * p.size and not die.tilt_deg:
                continue
            if np.linalg.norm(p.center[:2] - pose.center[:2]) > 1.5 * (p.size + pose.size):
                continue
            if boxes_overlap_3d(_grown(p, gap), pose):
                return False
        if any(convex_overlap_2d(fp, ob) for ob in self.obstacles):
            return False
        if self.region is not None:
            return all(_inside(self.region, q) for q in fp)
        return True

    def add(self, die: Die) -> bool:
        pose = die_pose(die)
        self.dice.append(die)
        self.poses.append(pose)
        return True


def _grown(p: DiePose, gap: float) -> DiePose:
    return DiePose(p.R, p.center, p.size + 2 * gap, p.radius)


def _hull2d(pts: np.ndarray) -> list[np.ndarray]:
    import cv2

    h = cv2.convexHull(pts.astype(np.float32))[:, 0, :].astype(np.float64)
    return list(h)


def _inside(poly: np.ndarray, q: np.ndarray) -> bool:
    n = len(poly)
    sign = 0.0
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        cr = (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0])
        if cr != 0:
            if sign == 0:
                sign = np.sign(cr)
            elif np.sign(cr) != sign:
                return False
    return True


def _table_point(cam: CameraModel, u: float, v: float, z: float = 0.0) -> tuple[float, float]:
    p = cam.unproject_to_plane(np.array([[u, v]]), z)[0]
    return float(p[0]), float(p[1])


def _value(rng: np.random.Generator, style: DieStyle) -> int | str:
    f = int(rng.integers(0, 6))
    return ART_SETS[style.art][f] if style.kind == "animals" else f + 1


def _slide_to_contact(placer: _Placer, die: Die, anchor: DiePose, direction: np.ndarray,
                      far: float) -> Die | None:
    """Move `die` along direction (unit, from anchor) to touch the anchor die, no overlap."""
    lo, hi = 0.0, far
    base = anchor.center[:2]

    def at(d: float) -> Die:
        p = base + direction * d
        return dataclasses.replace(die, x=float(p[0]), y=float(p[1]))

    if boxes_overlap_3d(anchor, die_pose(at(hi))):
        return None
    for _ in range(22):
        mid = (lo + hi) / 2
        if boxes_overlap_3d(anchor, die_pose(at(mid))):
            lo = mid
        else:
            hi = mid
    return at(hi + 0.02)


def camouflaged(rng: np.random.Generator, styles: list[DieStyle]
               ) -> tuple[list[DieStyle], Surface]:
    """Dice that hardly stand out from the table: half of such scenes (of pip dice only)
    black dice with white pips on black felt, the dice tray's classic; the others felt or
    leather the colour of the first set's body. Chance alone gives a die within 0.12 of its
    floor's colour in one scene of fifteen, black pip dice on a black floor in one pip scene
    of a hundred, and there the reader misses and doubts the most dice (models/README.md,
    "Dice the colour of their table")."""
    kind = _pick(rng, ("felt", "leather"), [3, 1])
    if all(st.kind == "pips" for st in styles) and rng.random() < 0.5:
        styles = [dataclasses.replace(st, body=_jit(rng, PIP_BODIES["black"], 0.1),
                                      body2=_jit(rng, (0.2, 0.2, 0.2), 0.1), finish="plain",
                                      opacity=1.0, pip=_jit(rng, PIP_COLORS["white"], 0.03),
                                      one_pip=None)
                  for st in styles]
        color = _jit(rng, (0.1, 0.1, 0.1), 0.15)
    else:
        color = _jit(rng, styles[0].body, 0.1)
    return styles, _felt(rng, kind, color, float(rng.uniform(0, 180)),
                         int(rng.integers(0, 2**31)))


def worn_again(rng: np.random.Generator, styles: list[DieStyle], share: float
               ) -> list[DieStyle]:
    """`share` of the pip dice sets whose paint chance left whole, worn as chance wears
    one (`random_pip_style`). Chance wears an eighth of the pip dice sets, and within 0-30°
    the reader read 5.8 % of the test pips worn so wrong against 1.6 % of the others
    (models/README.md, "Worn pips")."""
    return [dataclasses.replace(st, wear=float(rng.uniform(*PIP_WEAR)))
            if st.kind == "pips" and st.wear == 0 and rng.random() < share else st
            for st in styles]


#: The exposure of an overexposed scene (`overexposed`): light surfaces clip to white, a
#: white die on a light table keeps little more than its pips.
OVEREXPOSURE = (1.4, 2.2)


def overexposed(rng: np.random.Generator, lighting: Lighting, share: float) -> Lighting:
    """`lighting` overexposed (OVEREXPOSURE) in `share` of the scenes: a camera whose
    exposure was fixed in dimmer light (`kniffel calibrate --lock`) before a lamp went on
    or the sun came in. The real Valid photos so brightened (1.7 times) read 220 of their
    256 dice right; the random lighting's exposure reaches 1.2 (models/README.md,
    "Overexposed pictures and a lamp's glare")."""
    if rng.random() >= share:
        return lighting
    return dataclasses.replace(lighting, exposure=float(rng.uniform(*OVEREXPOSURE)))


# ---------------------------------------------------------------------------
# random_scene
# ---------------------------------------------------------------------------

_KNOBS = {"n_dice", "n_kept", "resolution", "tilt_deg", "die_px", "die_mm", "table_kind",
          "tray", "hand", "cup", "tilted", "stacked", "cut", "distractors", "dim", "clean",
          "touching", "art", "clutter", "camouflage", "worn", "bright"}
_FIELDS = {f.name for f in dataclasses.fields(Scene)}


def random_scene(rng: np.random.Generator, kind: str = "pips", **overrides: Any) -> Scene:
    """A random table scene.

    kind: "pips", "animals" or "mixed" (scenes of either, a few with both kinds).
    overrides: knobs of the distribution -- n_dice, n_kept, resolution=(w, h), tilt_deg,
    die_px (die size in pixels at the image centre), die_mm, table_kind, tray, hand, cup,
    tilted, stacked, cut, distractors, touching, clutter (booleans force a feature on or
    off), dim, clean (no blur/noise/JPEG), camouflage (the share of scenes drawn again with
    their dice the colour of their table: `camouflaged`; 0 by default), worn (the share of
    the pip dice sets not worn by chance drawn again with worn paint: `worn_again`; 0 by
    default), bright (the share of scenes overexposed: `overexposed`; 0 by default) -- or
    Scene fields
    (camera, table, lighting, photo, dice, props, tray, occluders, seed) that replace the
    generated ones.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    unknown = set(overrides) - _KNOBS - _FIELDS
    if unknown:
        raise TypeError(f"unknown random_scene overrides: {sorted(unknown)}")
    ov = overrides

    def flag(name: str, p: float) -> bool:
        v = ov.get(name)
        draw = bool(rng.random() < p)
        return draw if v is None or not isinstance(v, bool) else v

    w, h = ov.get("resolution") or RESOLUTIONS[int(rng.integers(len(RESOLUTIONS)))]
    die_mm = float(ov.get("die_mm") or (rng.uniform(15.5, 16.5) if rng.random() < 0.5
                                        else rng.uniform(14, 22)))
    dim = flag("dim", 0.15)
    cam_desc = ov.get("camera") or random_camera(rng, w, h, die_mm, ov.get("die_px"),
                                                 ov.get("tilt_deg"))
    w, h = cam_desc.width, cam_desc.height
    cam = CameraModel(cam_desc)
    lighting = ov.get("lighting") or random_lighting(rng, dim)
    photo = random_photo(rng, w, dim)
    if ov.get("clean"):
        photo = Photo()
    photo = ov.get("photo") or photo

    # table
    surface = random_surface(rng, ov.get("table_kind"))
    edge_deg = None
    edge_mm = 0.0
    if cam_desc.tilt_deg > 35 and rng.random() < 0.4:
        fwd = cam.R[2, :2] / max(np.linalg.norm(cam.R[2, :2]), 1e-6)
        edge_deg = math.degrees(math.atan2(fwd[1], fwd[0])) + float(rng.normal(0, 12))
        # place the edge in the upper part of the image
        far = cam.unproject_to_plane(np.array([[w / 2, h * rng.uniform(0.0, 0.2)]]))[0]
        edge_mm = float(far[:2] @ np.array([math.cos(math.radians(edge_deg)),
                                            math.sin(math.radians(edge_deg))]))
    grey = rng.uniform(0.06, 0.45)
    beyond = _jit(rng, (grey, grey * rng.uniform(0.9, 1.1), grey * rng.uniform(0.85, 1.25)), 0.1)
    table = ov.get("table") or Table(surface, edge_deg, edge_mm, beyond)

    # dice sets
    n = int(ov.get("n_dice") if ov.get("n_dice") is not None else
            (5 if rng.random() < 0.6 else rng.integers(1, 8)))
    n_kept = int(ov.get("n_kept") if ov.get("n_kept") is not None else
                 (rng.integers(1, min(3, n - 1) + 1) if n >= 2 and rng.random() < 0.25 else 0))
    scene_kind = kind
    if kind == "mixed":
        scene_kind = _pick(rng, ("pips", "animals", "both"), [0.5, 0.35, 0.15])
    r = rng.random()
    n_styles = 1 if r < 0.8 else (2 if r < 0.95 else n)
    styles = []
    for k in range(max(1, n_styles)):
        sk = scene_kind if scene_kind != "both" else ("pips" if k % 2 == 0 else "animals")
        styles.append(random_style(rng, sk, ov.get("art", "animals")))
    if scene_kind == "both" and len(styles) == 1:
        styles.append(random_style(rng, "animals", ov.get("art", "animals")))
    hidden_floor = None
    camouflage = float(ov.get("camouflage") or 0.0)
    if ov.get("table") is None and camouflage > 0:
        side = np.random.default_rng([surface.seed, 2])  # other scenes stay as they were
        if side.random() < camouflage:
            styles, hidden_floor = camouflaged(side, styles)
            table = dataclasses.replace(table, surface=hidden_floor)
    worn = float(ov.get("worn") or 0.0)
    if worn > 0:
        styles = worn_again(np.random.default_rng([surface.seed, 3]), styles, worn)
    bright = float(ov.get("bright") or 0.0)
    if bright > 0 and ov.get("lighting") is None:
        lighting = overexposed(np.random.default_rng([surface.seed, 4]), lighting, bright)

    placer = _Placer(cam)
    # tray
    tray = None
    if flag("tray", 0.15) and not isinstance(ov.get("tray"), Tray):
        cu, cv = rng.uniform(0.35, 0.65) * w, rng.uniform(0.35, 0.65) * h
        tx, ty = _table_point(cam, cu, cv)
        view_w = w * cam_desc.distance_mm / cam_desc.focal_px
        tw = float(np.clip(view_w * rng.uniform(0.5, 1.1), 8 * die_mm, 420))
        td = float(tw * rng.uniform(0.6, 0.9))
        tray = Tray(tx, ty, tw, td, float(rng.uniform(0, 360)), float(rng.uniform(12, 25)),
                    float(rng.uniform(15, 35)), random_surface(rng, _pick(rng, ("felt",
                                                                                 "leather"))),
                    random_surface(rng, _pick(rng, ("wood", "leather", "laminate"))))
    elif isinstance(ov.get("tray"), Tray):
        tray = ov["tray"]
    if tray is not None and hidden_floor is not None and not isinstance(ov.get("tray"), Tray):
        tray = dataclasses.replace(tray, floor=hidden_floor)
    if tray is not None:
        m = die_mm * 0.8
        placer.region = rect_footprint(tray.x, tray.y, tray.width_mm - 2 * m,
                                       tray.depth_mm - 2 * m, tray.yaw_deg)
        n_kept = 0

    # props under / beside the dice
    props: list[Prop] = []
    kept_mat = n_kept > 0 and rng.random() < 0.3

    # cluster of rolled dice
    n_roll = n - n_kept
    cu, cv = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
    if tray is not None:
        c2 = cam.project(np.array([[tray.x, tray.y, 0.0]]))[0]
        cu, cv = float(c2[0]), float(c2[1])
    ccx, ccy = _table_point(cam, cu, cv, die_mm / 2)
    spread = die_mm * rng.uniform(1.2, 4.5) * max(1.0, math.sqrt(n_roll) / 1.6)
    p_touch = 0.35 if ov.get("touching") is None else (0.9 if ov["touching"] else 0.0)
    want_cut = flag("cut", 0.12)
    style_of = [styles[i % len(styles)] if n_styles != n else styles[i] for i in range(n)]
    for i in range(n_roll):
        st = style_of[i]
        value = _value(rng, st)
        placed = None
        for attempt in range(60):
            yaw = float(rng.uniform(0, 360))
            if placer.dice and rng.random() < p_touch and attempt < 40:
                j = int(rng.integers(len(placer.dice)))
                a = placer.dice[j]
                side = int(rng.integers(4))
                ang = math.radians(a.yaw_deg + 90 * side)
                direction = np.array([math.cos(ang), math.sin(ang)])
                tang = np.array([-direction[1], direction[0]])
                yaw = a.yaw_deg + float(rng.normal(0, 4) if rng.random() < 0.7
                                        else rng.uniform(-45, 45))
                off = float(rng.uniform(-0.6, 0.6)) * a.size_mm
                cand = Die(value, a.x, a.y, yaw, die_mm, st)
                anchor = placer.poses[j]
                base = DiePose(anchor.R, anchor.center + np.append(tang * off, 0), anchor.size,
                               anchor.radius)
                d2 = _slide_to_contact(placer, cand, base, direction, 3 * die_mm)
                if d2 is None:
                    continue
                cand = d2
            elif want_cut and i == 0 and attempt < 40:
                side = int(rng.integers(4))
                t = rng.uniform(0.15, 0.85)
                u, v = [(t * w, 0), (t * w, h), (0, t * h), (w, t * h)][side]
                x, y = _table_point(cam, u, v, die_mm / 2)
                cand = Die(value, x, y, yaw, die_mm, st)
                pose = die_pose(cand)
                f = placer.in_frame(pose)
                if not 0.3 < f < 0.85 or not placer.free(cand, pose):
                    continue
                placed = cand
                break
            else:
                rad = spread * math.sqrt(rng.random())
                th = rng.uniform(0, 2 * math.pi)
                cand = Die(value, ccx + rad * math.cos(th), ccy + rad * math.sin(th), yaw,
                           die_mm, st)
            pose = die_pose(cand)
            if placer.in_frame(pose) < 0.999 or not placer.free(cand, pose):
                continue
            placed = cand
            break
        if placed is not None:
            placer.add(placed)

    # tilted: lean one die against a neighbour
    if len(placer.dice) >= 2 and flag("tilted", 0.1):
        for _attempt in range(12):
            j = int(rng.integers(len(placer.dice)))
            b = placer.dice[j]
            if b.z_mm > 0 or b.tilt_deg:
                continue
            st = b.style if rng.random() < 0.7 else style_of[0]
            side = int(rng.integers(4))
            ang = math.radians(b.yaw_deg + 90 * side)
            direction = np.array([math.cos(ang), math.sin(ang)])  # from b toward the leaner
            tilt = float(rng.uniform(10, 40))
            tilt_dir = math.degrees(math.atan2(-direction[1], -direction[0]))
            cand = Die(_value(rng, st), b.x, b.y, b.yaw_deg + float(rng.normal(0, 3)), die_mm,
                       st, tilt, tilt_dir)
            d2 = _slide_to_contact(placer, cand, placer.poses[j], direction, 3 * die_mm)
            if d2 is None:
                continue
            pose = die_pose(d2)
            if placer.in_frame(pose) < 0.999 or not placer.free(d2, pose, 0.05, ignore=j):
                continue
            # replace a rolled die (keep the count), or add when we have room
            if len(placer.dice) >= n_roll > 1:
                k = next((i for i in range(len(placer.dice)) if i != j and
                          not placer.dice[i].tilt_deg), None)
                if k is not None:
                    del placer.dice[k]
                    del placer.poses[k]
            placer.add(d2)
            break

    # stacked: one die on top of another
    if len(placer.dice) >= 2 and flag("stacked", 0.05):
        cands = [i for i, d in enumerate(placer.dice) if not d.tilt_deg and d.z_mm == 0]
        if cands:
            j = int(rng.choice(cands))
            b = placer.dice[j]
            others = [i for i in range(len(placer.dice)) if i != j and
                      not placer.dice[i].tilt_deg]
            off = rng.uniform(-0.15, 0.15, 2) * b.size_mm
            st = placer.dice[others[0]].style if others else b.style
            top = Die(_value(rng, st), b.x + float(off[0]), b.y + float(off[1]),
                      float(rng.uniform(0, 360)), b.size_mm * float(rng.uniform(0.97, 1.0)),
                      st, z_mm=b.size_mm)
            if others:
                k = others[-1]
                del placer.dice[k]
                del placer.poses[k]
            placer.add(top)

    # kept dice: a row near one side of the picture
    if n_kept:
        side = int(rng.integers(4))
        row_len = n_kept * die_mm * 1.4
        for _attempt in range(10):
            t = rng.uniform(0.3, 0.7)
            inset = rng.uniform(0.08, 0.16)
            u, v = [(t * w, inset * h), (t * w, (1 - inset) * h), (inset * w, t * h),
                    ((1 - inset) * w, t * h)][side]
            du, dv = [(1, 0), (1, 0), (0, 1), (0, 1)][side]
            x0, y0 = _table_point(cam, u, v, die_mm / 2)
            x1, y1 = _table_point(cam, u + du * 40, v + dv * 40, die_mm / 2)
            dvec = np.array([x1 - x0, y1 - y0])
            dvec /= max(np.linalg.norm(dvec), 1e-9)
            gap = die_mm * rng.uniform(1.05, 1.6)
            yaw0 = math.degrees(math.atan2(dvec[1], dvec[0]))
            row = []
            for k in range(n_kept):
                pos = np.array([x0, y0]) + dvec * (k - (n_kept - 1) / 2) * gap
                st = style_of[n_roll + k]
                row.append(Die(_value(rng, st), float(pos[0]), float(pos[1]),
                               yaw0 + float(rng.normal(0, 4)), die_mm, st))
            if all(placer.in_frame(die_pose(d)) >= 0.999 and placer.free(d, die_pose(d))
                   for d in row):
                for d in row:
                    placer.add(d)
                if kept_mat:
                    ctr = np.mean([[d.x, d.y] for d in row], axis=0)
                    props.append(Prop("mat", float(ctr[0]), float(ctr[1]), yaw0,
                                      row_len + die_mm * 1.5, die_mm * 2.6, 0.5,
                                      _jit(rng, tuple(rng.uniform(0.1, 0.7, 3))),
                                      seed=int(rng.integers(2**31))))
                break
        del row_len

    dice = list(placer.dice)

    # distractors
    if flag("distractors", 0.4):
        placer.obstacles = []
        for kind_p, p in (("coin", 0.5), ("pencil", 0.35), ("block", 0.3)):
            if rng.random() > p:
                continue
            for _ in range(int(rng.integers(1, 4)) if kind_p == "coin" else 1):
                prop = _random_prop(rng, kind_p, cam, w, h)
                if _clear_of(prop, dice, tray, props):
                    props.append(prop)

    # cables and labels, drawn from a stream of their own (CLUTTER_SHARE)
    side = np.random.default_rng([table.surface.seed, 2])
    wanted = ov.get("clutter")
    if (side.random() < CLUTTER_SHARE) if wanted is None else bool(wanted):
        props.extend(_clutter(side, cam, w, h, dice, tray, props))

    # hand / cup
    occluders: list[Occluder] = []
    forced = {"hand": ov.get("hand") is True, "cup": ov.get("cup") is True}
    for name, p in (("hand", 0.15), ("cup", 0.12)):
        if not flag(name, p):
            continue
        for _attempt in range(12):
            occ = _random_hand(rng, cam, dice) if name == "hand" else _random_cup(rng, cam)
            if cam.C[2] < 2.2 * (occ.height_mm + (0.6 * occ.size_mm if name == "hand" else 0)):
                continue  # the camera is too close: it would fill the picture
            cover = occluder_coverage(cam_desc, occ)
            if 0.005 < cover < (0.3 if name == "hand" else 0.22) or (
                    forced[name] and _attempt == 11 and cover < 0.6):
                occluders.append(occ)
                break

    scene = Scene(camera=cam_desc, table=table, lighting=lighting, photo=photo,
                  dice=tuple(dice), props=tuple(props), tray=tray,
                  occluders=tuple(occluders), seed=int(rng.integers(0, 2**31)))
    fields = {k: v for k, v in ov.items() if k in _FIELDS and not (k == "tray" and
                                                                   isinstance(v, bool))}
    return dataclasses.replace(scene, **fields) if fields else scene


def _prop_footprints(p: Prop) -> list[np.ndarray]:
    """Convex polygons (mm) that together cover the prop on the table: one for a solid
    prop, one per straight piece of a cable."""
    if p.kind == "coin":
        return [square_footprint(p.x, p.y, p.length_mm, p.yaw_deg)]
    if p.kind == "cable":
        thick = max(p.width_mm, p.height_mm)
        path = cable_path(p.x, p.y, p.yaw_deg, p.length_mm, p.seed)
        return [rect_footprint(float(a[0] + b[0]) / 2, float(a[1] + b[1]) / 2,
                               float(np.hypot(*(b - a))) + thick, thick,
                               math.degrees(math.atan2(b[1] - a[1], b[0] - a[0])))
                for a, b in zip(path[:-1], path[1:], strict=True)]
    return [rect_footprint(p.x, p.y, p.length_mm, p.width_mm, p.yaw_deg)]


def _clear_of(prop: Prop, dice: list[Die], tray: Tray | None, props: list[Prop]) -> bool:
    """Does `prop` keep off the dice (by half a die), the tray and the other props?"""
    keep_off = [square_footprint(d.x, d.y, d.size_mm * 1.5, d.yaw_deg) for d in dice]
    if tray is not None:
        keep_off.append(rect_footprint(
            tray.x, tray.y, tray.width_mm + 2 * tray.rim_width_mm + 10,
            tray.depth_mm + 2 * tray.rim_width_mm + 10, tray.yaw_deg))
    keep_off += [fp for q in props for fp in _prop_footprints(q)]
    return not any(convex_overlap_2d(fp, other)
                   for fp in _prop_footprints(prop) for other in keep_off)


#: Cables (a charger's, a lamp's, with a ferrite bead at times) and paper labels lie on
#: this share of the tables near the dice (`_clutter`): the real photos' tables have them,
#: and a detector that never saw them finds their beads and barcodes as dice. Drawn from a
#: stream of their own, so every other scene stays as it was; 0 until networks trained
#: with them are measured (models/README.md, "Cables and labels").
CLUTTER_SHARE = 0.0
_CABLE_COLOURS = ((0.08, 0.08, 0.08), (0.9, 0.9, 0.9), (0.45, 0.45, 0.45))


def _clutter(rng: np.random.Generator, cam: CameraModel, w: int, h: int, dice: list[Die],
             tray: Tray | None, props: list[Prop]) -> list[Prop]:
    """A cable, a label or both, somewhere in the picture but off the dice."""
    kinds = [k for k, p in (("cable", 0.75), ("label", 0.6)) if rng.random() < p] or ["cable"]
    out: list[Prop] = []
    for kind in kinds:
        for _attempt in range(10):
            x, y = _table_point(cam, rng.uniform(0.0, 1.0) * w, rng.uniform(0.0, 1.0) * h)
            yaw, seed = float(rng.uniform(0, 360)), int(rng.integers(2**31))
            if kind == "cable":
                thick = float(rng.uniform(3, 6))
                bead = thick * float(rng.uniform(2.5, 3.5)) if rng.random() < 0.5 else 0.0
                prop = Prop("cable", x, y, yaw, float(rng.uniform(150, 500)), thick, bead,
                            _jit(rng, _pick(rng, _CABLE_COLOURS), 0.05),
                            _jit(rng, (0.1, 0.1, 0.1), 0.05), seed=seed)
            else:
                paper = _jit(rng, _pick(rng, ((0.95, 0.95, 0.95), (0.8, 0.92, 0.95),
                                              (0.6, 0.9, 0.95))), 0.05)
                prop = Prop("label", x, y, yaw, float(rng.uniform(30, 90)),
                            float(rng.uniform(12, 40)), 0.3, paper,
                            _jit(rng, (0.1, 0.1, 0.1), 0.05), seed=seed)
            if _clear_of(prop, dice, tray, props + out):
                out.append(prop)
                break
    return out


def _random_prop(rng: np.random.Generator, kind: str, cam: CameraModel, w: int,
                 h: int) -> Prop:
    x, y = _table_point(cam, rng.uniform(-0.1, 1.1) * w, rng.uniform(-0.1, 1.1) * h)
    yaw = float(rng.uniform(0, 360))
    seed = int(rng.integers(2**31))
    if kind == "coin":
        col = _jit(rng, _pick(rng, ((0.25, 0.6, 0.8), (0.72, 0.72, 0.72), (0.3, 0.45, 0.7))))
        return Prop("coin", x, y, yaw, float(rng.uniform(16, 26)), 0, float(rng.uniform(1.5, 2.3)),
                    col, seed=seed)
    if kind == "pencil":
        col = _jit(rng, _pick(rng, ((0.1, 0.75, 0.92), (0.1, 0.1, 0.7), (0.6, 0.3, 0.1),
                                    (0.15, 0.5, 0.15), (0.1, 0.1, 0.1))))
        return Prop("pencil", x, y, yaw, float(rng.uniform(90, 180)), 7.0, 7.0, col, seed=seed)
    ink = _jit(rng, _pick(rng, ((0.1, 0.1, 0.6), (0.5, 0.3, 0.1), (0.2, 0.2, 0.2))))
    return Prop("block", x, y, yaw, float(rng.uniform(130, 210)), float(rng.uniform(90, 150)),
                float(rng.uniform(3, 10)), ink, (0.85, 0.87, 0.88), seed=seed)


def _random_hand(rng: np.random.Generator, cam: CameraModel, dice: list[Die]) -> Occluder:
    w, h = cam.width, cam.height
    height = float(rng.uniform(25, 80))
    size = float(rng.uniform(75, 95))
    side = int(rng.integers(4))
    cover = [d for d in dice] if rng.random() < 0.35 else []
    if cover:
        d = cover[int(rng.integers(len(cover)))]
        px = cam.project(np.array([[d.x, d.y, d.size_mm]]))[0]
        u, v = float(px[0]), float(px[1])
        # reach in from the nearest side
        dists = [v, h - v, u, w - u]
        side = int(np.argmin(dists))
    else:
        t = rng.uniform(0.1, 0.9)
        depth = rng.uniform(0.02, 0.25)
        u, v = [(t * w, depth * h), (t * w, (1 - depth) * h), (depth * w, t * h),
                ((1 - depth) * w, t * h)][side]
    x, y = _table_point(cam, u, v, height)
    out = [(u, -h), (u, 2 * h), (-w, v), (2 * w, v)][side]
    ox, oy = _table_point(cam, out[0], out[1], height)
    yaw = math.degrees(math.atan2(oy - y, ox - x)) + float(rng.normal(0, 15))
    skin = _jit(rng, SKIN[int(rng.integers(len(SKIN)))], 0.05)
    sleeve = _jit(rng, tuple(rng.uniform(0.05, 0.8, 3)), 0.05)
    return Occluder("hand", x, y, yaw, size, height, skin, sleeve, spread=float(rng.random()))


def _random_cup(rng: np.random.Generator, cam: CameraModel) -> Occluder:
    w, h = cam.width, cam.height
    side = int(rng.integers(4))
    t = rng.uniform(0.1, 0.9)
    depth = rng.uniform(-0.05, 0.12)
    u, v = [(t * w, depth * h), (t * w, (1 - depth) * h), (depth * w, t * h),
            ((1 - depth) * w, t * h)][side]
    x, y = _table_point(cam, u, v, 0.0)
    col = _jit(rng, _pick(rng, ((0.1, 0.2, 0.35), (0.08, 0.08, 0.08), (0.1, 0.35, 0.12),
                                (0.12, 0.1, 0.5), (0.45, 0.25, 0.1))), 0.1)
    band = _jit(rng, _pick(rng, ((0.2, 0.5, 0.7), (0.1, 0.1, 0.1), (0.7, 0.7, 0.7))), 0.05)
    return Occluder("cup", x, y, 0.0, float(rng.uniform(75, 95)), float(rng.uniform(85, 120)),
                    col, band, open_top=bool(rng.random() < 0.5))
