"""Dice that are only pictures: the classifier's crops of printed and displayed dice.

A score sheet or rule leaflet with die pictograms, the game's box, or a tablet showing the
table's page can lie in the camera's view; their dice are flat, with no body, and must be
read as no die. The crops are drawn here as the classifier's crops of a find on such a
picture would be cut (models/README.md, "Dice that are only pictures"): the pictogram at
the find's size, its neighbours on the sheet, seen at the camera's angle, in its light,
blurred and noisy as the scenes are.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from vision.preprocess import CROP_SIZE
from vision.synth.textures import PIP_LAYOUT

#: Pips a quarter of the face apart, as the generator lays them out (2, 3 and 6 also turned).
PIP_SPACING = 0.25

#: Pixels of one pictogram's side on the drawing canvas (drawn large, then shrunk).
SIDE = 96


def printed_die_crops(count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` crops (count × CROP_SIZE × CROP_SIZE × 3, uint8 BGR) of found pictograms."""
    return np.stack([printed_die_crop(rng) for _ in range(count)]) if count else \
        np.zeros((0, CROP_SIZE, CROP_SIZE, 3), np.uint8)


def _style(rng: np.random.Generator) -> dict[str, object]:
    """How a sheet's pictograms look: printed on paper (outlined, or filled in a colour) or
    drawn on a screen (a light face with rounded corners on a dark or light page)."""
    kind = rng.choice(["print", "filled", "screen"], p=[0.5, 0.2, 0.3])
    ink = tuple(rng.uniform(0.0, 0.25, 3)) if rng.random() < 0.7 else \
        tuple(float(c) for c in rng.permutation([rng.uniform(0.5, 0.8), 0.1, 0.1]))
    if kind == "print":
        paper = tuple(np.clip(rng.uniform(0.82, 0.98) + rng.normal(0, 0.02, 3), 0, 1))
        return dict(page=paper, face=paper, outline=ink, line=rng.uniform(0.02, 0.08),
                    pips=ink, radius=rng.uniform(0.0, 0.22))
    if kind == "filled":
        paper = tuple(np.clip(rng.uniform(0.82, 0.98) + rng.normal(0, 0.02, 3), 0, 1))
        face = tuple(float(c) for c in rng.permutation(
            [rng.uniform(0.55, 0.9), rng.uniform(0.05, 0.3), rng.uniform(0.05, 0.3)]))
        return dict(page=paper, face=face, outline=face, line=0.0,
                    pips=tuple(rng.uniform(0.85, 1.0, 3)), radius=rng.uniform(0.0, 0.22))
    page = rng.uniform(0.05, 0.3) if rng.random() < 0.5 else rng.uniform(0.85, 1.0)
    face = tuple(np.clip(rng.uniform(0.85, 1.0) + rng.normal(0, 0.03, 3), 0, 1))
    return dict(page=(page,) * 3, face=face, outline=tuple(rng.uniform(0.3, 0.6, 3)),
                line=rng.choice([0.0, rng.uniform(0.01, 0.03)]), pips=ink,
                radius=rng.uniform(0.12, 0.25))


def _draw_pictogram(canvas: np.ndarray, x0: int, y0: int, value: int,
                    style: dict[str, object], pip_size: float, turned: bool) -> None:
    s = SIDE
    r = int(float(style["radius"]) * s)  # type: ignore[arg-type]
    face, outline = style["face"], style["outline"]
    box = np.zeros(canvas.shape[:2], np.uint8)
    cv2.rectangle(box, (x0 + r, y0), (x0 + s - r, y0 + s), 255, -1)
    cv2.rectangle(box, (x0, y0 + r), (x0 + s, y0 + s - r), 255, -1)
    for cx, cy in ((x0 + r, y0 + r), (x0 + s - r, y0 + r), (x0 + r, y0 + s - r),
                   (x0 + s - r, y0 + s - r)):
        cv2.circle(box, (cx, cy), r, 255, -1, cv2.LINE_AA)
    line = int(round(float(style["line"]) * s))  # type: ignore[arg-type]
    if line:
        canvas[box > 0] = outline
        inner = cv2.erode(box, np.ones((2 * line + 1, 2 * line + 1), np.uint8))
        canvas[inner > 0] = face
    else:
        canvas[box > 0] = face
    for cx, cy in PIP_LAYOUT[value]:
        if turned:
            cx, cy = -cy, cx
        px, py = 0.5 + cx * PIP_SPACING, 0.5 + cy * PIP_SPACING
        cv2.circle(canvas, (int(x0 + px * s), int(y0 + py * s)), int(pip_size * s),
                   style["pips"], -1, cv2.LINE_AA)  # type: ignore[arg-type]


