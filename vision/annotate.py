"""Draw a Reading onto a copy of its frame: boxes, values, flags — what a person checks."""

from __future__ import annotations

import cv2
import numpy as np

from vision.reading import DieReading, Reading

OK = (60, 200, 60)
ASK = (0, 165, 255)
FONT = cv2.FONT_HERSHEY_SIMPLEX

Rect = tuple[int, int, int, int]  # x0, y0, x1, y1


def annotate(frame_bgr: np.ndarray, reading: Reading) -> np.ndarray:
    out = frame_bgr.copy()
    h, w = out.shape[:2]
    scale = max(h, w) / 800
    thick = max(1, round(2 * scale))
    for die in reading.dice:
        color = ASK if die.flag else OK
        x0, y0, x1, y1 = die.box
        cv2.rectangle(out, (x0, y0), (x1, y1), color, thick)
        cv2.circle(out, (round(die.x), round(die.y)), max(2, thick + 1), color, -1)
    # Labels after all boxes, each on a dark plate where no other label lies: dice that
    # touch would otherwise write their values over each other.
    texts = [label_text(die) for die in reading.dice]
    sizes = [cv2.getTextSize(t, FONT, 0.5 * scale, thick)[0] for t in texts]
    pad = max(2, thick)
    plates = label_plates([d.box for d in reading.dice],
                          [(tw + 2 * pad, th + 2 * pad) for tw, th in sizes], (w, h))
    for die, text, (px0, py0, px1, py1) in zip(reading.dice, texts, plates, strict=True):
        cv2.rectangle(out, (px0, py0), (px1, py1), (0, 0, 0), -1)
        cv2.putText(out, text, (px0 + pad, py1 - pad), FONT, 0.5 * scale,
                    ASK if die.flag else OK, thick, cv2.LINE_AA)
    return out


def label_text(die: DieReading) -> str:
    value = "?" if die.value is None else str(die.value)
    return f"{value} {die.confidence:.2f}" + (f" {die.flag}" if die.flag else "")


def label_plates(boxes: list[Rect], sizes: list[tuple[int, int]],
                 frame: tuple[int, int]) -> list[Rect]:
    """Where each die's label goes: above its box, else below, else inside its top, else
    beside — the first place within the frame that no earlier label covers (above it, moved
    into the frame, if none is free)."""
    width, height = frame
    placed: list[Rect] = []
    for (x0, y0, x1, y1), (tw, th) in zip(boxes, sizes, strict=True):
        left = min(max(0, x0), max(0, width - tw))
        tries = [(left, y0 - th), (left, y1), (left, y0), (x1, y0), (x0 - tw, y0)]
        chosen: Rect | None = None
        for px, py in tries:
            rect = (px, py, px + tw, py + th)
            inside = px >= 0 and py >= 0 and px + tw <= width and py + th <= height
            if inside and not any(overlaps(rect, other) for other in placed):
                chosen = rect
                break
        if chosen is None:
            py = min(max(0, y0 - th), max(0, height - th))
            chosen = (left, py, left + tw, py + th)
        placed.append(chosen)
    return placed


def overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
