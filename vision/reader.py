"""The dice reader: find dice → put each find on its top face → read it → judge what can
be trusted.

    reader = Reader.default()          # the shipped ONNX models
    reading = reader.read(frame_bgr)   # Reading(dice=(DieReading, ...), warnings=(...))

Stage 3, the judge (vision/judge.py), turns the networks' probabilities into one value, a
confidence and a flag per die. A die is flagged (and must be confirmed at the table) when
it is tilted or stacked, cut by the frame edge, or its face cannot be read with confidence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from vision.classifier import FACES, QUALITY, FaceScores, OnnxClassifier, die_sureness
from vision.detector import Candidate, Detector, OnnxDetector, Search
from vision.doubt import Doubt
from vision.embedder import Embedder, OnnxEmbedder
from vision.judge import Judge
from vision.preprocess import crop_die, upright_angle
from vision.reading import (
    ANIMALS,
    DICE_IN_A_THROW,
    PIP_VALUES,
    TEACH_AGAIN,
    TRUST_CONFIDENCE,
    DieReading,
    DieValue,
    Reading,
    count_of_dice,
    other_kind_warning,
)
from vision.refiner import OnnxRefiner
from vision.teach import SIGNATURE_WEIGHT, signature_similarities

DICE_SETS_BUILTIN = ("auto", "pips", "animals")
#: Quarter turns clockwise that make a camera's picture upright: the networks learnt from
#: cameras that look at the table from the bottom edge of their picture (or the top: the
#: detector also learnt from pictures upside down), so that the dice's sides show below
#: or above their tops. A camera mounted turned a quarter sees them left or right of
#: their tops, and beyond 30° read about 20 points fewer dice right (models/README.md,
#: "A camera turned a quarter"). The judge takes the bottom edge for the near one
#: (Judge.body_up): a camera upside down reads as many dice right, but is asked
#: about more of them (the real Valid photos turned 180°: 15 dice instead of 7).
TURNS = (0, 1, 2, 3)
#: OpenCV's code for each turn but none.
CLOCKWISE = {1: cv2.ROTATE_90_CLOCKWISE, 2: cv2.ROTATE_180, 3: cv2.ROTATE_90_COUNTERCLOCKWISE}
#: A picture reads clearly better turned a quarter further where the dice the judge would
#: trust there weigh this much more (their confidences summed; `Reader.better_turn`). Each
#: validation scene 800001–4 read upright and turned a quarter: of the 1200, 3 read so much
#: better turned (a camera mounted right, told to turn); of the same scenes seen by a
#: camera turned a quarter, 98 of 463 at 30–60° from vertical read so much better turned
#: back, 33 of 737 within 0–30°, where the turn matters little (models/README.md, "A camera
#: turned a quarter"). The detector reads pictures upside down as well, so one quarter
#: further is enough to try. `kniffel read` without `--turn` takes the reading of such a
#: turn (`better_reading`): the validation scenes turned a quarter read 4360 of 4899 dice
#: right instead of 4239, 2564 asked instead of 3182, 12 silent errors instead of 13;
#: read upright, 3 of the 1200 pictures were read turned, the same dice right
#: (models/README.md, "`kniffel read` takes the better turn").
TURN_HINT = 2.0
#: The first finds of a photo taken close are its dice's pips and faces, which the
#: classifier reads as dice with 0.1–0.4 (`die_likeness`); dice lying in a tray that the
#: coarse search took for one large die it reads with 0.6 and more.
PIECES_READ = 0.4
#: ... and are, on the median, at least this share of the large dice's size (the real
#: close-ups' pieces: 0.09–0.14). Finds far smaller are dice seen from afar, not pieces:
#: a glare spot on the table that the coarse search took for one die filling the picture
#: (958 px in a 960 px frame, holding four small dice and a hand's fingers: 0.035, read
#: as a "1") took their place.
PIECE_SIZE = 0.05
#: Elsewhere each large find is weighed on its own: the first finds inside its box smaller
#: than PART of it (a die with one large pip is found as its pip) give way to it where the
#: classifier reads it as a die more surely than each of them by PART_MARGIN
#: (`with_large_dice`). On the validation scenes 800001–4 3 more dice read right (two of
#: them large 1s), no more silent errors; 0.6 / 0.2: 2 more; 0.85 / 0.1: 4 more, 1 fewer.
PART = 0.75
PART_MARGIN = 0.2
#: A find's probability of a pip face, for deciding a frame's kind of dice, is taken
#: within [ODDS_BOUND, 1 - ODDS_BOUND] (`pip_evidence`).
ODDS_BOUND = 0.01
#: A weak find of the detector (under its threshold, vision.detector.WEAK_SCORE and more)
#: stands where it lies this many die sizes from every other find (the larger of the two:
#: nearer, it is a die's side face or a second peak on it) and the classifier reads it as
#: a die as surely as WEAK_SURE (`die_sureness`) and as no die at most WEAK_NO_DIE
#: (`Reader.finds`). A die's box holds its side faces too, so dice touching in a row seen
#: at an angle lie 0.65–0.8 sizes apart; a side face lies about half a size from its top
#: face. 0.6 instead of 0.75: on the validation scenes 800001–4 one die more right, on
#: the test sets 4 more, 2 more extra finds (0.5: none more on validation, 6 on the test
#: sets, 5–7 more extra finds on each set; 0.65: 1 more on validation and 1 on the test
#: sets).
WEAK_AWAY = 0.6
WEAK_SURE = 0.9
WEAK_NO_DIE = 0.05
#: A find the classifier reads unsurely (`die_sureness` under RESCALE_BELOW) is read
#: again from crops RESCALES times its found size, and the three reads pooled
#: (`pooled_reads`): a found size a little off, or a neighbour's edge in the crop, sways
#: one read more than three. Sure finds, most of a frame's dice, are read once; so are
#: finds read as no die as surely as RESCALE_BELOW: on the validation scenes 800001–4 and
#: the real photos reading them again changed no reading, on the test sets one die (the
#: dice asked about and the silent errors the same).
RESCALES: tuple[float, ...] = (0.9, 1.12)
RESCALE_BELOW = 0.9
#: A find the classifier takes for no die (`Judge.drop_no_die`) that lies in no
#: find read as a die may be a pip, or the art, of a die the detector found too small (a
#: large die close to the camera, a black die whose white pips stand out): it is read
#: again from crops GROWS times its size, and the surest of them stands in its place where
#: it is a die as surely as a weak find must be (WEAK_SURE, WEAK_NO_DIE) and holds no die
#: found already (`Reader._grown`). On the validation scenes 800001–4 and both test sets
#: 8 dice more right, none fewer, 2 more extra finds, the silent errors the same; the
#: median time per frame the same, its 90th percentile about 2 ms longer (adding 3.4 and
#: 4.6: as many right, twice the extra reads).
GROWS: tuple[float, ...] = (1.6, 2.4)
#: Probabilities are pooled (`pooled`) as if none were below this.
POOL_FLOOR = 1e-6
#: Reading a taught set, a frame of at least this many dice none of which the set
#: recognises as its own (vision.teach.RECOGNISED) is warned about: the dice are seen in
#: other light or by another camera than the teaching photos, and the table will ask
#: about most of them until the set is taught again there (`Reader._warnings`).
UNFAMILIAR_DICE = 3
#: Read as one built-in kind, a frame of at least two dice whose pip evidence says the other
#: kind at least this strongly (`pip_evidence`, each die's log odds bounded at 4.6) is
#: warned about (`Reader._warnings`, vision.reading.other_kind_warning). On the test sets
#: (1200 frames each) and the real Valid photos: no pip frame and 1 animal frame warned
#: read as their own kind; read as the other, 1056 of the animal frames, 1080 of the
#: synthetic pip frames and 63 of the 86 real photos (most of the rest hold one die). From
#: 4: 5 frames warned wrongly; from 10: none, but 972 / 1016 / 43 warned rightly.
OTHER_KIND_EVIDENCE = 8.0
#: A frame narrower than this (pixels) holds no die anyone could read.
MIN_FRAME_SIDE = 16


class FaceModel(Protocol):
    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores: ...


class Refiner(Protocol):
    def refine(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]: ...


class TaughtSet(Protocol):
    """A dice set learnt from photos (vision/teach.py): values from embeddings."""

    name: str

    #: A pip set the classifier counted right when it was taught (vision/teach.py).
    counted: bool

    @property
    def pips(self) -> bool: ...

    def embedded_with(self, embedder: Embedder) -> TaughtSet: ...

    def values(self, embeddings: np.ndarray, opinion: np.ndarray | None = None
               ) -> tuple[list[DieValue], np.ndarray, np.ndarray]: ...

    def signatures(self, classify: Callable[[list[np.ndarray]], FaceScores]) -> np.ndarray: ...


@dataclass(frozen=True)
class SecondLook:
    """Where the refiner put each find (`refined`), and for the finds it moved far enough
    to read again (`again`, their indices) the crops there and what the classifier read."""

    refined: list[Candidate]
    again: list[int]
    crops: list[np.ndarray]
    scores: FaceScores

    def latest(self, first: FaceScores) -> FaceScores:
        """The classifier's scores of every find as last read: the first look's, or the
        second look's where it read a find again."""
        if not self.again:
            return first
        value, quality = first.value.copy(), first.quality.copy()
        value[self.again] = self.scores.value
        quality[self.again] = self.scores.quality
        return FaceScores(value, quality)


