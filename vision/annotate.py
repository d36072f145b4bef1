"""Draw a Reading onto a copy of its frame: boxes, values, flags — what a person checks."""

from __future__ import annotations

import cv2
import numpy as np

from vision.reading import Reading

OK = (60, 200, 60)
ASK = (0, 165, 255)


def annotate(frame_bgr: np.ndarray, reading: Reading) -> np.ndarray:
    out = frame_bgr.copy()
    scale = max(out.shape[:2]) / 800
    thick = max(1, round(2 * scale))
    for die in reading.dice:
        color = ASK if die.flag else OK
        x0, y0, x1, y1 = die.box
        cv2.rectangle(out, (x0, y0), (x1, y1), color, thick)
        cv2.circle(out, (round(die.x), round(die.y)), max(2, thick + 1), color, -1)
        text = f"{die.value} {die.confidence:.2f}" + (f" {die.flag}" if die.flag else "")
        org = (x0, max(12, y0 - round(5 * scale)))
        cv2.putText(out, text, org, cv2.FONT_HERSHEY_SIMPLEX, 0.5 * scale, (0, 0, 0),
                    thick + 2, cv2.LINE_AA)
        cv2.putText(out, text, org, cv2.FONT_HERSHEY_SIMPLEX, 0.5 * scale, color, thick,
                    cv2.LINE_AA)
    return out
