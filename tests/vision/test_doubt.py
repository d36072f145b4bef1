"""The judge's doubt: fitted, stored, and asking about a die the judge would trust."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from vision.classifier import FACES, QUALITY, FaceScores
from vision.detector import Candidate
from vision.doubt import FEATURES, Doubt, DoubtError, doubt_features
from vision.judge import Judge, body_along_the_view
from vision.reader import Reader

SCORE = FEATURES.index("detector_score")


def test_the_fit_finds_what_makes_a_trusted_reading_wrong() -> None:
    """Readings the detector was unsure of are wrong more often; the other signals say
    nothing here. The fit must find that, and ask about the unsure ones."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20000, len(FEATURES)))
    truth = np.zeros(len(FEATURES))
    truth[SCORE] = -2.0
    wrong = rng.random(len(x)) < 1 / (1 + np.exp(-(x @ truth - 4.0)))
    doubt = Doubt.fit(x, wrong, ask_above=0.1, l2=0.0)
    assert doubt.weights[SCORE] == pytest.approx(-2.0, abs=0.3)
    assert max(abs(w) for i, w in enumerate(doubt.weights) if i != SCORE) < 0.3
    assert doubt.bias == pytest.approx(-4.0, abs=0.4)
    asked = doubt.probability(x) >= doubt.ask_above
    assert wrong[asked].mean() > 5 * wrong[~asked].mean()
    shrunk = Doubt.fit(x, wrong, ask_above=0.1)  # the default L2 pulls weights towards 0
    assert doubt.weights[SCORE] < shrunk.weights[SCORE] < 0


def test_a_doubt_is_stored_and_a_broken_file_is_a_one_line_error(tmp_path: Path) -> None:
    doubt = Doubt(tuple(float(i) for i in range(len(FEATURES))), -1.5, 0.03)
    path = tmp_path / "doubt.json"
    doubt.save(path, note="test")
    assert Doubt.load(path) == doubt
    assert Doubt.load(tmp_path / "none.json") is None  # no file: the judge trusts as before
    path.write_text('{"features": ["confidence"], "weights": [1], "bias": 0, "ask_above": 1}')
    with pytest.raises(DoubtError, match="run `make models`"):
        Doubt.load(path)
    path.write_text("{not json")
    with pytest.raises(DoubtError) as err:
        Doubt.load(path)
    assert "\n" not in str(err.value)


def test_features_put_a_find_sized_unlike_the_others_apart() -> None:
    quality = np.array([[0.97, 0.01, 0.01, 0.01, 0.0]] * 3)
    rows = doubt_features(np.array([0.99, 0.99, 0.99]), quality, np.array([0.8] * 3),
                          np.array([40.0, 40.0, 80.0]), np.array([40.0, 40.0, 80.0]),
                          np.array([0.2, 0.2, 0.0]))
    assert rows.shape == (3, len(FEATURES))
    off = FEATURES.index("size_off")
    assert rows[0, off] == 0 and rows[2, off] == pytest.approx(np.log(2))
    assert rows[:, FEATURES.index("body_along")].tolist() == [0.2, 0.2, 0.0]


def test_a_bodys_way_along_the_view_is_measured_from_the_other_finds() -> None:
    """Seen at an angle, the top faces' bodies lie below them (down the picture); a side
    face found as a die has its body short of that, or above it."""
    tops = [Candidate(100.0 * k, 100, (0, 0, 1, 1), 0.9, body=(0.03 * (k - 1), 0.25))
            for k in range(1, 4)]
    side = Candidate(400, 100, (0, 0, 1, 1), 0.9, body=(0.0, -0.05))
    along = body_along_the_view([*tops, side, Candidate(500, 100, (0, 0, 1, 1), 0.9)])
    assert along[:3] == pytest.approx([0.25, 0.25, 0.25], abs=0.02)
    assert along[3] == pytest.approx(-0.05, abs=0.01)
    assert along[4] == 0.0  # a find without a body offset (a detector without its head)
    assert body_along_the_view([Candidate(1, 1, (0, 0, 1, 1), 0.9)]).tolist() == [0.0]
    assert body_along_the_view([]).shape == (0,)


class OneFace:
    def classify(self, crops: list[np.ndarray], turned: object = None) -> FaceScores:
        value = np.full((len(crops), len(FACES)), 0.001 / (len(FACES) - 1))
        value[:, FACES.index(4)] = 0.999
        quality = np.zeros((len(crops), len(QUALITY)))
        quality[:, 0] = 1.0
        return FaceScores(value, quality)