class Reader:
    """Detector + face classifier + judge. `dice_set`: "auto", "pips", "animals" or a
    taught set, read with `embedder` (the shipped one unless given; only loaded when a set
    is taught or read). `turn`: quarter turns clockwise that make the camera's picture
    upright (see TURNS); the reading is given in the picture's own pixels all the same."""

    def __init__(self, detector: Detector, classifier: FaceModel,
                 dice_set: str | TaughtSet = "auto", judge: Judge | None = None,
                 expected: int | None = None, embedder: Embedder | None = None,
                 threads: int = 1, refiner: Refiner | None = None, turn: int = 0) -> None:
        if isinstance(dice_set, str) and dice_set not in DICE_SETS_BUILTIN:
            raise ValueError(f"unknown dice set {dice_set!r} "
                             f"(built in: {', '.join(DICE_SETS_BUILTIN)})")
        if turn not in TURNS:
            raise ValueError(f"turn {turn!r}: quarter turns, one of {', '.join(map(str, TURNS))}")
        self.turn = turn
        self.detector = detector
        self.classifier = classifier
        self.refiner = refiner
        self.judge = judge or Judge()
        self.expected = expected
        self._embedder = embedder
        self._threads = threads
        self.dice_set = dice_set if isinstance(dice_set, str) else \
            dice_set.embedded_with(self.embedder)

    @classmethod
    def default(cls, dice_set: str | TaughtSet = "auto", expected: int | None = None,
                threads: int = 1, turn: int = 0, judge: Judge | None = None
                ) -> Reader:
        """The shipped networks; `judge` by default with the shipped doubt
        (models/doubt.json), which `judge` replaces unread (models/fit_judge.py fits one)."""
        return cls(OnnxDetector(threads=threads), OnnxClassifier(threads=threads),
                   dice_set, judge if judge is not None else Judge(doubt=Doubt.load()),
                   expected=expected, threads=threads, refiner=OnnxRefiner(threads=threads),
                   turn=turn)

    @classmethod
    def for_dice_set(cls, name: str, state_dir: Path, expected: int | None = None,
                     threads: int = 1, turn: int = 0) -> Reader:
        """The shipped models reading the built-in set `name` or the set taught under that
        name in `state_dir`. A taught set that a newer embedder had to embed again is saved
        so, once; where the state directory cannot be written it is embedded at each start.
        Raises vision.teach.DiceSetError (a ValueError) with a one-line reason."""
        if name in DICE_SETS_BUILTIN:
            return cls.default(name, expected, threads, turn)
        from vision.teach import DiceSet, load_dice_set

        taught = load_dice_set(state_dir, name)
        reader = cls.default(taught, expected, threads, turn)
        if reader.dice_set is not taught and isinstance(reader.dice_set, DiceSet):
            with contextlib.suppress(OSError):
                reader.dice_set.save(state_dir)
        return reader

    def reading(self, dice_set: str | TaughtSet) -> Reader:
        """This reader's networks and judge, reading `dice_set`."""
        return Reader(self.detector, self.classifier, dice_set, self.judge, self.expected,
                      self._embedder, self._threads, self.refiner, self.turn)

    def turned(self, turn: int) -> Reader:
        """This reader's networks and judge, reading pictures turned `turn` quarters; a
        taught set's signatures, once read, go along (the same set and classifier), so a
        picture tried in another turn (`better_turn`) does not read them again."""
        other = Reader(self.detector, self.classifier, self.dice_set, self.judge,
                       self.expected, self._embedder, self._threads, self.refiner, turn)
        if "_signatures" in self.__dict__:  # functools.cached_property keeps it there
            other.__dict__["_signatures"] = self.__dict__["_signatures"]
        return other

    def better_turn(self, frame_bgr: np.ndarray, reading: Reading) -> int | None:
        """The turn (quarters, TURNS) that reads `frame_bgr` clearly better than this
        reader's turn, whose reading of it is `reading` (TURN_HINT), if one does."""
        better = self.better_reading(frame_bgr, reading)
        return None if better is None else better[0]

    def better_reading(self, frame_bgr: np.ndarray, reading: Reading
                       ) -> tuple[int, Reading] | None:
        """`better_turn`, and its reading of `frame_bgr` (the dice in the frame's own
        pixels), if one reads it clearly better: `kniffel read` without `--turn` takes it."""
        other = (self.turn + 1) % len(TURNS)
        turned = self.turned(other).read(frame_bgr)
        if trusted_weight(turned) >= trusted_weight(reading) + TURN_HINT:
            return other, turned
        return None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = OnnxEmbedder(threads=self._threads)
        return self._embedder

    def read(self, frame_bgr: np.ndarray) -> Reading:
        return self.judged(frame_bgr)[0]

    def upright(self, frame_bgr: np.ndarray) -> np.ndarray:
        """The camera's picture turned upright (`turn`), as the networks were trained
        (OpenCV turns a 1640×1232 picture in about 2 ms, numpy's copy of np.rot90 in 10)."""
        return cv2.rotate(frame_bgr, CLOCKWISE[self.turn]) if self.turn else frame_bgr

    def upright_point(self, x: float, y: float, width: int, height: int
                      ) -> tuple[float, float]:
        """Where the point (x, y) of the camera's `width` × `height` picture lies in the
        picture turned upright (`upright`): the reverse of `turned_back`."""
        for _ in range(self.turn):  # one clockwise quarter takes (x, y) to (h - 1 - y, x)
            x, y, width, height = height - 1.0 - y, x, height, width
        return x, y

    def judged(self, frame_bgr: np.ndarray) -> tuple[Reading, np.ndarray]:
        """The reading, and what the judge's doubt is estimated from for each of its dice
        (vision.doubt.doubt_features, one row per die in the reading's order): what
        models/fit_judge.py fits the doubt on."""
        if frame_bgr is None or frame_bgr.ndim != 3 or frame_bgr.shape[2] != 3:
            raise ValueError("not a colour image")
        if min(frame_bgr.shape[:2]) < MIN_FRAME_SIDE:
            raise ValueError(f"too small to read ({frame_bgr.shape[1]}×{frame_bgr.shape[0]} "
                             f"pixels; at least {MIN_FRAME_SIDE} each way)")
        if not self.turn:
            return self._judged_upright(frame_bgr)
        reading, evidence = self._judged_upright(self.upright(frame_bgr))
        height, width = frame_bgr.shape[:2]
        dice = [turned_back(d, self.turn, width, height) for d in reading.dice]
        order = sorted(range(len(dice)), key=lambda k: (dice[k].x, dice[k].y))
        return Reading(tuple(dice[k] for k in order), reading.warnings), evidence[order]

    def _judged_upright(self, frame_bgr: np.ndarray) -> tuple[Reading, np.ndarray]:
        candidates, crops, scores = self.finds(frame_bgr)
        look = self._look_again(self.refiner, frame_bgr, candidates, scores) \
            if self.refiner is not None and candidates else None
        latest = scores if look is None else look.latest(scores)
        faces = self._faces(latest)
        values, probs, recognised = self._values(scores, crops, faces)
        if look is not None:
            candidates, values, probs, recognised, scores = self._second_look(
                candidates, scores, (values, probs, recognised), look, faces)
        taught = not isinstance(self.dice_set, str)
        by_embeddings = not isinstance(self.dice_set, str) and not self.dice_set.pips
        judged = self.judge.judged(frame_bgr.shape[1], frame_bgr.shape[0], candidates, scores,
                                   values, probs, recognised, taught, by_embeddings)
        kind_evidence = pip_evidence(latest) if self.dice_set in ("pips", "animals") else 0.0
        warnings = self._warnings(judged.dice, judged.familiar, kind_evidence)
        return Reading(tuple(judged.dice), tuple(warnings)), judged.evidence

    def finds(self, frame_bgr: np.ndarray, weigh: bool = True
              ) -> tuple[list[Candidate], list[np.ndarray], FaceScores]:
        """The detector's finds, their crops and what the classifier reads in them. Where
        the detector also offers finds at the scale of large dice (a photo taken close,
        `OnnxDetector.search`), those stand if the detector takes the first finds for their
        pieces and the classifier reads the large ones as dice more surely, or if it reads
        the first finds as dice no surer than PIECES_READ (they are pips and faces:
        PIECE_SIZE) and the large ones surer; else each large find stands where it is
        surer than the first finds it holds (`with_large_dice`). The classifier weighs
        only when reading the built-in faces (`weigh`): its certainty says nothing about a
        taught set's art, which it may never have seen (`make eval`'s unseen animal sets
        read 0.5–1.9 points worse on other tables with it); there the detector's word
        stands. Where it weighs, and for a taught set, the detector's weak finds away from
        the others stand where the classifier, or the set, is sure they are dice
        (`_with_weak_dice`); so do the first finds that the detector's larger search did
        not find again (`Search.lost`), and where the classifier weighs, such a find stands
        in place of the smaller finds inside it that it reads surer than
        (`with_large_dice`). Where it weighs, a find it takes for no die may be read again
        larger and stand as the die it lies on (`_grown`). The detector searches for the
        dice this reader expects (`expected`; a throw's five where it is not told)."""
        search_of = getattr(self.detector, "search", None)
        expected = DICE_IN_A_THROW if self.expected is None else self.expected
        search = (search_of(frame_bgr, expected) if search_of is not None
                  else Search(self.detector.detect(frame_bgr)))
        taught = not isinstance(self.dice_set, str)
        can_weigh = weigh and not taught
        chosen = self._weighed(frame_bgr, search, can_weigh)
        if not (can_weigh or taught):
            return chosen
        if can_weigh:
            chosen = self._grown(frame_bgr, chosen)
        if search.lost and can_weigh:
            # A lost find stands in place of the smaller finds inside it that it reads
            # surer than (a large die the larger search found in pieces); the others are
            # weighed like weak finds, as read here (a die the larger search left out).
            lost = (search.lost, *self.classified(frame_bgr, search.lost))
            return self._with_weak_dice(frame_bgr, with_large_dice(chosen, lost),
                                        search.weak, lost)
        return self._with_weak_dice(frame_bgr, chosen, search.weak + search.lost)

    def _with_weak_dice(self, frame_bgr: np.ndarray, chosen: Finds, weak: list[Candidate],
                        read: Finds | None = None) -> Finds:
        """`chosen`, with each of the detector's `weak` finds that lies WEAK_AWAY die sizes
        from all of them and that the classifier reads as a die as surely as WEAK_SURE, and
        as no die at most WEAK_NO_DIE: a clear die the detector scored just under its
        threshold (real Train photos: a 1, a 2 and a 6 seen at an angle, 0.29, 0.30, 0.21).
        Reading a taught set, whose art the classifier may never have seen, a weak find
        stands where the set recognises it as one of its dice (vision.teach.RECOGNISED);
        the judge keeps it only where the classifier takes it for a die (`Judge.kept`: a weak
        find scores under `keep_recognised_score`). On the teaching tables of eight tuning
        sets (seeds 710001–3, 5–8, 10) this found 27 more dice, all on one table of large
        dice the detector scored low (84.65 → 90.41 %), and no find that is no die.
        `read`: more such finds, read by the classifier already (the lost finds); those of
        them in `chosen` lie at no distance from themselves, so they are not taken twice."""
        found = chosen[0]

        def away(c: Candidate) -> bool:
            return all(np.hypot(c.x - d.x, c.y - d.y) >= WEAK_AWAY * max(c.size, d.size)
                       for d in found)

        unread = [c for c in weak if away(c)]
        # Reading built-in dice, a weak find stands only if read as surely as WEAK_SURE; one
        # read less surely than RESCALE_BELOW (no higher) would be read again, but more
        # reads make no find surer (`pooled_reads`), so they would change nothing here.
        weak_read = (unread, *self.classified(frame_bgr, unread,
                                              rescale=not isinstance(self.dice_set, str)))
        if read is not None:
            weak_read = joined(weak_read, list(range(len(unread))), read,
                               [j for j, c in enumerate(read[0]) if away(c)])
        away_finds, weak_crops, weak_scores = weak_read
        if not away_finds:
            return chosen
        if isinstance(self.dice_set, str):
            sure = read_surely(weak_scores)
        else:
            sure = self.dice_set.values(self.embedder.embed(weak_crops))[2]
        keep = [int(k) for k in np.flatnonzero(sure)]
        if not keep:
            return chosen
        return joined(chosen, list(range(len(found))), weak_read, keep)

    def _grown(self, frame_bgr: np.ndarray, chosen: Finds) -> Finds:
        """`chosen`, each find taken for no die read again larger where that finds its
        die (GROWS)."""
        found, crops, scores = chosen
        no_die = scores.quality[:, QUALITY.index("no_die")]
        dice = [c for c, p in zip(found, no_die, strict=True) if p <= self.judge.drop_no_die]
        small = [i for i, c in enumerate(found) if no_die[i] > self.judge.drop_no_die
                 and not any(d.holds(c) for d in dice)]
        if not small or not GROWS:
            return chosen
        grown = [scaled(found[i], factor) for factor in GROWS for i in small]
        grown_crops, grown_scores = self.classified(frame_bgr, grown, rescale=False)
        shape = (len(GROWS), len(small))
        sure = die_sureness(grown_scores).reshape(shape)
        stands = read_surely(grown_scores).reshape(shape) & np.array(
            [not any(g.holds(d) for d in dice) for g in grown]).reshape(shape)
        found, crops = list(found), list(crops)
        value, quality = scores.value.copy(), scores.quality.copy()
        for k, i in enumerate(small):
            if stands[:, k].any():
                j = int(np.argmax(np.where(stands[:, k], sure[:, k], -1.0))) * len(small) + k
                found[i], crops[i] = grown[j], grown_crops[j]
                value[i], quality[i] = grown_scores.value[j], grown_scores.quality[j]
        return found, crops, FaceScores(value, quality)

    def _weighed(self, frame_bgr: np.ndarray, search: Search, can_weigh: bool) -> Finds:
        """The first or the large finds of `search`, as `finds` says."""
        found, large = search.found, search.large
        if large and search.in_pieces and not can_weigh:
            return (large, *self.classified(frame_bgr, large))
        crops, scores = self.classified(frame_bgr, found)
        if not large or not can_weigh:
            return found, crops, scores
        first = die_likeness(scores)
        large_crops, large_scores = self.classified(frame_bgr, large)
        # The mean of the first finds is low where a clear die lies among false finds (a
        # laptop's keys): the large finds must not lose it.
        surer_large = die_likeness(large_scores) > first and loses_no_clear_die(
            (found, crops, scores), (large, large_crops, large_scores))
        # The detector's word alone lost five dice that a coarse search took for pieces of
        # a die filling the picture (the table between them; read as dice 0.57, the "die"
        # 0.20). The pips of the real close-ups read 0.14–0.69, their dice 0.96–0.99.
        if search.in_pieces and surer_large:
            return large, large_crops, large_scores
        if first <= PIECES_READ and surer_large and (
                not found or np.median([c.size for c in found])
                >= PIECE_SIZE * np.median([c.size for c in large])):
            return large, large_crops, large_scores
        return with_large_dice((found, crops, scores), (large, large_crops, large_scores))

    def classified(self, frame_bgr: np.ndarray, candidates: list[Candidate],
                   rescale: bool = True) -> tuple[list[np.ndarray], FaceScores]:
        """Each find's crop, and what the classifier reads in it. A classifier trained on
        upright dice (OnnxClassifier.upright) gets the dice that the detector sees clearly at
        an angle cut upright (vision.preprocess.upright_angle), and is told which. A find
        it reads unsurely, as a die or as no die, is read again from crops of other sizes
        (RESCALES), and the reads are pooled, no surer than the first (`pooled_reads`); not
        if `rescale` is false."""
        if not candidates:
            return [], FaceScores(np.zeros((0, len(FACES))), np.zeros((0, len(QUALITY))))
        upright = getattr(self.classifier, "upright", False)
        angles = [upright_angle(c.body) if upright else None for c in candidates]
        crops = [crop_die(frame_bgr, c.x, c.y, c.size, angle=a or 0.0)
                 for c, a in zip(candidates, angles, strict=True)]
        turned = [a is not None for a in angles]
        scores = self.classifier.classify(crops, turned)
        no_die = scores.quality[:, QUALITY.index("no_die")]
        unsure = [int(i) for i in np.flatnonzero((die_sureness(scores) < RESCALE_BELOW)
                                                 & (no_die < RESCALE_BELOW))]
        if not unsure or not RESCALES or not rescale:
            return crops, scores
        again = [crop_die(frame_bgr, candidates[i].x, candidates[i].y,
                          candidates[i].size * factor, angle=angles[i] or 0.0)
                 for factor in RESCALES for i in unsure]
        looks = self.classifier.classify(again, [turned[i] for i in unsure] * len(RESCALES))
        first = FaceScores(scores.value[unsure], scores.quality[unsure])
        shape = (len(RESCALES), len(unsure), -1)
        more = [FaceScores(v, q) for v, q in zip(looks.value.reshape(shape),
                                                 looks.quality.reshape(shape), strict=True)]
        pool = pooled_reads(first, more)
        value, quality = scores.value.copy(), scores.quality.copy()
        value[unsure], quality[unsure] = pool.value, pool.quality
        return crops, FaceScores(value, quality)

    def _look_again(self, refiner: Refiner, frame_bgr: np.ndarray,
                    candidates: list[Candidate], scores: FaceScores) -> SecondLook:
        """Where the refiner puts each find, and what the classifier reads at the places it
        moved (or resized) a find by `refine_move` (`refine_resize`) or more — but where it
        grows a find the first look (`scores`) read surely (`sure_grows`), or moves it far
        (`sure_moves`)."""
        refined = refiner.refine(frame_bgr, candidates)
        cfg = self.judge
        sure = die_sureness(scores)

        def read_again(i: int, c: Candidate, r: Candidate) -> bool:
            move = float(np.hypot(r.x - c.x, r.y - c.y)) / c.size
            if move < cfg.refine_move and max(r.size / c.size,
                                              c.size / r.size) < cfg.refine_resize:
                return False
            if sure[i] < cfg.sure_stays:
                return True
            grows = cfg.sure_grows is not None and r.size >= cfg.sure_grows * c.size
            moves = cfg.sure_moves is not None and move >= cfg.sure_moves
            return not (grows or moves)

        again = [i for i, (c, r) in enumerate(zip(candidates, refined, strict=True))
                 if read_again(i, c, r)]
        return SecondLook(refined, again, *self.classified(frame_bgr,
                                                           [refined[i] for i in again]))

    def _second_look(self, candidates: list[Candidate], scores: FaceScores,
                     first: tuple[list[DieValue], np.ndarray, np.ndarray], look: SecondLook,
                     faces: slice) -> tuple[list[Candidate], list[DieValue], np.ndarray,
                                            np.ndarray, FaceScores]:
        """Each find the refiner moved onto a top face (or resized) read again there
        (`look`). Where both reads agree the less sure one stands; where they differ the
        surer of the two gives the value, with no more confidence than the other read is
        unsure, so the table asks: a second look may mend a misread, never make a confident
        one. Returns the finds where the refiner put them, with their values, probabilities
        and whether a taught set recognises them, and the classifier's scores, with the
        second look's quality for the finds it took for no die at first and rescues
        (`rescue_no_die`)."""
        again = look.again
        values, probs, recognised = list(first[0]), first[1].copy(), first[2].copy()
        if not again:
            return candidates, values, probs, recognised, scores
        values2, probs2, recognised2 = self._values(look.scores, look.crops, faces)
        chosen, chosen_probs = reconciled([values[i] for i in again], probs[again], values2,
                                          probs2)
        for i, value in zip(again, chosen, strict=True):
            values[i] = value
        probs[again] = chosen_probs
        recognised[again] |= recognised2
        moved = [look.refined[i] if i in again else c for i, c in enumerate(candidates)]
        return moved, values, probs, recognised, self._rescued(moved, scores, recognised,
                                                               again, look.scores)

    def _rescued(self, moved: list[Candidate], scores: FaceScores, recognised: np.ndarray,
                 again: list[int], looked: FaceScores) -> FaceScores:
        """`scores` with the second look's quality for each find taken for no die that the
        second look (`looked`, of the finds `again`) reads as a die, where no die is kept
        yet (`rescue_no_die`; kept as `Judge.kept` keeps them), surest first."""
        cfg = self.judge
        no_die = QUALITY.index("no_die")
        if cfg.rescue_no_die is None:
            return scores
        quality = scores.quality.copy()
        kept = [moved[i] for i in self.judge.kept(moved, quality, recognised)]
        sure = die_sureness(looked)
        for k in sorted(range(len(again)), key=lambda k: -sure[k]):
            i = again[k]
            if quality[i, no_die] > cfg.drop_no_die \
                    and looked.quality[k, no_die] <= cfg.rescue_no_die \
                    and not any(moved[i].near(d, cfg.overlap) for d in kept):
                quality[i] = looked.quality[k]
                kept.append(moved[i])
        return FaceScores(scores.value, quality)

    # ---- the values, and what the table is told (the flags: vision/judge.py) ---------

    def _faces(self, scores: FaceScores) -> slice:
        """Which of FACES the frame's dice may show: the dice set's, or for "auto" the kind
        all the frame's finds as last read say (pip_evidence). A table plays with one
        kind of dice, so the kind is decided once for the whole frame, and both looks read
        within it."""
        n_pips = len(PIP_VALUES)
        pips, animals = slice(0, n_pips), slice(n_pips, len(FACES))
        if not isinstance(self.dice_set, str):
            return slice(0, len(FACES))  # a taught set's values come from its own dice
        if self.dice_set == "pips":
            return pips
        if self.dice_set == "animals":
            return animals
        return pips if pip_evidence(scores) >= 0 else animals

    def _values(self, scores: FaceScores, crops: list[np.ndarray], faces: slice
                ) -> tuple[list[DieValue], np.ndarray, np.ndarray]:
        """The value of every crop and its probability, within the dice set (a built-in
        set: among `faces`), and whether a taught set recognises the crop as one of its
        dice."""
        if not crops:
            return [], np.zeros(0), np.zeros(0, bool)
        if not isinstance(self.dice_set, str):
            opinion = None if self._signatures is None else SIGNATURE_WEIGHT * \
                signature_similarities(scores.value, self._signatures)
            values, probs, recognised = self.dice_set.values(self.embedder.embed(crops),
                                                             opinion)
            if self.dice_set.pips:
                values, probs = checked_by_pip_reading(values, probs, scores.value,
                                                       self.dice_set.counted)
            return values, probs, recognised
        values, probs = most_likely(scores.value, faces)
        return values, probs, np.zeros(len(values), bool)

    @cached_property
    def _signatures(self) -> np.ndarray | None:
        """A taught set's signatures (vision.teach.SIGNATURE_WEIGHT), read once by this
        reader's classifier; None for a built-in set, a pip set the classifier counts (its
        count reads it: checked_by_pip_reading), or with the weight 0."""
        if isinstance(self.dice_set, str) or not SIGNATURE_WEIGHT or (
                self.dice_set.pips and self.dice_set.counted):
            return None
        return self.dice_set.signatures(self.classifier.classify)

    def _warnings(self, dice: list[DieReading], recognised: int, kind_evidence: float
                  ) -> list[str]:
        """What the table should know of the frame beside its dice; `recognised`: how many
        of them a taught set recognises as its own (vision.teach.RECOGNISED);
        `kind_evidence`: how strongly they look like pip dice (`pip_evidence`)."""
        warnings = []
        if not dice:
            warnings.append("no dice found")
        elif self.expected is not None and len(dice) != self.expected:
            warnings.append(f"found {count_of_dice(len(dice))}, expected {self.expected}")
        flagged = [d for d in dice if d.flag]
        if flagged:
            kinds = sorted({d.flag for d in flagged if d.flag})
            warnings.append(f"{len(flagged)} of {len(dice)} dice need a look ({', '.join(kinds)})")
        if not isinstance(self.dice_set, str) and len(dice) >= UNFAMILIAR_DICE \
                and not recognised:
            warnings.append(f"none of the {len(dice)} dice looks like the teaching photos "
                            f"of dice set {self.dice_set.name!r} (other light or camera?): "
                            f"if the table asks about most dice, {TEACH_AGAIN}")
        if len(dice) >= 2 and (
                (self.dice_set == "pips" and kind_evidence <= -OTHER_KIND_EVIDENCE)
                or (self.dice_set == "animals" and kind_evidence >= OTHER_KIND_EVIDENCE)):
            warnings.append(other_kind_warning(len(dice), animals=self.dice_set == "pips"))
        return warnings


