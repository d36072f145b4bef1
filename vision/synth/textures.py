"""Procedural textures: table surfaces (tileable) and die faces (pips or animal art).

Everything is cached by the (hashable, frozen) description that produced it; the cached
arrays are read-only.  Only numpy and OpenCV are used.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import cv2
import numpy as np

from .model import ART_SHEETS, BGR, DieStyle, Surface

ASSETS = Path(__file__).resolve().parent.parent / "assets"
TILE = 256  # texels of a surface tile
#: Surface kinds printed with dots or small motifs (`_motif_cloth`).
PATTERNED = ("dotted", "printed")


def _ro(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _seed(*parts: int) -> np.random.Generator:
    return np.random.default_rng([abs(int(p)) for p in parts])


def tile_noise(rng: np.random.Generator, size: int, cells_x: int, cells_y: int | None = None,
               height: int | None = None) -> np.ndarray:
    """Smooth tileable noise (float32, about unit std), `cells` random knots per period."""
    cells_y = cells_y or cells_x
    height = height or size
    g = rng.standard_normal((cells_y, cells_x)).astype(np.float32)
    kx, ky = size / cells_x, height / cells_y
    if kx > 8 and ky > 8:  # smooth noise: cubic to 8 px per knot, then linear (cheaper)
        small = _upsample_wrap(g, cells_x * 8, cells_y * 8, cv2.INTER_CUBIC, 2)
        return _upsample_wrap(small, size, height, cv2.INTER_LINEAR, 1)
    return _upsample_wrap(g, size, height, cv2.INTER_CUBIC, 2)


def _upsample_wrap(g: np.ndarray, width: int, height: int, interp: int, pad: int) -> np.ndarray:
    gh, gw = g.shape
    kx, ky = width / gw, height / gh
    big = cv2.resize(np.pad(g, pad, mode="wrap"), (round((gw + 2 * pad) * kx),
                                                   round((gh + 2 * pad) * ky)),
                     interpolation=interp)
    ox, oy = round(pad * kx), round(pad * ky)
    return np.ascontiguousarray(big[oy:oy + height, ox:ox + width])


def fbm(rng: np.random.Generator, size: int, cells: int, octaves: int = 4,
        gain: float = 0.5) -> np.ndarray:
    out = np.zeros((size, size), np.float32)
    amp, total = 1.0, 0.0
    for _ in range(octaves):
        c = min(cells, size // 2)
        out += amp * tile_noise(rng, size, c)
        total += amp * amp
        amp *= gain
        cells *= 2
    return out / math.sqrt(total)


def _wrap_blur(img: np.ndarray, sigma: float) -> np.ndarray:
    if sigma < 0.3:
        return img
    p = int(3 * sigma) + 1
    big = np.pad(img, ((p, p), (p, p), (0, 0)) if img.ndim == 3 else p, mode="wrap")
    return cv2.GaussianBlur(big, (0, 0), sigma)[p:-p, p:-p]


def _lerp(c1: BGR, c2: BGR, t: np.ndarray) -> np.ndarray:
    a = np.array(c1, np.float32)
    b = np.array(c2, np.float32)
    return a + (b - a) * t[..., None]


# ---------------------------------------------------------------------------
# Surfaces
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def surface_tile(s: Surface) -> np.ndarray:
    """One tileable TILE x TILE texel patch (float32 BGR) covering s.scale_mm on the table."""
    rng = _seed(s.seed, 7)
    n = TILE
    con = s.contrast
    col = np.arange(n, dtype=np.float32) / n
    if s.kind == "wood":
        planks = max(1, s.pattern)
        rows = np.arange(n, dtype=np.float32)[:, None] / n
        plank = np.floor(rows * planks).astype(np.int32) % planks
        offs = rng.uniform(0, 10, planks).astype(np.float32)[plank]
        shade = rng.uniform(-0.1, 0.1, planks).astype(np.float32)[plank] * con
        rings = int(rng.integers(6, 22))
        low = tile_noise(rng, n, 2, 3)
        mid = tile_noise(rng, n, 3, 12)
        phase = rows * rings + (0.45 + 0.5 * rng.random()) * low + 0.12 * mid + offs
        r = phase - np.floor(phase)
        width = rng.uniform(0.12, 0.3)
        ring = np.exp(-(((r - 0.5) / width) ** 2))
        fibers = tile_noise(rng, n, 4, 128) * 0.6 + tile_noise(rng, n, 8, 256) * 0.4
        pores = np.clip(tile_noise(rng, n, 32, 256) - 1.6, 0, None)
        t = np.clip(0.3 + con * (0.45 * ring + 0.13 * fibers + 0.08 * low + 0.5 * pores), 0, 1)
        img = _lerp(s.color, s.color2, t) * (1 + shade[..., None])
        if planks > 1:
            d = np.abs(rows * planks - np.round(rows * planks)) / planks * n
            seam = np.clip(d / 1.0, 0, 1) * 0.6 + 0.4
            img *= seam[..., None]
        img = np.broadcast_to(img, (n, n, 3)).copy()
    elif s.kind in ("felt", "leather"):
        fine = rng.standard_normal((n, n)).astype(np.float32)
        fine = cv2.GaussianBlur(fine, (0, 0), 0.7 if s.kind == "felt" else 1.2) * 2.2
        low = fbm(rng, n, 4, 3)
        k = 0.07 if s.kind == "felt" else 0.05
        v = 1 + con * (k * fine + 0.05 * low)
        if s.kind == "leather":
            cells = np.abs(tile_noise(rng, n, 48))
            v *= 1 - con * 0.12 * np.exp(-cells * 4)
        img = np.array(s.color, np.float32) * v[..., None]
    elif s.kind == "paper":
        fib = tile_noise(rng, n, 64) * 0.5 + rng.standard_normal((n, n)).astype(np.float32) * 0.3
        img = np.array(s.color, np.float32) * (1 + 0.02 * con * fib)[..., None]
        if s.pattern:
            lines = max(1, round(s.scale_mm / (5.0 if s.pattern == 2 else 8.0)))
            period = n / lines
            y = np.arange(n, dtype=np.float32)
            dist = np.abs(((y + period / 2) % period) - period / 2)
            line = np.clip(1.2 - dist, 0, 1)
            mask = np.maximum(line[:, None], line[None, :]) if s.pattern == 2 else \
                np.broadcast_to(line[:, None], (n, n))
            img = img * (1 - mask[..., None] * 0.8) + np.array(s.color2, np.float32) * (
                mask[..., None] * 0.8)
    elif s.kind == "cloth":
        p = 4.0
        x = np.arange(n, dtype=np.float32)
        wx = 0.5 + 0.5 * np.cos(2 * np.pi * x / p)
        ch = ((np.floor(x / p)[:, None] + np.floor(x / p)[None, :]) % 2).astype(np.float32)
        weave = np.where(ch > 0, wx[None, :], wx[:, None])
        weave = 0.82 + 0.18 * con * weave + 0.04 * tile_noise(rng, n, 32)
        if s.pattern:
            k = max(2, int(s.pattern) * 2)
            band = (np.floor(col * k) % 2).astype(np.float32)
            t = (band[None, :] + band[:, None]) / 2
            img = _lerp(s.color, s.color2, t)
        else:
            img = np.broadcast_to(np.array(s.color, np.float32), (n, n, 3)).copy()
        img = img * weave[..., None]
    elif s.kind in PATTERNED:
        img = _motif_cloth(s, rng)
    else:  # laminate
        low = fbm(rng, n, 2, 3)
        img = np.array(s.color, np.float32) * (1 + 0.03 * con * low)[..., None]
        if s.pattern:
            sp = rng.random((n, n)) < 0.08
            dots = cv2.GaussianBlur(sp.astype(np.float32), (0, 0), 0.6)
            img = img * (1 - 0.5 * con * dots[..., None]) + np.array(s.color2, np.float32) * (
                0.5 * con * dots[..., None])
        img += rng.standard_normal((n, n, 1)).astype(np.float32) * 0.008
    return _ro(np.clip(img, 0, 1).astype(np.float32))


def _motif_cloth(s: Surface, rng: np.random.Generator) -> np.ndarray:
    """An oilcloth or tablecloth printed with dots (`dotted`: polka dots in rows, staggered
    where `pattern` is 1) or scattered small dots, rings and leaves (`printed`): dots
    about as large as pips, which the networks must learn are not dice. Drawn at four
    times the tile's size and shrunk (smooth edges), wrapped so the tile repeats."""
    over = 4
    big = TILE * over
    per_mm = big / s.scale_mm
    img = np.empty((big, big, 3), np.float32)
    img[:] = s.color
    shapes: list[tuple[float, float, float, BGR, int]] = []  # x, y, radius, colour, shape
    if s.kind == "dotted":
        rows = max(2, 2 * round(s.scale_mm / rng.uniform(16.0, 44.0)))  # even: wraps
        step = big / rows
        radius = float(rng.uniform(1.0, 3.5)) * per_mm
        for i in range(rows):
            shift = 0.5 * step if s.pattern and i % 2 else 0.0
            shapes += [(j * step + shift, i * step, radius, s.color2, 0) for j in range(rows)]
    else:
        b, g, r = (float(v) for v in rng.uniform(0.1, 0.9, 3))
        third: BGR = (b, g, r)
        for _ in range(int(rng.integers(40, 120))):
            x, y = rng.uniform(0, big, 2)
            colour = s.color2 if rng.random() < 0.6 else third
            shapes.append((float(x), float(y), float(rng.uniform(1.0, 3.0)) * per_mm,
                           colour, int(rng.integers(3))))
    for x, y, r, colour, shape in shapes:
        for dx in (-big, 0, big):
            for dy in (-big, 0, big):
                cx, cy = round(x + dx), round(y + dy)
                if not (-4 * r < cx < big + 4 * r and -4 * r < cy < big + 4 * r):
                    continue
                if shape == 0:
                    cv2.circle(img, (cx, cy), max(1, round(r)), colour, -1, cv2.LINE_AA)
                elif shape == 1:
                    cv2.circle(img, (cx, cy), max(1, round(1.6 * r)), colour,
                               max(1, round(0.5 * r)), cv2.LINE_AA)
                else:
                    cv2.ellipse(img, (cx, cy), (max(1, round(2.5 * r)), max(1, round(r))),
                                (x * 7.0) % 180.0, 0, 360, colour, -1, cv2.LINE_AA)
    img = cv2.resize(img, (TILE, TILE), interpolation=cv2.INTER_AREA)
    weave = cv2.GaussianBlur(rng.standard_normal((TILE, TILE)).astype(np.float32), (0, 0), 0.7)
    return np.asarray(img * (1 + 0.03 * s.contrast * weave)[..., None], np.float32)


