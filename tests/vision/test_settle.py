"""SettleDetector on synthetic lores sequences drawn with OpenCV: one read per throw, none
for noise, light drift or a hand over the table, a nudge after settling."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import cv2
import numpy as np
import pytest

from vision.settle import MOVING, NUDGED, SETTLED, SettleConfig, SettleDetector, area_mask

FPS = 12.0
W, H = 320, 240
Pos = tuple[float, float]


class Table:
    """A textured table with square dice, drawn with sensor noise (seeded)."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        base = rng.normal(120, 25, (H // 8, W // 8)).astype(np.float32)
        self.background = cv2.resize(base, (W, H), interpolation=cv2.INTER_CUBIC)
        self.rng = np.random.default_rng([seed, 1])

    def frame(self, dice: Sequence[Pos] = (), hand: Pos | None = None,
              light: float = 0.0, noise: float = 2.0) -> np.ndarray:
        img = self.background.copy()
        for x, y in dice:
            cv2.rectangle(img, (int(x) - 7, int(y) - 7), (int(x) + 7, int(y) + 7), 200, -1)
            cv2.circle(img, (int(x), int(y)), 2, 30, -1)
        if hand is not None:
            cv2.ellipse(img, (int(hand[0]), int(hand[1])), (45, 60), 20, 0, 360, 170, -1)
        grain = np.asarray(self.rng.normal(0, noise, img.shape), np.float32)
        img = img + grain + np.float32(light)
        return np.clip(img, 0, 255).astype(np.uint8)


DICE_A = [(100.0, 100.0), (140.0, 110.0), (180.0, 95.0), (120.0, 150.0), (170.0, 150.0)]
DICE_B = [(90.0, 60.0), (210.0, 80.0), (150.0, 120.0), (100.0, 180.0), (230.0, 170.0)]


def tumble(rng: np.random.Generator, n: int) -> list[list[Pos]]:
    """Dice flying about for n frames."""
    return [[(float(rng.uniform(40, 280)), float(rng.uniform(40, 200))) for _ in range(5)]
            for _ in range(n)]


def run(detector: SettleDetector, frames: Iterable[np.ndarray], t0: float = 0.0
        ) -> list[tuple[str, float]]:
    events = []
    for i, frame in enumerate(frames):
        event = detector.update(frame, t0 + i / FPS)
        if event is not None:
            events.append((event.kind, event.time))
    return events


def kinds(events: list[tuple[str, float]]) -> list[str]:
    return [k for k, _ in events]


def test_a_throw_is_read_exactly_once_after_it_has_been_still_long_enough() -> None:
    table = Table()
    rng = np.random.default_rng(1)
    frames = [table.frame(DICE_A) for _ in range(12)]
    frames += [table.frame(d, hand=(60.0 + 10 * i, 120.0) if i < 5 else None)
               for i, d in enumerate(tumble(rng, 12))]
    frames += [table.frame(DICE_B) for _ in range(30)]
    events = run(SettleDetector(SettleConfig(settle_seconds=0.6)), frames)
    assert kinds(events) == [MOVING, SETTLED]
    last_motion = 24 / FPS  # the first still frame after the tumble
    assert last_motion + 0.6 - 1e-6 <= events[1][1] <= last_motion + 0.6 + 2 / FPS


def test_a_pause_shorter_than_the_settle_time_does_not_read() -> None:
    table = Table()
    rng = np.random.default_rng(2)
    frames = [table.frame(DICE_A) for _ in range(6)]
    frames += [table.frame(d) for d in tumble(rng, 6)]
    frames += [table.frame(DICE_B) for _ in range(4)]  # 0.33 s still: not yet
    frames += [table.frame(d) for d in tumble(rng, 6)]
    frames += [table.frame(DICE_B[::-1][:4]) for _ in range(20)]
    assert kinds(run(SettleDetector(), frames)) == [MOVING, SETTLED]


def test_sensor_noise_alone_gives_no_event() -> None:
    table = Table(3)
    frames = [table.frame(DICE_A, noise=4.0) for _ in range(120)]
    assert run(SettleDetector(), frames) == []


def test_slow_light_drift_and_a_lamp_switched_on_give_no_event() -> None:
    table = Table(4)
    frames = [table.frame(DICE_A, light=0.15 * i) for i in range(200)]  # +30 gray levels
    frames += [table.frame(DICE_A, light=30 + 20) for _ in range(30)]  # a sudden step
    assert run(SettleDetector(), frames) == []


def test_a_hand_over_the_table_is_never_read_and_the_throw_after_it_is() -> None:
    table = Table(5)
    rng = np.random.default_rng(6)
    frames = [table.frame(DICE_A) for _ in range(6)]
    # a hand hovering (it trembles) for 5 s over the dice
    frames += [table.frame(DICE_A, hand=(150.0 + rng.normal(0, 2), 120.0 + rng.normal(0, 2)))
               for _ in range(60)]
    frames += [table.frame(d) for d in tumble(rng, 10)]
    frames += [table.frame(DICE_B) for _ in range(20)]
    events = run(SettleDetector(), frames)
    assert kinds(events) == [MOVING, SETTLED]
    assert events[1][1] > 66 / FPS


