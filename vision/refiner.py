"""Between finding and reading: put each find on its die's top face.

The detector's peaks lie on a stride-4 grid and now and then on a die's edge, its front
face, or between two touching dice; a die much larger than most is sometimes found at half
its size. A crop cut there shows part of a face, and the classifier reads it wrong. The
refiner looks at a wider crop (REFINE_SPAN found sizes) around each find and says where
the nearest top face lies and how large its die is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from vision.detector import Candidate
from vision.models import REFINER_PATH, open_session
from vision.preprocess import REFINE_SPAN, crop_die, crops_tensor

#: A move longer than this (in found sizes) is not believed: the refiner is trained on
#: finds at most this many die sizes from a top face (models/train.py); farther, it guesses.
MAX_MOVE = 0.75
#: A size change beyond this factor either way is not believed either.
MAX_RESIZE = 2.0
#: A find far from its top face (on the front face of a large die seen at an angle, 0.3–0.6
#: die sizes off) is moved only part of the way (0.03–0.2): a find that one step moved at
#: least this far (found sizes) is looked at once more from where it was put. On the
#: validation scenes 800001–4 7 more dice right within 0–30° (3 over all), silent errors
#: 9 → 8 (with the doubt refitted to it, 86 more of 5000 dice asked); from a move of 0.08:
#: 4 more within 0–30°; three steps: fewer; a second step for every find: more silent.
AGAIN = 0.05


class OnnxRefiner:
    """The shipped centre refiner (models/train.py refiner)."""

    def __init__(self, path: Path = REFINER_PATH, threads: int = 1) -> None:
        self.session = open_session(path, threads)

    def refine(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]:
        """Each find moved to the top face it lies on or beside, its box scaled to the
        die's size; its score and body offset stay the detector's. A find the first step
        moved at least AGAIN takes a second step."""
        first = self._step(frame_bgr, candidates)
        again = [i for i, (c, r) in enumerate(zip(candidates, first, strict=True))
                 if np.hypot(r.x - c.x, r.y - c.y) >= AGAIN * c.size]
        if not again:
            return first
        refined = list(first)
        for i, second in zip(again, self._step(frame_bgr, [first[i] for i in again]),
                             strict=True):
            refined[i] = second
        return refined

    def _step(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]:
        if not candidates:
            return []
        crops = [crop_die(frame_bgr, c.x, c.y, REFINE_SPAN * c.size) for c in candidates]
        (out,) = self.session.run(["refine"], {"crops": crops_tensor(crops)})
        height, width = frame_bgr.shape[:2]
        return [moved(c, float(dx), float(dy), float(log_scale), width, height)
                for c, (dx, dy, log_scale) in zip(candidates, out, strict=True)]


def moved(candidate: Candidate, dx: float, dy: float, log_scale: float, width: float,
          height: float) -> Candidate:
    """`candidate` moved by (dx, dy) found sizes and scaled by exp(log_scale) — unless the
    move or the scale is beyond what the refiner was trained to say, or the move leaves
    the frame (width × height): a top face out of sight cannot be read."""
    scale = float(np.exp(log_scale))
    if np.hypot(dx, dy) > MAX_MOVE or not 1 / MAX_RESIZE <= scale <= MAX_RESIZE:
        return candidate
    size = candidate.size
    x, y = candidate.x + dx * size, candidate.y + dy * size
    if not (0 <= x < width and 0 <= y < height):
        return candidate
    x0, y0, x1, y1 = candidate.box
    half_w, half_h = (x1 - x0) * scale / 2, (y1 - y0) * scale / 2
    return dataclasses.replace(candidate, x=x, y=y,
                               box=(x - half_w, y - half_h, x + half_w, y + half_h))
