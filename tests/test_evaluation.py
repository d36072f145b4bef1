"""Metrics: hand-made readings against hand-made labels."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.evaluation import (
    EvalResult,
    by_legibility,
    evaluate,
    evaluate_by,
    format_table,
    hungarian,
    match,
    score_image,
    wilson_interval,
)
from vision.reading import DieLabel, DieReading, Reading, SceneLabel


def lab(value: int | str, x: float, y: float, size: float = 60,
        flag: str | None = None) -> DieLabel:
    return DieLabel(value=value, box=(x - size / 2, y - size / 2, x + size / 2, y + size / 2),
                    center=(x, y), flag=flag)


def pred(value: int | str | None, x: float, y: float, conf: float = 0.99,
         flag: str | None = None) -> DieReading:
    return DieReading(value=value, confidence=conf, x=x, y=y,
                      box=(int(x) - 30, int(y) - 30, int(x) + 30, int(y) + 30), flag=flag)


SCENE = SceneLabel(image="s.jpg", width=640, height=480, dice=(
    lab(1, 100, 100), lab(2, 250, 100), lab(3, 400, 100), lab(4, 100, 300), lab(5, 250, 300)))


def test_all_right() -> None:
    reading = Reading(dice=tuple(pred(d.value, d.center[0] + 5, d.center[1] - 4)
                                 for d in SCENE.dice))
    s = score_image(reading, SCENE)
    assert (s.labelled, s.found, s.correct, s.missed, s.extra) == (5, 5, 5, 0, 0)
    assert s.all_right and s.silent_errors == 0 and s.asked == 0


def test_wrong_missed_extra_silent_and_flagged() -> None:
    reading = Reading(dice=(
        pred(1, 102, 98),                   # correct
        pred(6, 250, 100),                  # wrong value, confident, unflagged -> silent
        pred(2, 400, 100, conf=0.5, flag="unreadable"),  # wrong value, unsure -> caught
        pred(3, 100, 300, flag="tilted"),   # wrong value, flagged -> caught
        # label 5 at (250, 300) missed
        pred(4, 550, 400),                  # extra, confident -> silent
        pred(4, 550, 200, conf=0.3, flag="unreadable"),  # extra, unsure -> caught
    ))
    s = score_image(reading, SCENE)
    assert (s.found, s.correct, s.wrong_value, s.missed, s.extra) == (4, 1, 3, 1, 2)
    assert s.silent_errors == 2 and s.caught_errors == 3
    assert s.asked == 3 and not s.all_right
    r = EvalResult()
    r.add(s, seconds=0.02)
    assert r.accuracy == pytest.approx(1 / 5)
    assert r.silent_rate == pytest.approx(2 / 5)
    assert r.mean_confidence == pytest.approx((0.99 * 4 + 0.5 + 0.3) / 6)
    assert r.ms_per_frame == pytest.approx(20)
    assert r.confusion[(2, 6)] == 1 and r.confusion[(1, 1)] == 1


def test_silent_errors_the_count_of_dice_would_not_catch() -> None:
    """The table asks when it sees more or fewer dice than lie there; the silent errors that
    remain are those of images whose count is right."""
    wrong = Reading(dice=(pred(6, 100, 100), *(pred(d.value, *d.center) for d in SCENE.dice[1:])))
    extra = Reading(dice=(*(pred(d.value, *d.center) for d in SCENE.dice),
                          pred(4, 550, 400)))  # six seen, five there: the table asks
    # five trusted, one of them wrong, and a find the reader asks about: the table leaves
    # the find out (dice_of_the_throw) and takes the wrong die
    beside = Reading(dice=(*wrong.dice, pred(None, 550, 400, flag="unreadable")))
    r = EvalResult()
    for reading in (wrong, extra, beside):
        r.add(score_image(reading, SCENE))
    assert r.silent_errors == 3 and r.silent_count_right == 2
    assert r.silent_count_right_rate == pytest.approx(2 / 15)
    # the table took two of the throws as read (one die wrong in each), asked about one
    assert (r.images_taken, r.images_taken_wrong) == (2, 2)
    right = Reading(dice=(*(pred(d.value, *d.center) for d in SCENE.dice),
                          pred(4, 550, 400, flag="cut")))
    tilted = Reading(dice=tuple(pred(d.value, *d.center, flag="tilted" if d.value == 3 else None)
                                for d in SCENE.dice))
    for reading in (right, tilted):
        r.add(score_image(reading, SCENE))
    assert (r.images_taken, r.images_taken_wrong, r.images) == (3, 2, 5)
    assert r.taken_rate == pytest.approx(3 / 5)
    assert "taken without asking" in format_table({"ours | x": r})
    assert "count right =" in format_table({"ours | x": r})
    # further tables of one report leave the legend out, not the row
    bare = format_table({"ours | x": r}, legend=False)
    assert "of them, count right" in bare and "count right =" not in bare


def test_the_flag_decides_silent_as_at_the_table() -> None:
    """The table asks about a die that is flagged or has no value (vision.watch), whatever
    its confidence: the reader flags what it does not trust."""
    label = SceneLabel("t.jpg", 640, 480, (lab(1, 100, 100),))
    unflagged = Reading(dice=(pred(6, 100, 100, conf=0.5),))
    flagged = Reading(dice=(pred(6, 100, 100, conf=0.99, flag="unreadable"),))
    assert score_image(unflagged, label).silent_errors == 1
    assert score_image(flagged, label).silent_errors == 0
    assert pred(None, 0, 0).asked and not pred(3, 0, 0, conf=0.5).asked


def test_unknown_value_counts_wrong_but_not_silent() -> None:
    label = SceneLabel("u.jpg", 640, 480, (lab(4, 100, 100), lab("duck", 300, 100)))
    s = score_image(Reading(dice=(pred(None, 100, 100), pred("duck", 300, 100))), label)
    assert (s.correct, s.wrong_value, s.silent_errors, s.caught_errors) == (1, 1, 0, 1)


def test_extra_reading_of_a_flagged_label() -> None:
    label = SceneLabel("f.jpg", 640, 480, (lab(2, 100, 100, flag="cut"),))
    s = score_image(Reading(dice=(pred(2, 100, 100, flag="cut"),)), label)
    assert s.correct == 1 and s.labelled_flagged == 1 and s.asked == 1


def test_matching_rules() -> None:
    tall = DieLabel(value=3, box=(0, 0, 40, 160), center=(20, 20))
    assert match([pred(3, 20, 150)], [tall]) == [(0, 0)]  # inside the box, far from centre
    square = lab(3, 100, 100, size=50)  # die size 50 -> radius 30
    assert match([pred(3, 100, 129)], [square]) == [(0, 0)]  # outside box, within radius
    assert match([pred(3, 100, 131)], [square]) == []
    # two readings on one die: one match, one extra
    s = score_image(Reading(dice=(pred(3, 98, 100), pred(3, 104, 100))),
                    SceneLabel("d.jpg", 640, 480, (square,)))
    assert (s.found, s.correct, s.extra, s.silent_errors) == (1, 1, 1, 1)


def test_matching_is_optimal_not_greedy() -> None:
    # greedy by distance would pair p0-l1 (distance 15) and leave p1 and l0 unmatched
    labels = [lab(1, 100, 100, size=80), lab(2, 160, 100, size=80)]  # match radius 48
    preds = [pred(1, 145, 100), pred(2, 205, 100)]
    assert sorted(match(preds, labels)) == [(0, 0), (1, 1)]


def test_hungarian_against_brute_force() -> None:
    import itertools
    rng = np.random.default_rng(3)
    for _ in range(50):
        n, m = (int(v) for v in rng.integers(1, 5, 2))
        cost = rng.random((n, m))
        pairs = hungarian(cost)
        k = min(n, m)
        best = min(sum(cost[i, j] for i, j in zip(rows, cols, strict=True))
                   for rows in itertools.combinations(range(n), k)
                   for cols in itertools.permutations(range(m), k))
        assert len(pairs) == k
        assert sum(cost[i, j] for i, j in pairs) == pytest.approx(best)


def test_empty_cases() -> None:
    empty = SceneLabel("e.jpg", 640, 480, ())
    s = score_image(Reading(dice=()), empty)
    assert s.all_right and s.labelled == 0
    s = score_image(Reading(dice=(pred(3, 10, 10),)), empty)
    assert s.extra == 1 and not s.all_right
    s = score_image(Reading(dice=()), SCENE)
    assert s.missed == 5 and s.correct == 0


class OracleReader:
    """Reads the label of the frame it is given (looked up by frame brightness)."""

    def __init__(self, labels: dict[int, SceneLabel], wrong: bool = False) -> None:
        self.labels, self.wrong = labels, wrong
        self.calls = 0

    def read(self, frame_bgr: np.ndarray) -> Reading:
        self.calls += 1
        label = self.labels[int(frame_bgr[0, 0, 0])]
        return Reading(dice=tuple(
            pred(6 if self.wrong else d.value, *d.center) for d in label.dice))


def test_evaluate_with_arrays_and_paths(tmp_path: Path) -> None:
    a = SceneLabel("a.png", 64, 48, (lab(1, 20, 20, 10), lab(2, 40, 20, 10)))
    b = SceneLabel("b.png", 64, 48, (lab(3, 30, 30, 10),))
    frame_a = np.full((48, 64, 3), 10, np.uint8)
    path_b = tmp_path / "b.png"
    cv2.imwrite(str(path_b), np.full((48, 64, 3), 20, np.uint8))
    samples = [(frame_a, a), (path_b, b)]
    good = evaluate(OracleReader({10: a, 20: b}), samples)
    assert (good.images, good.labelled, good.correct, good.images_all_right) == (2, 3, 3, 2)
    assert good.accuracy == 1.0 and len(good.frame_seconds) == 2
    bad = evaluate(OracleReader({10: a, 20: b}, wrong=True), samples)
    assert bad.accuracy == 0.0 and bad.silent_errors == 3 and bad.silent_rate == 1.0
    table = format_table({"oracle | tiny": good, "liar | tiny": bad})
    for text in ("oracle", "liar", "tiny", "per-die accuracy", "100.00%", "silent errors",
                 "3 (100.00%)"):
        assert text in table
    assert len({len(line) for line in table.splitlines()[:-3]}) == 1  # aligned; 3 notes below
    assert (good.images_taken, good.images_taken_wrong, bad.images_taken_wrong) == (2, 0, 2)
    with pytest.raises(OSError):
        evaluate(OracleReader({}), [(tmp_path / "missing.png", b)])


def test_evaluate_by_reads_each_image_once_and_splits_the_results() -> None:
    a = SceneLabel("a.png", 64, 48, (lab(1, 20, 20, 10), lab(2, 40, 20, 10)))
    b = SceneLabel("b.png", 64, 48, (lab(3, 30, 30, 10),))
    reader = OracleReader({10: a, 20: b}, wrong=True)
    samples = [(np.full((48, 64, 3), 10, np.uint8), a), (np.full((48, 64, 3), 20, np.uint8), b)]
    parts = evaluate_by(reader, samples, lambda label: "two" if len(label.dice) == 2 else "one")
    assert sorted(parts) == ["all", "one", "two"]
    assert (parts["all"].images, parts["all"].labelled, parts["all"].silent_errors) == (2, 3, 3)
    assert (parts["two"].images, parts["two"].labelled) == (1, 2)
    assert (parts["one"].images, parts["one"].labelled) == (1, 1)
    assert reader.calls == 2


def test_hard_dice_count_as_handled_when_right_asked_or_missed() -> None:
    """A cut, tilted, stacked or hidden die need not be read: asking about it is right."""
    label = SceneLabel("h.png", 200, 100, (
        lab(1, 20, 20, 10),
        DieLabel(2, (40, 10, 60, 30), (50, 20), "cut"),
        DieLabel(3, (80, 10, 100, 30), (90, 20), "tilted"),
        DieLabel(4, (120, 10, 140, 30), (130, 20), "unreadable"),
        DieLabel(5, (160, 10, 180, 30), (170, 20), "stacked"),
    ))
    reading = Reading((
        DieReading(1, 0.99, 20, 20, (15, 15, 25, 25)),           # readable, right
        DieReading(6, 0.99, 50, 20, (40, 10, 60, 30), "cut"),    # wrong but asked
        DieReading(3, 0.99, 90, 20, (80, 10, 100, 30)),          # right
        DieReading(6, 0.99, 170, 20, (160, 10, 180, 30)),        # wrong and silent
    ))                                                           # die 4 not found: caught
    s = score_image(reading, label)
    assert (s.readable, s.readable_correct, s.hard_handled) == (1, 1, 3)
    assert s.silent_errors == 1 and not s.all_right
    result = EvalResult()
    result.add(s)
    assert result.readable_accuracy == 1.0 and result.hard_rate == 0.75


def test_silent_interval_is_the_wilson_score_interval() -> None:
    # 0 of 100: the upper end is z² / (n + z²), not 0 as the normal approximation says
    assert wilson_interval(0, 100) == pytest.approx((0.0, 1.96**2 / (100 + 1.96**2)))
    assert wilson_interval(50, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    low, high = wilson_interval(3, 1311)
    assert low < 3 / 1311 < high and high == pytest.approx(0.0067, abs=1e-4)
    r = EvalResult(labelled=1311, silent_errors=3)
    assert r.silent_interval == (low, high)
    assert "0.08%–0.67%" in format_table({"ours | set": r})
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_dice_are_counted_by_their_legibility_right_wrong_or_missed() -> None:
    """Each readable die whose label carries its legibility counts in its band: right only
    when found and read right; flagged dice and dice without a legibility are left out."""
    def legible(value: int, x: float, d: float | None, flag: str | None = None) -> DieLabel:
        return DieLabel(value, (x - 10, 10, x + 10, 30), (x, 20), flag, legibility=d)

    label = SceneLabel("l.png", 400, 100, (
        legible(1, 20, 35.0),                      # read right
        legible(2, 60, 50.0),                      # read wrong
        legible(3, 100, 500.0),                    # not found
        legible(4, 140, 20.0, flag="unreadable"),  # flagged: not readable
        legible(5, 180, None),                     # no legibility (a real photo's die)
        legible(6, 220, 12.0),                     # below the first band
    ))
    reading = Reading((
        DieReading(1, 0.99, 20, 20, (10, 10, 30, 30)),
        DieReading(6, 0.99, 60, 20, (50, 10, 70, 30)),
        DieReading(5, 0.99, 180, 20, (170, 10, 190, 30)),
        DieReading(6, 0.99, 220, 20, (210, 10, 230, 30)),
    ))
    s = score_image(reading, label)
    assert s.legible_right == [(35.0, True), (50.0, False), (500.0, False), (12.0, True)]
    result = EvalResult()
    result.add(s)
    result.add(s)
    assert by_legibility(result, (30.0, 45.0, 100.0)) == [(2, 2), (0, 2), (0, 2)]
    assert by_legibility(EvalResult(), (30.0,)) == [(0, 0)]
