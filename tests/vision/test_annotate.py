from __future__ import annotations

import itertools

import numpy as np

from vision.annotate import annotate, label_plates, label_text, overlaps
from vision.reading import DieReading, Reading


def test_labels_of_touching_dice_do_not_cover_each_other() -> None:
    # five dice in a row, touching, and one more right under them
    boxes = [(100 + 60 * i, 200, 160 + 60 * i, 260) for i in range(5)] + [(130, 260, 190, 320)]
    plates = label_plates(boxes, [(110, 20)] * len(boxes), (800, 600))
    for a, b in itertools.combinations(plates, 2):
        assert not overlaps(a, b)
    for x0, y0, x1, y1 in plates:
        assert 0 <= x0 < x1 <= 800 and 0 <= y0 < y1 <= 600


def test_a_label_stays_in_the_frame() -> None:
    # a die at the top edge: below its box; one in the top right corner: still inside
    (top,) = label_plates([(300, 0, 360, 60)], [(110, 20)], (800, 600))
    assert top == (300, 60, 410, 80)
    (corner,) = label_plates([(760, 0, 800, 40)], [(110, 20)], (800, 600))
    assert corner[0] >= 0 and corner[2] <= 800 and corner[1] >= 0


def test_annotate_draws_on_a_copy() -> None:
    frame = np.full((600, 800, 3), 128, np.uint8)
    reading = Reading((DieReading(5, 0.99, 330.0, 230.0, (300, 200, 360, 260)),
                       DieReading(None, 0.31, 390.0, 230.0, (360, 200, 420, 260),
                                  "unreadable")), ())
    out = annotate(frame, reading)
    assert out.shape == frame.shape and (frame == 128).all()
    assert (out[200, 300:360] != 128).any()  # the first box's top edge
    assert label_text(reading.dice[1]) == "? 0.31 unreadable"