def printed_die_crop(rng: np.random.Generator) -> np.ndarray:
    """One crop of a found pictogram (see the module)."""
    style = _style(rng)
    s = SIDE
    gap = rng.uniform(0.15, 0.8) * s
    size = 5 * s
    canvas = np.empty((size, size, 3), np.float32)
    canvas[:] = style["page"]
    pip_size = rng.uniform(0.07, 0.12)
    turned = bool(rng.random() < 0.5)
    # the pictogram found in the middle, its neighbours on the sheet in a row or a column
    centre = (size - s) // 2
    across = rng.random() < 0.5
    for k in range(-2, 3):
        if k and rng.random() < 0.3:
            continue
        offset = int(round(k * (s + gap)))
        x0, y0 = (centre + offset, centre) if across else (centre, centre + offset)
        _draw_pictogram(canvas, x0, y0, int(rng.integers(1, 7)), style, pip_size, turned)
    if rng.random() < 0.5:  # the sheet's ruled lines beside the pictograms
        y = int(centre + s + gap / 2) if across else int(centre + s / 2)
        x_start = centre - 2 * s if across else int(centre + s + gap / 2)
        cv2.line(canvas, (x_start, y), (size, y), tuple(0.5 * np.array(style["page"])),
                 max(1, s // 40), cv2.LINE_AA)
    # seen at the camera's angle (foreshortened along a random way), turned, cut as the
    # classifier's crop of the find is cut
    tilt = math.radians(rng.uniform(0, 55))
    way = rng.uniform(0, 2 * math.pi)
    c, sn = math.cos(way), math.sin(way)
    squash = np.array([[c, -sn], [sn, c]]) @ np.diag([1.0, math.cos(tilt)]) @ \
        np.array([[c, sn], [-sn, c]])
    turn = math.radians(rng.uniform(0, 360))
    rot = np.array([[math.cos(turn), -math.sin(turn)], [math.sin(turn), math.cos(turn)]])
    # the detector's finds on pictograms are 1.1-1.3 times their side (real photos)
    found = s * math.sqrt(math.cos(tilt)) * rng.uniform(1.05, 1.35)
    k = CROP_SIZE / found
    lin = k * rot @ squash
    middle = np.array([size / 2, size / 2]) + rng.normal(0, 0.06, 2) * s
    m = np.hstack([lin, (np.array([CROP_SIZE / 2] * 2) - lin @ middle)[:, None]])
    crop = cv2.warpAffine(canvas, m, (CROP_SIZE, CROP_SIZE), flags=cv2.INTER_AREA,
                          borderMode=cv2.BORDER_REPLICATE)
    # light across the sheet, a screen's or paper's sheen, blur, noise
    ys, xs = np.mgrid[:CROP_SIZE, :CROP_SIZE].astype(np.float32) / CROP_SIZE - 0.5
    g = rng.normal(0, 0.4, 2)
    light = rng.uniform(0.35, 1.25) * (1 + g[0] * xs + g[1] * ys)
    tint = rng.uniform(0.85, 1.15, 3)
    crop = crop * light[..., None] * tint + rng.uniform(0, 0.15) * (rng.random() < 0.3)
    if rng.random() < 0.6:
        crop = cv2.GaussianBlur(crop, (0, 0), rng.uniform(0.3, 1.5))
    crop = crop + rng.normal(0, rng.uniform(0, 0.05), crop.shape)
    out = np.clip(crop * 255 + 0.5, 0, 255).astype(np.uint8)
    if rng.random() < 0.4:
        _, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(40, 95))])
        out = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return out
