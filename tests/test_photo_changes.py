"""`make eval`'s changed real photos (models/evaluate.py): the labels follow the picture."""

from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

from evaluate import PHOTO_CHANGES, changed_photos  # noqa: E402

from vision.reading import DieLabel, SceneLabel  # noqa: E402


def photo_with_a_die(tmp_path: Path) -> tuple[Path, SceneLabel]:
    """A grey 160×120 photo with one white square "die" whose centre is marked black."""
    frame = np.full((120, 160, 3), 90, np.uint8)
    frame[20:40, 100:120] = 255
    frame[29:31, 109:111] = 0
    path = tmp_path / "one.png"
    cv2.imwrite(str(path), frame)
    return path, SceneLabel("one.png", 160, 120,
                            (DieLabel(3, (100.0, 20.0, 120.0, 40.0), (110.0, 30.0)),))


def test_every_change_keeps_the_label_on_the_die(tmp_path: Path) -> None:
    samples, change_of = changed_photos([photo_with_a_die(tmp_path)])
    assert [change_of(label) for _, label in samples] == list(PHOTO_CHANGES)
    for frame, label in samples:
        assert frame.shape[:2] == (label.height, label.width)
        die = label.dice[0]
        x, y = (round(v) for v in die.center)
        x0, y0, x1, y1 = die.box
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        # the centre mark (dark) lies at the labelled centre, inside the labelled box, and
        # the die (bright) fills most of the box
        assert x0 < x < x1 and y0 < y < y1, change_of(label)
        assert grey[y, x] < grey[int(y0 + 0.25 * (y1 - y0)), int(x0 + 0.25 * (x1 - x0))]
        assert die.value == 3 and die.flag is None


def test_turned_and_scaled_labels_are_exact(tmp_path: Path) -> None:
    samples, change_of = changed_photos([photo_with_a_die(tmp_path)])
    by_name = {change_of(label): label for _, label in samples}
    assert by_name["turned 180°"].dice[0].center == (50.0, 90.0)
    assert by_name["turned 180°"].dice[0].box == (40.0, 80.0, 60.0, 100.0)
    # a quarter clockwise: (x, y) → (120 − y, x) in a 120×160 picture
    assert by_name["turned 90°"].dice[0].center == (90.0, 110.0)
    assert by_name["turned 90°"].dice[0].box == (80.0, 100.0, 100.0, 120.0)
    assert (by_name["turned 90°"].width, by_name["turned 90°"].height) == (120, 160)
    assert by_name["halved"].dice[0].center == (55.0, 15.0)
    assert (by_name["doubled"].width, by_name["doubled"].height) == (320, 240)


def test_a_close_up_crops_to_the_dice_at_800_pixels(tmp_path: Path) -> None:
    samples, change_of = changed_photos([photo_with_a_die(tmp_path)])
    close = next(label for _, label in samples if change_of(label) == "close-up")
    # the 20 px die and a third of it around: 93..126 × 13..46, scaled by 800 / 33
    assert (close.width, close.height) == (800, 800)
    assert close.dice[0].center == pytest.approx((17 * 800 / 33, 17 * 800 / 33))


def test_farther_halves_the_die_and_shows_it_once(tmp_path: Path) -> None:
    samples, change_of = changed_photos([photo_with_a_die(tmp_path)])
    frame, far = next((f, label) for f, label in samples if change_of(label) == "farther")
    assert (far.width, far.height) == (160, 120)
    assert far.dice[0].center == (95.0, 45.0) and far.dice[0].box == (90.0, 40.0, 100.0, 50.0)
    # the desk mirrored around the photo has the die painted out: one die, not four
    bright = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) > 170
    assert bright[40:50, 90:100].mean() > 0.6
    assert bright.sum() <= 1.2 * bright[40:50, 90:100].sum()


def test_turned_30_degrees_moves_the_die_and_drops_those_turned_out(tmp_path: Path) -> None:
    path, label = photo_with_a_die(tmp_path)
    corner = DieLabel(5, (148.0, 0.0, 160.0, 12.0), (154.0, 6.0))
    samples, change_of = changed_photos([(path, SceneLabel(
        label.image, label.width, label.height, (*label.dice, corner)))])
    frame, turned = next((f, lb) for f, lb in samples if change_of(lb) == "turned 30°")
    # (110, 30) is (30, −30) from the centre (80, 60): turned 30° counter-clockwise as the
    # picture shows it, (30 cos 30° − 30 sin 30°, −30 sin 30° − 30 cos 30°) from the centre
    c, s = np.cos(np.radians(30)), np.sin(np.radians(30))
    assert (turned.width, turned.height) == (160, 120)
    assert turned.dice[0].center == pytest.approx((80 + 30 * c - 30 * s, 60 - 30 * s - 30 * c))
    # the corner die left the picture: not labelled, and not drawn in the bared corners
    assert [d.value for d in turned.dice] == [3]
    bright = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) > 170
    x0, y0, x1, y1 = (int(v) for v in turned.dice[0].box)
    assert bright.sum() <= 1.2 * bright[y0:y1 + 1, x0:x1 + 1].sum()