Finds = tuple[list[Candidate], list[np.ndarray], FaceScores]


def trusted_weight(reading: Reading) -> float:
    """The confidences of the dice the judge trusts (no flag), summed."""
    return sum(d.confidence for d in reading.dice if d.flag is None)


def turned_back(die: DieReading, turn: int, width: int, height: int) -> DieReading:
    """A die read in the picture turned `turn` quarters clockwise (Reader.upright), in the
    pixels of the picture as it was (`width` × `height`). Positions count pixels (the
    first pixel's centre is 0), box edges lie between pixels (the first pixel spans 0–1)."""
    def back(x: float, y: float, pixel: float) -> tuple[float, float]:
        w, h = (height, width) if turn % 2 else (width, height)  # the turned picture's
        for _ in range(turn):  # one clockwise quarter took (x, y) to (h - pixel - y, x)
            x, y, w, h = y, w - pixel - x, h, w
        return x, y

    x, y = back(die.x, die.y, 1.0)
    (ax, ay), (bx, by) = back(*die.box[:2], 0.0), back(*die.box[2:], 0.0)
    box = (round(min(ax, bx)), round(min(ay, by)), round(max(ax, bx)), round(max(ay, by)))
    return replace(die, x=x, y=y, box=box)


def with_large_dice(first: Finds, large: Finds) -> Finds:
    """The `first` finds (candidates, crops, classifier scores), with each `large` find in
    the place of the smaller first finds inside its box (PART) where the classifier reads it
    as a die more surely than each of them (PART_MARGIN) and the first search did not find
    it whole (a find near its centre at least PART its size)."""
    found, _, scores = first
    big, _, big_scores = large
    sure, big_sure = die_sureness(scores), die_sureness(big_scores)
    replaced: set[int] = set()
    added: list[int] = []
    for j, die in enumerate(big):
        inside = [i for i, c in enumerate(found) if die.holds(c)]
        parts = [i for i in inside if found[i].size < PART * die.size]
        whole = any(np.hypot(found[i].x - die.x, found[i].y - die.y) < 0.5 * die.size
                    for i in inside if i not in parts)
        if parts and not whole and big_sure[j] > max(sure[i] for i in parts) + PART_MARGIN:
            replaced.update(parts)
            added.append(j)
    if not added:
        return first
    return joined(first, [i for i in range(len(found)) if i not in replaced], large, added)


