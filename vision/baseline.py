"""Classical baseline: count pips with OpenCV's SimpleBlobDetector.

This is the approach a user would pick first (and most dice-reading tutorials use):

1. find pips as blobs, dark pips on light dice and light pips on dark dice
   (`cv2.SimpleBlobDetector`, filtered by area, circularity, convexity, inertia);
2. keep a blob only if it stands out from a ring of die surface around it (contrast), and
   only if it is round enough to lie on a face that looks at the camera;
3. cluster the pips of one polarity into dice: single linkage, two pips belong together if
   they are closer than `link` pip diameters;
4. per cluster: value = number of pips clipped to 1..6, centre = mean of the pips, box = the
   pips padded by a die size guessed from the pip size; when two clusters lie within a die
   size of each other, only the one with the rounder pips is kept (the top face is the face
   that looks at the camera most squarely; the others are side faces);
5. confidence from how clean the cluster is: a count 1..6, pips of one size and round, laid out
   like the canonical face of that count, no competing cluster suppressed next to it; a die
   whose estimated body reaches over the frame border is flagged "cut", and one read with
   less confidence than the reader's trust threshold (TRUST_CONFIDENCE) "unreadable", so that
   the table asks about the same dice the metrics count as asked.

It reads pip dice only: animal dice (Kniffel Kids) come out as nonsense or nothing.
Parameters are in pixels of a 640-pixel-wide frame and scale with the frame width; they were
tuned on the real Train split only (artifacts/eval/tune_baseline.py), never on Valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from vision.reading import TRUST_CONFIDENCE, DieReading, Reading

REF_WIDTH = 640.0


@dataclass(frozen=True)
class BaselineParams:
    min_area: float = 30.0  # pip area in px at 640 px frame width
    max_area: float = 200.0
    min_circularity: float = 0.7
    min_convexity: float = 0.8
    min_inertia: float = 0.5  # side faces seen at a slant give flat pips
    min_contrast: float = 65.0  # grey levels between pip and the die surface around it
    link: float = 3.5  # pips of one die are closer than this many pip diameters
    suppress: float = 0.8  # clusters closer than this many die sizes: keep the roundest
    die_per_pip: float = 7.0  # die size / pip diameter
    # also look for light pips on dark dice; on the (white-dice) Train split switching this off
    # gains 2 fewer extras in 951 dice, but then dark dice with white pips are never read
    light_pips: bool = True
    confidence_floor: float = 0.05
    layout_weight: float = 1.0  # confidence lost per unit of layout error
    single_pip_confidence: float = 0.9
    conflict_confidence: float = 0.6  # factor when a competing cluster was suppressed nearby


@dataclass
class Pip:
    x: float
    y: float
    d: float  # diameter
    contrast: float
    roundness: float  # minor / major axis of the pip, 1 = round
    dark: bool


def _detector(p: BaselineParams, scale: float, dark: bool) -> cv2.SimpleBlobDetector:
    q = cv2.SimpleBlobDetector.Params()
    q.filterByColor = True
    q.blobColor = 0 if dark else 255
    q.minThreshold, q.maxThreshold, q.thresholdStep = 10, 240, 10
    q.minRepeatability = 2
    q.minDistBetweenBlobs = max(2.0, 3.0 * scale)
    q.filterByArea = True
    q.minArea = p.min_area * scale * scale
    q.maxArea = p.max_area * scale * scale
    q.filterByCircularity = True
    q.minCircularity = p.min_circularity
    q.filterByConvexity = True
    q.minConvexity = p.min_convexity
    q.filterByInertia = True
    q.minInertiaRatio = p.min_inertia
    return cv2.SimpleBlobDetector.create(q)


def _measure(gray: np.ndarray, x: float, y: float, size: float, dark: bool) -> Pip | None:
    """Contrast against the surrounding ring and roundness of the blob at (x, y)."""
    h, w = gray.shape
    r = max(size / 2, 1.5)
    rad = int(np.ceil(3 * r)) + 1
    x0, y0 = max(0, int(x) - rad), max(0, int(y) - rad)
    x1, y1 = min(w, int(x) + rad + 1), min(h, int(y) + rad + 1)
    patch = gray[y0:y1, x0:x1].astype(np.float32)
    yy, xx = np.mgrid[y0:y1, x0:x1]
    dist = np.hypot(xx - x, yy - y)
    ring = patch[(dist >= 1.8 * r) & (dist <= 2.8 * r)]
    core = patch[dist <= 0.6 * r]
    if ring.size < 4 or core.size == 0:
        return None
    ring_level, core_level = float(np.median(ring)), float(np.mean(core))
    contrast = ring_level - core_level if dark else core_level - ring_level
    mid = (ring_level + core_level) / 2
    mask = ((patch < mid) if dark else (patch > mid)).astype(np.uint8)
    _, lab = cv2.connectedComponents(mask)
    k = lab[min(int(y) - y0, lab.shape[0] - 1), min(int(x) - x0, lab.shape[1] - 1)]
    if k == 0:
        return None
    m = cv2.moments((lab == k).astype(np.uint8), True)
    if m["m00"] < 3:
        return None
    a, b, c = m["mu20"] / m["m00"], m["mu11"] / m["m00"], m["mu02"] / m["m00"]
    root = float(np.sqrt(((a - c) / 2) ** 2 + b * b))
    major, minor = (a + c) / 2 + root, (a + c) / 2 - root
    roundness = float(np.sqrt(max(minor, 0.0) / major)) if major > 0 else 0.0
    return Pip(x, y, size, contrast, roundness, dark)


def _clusters(pips: list[Pip], link: float) -> list[list[Pip]]:
    """Single-linkage groups: i~j if distance < link * mean diameter of the two."""
    n = len(pips)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            a, b = pips[i], pips[j]
            if a.dark == b.dark and np.hypot(a.x - b.x, a.y - b.y) < link * (a.d + b.d) / 2:
                parent[find(i)] = find(j)
    groups: dict[int, list[Pip]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(pips[i])
    return list(groups.values())


#: distances of the pips from their centroid, sorted, divided by the largest: canonical faces
_PROFILES: dict[int, np.ndarray] = {
    1: np.array([0.0]),
    2: np.array([1.0, 1.0]),
    3: np.array([0.0, 1.0, 1.0]),
    4: np.array([1.0, 1.0, 1.0, 1.0]),
    5: np.array([0.0, 1.0, 1.0, 1.0, 1.0]),
    6: np.array([np.sqrt(0.5), np.sqrt(0.5), 1.0, 1.0, 1.0, 1.0]),
}


def _layout_error(group: list[Pip]) -> float:
    """How far the pips are from the canonical layout of their count (0 = exact)."""
    n = len(group)
    if n == 1 or n > 6:
        return 0.0 if n == 1 else 1.0
    xy = np.array([(p.x, p.y) for p in group])
    r = np.hypot(*(xy - xy.mean(axis=0)).T)
    r = np.sort(r / r.max()) if r.max() > 0 else r
    err = float(np.mean(np.abs(r - _PROFILES[n])))
    if n == 3:  # the three pips of a 3 lie on a line
        _, sv, _ = np.linalg.svd(xy - xy.mean(axis=0))
        err = max(err, float(sv[1] / sv[0]))
    return err


def _confidence(group: list[Pip], p: BaselineParams) -> float:
    """1.0 for a clean die; lower for too many pips, mixed sizes, a broken layout."""
    n = len(group)
    if n > 6:
        return 0.2
    d = np.array([q.d for q in group])
    conf = 1.0
    if n >= 2:
        size_cv = float(d.std() / d.mean())
        conf *= float(np.clip(1.0 - 2.5 * max(size_cv - 0.08, 0.0), 0.3, 1.0))
        conf *= float(np.clip(1.0 - p.layout_weight * _layout_error(group), 0.3, 1.0))
    rnd = float(np.min([q.roundness for q in group]))
    conf *= float(np.clip(0.4 + rnd, 0.3, 1.0))
    if n == 1:  # a lone blob could be any dark speck on something white
        conf *= p.single_pip_confidence
    return conf


def _to_gray(frame: object) -> np.ndarray | None:
    """uint8 grayscale of a BGR / BGRA / gray frame; None for anything unusable."""
    if not isinstance(frame, np.ndarray) or frame.ndim not in (2, 3) or frame.size == 0:
        return None
    if min(frame.shape[:2]) < 16:
        return None
    if frame.dtype != np.uint8:
        if not np.issubdtype(frame.dtype, np.number):
            return None
        f = np.nan_to_num(frame.astype(np.float64))
        if f.max() <= 1.0:  # float image in 0..1
            f = f * 255.0
        frame = np.clip(f, 0, 255).astype(np.uint8)
    if frame.ndim == 2:
        return np.ascontiguousarray(frame)
    channels = frame.shape[2]
    if channels == 1:
        return np.ascontiguousarray(frame[:, :, 0])
    if channels == 3:
        return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    if channels == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2GRAY)
    return None


class BlobBaselineReader:
    """Pip counting with cv2.SimpleBlobDetector; implements the DiceReader protocol."""

    def __init__(self, params: BaselineParams | None = None) -> None:
        self.params = params or BaselineParams()
        self._detectors: dict[tuple[float, bool], cv2.SimpleBlobDetector] = {}

    def _detect(self, gray: np.ndarray, scale: float, dark: bool) -> list[cv2.KeyPoint]:
        key = (round(scale, 3), dark)
        if key not in self._detectors:
            self._detectors[key] = _detector(self.params, scale, dark)
        return list(self._detectors[key].detect(gray))

    def pips(self, frame_bgr: np.ndarray) -> list[Pip]:
        p = self.params
        gray = _to_gray(frame_bgr)
        if gray is None:
            return []
        scale = gray.shape[1] / REF_WIDTH
        out: list[Pip] = []
        for dark in (True, False) if p.light_pips else (True,):
            for kp in self._detect(gray, scale, dark):
                pip = _measure(gray, kp.pt[0], kp.pt[1], kp.size, dark)
                if pip is not None and pip.contrast >= p.min_contrast:
                    out.append(pip)
        return out

    def read(self, frame_bgr: np.ndarray) -> Reading:
        p = self.params
        pips = self.pips(frame_bgr)
        if not pips:
            return Reading(dice=())
        h, w = frame_bgr.shape[:2]
        cands = []
        for group in _clusters(pips, p.link):
            d = float(np.median([q.d for q in group]))
            xs = np.array([q.x for q in group])
            ys = np.array([q.y for q in group])
            cands.append((float(np.mean([q.roundness for q in group])), group, d, xs, ys))
        # side faces: of clusters closer than a die size, keep the one with the roundest pips
        cands.sort(key=lambda c: (-c[0], -len(c[1])))
        kept: list[tuple[float, list[Pip], float, np.ndarray, np.ndarray]] = []
        conflicts: list[int] = []
        for c in cands:
            cx, cy = float(c[3].mean()), float(c[4].mean())
            size = p.die_per_pip * c[2]
            near = [i for i, k in enumerate(kept)
                    if np.hypot(cx - k[3].mean(), cy - k[4].mean())
                    < p.suppress * max(size, p.die_per_pip * k[2])]
            if near:
                conflicts.extend(near)
            else:
                kept.append(c)
        dice = []
        for i, (_, group, d, xs, ys) in enumerate(kept):
            size = p.die_per_pip * d
            half = max(size / 2, (xs.max() - xs.min()) / 2 + d, (ys.max() - ys.min()) / 2 + d)
            cx, cy = float(xs.mean()), float(ys.mean())
            x0, y0 = int(np.floor(cx - half)), int(np.floor(cy - half))
            x1, y1 = int(np.ceil(cx + half)), int(np.ceil(cy + half))
            box = (max(0, x0), max(0, y0), min(w, x1), min(h, y1))
            value = int(np.clip(len(group), 1, 6))
            conf = _confidence(group, p)
            if i in conflicts:
                conf *= p.conflict_confidence
            conf = max(p.confidence_floor, conf)
            # the die reaches over the frame border (its top face may be cut off), or is unsure
            flag = "cut" if min(cx, cy, w - cx, h - cy) < size / 2 else \
                "unreadable" if conf < TRUST_CONFIDENCE else None
            dice.append(DieReading(value=value, confidence=conf, x=cx, y=cy, box=box,
                                   flag=flag))
        dice.sort(key=lambda r: (r.y, r.x))
        return Reading(dice=tuple(dice))
