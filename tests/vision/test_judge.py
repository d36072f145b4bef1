"""The judge on its own (vision/judge.py): finds and scores in, dice and flags out — no
detector, classifier or frame needed."""

from __future__ import annotations

import numpy as np

from vision.classifier import FACES, QUALITY, FaceScores
from vision.detector import Candidate
from vision.judge import Judge
from vision.reading import DieValue


def find(x: float, y: float, size: float = 40.0, score: float = 0.9) -> Candidate:
    half = size / 2
    return Candidate(x, y, (x - half, y - half, x + half, y + half), score)


def scores(rows: list[tuple[DieValue, float, dict[str, float]]]) -> FaceScores:
    """One row per find: its value, that value's probability and its quality
    probabilities ("ok" takes the rest)."""
    value = np.zeros((len(rows), len(FACES)))
    quality = np.zeros((len(rows), len(QUALITY)))
    for i, (face, p, q) in enumerate(rows):
        value[i, FACES.index(face)] = p
        value[i, FACES.index(6 if face != 6 else 5)] = 1.0 - p
        for k, v in q.items():
            quality[i, QUALITY.index(k)] = v
        quality[i, QUALITY.index("ok")] = 1.0 - sum(q.values())
    return FaceScores(value, quality)


def judged(finds: list[Candidate], rows: list[tuple[DieValue, float, dict[str, float]]],
           judge: Judge | None = None) -> list[tuple[DieValue | None, str | None, float]]:
    s = scores(rows)
    values = [face for face, _, _ in rows]
    probs = np.array([p for _, p, _ in rows])
    verdict = (judge or Judge()).judged(640, 480, finds, s, values, probs,
                                        np.zeros(len(finds), bool))
    assert verdict.evidence.shape[0] == len(verdict.dice)
    return [(d.value, d.flag, round(d.confidence, 3)) for d in verdict.dice]


def test_each_die_is_kept_flagged_or_dropped_by_its_own_evidence() -> None:
    finds = [find(400, 200), find(100, 200), find(250, 200), find(10, 300), find(550, 200),
             find(320, 380)]
    rows: list[tuple[DieValue, float, dict[str, float]]] = [
        (3, 0.99, {}),                      # trusted
        (5, 0.99, {"no_die": 0.9}),         # not a die: dropped
        (2, 0.7, {}),                       # read unsurely
        (4, 0.99, {}),                      # cut by the frame's left edge
        (1, 0.99, {"tilted": 0.8}),         # leaning
        (6, 0.99, {"stacked": 0.6}),        # on another die
    ]
    # left to right
    assert judged(finds, rows) == [(4, "cut", 0.99), (2, "unreadable", 0.7),
                                   (6, "stacked", 0.99), (3, None, 0.99),
                                   (1, "tilted", 0.99)]
    # kept where "no die" may be higher, as unsure as the classifier's "no die" makes it
    assert judged(finds, rows, Judge(drop_no_die=0.95))[1] == (5, "unreadable", 0.099)


def test_a_weak_find_on_a_strong_one_makes_both_doubtful_and_one_die_found_twice_shows_once(
        ) -> None:
    strong, weak = find(300, 200, score=0.9), find(304, 202, score=0.3)
    rows: list[tuple[DieValue, float, dict[str, float]]] = [(4, 0.99, {}), (4, 0.95, {})]
    assert judged([strong, weak], rows) == [(4, "stacked", 0.99)]
    assert judged([strong, weak], rows, Judge(same_place=None)) == [
        (4, "stacked", 0.99), (4, "stacked", 0.95)]
    apart = find(380, 200, score=0.3)  # two dice side by side: both trusted
    assert judged([strong, apart], rows) == [(4, None, 0.99), (4, None, 0.95)]


def test_side_faces_and_the_frame_edge_are_the_judges_to_say() -> None:
    judge = Judge()
    # seen at an angle: every top face's body lies below it, one find's lies above
    tops = [Candidate(x, 200, (x - 20, 180, x + 20, 240), 0.9, (0.0, 0.25))
            for x in (100, 200, 300, 400)]
    side = Candidate(250, 300, (230, 280, 270, 320), 0.5, (0.0, -0.2))
    assert judge.side_faces([*tops, side], 640, 480) == [False] * 4 + [True]
    assert judge.cut_by_edge(find(5, 200), 640, 480)
    assert not judge.cut_by_edge(find(320, 240), 640, 480)


def test_a_built_in_animal_is_trusted_from_less_confidence_than_a_pip_or_a_taught_face(
        ) -> None:
    judge = Judge()
    assert judge.trust_from("duck") == judge.animal_min_confidence < judge.min_confidence
    assert judge.trust_from(3) == judge.trust_from("duck", taught=True) == judge.min_confidence
    finds = [find(100, 200), find(300, 200)]
    rows: list[tuple[DieValue, float, dict[str, float]]] = [("lion", 0.87, {}), (4, 0.87, {})]
    s = scores(rows)
    values: list[DieValue] = ["lion", 4]
    probs = np.array([0.87, 0.87])
    flags = [d.flag for d in judge.judged(640, 480, finds, s, values, probs,
                                          np.zeros(2, bool)).dice]
    assert flags == [None, "unreadable"]
    taught = [d.flag for d in judge.judged(640, 480, finds, s, values, probs,
                                           np.zeros(2, bool), taught=True).dice]
    assert taught == ["unreadable", "unreadable"]


def test_a_taught_art_set_trusts_the_dice_it_recognises_from_less_confidence() -> None:
    judge = Judge()
    assert judge.trust_from("frog", taught=True, recognised=True) \
        == judge.recognised_min_confidence < judge.min_confidence
    assert judge.trust_from("frog", taught=True) == judge.min_confidence
    finds = [find(100, 200), find(300, 200)]
    s = scores([("lion", 0.87, {}), ("duck", 0.87, {})])
    values: list[DieValue] = ["frog", "owl"]
    probs = np.array([0.87, 0.87])
    recognised = np.array([True, False])  # the set knows the frog, not the owl
    by_embeddings = [d.flag for d in judge.judged(640, 480, finds, s, values, probs, recognised,
                                                  taught=True, by_embeddings=True).dice]
    assert by_embeddings == [None, "unreadable"]
    # a taught pip set is read by the classifier's count, not by its embeddings
    counted = [d.flag for d in judge.judged(640, 480, finds, s, values, probs, recognised,
                                            taught=True).dice]
    assert counted == ["unreadable", "unreadable"]
