"""Adapters that turn outside data sets into our SceneLabel format.

Real photographs (`shared/data/real/matteop65`, see its README): webcam photos of white pip
dice, YOLO labels whose boxes enclose only the pip pattern of the top face. `load_real` pads
each pip box outward to the whole visible die body, which is what `DieLabel.box` means.

Padding rule (measured on this data, see `_BODY_PER_PIP_BOX` and `_BODY_UP/_DOWN/_HALF_WIDTH`):

* die size ``s`` = width of the visible die body in pixels.
* values 2..6: ``s = k[value] * max(pip box w, h)``; ``k`` is the median ratio of die-body width
  (segmented from the image: bright blob around the pips) to the pip box, per value
  (the 6 pattern fills more of the face than the 2 pattern).  ``max(w, h)`` because a 2 or 3
  turned by 45 degrees gives a thin pip box.
* value 1: its box is one pip (or, in some Train images, the labeller drew it wider), so the
  size cannot come from the box.  ``s`` = median size of the other (2..6) dice in the same image
  (within an image die sizes agree to about +-10 %); in images that only hold 1s, the median
  width of the bright die blobs around their pips, and if that fails the median of the folder;
  at least 1.2x the 1's own box, because some Train boxes of 1s outline the whole top face.
* box: ``x = cx -+ 0.52 s``, ``y = cy - 0.46 s .. cy + 0.62 s`` (the camera looks obliquely, so
  a side face shows below the top face), united with the pip box, clipped to the image.
  Against die bodies segmented from the images (2..6): median IoU 0.77, median 93 % of the
  body inside the box (the median-fit box, 0.50/0.44/0.58, had IoU 0.78 but covered 89 %).
* known label errors are corrected (`_LABEL_FIXES`) and dice left unlabelled are added
  (`_MISSING_LABELS`).
* flag ``"cut"`` where the pip box touches the image border (the top face may be cut off).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np

from vision.reading import DieLabel, SceneLabel

REAL_SPLITS: tuple[str, ...] = ("Train", "Valid")
REAL_ENV = "KNIFFEL_REAL_DATA"

#: die-body width / max(pip box width, height), median over the real data per value
_BODY_PER_PIP_BOX: dict[int, float] = {2: 1.63, 3: 1.65, 4: 1.51, 5: 1.41, 6: 1.31}
_BODY_HALF_WIDTH = 0.52
_BODY_UP = 0.46  # top of the body above the top-face centre, in die sizes
_BODY_DOWN = 0.62  # bottom of the body (a side face shows below the top face)
#: used only if a folder holds no 2..6 die at all (median of the real data, 640x480)
_DEFAULT_DIE_SIZE = 65.0
_BORDER_PX = 1.0
_BODY_PER_FACE_BOX = 1.2

#: label errors found by looking at the images: (split, image, line index) -> (value in the
#: file, true value); applied only where the file still says the wrong value.
#: Valid/valid_56.jpg line 2 is labelled 4 but its top face shows a single pip (and its pip
#: box, 13x9 px, is a single pip too).
_LABEL_FIXES: dict[tuple[str, str, int], tuple[int, int]] = {("Valid", "valid_56.jpg", 2): (4, 1)}
#: dice in view that have no label line: (split, image) -> the lines that are missing (YOLO,
#: normalised, as in the files), added only where the file has as many lines as `lines`.
#: Valid/valid_9.jpg shows two dice, both with 2 up; only the upper one is labelled (the
#: lower one is a little out of focus but plainly a 2: pips at 353,302 and 383,329 px).
_MISSING_LABELS: dict[tuple[str, str], tuple[int, str]] = {
    ("Valid", "valid_9.jpg"): (1, "1 0.575781 0.657292 0.064063 0.077083"),
}


@dataclass(frozen=True)
class YoloBox:
    """One YOLO label line, in pixels."""

    cls: int
    cx: float
    cy: float
    w: float
    h: float

    @property
    def value(self) -> int:
        return self.cls + 1

    @property
    def box(self) -> tuple[float, float, float, float]:
        return (self.cx - self.w / 2, self.cy - self.h / 2, self.cx + self.w / 2,
                self.cy + self.h / 2)


def repo_root() -> Path:
    """The repository: parent of the `vision` package folder."""
    return Path(__file__).resolve().parent.parent


def real_root() -> Path:
    """Folder with Train/ and Valid/ of the real photos (env `KNIFFEL_REAL_DATA` overrides)."""
    env = os.environ.get(REAL_ENV)
    if env:
        return Path(env)
    return repo_root().parent / "shared" / "data" / "real" / "matteop65"


def one_photo_per_value(split: str = "Train") -> dict[int, Path]:
    """What a user does to teach these dice: per value, the first photo of `split` in
    which two or more dice lie and all show that value."""
    photos: dict[int, Path] = {}
    for path, label in load_real(split):
        values = {d.value for d in label.dice}
        if len(label.dice) >= 2 and len(values) == 1:
            value = values.pop()
            if isinstance(value, int):
                photos.setdefault(value, path)
    return photos


def read_yolo(txt: Path, width: int, height: int) -> list[YoloBox]:
    """Parse a YOLO (Darknet) label file: `class cx cy w h`, normalised to 0..1."""
    return parse_yolo(txt.read_text(encoding="utf-8"), width, height, str(txt))


def labelled_boxes(split: str, img_path: Path, width: int, height: int) -> list[YoloBox]:
    """The pip boxes of an image's label file, with the known label errors corrected
    (`_LABEL_FIXES`) and the unlabelled dice added (`_MISSING_LABELS`)."""
    boxes = read_yolo(img_path.with_suffix(".txt"), width, height)
    lines, missing = _MISSING_LABELS.get((split, img_path.name), (-1, ""))
    if len(boxes) == lines:
        boxes += parse_yolo(missing, width, height)
    for i, b in enumerate(boxes):
        fix = _LABEL_FIXES.get((split, img_path.name, i))
        if fix is not None and b.value == fix[0]:
            boxes[i] = replace(b, cls=fix[1] - 1)
    return boxes


def parse_yolo(text: str, width: int, height: int, source: str = "label") -> list[YoloBox]:
    out: list[YoloBox] = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 5:
            raise ValueError(f"{source}: bad YOLO line {line!r}")
        c, cx, cy, w, h = int(parts[0]), *map(float, parts[1:])
        out.append(YoloBox(c, cx * width, cy * height, w * width, h * height))
    return out


def die_size_from_pips(b: YoloBox) -> float | None:
    """Die-body width estimated from the pip box alone; None for a 1 (box is a single pip)."""
    k = _BODY_PER_PIP_BOX.get(b.value)
    return None if k is None else k * max(b.w, b.h)


def die_size_from_image(gray: np.ndarray, cx: float, cy: float, radius: int = 70) -> float | None:
    """Width of the bright die blob around (cx, cy) in a grayscale image, or None.

    Threshold halfway between the face (brightest pixels next to the centre) and the table
    (median of the window border); the blob is the bright component nearest to the centre.
    """
    h, w = gray.shape[:2]
    x0, y0 = max(0, int(cx) - radius), max(0, int(cy) - radius)
    x1, y1 = min(w, int(cx) + radius), min(h, int(cy) + radius)
    if x1 - x0 < 16 or y1 - y0 < 16:
        return None
    g = cv2.GaussianBlur(gray[y0:y1, x0:x1], (3, 3), 0).astype(np.float32)
    ix, iy = int(cx) - x0, int(cy) - y0
    face = float(np.percentile(g[max(0, iy - 8):iy + 9, max(0, ix - 8):ix + 9], 90))
    table = float(np.median(np.concatenate([g[0], g[-1], g[:, 0], g[:, -1]])))
    if face - table < 20:  # no clear die against the table
        return None
    bright = (g > (face + table) / 2).astype(np.uint8)
    closed = cv2.morphologyEx(bright, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    opened = cv2.morphologyEx(closed, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, lab, stats, _ = cv2.connectedComponentsWithStats(opened)
    if n < 2:
        return None
    ys, xs = np.nonzero(lab)
    j = int(np.argmin((xs - ix) ** 2 + (ys - iy) ** 2))
    return float(stats[lab[ys[j], xs[j]], cv2.CC_STAT_WIDTH])


def body_box(b: YoloBox, size: float, width: int, height: int) -> tuple[float, float, float, float]:
    """Pad a pip box to the die body of the given size; contains the pip box; clipped."""
    px0, py0, px1, py1 = b.box
    x0 = min(px0, b.cx - _BODY_HALF_WIDTH * size)
    x1 = max(px1, b.cx + _BODY_HALF_WIDTH * size)
    y0 = min(py0, b.cy - _BODY_UP * size)
    y1 = max(py1, b.cy + _BODY_DOWN * size)
    return (max(0.0, x0), max(0.0, y0), min(float(width), x1), min(float(height), y1))


def _touches_border(b: YoloBox, width: int, height: int) -> bool:
    x0, y0, x1, y1 = b.box
    return (x0 <= _BORDER_PX or y0 <= _BORDER_PX or x1 >= width - _BORDER_PX
            or y1 >= height - _BORDER_PX)


def _image_paths(folder: Path) -> list[Path]:
    paths = [p for p in folder.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")]
    return sorted(paths, key=lambda p: p.name)


def load_real(split: str = "Valid", root: Path | None = None) -> list[tuple[Path, SceneLabel]]:
    """The real photos of one split as (image path, SceneLabel), sorted by file name.

    Raises FileNotFoundError if the folder is missing (tests skip on `real_root().is_dir()`).
    """
    if split not in REAL_SPLITS:
        raise ValueError(f"split must be one of {REAL_SPLITS}, not {split!r}")
    folder = (root if root is not None else real_root()) / split
    if not folder.is_dir():
        raise FileNotFoundError(f"real data folder not found: {folder} (set {REAL_ENV})")

    scenes: list[tuple[Path, np.ndarray, list[YoloBox]]] = []
    for img_path in _image_paths(folder):
        txt = img_path.with_suffix(".txt")
        if not txt.exists():
            continue
        gray = cv2.imread(str(img_path), cv2.IMREAD_GRAYSCALE)
        if gray is None:
            raise OSError(f"cannot read image {img_path}")
        boxes = labelled_boxes(split, img_path, gray.shape[1], gray.shape[0])
        scenes.append((img_path, gray, boxes))

    pip_sizes = [s for _, _, boxes in scenes for b in boxes
                 if (s := die_size_from_pips(b)) is not None]
    folder_size = float(np.median(pip_sizes)) if pip_sizes else _DEFAULT_DIE_SIZE

    out: list[tuple[Path, SceneLabel]] = []
    for img_path, gray, boxes in scenes:
        height, width = gray.shape[:2]
        own = [die_size_from_pips(b) for b in boxes]
        known = [s for s in own if s is not None]
        if not known:  # only 1s: measure their die blobs, keep plausible ones
            seen = [die_size_from_image(gray, b.cx, b.cy) for b in boxes]
            known = [s for s in seen if s is not None and 0.6 <= s / folder_size <= 1.6]
        ones_size = float(np.median(known)) if known else folder_size
        dice: list[DieLabel] = []
        for b, size in zip(boxes, own, strict=True):
            if size is None:  # a 1: its box is one pip; size from the other dice of the image
                # ... unless the labeller outlined the whole top face (some Train images):
                # the body is then about 1.2x that face box.
                size = max(ones_size, _BODY_PER_FACE_BOX * max(b.w, b.h))
            flag = "cut" if _touches_border(b, width, height) else None
            dice.append(DieLabel(value=b.value, box=body_box(b, size, width, height),
                                 center=(b.cx, b.cy), flag=flag))
        out.append((img_path, SceneLabel(image=img_path.name, width=width, height=height,
                                         dice=tuple(dice))))
    return out


# ---------------------------------------------------------------------------
# Data checks
# ---------------------------------------------------------------------------


@dataclass
class DataReport:
    """What `check_real` found; `str()` gives a short text."""

    images: dict[str, int] = field(default_factory=dict)
    dice: dict[str, int] = field(default_factory=dict)
    dice_per_image: dict[str, dict[int, int]] = field(default_factory=dict)
    values: dict[str, dict[int, int]] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    #: images with 2+ dice that all show the same value (Train files are grouped by value)
    same_value: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: groups of byte-identical images (any split)
    identical: list[list[str]] = field(default_factory=list)
    #: pairs of images that look alike (difference hash within `near_bits`)
    near_duplicates: list[tuple[str, str, int]] = field(default_factory=list)
    #: raw labels whose pip box is far smaller/larger than the other dice of the image
    #: (label errors?): (image, labelled value, size / median size of the others)
    odd_boxes: list[tuple[str, int, float]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = []
        for s in self.images:
            lines.append(f"{s}: {self.images[s]} images, {self.dice[s]} dice, "
                         f"dice/image {dict(sorted(self.dice_per_image[s].items()))}, "
                         f"values {dict(sorted(self.values[s].items()))}, cut {self.cut[s]}, "
                         f"one value on all dice {self.same_value[s][0]}/{self.same_value[s][1]}"
                         " multi-die images")
        lines.append(f"identical images: {self.identical or 'none'}")
        cross = [p for p in self.near_duplicates if p[0].split('/')[0] != p[1].split('/')[0]]
        lines.append(f"near duplicates: {len(self.near_duplicates)} "
                     f"({len(cross)} across splits) {self.near_duplicates}")
        lines.append(f"odd pip boxes: {self.odd_boxes}")
        return "\n".join(lines)


def _dhash(gray: np.ndarray) -> np.ndarray:
    g = cv2.resize(gray, (17, 16), interpolation=cv2.INTER_AREA).astype(np.int16)
    return (g[:, 1:] > g[:, :-1]).ravel()


def check_real(root: Path | None = None, near_bits: int = 12) -> DataReport:
    """Count images/dice per split, find identical and near-identical images, odd boxes."""
    root = root if root is not None else real_root()
    rep = DataReport()
    md5: dict[str, list[str]] = {}
    hashes: list[tuple[str, np.ndarray]] = []
    for split in REAL_SPLITS:
        samples = load_real(split, root)
        rep.images[split] = len(samples)
        rep.dice[split] = sum(len(lab.dice) for _, lab in samples)
        rep.dice_per_image[split] = dict(Counter(len(lab.dice) for _, lab in samples))
        rep.values[split] = dict(Counter(int(d.value) for _, lab in samples
                                         for d in lab.dice))
        rep.cut[split] = sum(d.flag == "cut" for _, lab in samples for d in lab.dice)
        multi = [lab for _, lab in samples if len(lab.dice) > 1]
        rep.same_value[split] = (sum(len({d.value for d in lab.dice}) == 1 for lab in multi),
                                 len(multi))
        for path, _ in samples:
            name = f"{split}/{path.name}"
            md5.setdefault(hashlib.md5(path.read_bytes()).hexdigest(), []).append(name)
            gray = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
            if gray is None:
                raise OSError(f"cannot read image {path}")
            hashes.append((name, _dhash(gray)))
            boxes = labelled_boxes(split, path, gray.shape[1], gray.shape[0])
            sizes = [die_size_from_pips(b) for b in boxes]
            for i, (b, s) in enumerate(zip(boxes, sizes, strict=True)):
                others = [o for j, o in enumerate(sizes) if o is not None and j != i]
                if s is not None and others:
                    r = s / float(np.median(others))
                    if not 0.6 <= r <= 1.6:
                        rep.odd_boxes.append((name, b.value, round(r, 2)))
    rep.identical = [v for v in md5.values() if len(v) > 1]
    bits = np.array([h for _, h in hashes])
    diff = (bits[:, None, :] != bits[None, :, :]).sum(-1)
    for i, j in zip(*np.nonzero(np.triu(diff <= near_bits, k=1)), strict=True):
        rep.near_duplicates.append((hashes[i][0], hashes[j][0], int(diff[i, j])))
    return rep


if __name__ == "__main__":
    print(check_real())
