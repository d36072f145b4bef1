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
from vision.preprocess import DETECTOR_STRIDE, detector_input


@dataclass(frozen=True)
class Candidate:
    """A place that looks like a die: top-face centre, body box (frame pixels), score."""

    x: float
    y: float
    box: tuple[float, float, float, float]
    score: float

    @property
    def size(self) -> float:
        return max(self.box[2] - self.box[0], self.box[3] - self.box[1])


class Detector(Protocol):
    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]: ...


class OnnxDetector:
    """CenterNet-style: peaks of a heatmap on a stride-4 grid, with offset and body size."""

    def __init__(self, path: Path = DETECTOR_PATH, threshold: float = 0.3,
                 threads: int = 1) -> None:
        self.session = open_session(path, threads)
        self.threshold = threshold

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        x, scale = detector_input(frame_bgr)
        out = self.session.run(None, {"image": x})[0][0]
        return decode(out, scale, self.threshold, frame_bgr.shape[1], frame_bgr.shape[0])


def decode(out: np.ndarray, scale: float, threshold: float, width: int, height: int
           ) -> list[Candidate]:
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
                               float(heat[iy, ix])))
    return suppress(found)


def suppress(candidates: list[Candidate], overlap: float = 0.45) -> list[Candidate]:
    """Keep the best of peaks that lie closer together than `overlap` of a die size:
    two dice that touch have centres about one size apart, one die never has two."""
    kept: list[Candidate] = []
    for cand in sorted(candidates, key=lambda c: -c.score):
        if all(np.hypot(cand.x - k.x, cand.y - k.y) > overlap * min(cand.size, k.size)
               for k in kept):
            kept.append(cand)
    return kept