def test_a_hand_resting_still_in_view_blocks_the_read_for_a_while() -> None:
    table = Table(7)
    rng = np.random.default_rng(8)
    config = SettleConfig(blocked_seconds=3.0)
    frames = [table.frame(DICE_A) for _ in range(6)]
    frames += [table.frame(d) for d in tumble(rng, 6)]
    frames += [table.frame(DICE_B, hand=(150.0, 120.0)) for _ in range(24)]  # 2 s: blocked
    assert kinds(run(SettleDetector(config), frames)) == [MOVING]
    frames += [table.frame(DICE_B, hand=(150.0, 120.0)) for _ in range(24)]  # 4 s: read
    assert kinds(run(SettleDetector(config), frames)) == [MOVING, SETTLED]


def test_a_hand_that_comes_and_goes_without_touching_anything_is_quiet() -> None:
    table = Table(9)
    frames = [table.frame(DICE_A) for _ in range(6)]
    frames += [table.frame(DICE_A, hand=(40.0 + 25 * i, 120.0)) for i in range(10)]
    frames += [table.frame(DICE_A) for _ in range(15)]
    assert kinds(run(SettleDetector(), frames)) == [MOVING, "quiet"]


def test_a_nudged_die_after_settling_is_a_nudge_not_a_new_throw() -> None:
    table = Table(10)
    rng = np.random.default_rng(11)
    frames = [table.frame(DICE_A) for _ in range(6)]
    frames += [table.frame(d) for d in tumble(rng, 10)]
    frames += [table.frame(DICE_B) for _ in range(15)]
    nudged = list(DICE_B)
    for dx in (3.0, 6.0, 8.0):  # pushed 8 px in three frames
        nudged[2] = (DICE_B[2][0] + dx, DICE_B[2][1] + dx / 2)
        frames.append(table.frame(nudged))
    frames += [table.frame(nudged) for _ in range(15)]
    frames += [table.frame(d, hand=(200.0, 100.0)) for d in tumble(rng, 10)]  # rethrow
    frames += [table.frame(DICE_A) for _ in range(15)]
    events = run(SettleDetector(), frames)
    assert kinds(events) == [MOVING, SETTLED, MOVING, NUDGED, MOVING, SETTLED]


def test_a_die_creeping_too_slowly_for_frame_differences_is_still_noticed() -> None:
    table = Table(12)
    rng = np.random.default_rng(13)
    frames = [table.frame(DICE_A) for _ in range(6)]
    frames += [table.frame(d) for d in tumble(rng, 8)]
    frames += [table.frame(DICE_B) for _ in range(12)]
    creeping = list(DICE_B)
    for i in range(40):  # a quarter pixel per frame
        creeping[0] = (DICE_B[0][0] + 0.25 * i, DICE_B[0][1])
        frames.append(table.frame(creeping))
    frames += [table.frame(creeping) for _ in range(12)]
    events = run(SettleDetector(), frames)
    assert kinds(events)[:2] == [MOVING, SETTLED]
    assert NUDGED in kinds(events[2:])


def test_motion_outside_the_watched_area_is_ignored() -> None:
    table = Table(14)
    # the throw area is the left half of a 640x480 main picture; a hand moves on the right
    detector = SettleDetector.for_table(0.6, (W, H), (640, 480),
                                        [((0, 0), (300, 0), (300, 480), (0, 480))])
    frames = [table.frame(DICE_A[:1]) for _ in range(6)]
    frames += [table.frame(DICE_A[:1], hand=(250.0 + 3 * i, 60.0 + 8 * i)) for i in range(20)]
    frames += [table.frame(DICE_A[:1]) for _ in range(15)]
    assert run(detector, frames) == []


def test_area_mask_scales_main_coordinates_to_lores() -> None:
    mask = area_mask((240, 320), [((0, 0), (820, 0), (820, 1232), (0, 1232))],
                     (320 / 1640, 240 / 1232))
    assert mask is not None
    assert mask[120, 100] == 255 and mask[120, 300] == 0
    assert area_mask((240, 320), []) is None


@pytest.mark.parametrize("settle", [0.3, 1.0])
def test_the_settle_time_is_honoured(settle: float) -> None:
    table = Table(15)
    rng = np.random.default_rng(16)
    frames = [table.frame(DICE_A) for _ in range(4)]
    frames += [table.frame(d) for d in tumble(rng, 6)]
    frames += [table.frame(DICE_B) for _ in range(24)]
    events = run(SettleDetector(SettleConfig(settle_seconds=settle)), frames)
    assert kinds(events) == [MOVING, SETTLED]
    assert abs(events[1][1] - (10 / FPS + settle)) <= 1.01 / FPS
