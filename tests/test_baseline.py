"""The classical blob baseline on frames drawn here with cv2, and on broken input."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

from vision.baseline import BaselineParams, BlobBaselineReader
from vision.reading import Reading

#: pip positions in units of the face size, centre at (0, 0)
LAYOUT: dict[int, list[tuple[float, float]]] = {
    1: [(0, 0)],
    2: [(-1, -1), (1, 1)],
    3: [(-1, -1), (0, 0), (1, 1)],
    4: [(-1, -1), (1, -1), (-1, 1), (1, 1)],
    5: [(-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)],
    6: [(-1, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (1, 1)],
}
SPOTS = [(110, 110), (320, 100), (530, 120), (120, 360), (330, 370), (520, 350)]


def draw_dice(values: list[int], face: int = 64, pip_r: int = 6, offset: float = 0.23,
              die_bgr: tuple[int, int, int] = (235, 235, 235),
              pip_bgr: tuple[int, int, int] = (25, 25, 25),
              table_bgr: tuple[int, int, int] = (70, 90, 110),
              size: tuple[int, int] = (480, 640), seed: int = 0,
              angles: list[float] | None = None) -> np.ndarray:
    """A frame with square dice (optionally turned) at fixed spots; mild noise."""
    rng = np.random.default_rng(seed)
    img = np.zeros((*size, 3), np.uint8)
    img[:] = table_bgr
    for k, v in enumerate(values):
        cx, cy = SPOTS[k]
        a = np.deg2rad(angles[k] if angles else 0.0)
        rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * face / 2 @ rot.T
        cv2.fillConvexPoly(img, (corners + (cx, cy)).round().astype(np.int32), die_bgr,
                           cv2.LINE_AA)
        for px, py in LAYOUT[v]:
            q = np.array([px, py]) * offset * face @ rot.T + (cx, cy)
            cv2.circle(img, (int(round(q[0])), int(round(q[1]))), pip_r, pip_bgr, -1,
                       cv2.LINE_AA)
    noise = rng.normal(0, 3, img.shape)
    return np.clip(img + noise, 0, 255).astype(np.uint8)


def read_values(reading: Reading) -> list[int | str | None]:
    by_spot = sorted(reading.dice, key=lambda d: min(
        range(len(SPOTS)), key=lambda k: (SPOTS[k][0] - d.x) ** 2 + (SPOTS[k][1] - d.y) ** 2))
    return [d.value for d in by_spot]


def test_reads_all_six_values() -> None:
    values = [1, 2, 3, 4, 5, 6]
    reading = BlobBaselineReader().read(draw_dice(values))
    assert read_values(reading) == values
    for d, (x, y) in zip(sorted(reading.dice, key=lambda d: (d.y > 240, d.x)), SPOTS,
                         strict=True):
        assert abs(d.x - x) < 3 and abs(d.y - y) < 3
        x0, y0, x1, y1 = d.box
        assert x0 < x < x1 and y0 < y < y1
        assert 0.0 <= d.confidence <= 1.0
        assert d.flag is None


@pytest.mark.parametrize("values", [[6, 5, 4, 3, 2], [2, 2, 3, 3, 1], [5, 5, 5, 5, 5]])
def test_reads_turned_dice(values: list[int]) -> None:
    frame = draw_dice(values, angles=[0, 20, 35, 45, 70], seed=len(values) + values[0])
    reading = BlobBaselineReader().read(frame)
    assert read_values(reading) == values
    assert min(d.confidence for d in reading.dice) >= 0.9  # clean drawn dice: confident


def test_scales_with_frame_size() -> None:
    small = draw_dice([3, 4, 6])
    big = cv2.resize(small, None, fx=2, fy=2, interpolation=cv2.INTER_LINEAR)
    reading = BlobBaselineReader().read(big)
    assert sorted(d.value for d in reading.dice) == [3, 4, 6]


def test_light_pips_on_dark_dice() -> None:
    frame = draw_dice([2, 5, 6], die_bgr=(30, 30, 30), pip_bgr=(240, 240, 240),
                      table_bgr=(150, 160, 170))
    assert read_values(BlobBaselineReader().read(frame)) == [2, 5, 6]
    off = BlobBaselineReader(BaselineParams(light_pips=False)).read(frame)
    assert off.dice == ()


def test_cut_die_is_flagged() -> None:
    frame = draw_dice([4])
    shifted = np.roll(frame, (-80, -80), axis=(0, 1))  # die centre now at (30, 30)
    reading = BlobBaselineReader().read(shifted)
    assert [d.flag for d in reading.dice] == ["cut"]


@pytest.mark.parametrize("frame", [
    np.zeros((0, 0, 3), np.uint8),
    np.zeros((480, 640, 3), np.uint8),
    np.full((480, 640, 3), 255, np.uint8),
    np.full((8, 8, 3), 128, np.uint8),
    np.zeros((480, 640, 5), np.uint8),
    np.full((120, 160), np.nan),
])
def test_empty_or_broken_frames_give_no_dice(frame: np.ndarray) -> None:
    assert BlobBaselineReader().read(frame) == Reading(dice=())


def test_none_and_odd_inputs_do_not_crash() -> None:
    reader = BlobBaselineReader()
    assert reader.read(None).dice == ()  # type: ignore[arg-type]
    gray = cv2.cvtColor(draw_dice([5]), cv2.COLOR_BGR2GRAY)
    assert [d.value for d in reader.read(gray).dice] == [5]
    assert [d.value for d in reader.read(gray[:, :, None]).dice] == [5]
    bgra = cv2.cvtColor(draw_dice([3]), cv2.COLOR_BGR2BGRA)
    assert [d.value for d in reader.read(bgra).dice] == [3]
    as_float = draw_dice([2]).astype(np.float32) / 255.0
    assert [d.value for d in reader.read(as_float).dice] == [2]


def test_noise_frame_is_fast_and_not_confident() -> None:
    rng = np.random.default_rng(1)
    frame = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    t0 = time.perf_counter()
    reading = BlobBaselineReader().read(frame)
    assert time.perf_counter() - t0 < 2.0
    assert len(reading.dice) <= 3