def scaled(candidate: Candidate, factor: float) -> Candidate:
    """The find with its box `factor` times as large about its top face's centre."""
    x0, y0, x1, y1 = candidate.box
    x, y = candidate.x, candidate.y
    return replace(candidate, box=(x + (x0 - x) * factor, y + (y0 - y) * factor,
                                   x + (x1 - x) * factor, y + (y1 - y) * factor))


def joined(first: Finds, kept: list[int], second: Finds, added: list[int]) -> Finds:
    """The finds `kept` of `first` (indices), then those `added` of `second`: candidates,
    crops and classifier scores alike."""
    found, crops, scores = first
    more, more_crops, more_scores = second
    return ([found[i] for i in kept] + [more[j] for j in added],
            [crops[i] for i in kept] + [more_crops[j] for j in added],
            FaceScores(np.concatenate([scores.value[kept], more_scores.value[added]]),
                       np.concatenate([scores.quality[kept], more_scores.quality[added]])))


def loses_no_clear_die(first: Finds, large: Finds) -> bool:
    """Whether each `first` find that the classifier reads as a die as surely as the judge
    trusts (TRUST_CONFIDENCE) lies in a `large` find read about as surely (within
    PART_MARGIN): else taking the large finds for the first would lose a clear die (a real
    photo's 4, read 0.99, inside a laptop that the coarse search took for one die of 633 px,
    read 0.33). In a close-up the first search may find a die whole, read as surely as its
    large find (0.97–0.99), and reads the same face in it. A clear die read as another face
    than the large find is no piece of it: a lamp's glare round a real photo's 3 (read 0.98)
    was found as one large die, its "pip" the 3, and read as a 1 (0.86)."""
    found, _, scores = first
    big, _, big_scores = large
    sure, big_sure = die_sureness(scores), die_sureness(big_scores)
    faces, big_faces = scores.value.argmax(axis=1), big_scores.value.argmax(axis=1)
    holders = list(zip(big, big_sure, big_faces, strict=True))
    for c, c_sure, face in zip(found, sure, faces, strict=True):
        if c_sure >= TRUST_CONFIDENCE and not any(
                d.holds(c) and d_sure >= c_sure - PART_MARGIN and d_face == face
                for d, d_sure, d_face in holders):
            return False
    return True