@functools.lru_cache(maxsize=16)
def surface_levels(s: Surface, sigma: float) -> np.ndarray:
    """The surface tile pre-blurred for minification (a cheap mip level)."""
    return _ro(_wrap_blur(surface_tile(s), sigma).astype(np.float32))


def tile_to_plane(s: Surface) -> np.ndarray:
    """3x3 affine: table mm (x, y) -> texel coordinates of the surface tile."""
    k = TILE / s.scale_mm
    a = math.radians(s.angle_deg)
    c, sn = math.cos(a), math.sin(a)
    return np.array([[k * c, k * sn, 0.0], [-k * sn, k * c, 0.0], [0.0, 0.0, 1.0]])


def render_surface(s: Surface, h_plane: np.ndarray, width: int, height: int) -> np.ndarray:
    """Texture the table plane as seen through homography h_plane (table mm -> pixels)."""
    h = h_plane @ np.linalg.inv(tile_to_plane(s))  # texels -> pixels
    hinv = np.linalg.inv(h)
    # texels per pixel on a coarse grid (for mip-mapping the far part of oblique views)
    gx, gy = np.meshgrid(np.linspace(0, width - 1, 9), np.linspace(0, height - 1, 7))
    p = np.stack([gx.ravel(), gy.ravel(), np.ones(gx.size)])

    def m(q: np.ndarray) -> np.ndarray:
        r = hinv @ q
        return r[:2] / r[2]

    base = m(p)
    dx = m(p + np.array([[1.0], [0], [0]])) - base
    dy = m(p + np.array([[0.0], [1], [0]])) - base
    scale = np.sqrt(np.abs(dx[0] * dy[1] - dx[1] * dy[0])).reshape(gx.shape).astype(np.float32)
    scale = np.clip(scale, 0.25, 64)
    lo, hi = float(scale.min()), float(scale.max())

    def sigma(texels_per_px: float) -> float:
        return round(max(0.0, 0.45 * texels_per_px - 0.4), 1)

    def warp(tile: np.ndarray, k: int) -> np.ndarray:
        """Warp at 1/k resolution (pixel centres kept consistent)."""
        if k == 1:
            return cv2.warpPerspective(tile, h, (width, height), flags=cv2.INTER_LINEAR,
                                       borderMode=cv2.BORDER_WRAP)
        sw, sh = -(-width // k), -(-height // k)
        down = np.array([[1 / k, 0, (1 / k - 1) / 2], [0, 1 / k, (1 / k - 1) / 2], [0, 0, 1]])
        return cv2.warpPerspective(tile, down @ h, (sw, sh), flags=cv2.INTER_LINEAR,
                                   borderMode=cv2.BORDER_WRAP)

    def upsample(img: np.ndarray, k: int) -> np.ndarray:
        if k == 1:
            return img
        big = cv2.resize(img, (img.shape[1] * k, img.shape[0] * k),
                         interpolation=cv2.INTER_LINEAR)
        return big[:height, :width]

    # a magnified texture loses nothing when rendered at half resolution and upsampled
    k_near = 2 if lo < 0.9 else 1
    if hi / lo < 2.0:
        tile = surface_levels(s, sigma(float(np.median(scale))))
        return np.ascontiguousarray(upsample(warp(tile, k_near), k_near))
    # oblique view: a sharp near layer cross-faded into a blurred far layer
    far_s = min(hi, 24.0)
    near = warp(surface_levels(s, sigma(lo)), k_near)
    k_far = 4 if far_s / lo >= 6 else 2
    far = warp(surface_levels(s, sigma(far_s)), k_far)
    nh, nw = near.shape[:2]
    wgt = np.clip(np.log(np.maximum(scale, lo) / lo) / math.log(far_s / lo), 0, 1)
    far4 = np.dstack([far, cv2.resize(wgt, (far.shape[1], far.shape[0]))])
    far4 = cv2.resize(far4, (nw, nh), interpolation=cv2.INTER_LINEAR)
    wf = far4[..., 3:4]
    near += (far4[..., :3] - near) * wf
    return np.ascontiguousarray(upsample(near, k_near))


# ---------------------------------------------------------------------------
# Die faces
# ---------------------------------------------------------------------------

# pip positions in units of the pip spacing, (column, row); the six runs in two columns
PIP_LAYOUT: dict[int, tuple[tuple[int, int], ...]] = {
    1: ((0, 0),),
    2: ((-1, -1), (1, 1)),
    3: ((-1, -1), (0, 0), (1, 1)),
    4: ((-1, -1), (1, -1), (-1, 1), (1, 1)),
    5: ((-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)),
    6: ((-1, -1), (-1, 0), (-1, 1), (1, -1), (1, 0), (1, 1)),
}

SS = 4  # sub-pixel bits for cv2 drawing


@functools.lru_cache(maxsize=64)
def rounded_cover(size: int, corner: float) -> np.ndarray:
    """Coverage of a face with rounded corners (float32 size x size)."""
    k = 4
    big = np.zeros((size * k, size * k), np.uint8)
    r = max(1, round(corner * size * k))
    n = size * k - 1
    cv2.rectangle(big, (r, 0), (n - r, n), 255, -1)
    cv2.rectangle(big, (0, r), (n, n - r), 255, -1)
    for cx, cy in ((r, r), (n - r, r), (r, n - r), (n - r, n - r)):
        cv2.circle(big, (cx, cy), r, 255, -1, cv2.LINE_AA)
    small = cv2.resize(big, (size, size), interpolation=cv2.INTER_AREA)
    return _ro(small.astype(np.float32) / 255)


@functools.lru_cache(maxsize=64)
def bevel_profile(size: int, corner: float) -> tuple[np.ndarray, np.ndarray]:
    """Normal tilt across a face with rounded edges: k(a) = tan(angle) and 1/|n'| map."""
    a = (np.arange(size, dtype=np.float32) + 0.5) / size - 0.5
    d = 0.5 - np.abs(a)
    w = max(corner, 1e-3)
    phi = (np.pi / 4) * np.clip(1 - d / w, 0, 1)
    k = (np.tan(phi) * np.sign(a)).astype(np.float32)
    inv = 1 / np.sqrt(1 + k[None, :] ** 2 + k[:, None] ** 2)
    return _ro(k), _ro(inv.astype(np.float32))


def _circle_mask(size: int, pts: list[tuple[float, float]], r: float) -> np.ndarray:
    m = np.zeros((size, size), np.uint8)
    rr = max(1, round(r * (1 << SS)))
    for x, y in pts:
        cv2.circle(m, (round(x * (1 << SS)), round(y * (1 << SS))), rr, 255, -1, cv2.LINE_AA,
                   SS)
    return m.astype(np.float32) / 255


def _body(style: DieStyle, face: int, size: int) -> np.ndarray:
    body = np.broadcast_to(np.array(style.body, np.float32), (size, size, 3))
    rng = _seed(style.seed, face, 11)
    if style.finish == "marbled":
        a = np.linspace(-0.5, 0.5, size, dtype=np.float32)
        ang = rng.uniform(0, np.pi)
        base = a[None, :] * math.cos(ang) + a[:, None] * math.sin(ang)
        turb = cv2.resize(fbm(rng, 64, 3, 4), (size, size))
        veins = np.abs(np.sin(base * rng.uniform(4, 9) + rng.uniform(1.5, 3.0) * turb))
        t = (1 - veins) ** rng.uniform(4, 12)  # thin veins
        cloud = cv2.resize(tile_noise(rng, 64, 4), (size, size))
        t = np.clip(t + 0.12 * cloud, 0, 1).astype(np.float32)
        body = _lerp(style.body, style.body2, t)
    else:
        speck = cv2.resize(tile_noise(rng, 32, 8), (size, size))
        body = body * (1 + 0.015 * speck[..., None])
    return body.astype(np.float32)


#: The least share of a printed pip's or picture's paint that wear leaves: faded, never gone.
PAINT_LEFT = 0.5


def _pip_face(style: DieStyle, face: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    value = face + 1
    body = _body(style, face, size)
    rng = _seed(style.seed, face, 13)
    spin = style.face_spin[face] % 4
    sp = style.pip_spacing * size
    r = style.pip_radius * size
    color = style.pip
    if value == 1:
        r = (style.one_radius or style.pip_radius) * size
        color = style.one_pip or style.pip
    pts = []
    for cx, cy in PIP_LAYOUT[value]:
        for _ in range(spin):
            cx, cy = -cy, cx
        pts.append(((size - 1) / 2 + cx * sp, (size - 1) / 2 + cy * sp))
    pip = _circle_mask(size, pts, r)
    img = body.copy()
    ang = (style.seed % 8) * np.pi / 4
    o = np.array([math.cos(ang), math.sin(ang)]) * r * 0.28
    if style.engraved:
        rim = _circle_mask(size, [(x - o[0] * 0.6, y - o[1] * 0.6) for x, y in pts], r * 1.1)
        rim = np.clip(rim - pip, 0, 1)
        img = img * (1 - 0.25 * rim[..., None]) + 0.25 * rim[..., None]
    paint = pip
    if style.wear > 0:
        # Worn paint. An engraved pip keeps its hole when the paint is gone; a printed pip
        # only fades (PAINT_LEFT): a pip that vanished would make the die show another
        # value than its label.
        wn = cv2.resize(tile_noise(rng, 32, 8), (size, size))
        left = 0.0 if style.engraved else PAINT_LEFT
        paint = pip * np.clip(1.2 - style.wear * (1.0 + wn), left, 1)
    pc = np.array(color, np.float32)
    if style.engraved:
        # hole seen from above: the body colour darkens inside, the paint covers most of it
        hole = body * 0.45
        img = img * (1 - pip[..., None]) + hole * pip[..., None]
        inner = _circle_mask(size, [(x + o[0], y + o[1]) for x, y in pts], r * 0.92)
        lit = paint * (0.55 + 0.45 * inner)
        img = img * (1 - paint[..., None]) + pc * lit[..., None]
        shadow = np.clip(pip - inner, 0, 1)
        img *= (1 - 0.35 * shadow[..., None])
    else:
        img = img * (1 - paint[..., None]) + pc * paint[..., None]
    opacity = np.full((size, size), style.opacity, np.float32)
    if style.opacity < 1:
        opacity = np.maximum(opacity, paint)
    return img, opacity


@functools.lru_cache(maxsize=4)
def animal_sheet(art: str = "animals") -> np.ndarray:
    path = ART_SHEETS.get(art, ASSETS / f"{art}.png")
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None or img.ndim != 3 or img.shape[2] != 4:
        raise FileNotFoundError(f"cannot read animal sprites {path}")
    return _ro(img)


@functools.lru_cache(maxsize=256)
def animal_sprite(index: int, hue: int, sat: float, mode: str, ink: BGR,
                  size: int, art: str = "animals") -> np.ndarray:
    """Animal art (float32 BGRA, size x size) recoloured in a print style."""
    sheet = animal_sheet(art)
    cell = sheet.shape[0]
    spr = sheet[:, index * cell:(index + 1) * cell]
    spr = cv2.resize(spr, (size, size), interpolation=cv2.INTER_AREA)
    bgr = np.ascontiguousarray(spr[..., :3])
    alpha = spr[..., 3].astype(np.float32) / 255
    if hue or sat != 1:
        hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
        hsv[..., 0] = ((hsv[..., 0].astype(np.int32) + hue) % 180).astype(np.uint8)
        hsv[..., 1] = np.clip(hsv[..., 1].astype(np.float32) * sat, 0, 255).astype(np.uint8)
        bgr = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
    col = bgr.astype(np.float32) / 255
    inkc = np.array(ink, np.float32)
    if mode == "posterize":
        col = np.round(col * 2) / 2
    elif mode == "mono":
        lum = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY).astype(np.float32) / 255
        alpha = alpha * np.clip(1.15 - lum, 0.15, 1)
        col = np.broadcast_to(inkc, col.shape).copy()
    elif mode == "outline":
        lum = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
        edges = cv2.Canny(lum, 40, 110)
        a8 = (alpha * 255).astype(np.uint8)
        edges |= cv2.morphologyEx(a8, cv2.MORPH_GRADIENT, np.ones((2, 2), np.uint8))
        if size > 64:
            edges = cv2.dilate(edges, np.ones((2, 2), np.uint8))
        dark = lum < 70
        alpha = np.maximum(edges.astype(np.float32) / 255, dark * alpha)
        alpha = cv2.GaussianBlur(alpha, (0, 0), 0.5)
        col = np.broadcast_to(inkc, col.shape).copy()
    return _ro(np.dstack([col, alpha]).astype(np.float32))


def _animal_face(style: DieStyle, face: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    body = _body(style, face, size)
    art = max(8, round(style.art_scale * size))
    spr = animal_sprite(face, style.art_hue, round(style.art_sat, 2), style.art_mode,
                        style.ink, art, style.art)
    ang = style.art_rot_deg + 90 * (style.face_spin[face] % 4)
    m = cv2.getRotationMatrix2D(((art - 1) / 2, (art - 1) / 2), ang, 1.0)
    m[:, 2] += (size - art) / 2
    placed = cv2.warpAffine(spr, m, (size, size), flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0, 0))
    a = placed[..., 3]
    if style.wear > 0:
        rng = _seed(style.seed, face, 17)
        wn = cv2.resize(tile_noise(rng, 32, 8), (size, size))
        a = a * np.clip(1.3 - style.wear * (1.0 + wn), PAINT_LEFT, 1)
    img = body * (1 - a[..., None]) + placed[..., :3] * a[..., None]
    opacity = np.full((size, size), style.opacity, np.float32)
    if style.opacity < 1:
        opacity = np.maximum(opacity, a)
    return img, opacity


@functools.lru_cache(maxsize=192)
def face_texture(style: DieStyle, face: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Albedo (float32 BGR) and opacity of face index `face` (value - 1) at size x size."""
    if style.kind == "animals":
        img, op = _animal_face(style, face, size)
    else:
        img, op = _pip_face(style, face, size)
    return _ro(np.clip(img, 0, 1).astype(np.float32)), _ro(op.astype(np.float32))


def texture_size(px: float) -> int:
    """Texture resolution for a face about px pixels wide on screen."""
    for t in (24, 32, 48, 64, 96, 128, 192):
        if t >= 1.25 * px:
            return t
    return 256
