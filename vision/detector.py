"""Stage 1: find dice. Where is the centre of each die's top face, and how big is the die?

Detectors are plug-ins behind `Detector`; the default is our ONNX heatmap network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from vision.models import DETECTOR_PATH, open_session
from vision.preprocess import DETECTOR_LONG_SIDE, DETECTOR_STRIDE, detector_input


@dataclass(frozen=True)
class Candidate:
    """A place that looks like a die: top-face centre, body box (frame pixels), score, and
    where its body lies from the top-face centre (in die sizes; None from a detector that
    does not say)."""

    x: float
    y: float
    box: tuple[float, float, float, float]
    score: float
    body: tuple[float, float] | None = None

    @property
    def size(self) -> float:
        return max(self.box[2] - self.box[0], self.box[3] - self.box[1])

    def near(self, other: Candidate, share: float) -> bool:
        """Do the two centres lie closer than `share` of the smaller die's size? Two dice
        side by side are about one size apart."""
        return bool(np.hypot(self.x - other.x, self.y - other.y)
                    < share * min(self.size, other.size))


class Detector(Protocol):
    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]: ...


#: Dice smaller than this (in detector-input pixels) are looked at again, larger.
SMALL_DIE = 16.0
#: ... at a scale that makes them about this big,
TARGET_DIE = 26.0
#: ... but never with a longer side than this.
MAX_LONG_SIDE = 1024


class OnnxDetector:
    """CenterNet-style: peaks of a heatmap on a stride-4 grid, with offset and body size.

    A frame is first searched at DETECTOR_LONG_SIDE. Where its dice come out small (a wide
    view, a high-resolution camera), two touching dice can merge into one peak, so the frame
    is searched once more at a scale that makes the dice about TARGET_DIE pixels — sizes the
    network was trained on (its training scales dice by 0.7–1.4).
    """

    def __init__(self, path: Path = DETECTOR_PATH, threshold: float = 0.3,
                 threads: int = 1) -> None:
        self.session = open_session(path, threads)
        self.threshold = threshold
        #: Detectors made before the body head (models/train.py body) have no "body".
        names = {o.name for o in self.session.get_outputs()}
        self.outputs = ["out", "body"] if "body" in names else ["out"]

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        found, scale = self._run(frame_bgr, DETECTOR_LONG_SIDE)
        if found:
            size = float(np.median([c.size for c in found])) * scale
            if size < SMALL_DIE:
                long_side = min(MAX_LONG_SIDE,
                                32 * round(DETECTOR_LONG_SIDE * TARGET_DIE / size / 32))
                if long_side > DETECTOR_LONG_SIDE:
                    found, _ = self._run(frame_bgr, long_side)
        return found

    def _run(self, frame_bgr: np.ndarray, long_side: int) -> tuple[list[Candidate], float]:
        x, scale = detector_input(frame_bgr, long_side)
        outputs = self.session.run(self.outputs, {"image": x})
        body = outputs[1][0] if len(outputs) > 1 else None
        h, w = frame_bgr.shape[:2]
        return decode(outputs[0][0], scale, self.threshold, w, h, body), scale


def decode(out: np.ndarray, scale: float, threshold: float, width: int, height: int,
           body: np.ndarray | None = None) -> list[Candidate]:
    """Candidates from the detector's output grid (5 x H x W) and, if it has one, its body
    offsets (2 x H x W)."""
    heat = out[0]
    peaks = (heat >= threshold) & (heat >= cv2.dilate(heat, np.ones((3, 3), np.uint8)))
    found = []
    for iy, ix in zip(*np.nonzero(peaks), strict=True):
        cx = (ix + float(out[1, iy, ix])) * DETECTOR_STRIDE / scale
        cy = (iy + float(out[2, iy, ix])) * DETECTOR_STRIDE / scale
        if not (0 <= cx < width and 0 <= cy < height):
            continue  # padding area
        bw = float(np.exp(np.clip(out[3, iy, ix], 0, 8))) / scale
        bh = float(np.exp(np.clip(out[4, iy, ix], 0, 8))) / scale
        found.append(Candidate(cx, cy, (cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2),
                               float(heat[iy, ix]), None if body is None else
                               (float(body[0, iy, ix]), float(body[1, iy, ix]))))
    return suppress(found)


def suppress(candidates: list[Candidate], overlap: float = 0.45) -> list[Candidate]:
    """Keep the best of peaks that lie closer together than `overlap` of a die size:
    two dice that touch have centres about one size apart, one die never has two."""
    kept: list[Candidate] = []
    for cand in sorted(candidates, key=lambda c: -c.score):
        if not any(cand.near(k, overlap) for k in kept):
            kept.append(cand)
    return kept