def pip_evidence(scores: FaceScores) -> float:
    """How strongly a frame's finds say its dice are pip dice rather than animal dice (> 0)
    or the reverse (< 0): each find's log odds of a pip face over an animal face, bounded
    (ODDS_BOUND) so that no one find outvotes the rest, and weighed by how likely it is a
    die at all. A plain sum of the finds' probabilities let two plug labels that the
    classifier took for no die (0.98, 0.91) outvote a real photo's lone, clear 2, and twenty
    weak finds on a busy table outvote its dice; over the first looks of the validation and
    holdout scenes (3582 frames) it took 31 frames for the other kind, this 20."""
    no_die = QUALITY.index("no_die")
    pips = np.clip(scores.value[:, :len(PIP_VALUES)].sum(axis=1), ODDS_BOUND, 1 - ODDS_BOUND)
    return float(((1.0 - scores.quality[:, no_die]) * np.log(pips / (1.0 - pips))).sum())


def pooled(reads: Sequence[np.ndarray]) -> np.ndarray:
    """Probabilities (rows) read several times, pooled: their geometric mean, each row
    summing to one again. Where the reads agree the pool is as sure as they are; where one
    read is sure and another says otherwise, it is unsure (an arithmetic mean would stay
    half sure of the one read)."""
    logs = np.mean([np.log(np.maximum(r, POOL_FLOOR)) for r in reads], axis=0)
    pool = np.exp(logs - logs.max(axis=1, keepdims=True))
    result: np.ndarray = pool / pool.sum(axis=1, keepdims=True)
    return result