class TwoFinds:
    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        return [Candidate(300, 100, (280, 80, 320, 120), 0.35),  # the detector doubts it
                Candidate(100, 100, (80, 80, 120, 120), 0.9)]


def test_the_judge_asks_about_a_confident_reading_it_doubts() -> None:
    frame = np.full((480, 640, 3), 90, np.uint8)
    weights = [0.0] * len(FEATURES)
    weights[SCORE] = -10.0
    doubt = Doubt(tuple(weights), 2.0, ask_above=0.5)  # doubtful below a score of 0.2
    trusting = Reader(TwoFinds(), OneFace())
    assert [d.flag for d in trusting.read(frame).dice] == [None, None]
    doubting = Reader(TwoFinds(), OneFace(), judge=Judge(doubt=doubt))
    assert [d.flag for d in doubting.read(frame).dice] == [None, None]  # 0.35 is not below 0.2
    doubting.judge = dataclasses.replace(doubting.judge, doubt=dataclasses.replace(
        doubt, bias=4.0))  # now doubtful below 0.4
    reading, evidence = doubting.judged(frame)
    assert [(d.x, d.flag) for d in reading.dice] == [(100, None), (300, "unreadable")]
    assert [d.value for d in reading.dice] == [4, 4]  # the value stays: the table asks
    assert evidence[:, SCORE].tolist() == [0.9, 0.35]  # in the reading's order


def test_the_doubt_asks_about_a_reading_by_a_taught_sets_embeddings_from_its_own_chance(
        ) -> None:
    """The doubt is fitted on the classifier's readings; a taught set's embeddings read
    less surely, so the judge asks about their readings only from `embeddings_ask_above`."""
    finds = TwoFinds().detect(np.zeros((1, 1, 3), np.uint8))
    scores = OneFace().classify([np.zeros((64, 64, 3), np.uint8)] * 2)
    weights = [0.0] * len(FEATURES)
    weights[SCORE] = -10.0
    doubt = Doubt(tuple(weights), 0.5, ask_above=0.02)  # the score 0.35: a chance of 4.7 %
    judge = Judge(doubt=doubt, embeddings_ask_above=0.05)

    def flags(by_embeddings: bool) -> list[str | None]:
        judged = judge.judged(640, 480, finds, scores, [4, 4], np.array([0.99, 0.99]),
                              np.zeros(2, bool), taught=True, by_embeddings=by_embeddings)
        return [d.flag for d in judged.dice]

    assert flags(by_embeddings=False) == [None, "unreadable"]  # x 100, then 300
    assert flags(by_embeddings=True) == [None, None]
    judge = dataclasses.replace(judge, embeddings_ask_above=0.04)
    assert flags(by_embeddings=True) == [None, "unreadable"]


class FourTopsAndASide:
    """Four top faces seen at an angle, their bodies below them, and a side face the
    detector is sure of whose body lies hardly along the view (not far enough the other
    way for the judge's side-face checks)."""

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        tops = [Candidate(100.0 + 100 * k, 200, (80.0 + 100 * k, 180, 120.0 + 100 * k, 220),
                          0.9, body=(0.0, 0.15)) for k in range(4)]
        return [*tops, Candidate(300, 320, (280, 300, 320, 340), 0.9, body=(0.0, 0.02))]


def test_the_judge_asks_about_a_find_whose_body_lies_short_of_the_view() -> None:
    frame = np.full((480, 640, 3), 90, np.uint8)
    weights = [0.0] * len(FEATURES)
    weights[FEATURES.index("body_along")] = -10.0
    doubt = Doubt(tuple(weights), 1.0, ask_above=0.5)  # doubtful short of 0.1 die sizes
    trusting = Reader(FourTopsAndASide(), OneFace())
    assert [d.flag for d in trusting.read(frame).dice] == [None] * 5
    doubting = Reader(FourTopsAndASide(), OneFace(), judge=Judge(doubt=doubt))
    reading, evidence = doubting.judged(frame)
    flags = {(d.x, d.y): d.flag for d in reading.dice}
    assert flags.pop((300, 320)) == "unreadable"
    assert set(flags.values()) == {None}
    along = dict(zip([(d.x, d.y) for d in reading.dice],
                     evidence[:, FEATURES.index("body_along")].tolist(), strict=True))
    assert along[(300, 320)] == pytest.approx(0.02, abs=0.005)
    assert along[(100, 200)] == pytest.approx(0.15, abs=0.02)