def pooled_reads(first: FaceScores, more: Sequence[FaceScores]) -> FaceScores:
    """The `first` reads of some finds and `more` of them, pooled (`pooled`), each find's
    values drawn towards even odds where that takes the pool back to no surer a die
    (`die_sureness`) than the first read. More reads may mend a misread, or tell a die
    from no die, but should not make a confident reading out of an unsure one (as
    `Reader._second_look`). The judge reads a die's value among one kind's faces, where
    the pool may still be a little surer than the first read (0.6 → 0.68 in the tests);
    held to exactly the first read there, the reader asked about 1–2 % more dice for as
    many silent errors (models/README.md, "A third look at unsure finds"). What the judge
    asks about — a tilted, stacked or unreadable die — stays as likely as the first read
    said, or grows: the doubt was fitted to single reads."""
    value = pooled([first.value, *(m.value for m in more)])
    quality = pooled([first.quality, *(m.quality for m in more)])
    doubts = [QUALITY.index(k) for k in ("tilted", "stacked", "unreadable")]
    quality[:, doubts] = np.maximum(quality[:, doubts], first.quality[:, doubts])
    ok = QUALITY.index("ok")
    quality[:, ok] = 0.0
    quality[:, ok] = np.maximum(1.0 - quality.sum(axis=1), 0.0)
    quality /= quality.sum(axis=1, keepdims=True)
    cap = die_sureness(first)
    is_die = 1.0 - quality[:, QUALITY.index("no_die")]
    top, even = value.max(axis=1), 1.0 / value.shape[1]
    # `keep` of the pool and the rest even odds has its likeliest value at `cap`
    keep = np.clip((cap / np.maximum(is_die, POOL_FLOOR) - even)
                   / np.maximum(top - even, POOL_FLOOR), 0.0, 1.0)
    keep = np.where(top * is_die > cap, keep, 1.0)  # the pool's die_sureness over the cap
    return FaceScores(keep[:, None] * value + (1.0 - keep[:, None]) * even, quality)


def read_surely(scores: FaceScores) -> np.ndarray:
    """Per find, whether the classifier reads it as a die as surely as a find the detector
    was unsure of must be read to stand: WEAK_SURE, and no die at most WEAK_NO_DIE."""
    sure: np.ndarray = (die_sureness(scores) >= WEAK_SURE) \
        & (scores.quality[:, QUALITY.index("no_die")] <= WEAK_NO_DIE)
    return sure


def die_likeness(scores: FaceScores) -> float:
    """How surely the classifier reads a set of finds as dice: the mean of die_sureness."""
    if len(scores.value) == 0:
        return 0.0
    return float(np.mean(die_sureness(scores)))


def most_likely(value_probs: np.ndarray, use: slice) -> tuple[list[DieValue], np.ndarray]:
    """Per crop, the most likely of the faces FACES[use] and its probability among them."""
    sub = value_probs[:, use]
    sub = sub / np.maximum(sub.sum(axis=1, keepdims=True), 1e-9)
    best = sub.argmax(axis=1)
    return [FACES[use][int(i)] for i in best], sub[np.arange(len(best)), best]


def checked_by_pip_reading(values: list[DieValue], probs: np.ndarray, value_probs: np.ndarray,
                           counted: bool) -> tuple[list[DieValue], np.ndarray]:
    """A taught pip set, read by its photos (`values`, `probs`), checked against the
    classifier's count. Where the classifier counted the set's teaching photos right
    (`counted`), the count reads it, as sure as the classifier is (what the judge's doubt
    was fitted on), and where the photos read another face, no surer than they are unsure,
    so the table asks. Where it did not (photos too blurred or dim to count, or pips it
    cannot count), the photos read it as they are unless the count is surer, which then
    gives the value, asked about; where the two agree, the surer stands. On the tuning
    seeds' pip sets (710004–6, 8, 10, 12; models/README.md "A pip set read by its count"):
    13 counted, 5122 → 5140 of 5369 readable dice right, silent errors 6 → 3, asked 1711 →
    1798 against the surer of the two with the surer confidence; 5 not counted, 1419 →
    1719 of 1959, silent errors 12 → 1, asked 1647 → 1190 against the photos alone."""
    counts, sure = most_likely(value_probs, slice(0, len(PIP_VALUES)))
    agree, count_wins, chosen = compared(values, probs, counts, sure)
    if counted:
        return counts, np.where(agree, sure, np.minimum(sure, 1.0 - probs))
    return chosen, np.where(agree, np.maximum(probs, sure),
                            np.where(count_wins, np.minimum(sure, 1.0 - probs), probs))


def compared(first: list[DieValue], first_probs: np.ndarray, second: list[DieValue],
             second_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[DieValue]]:
    """Two reads of the same dice: where they agree, where the second is the surer of two
    that differ, and the value each die takes by that (on a tie the first read's)."""
    agree = np.array([a == b for a, b in zip(first, second, strict=True)], bool)
    second_wins = ~agree & (second_probs > first_probs)
    chosen = [b if win else a for a, b, win in zip(first, second, second_wins, strict=True)]
    return agree, second_wins, chosen


def reconciled(first: list[DieValue], first_probs: np.ndarray, second: list[DieValue],
               second_probs: np.ndarray) -> tuple[list[DieValue], np.ndarray]:
    """Two looks at the same dice, one value and probability per die: where they agree, the
    less sure of the two; where they differ the surer look gives the value, no surer than
    the other is unsure, so the table asks (on a tie the first look stands)."""
    agree, second_wins, chosen = compared(first, first_probs, second, second_probs)
    return chosen, np.where(agree, np.minimum(first_probs, second_probs),
                            np.where(second_wins, np.minimum(second_probs, 1.0 - first_probs),
                                     np.minimum(first_probs, 1.0 - second_probs)))


def is_animal(value: DieValue | None) -> bool:
    return value in ANIMALS
