"""Stage 2: read each die's top face from a crop centred on it.

The network gives the value (six pip counts, six animals) and the crop's quality (ok, tilted,
stacked, unreadable, no die). Taught dice sets are read by the embedder (vision/embedder.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vision.models import CLASSIFIER_PATH, metadata, open_session
from vision.preprocess import checked_views, crops_tensor, mirrored, quarter_turns, turned_by
from vision.reading import ANIMALS, PIP_VALUES, DieValue

FACES: tuple[DieValue, ...] = PIP_VALUES + ANIMALS
QUALITY: tuple[str, ...] = ("ok", "tilted", "stacked", "unreadable", "no_die")


@dataclass(frozen=True)
class FaceScores:
    """Per crop: value probabilities (over FACES), quality probabilities."""

    value: np.ndarray  # N x 12
    quality: np.ndarray  # N x 5


def die_sureness(scores: FaceScores) -> np.ndarray:
    """Per find, how surely the classifier reads it as a die: the likeliest value's
    probability times the probability that it is a die at all."""
    no_die = QUALITY.index("no_die")
    sure: np.ndarray = scores.value.max(axis=1) * (1.0 - scores.quality[:, no_die])
    return sure


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    p: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return p


#: A crop read in four quarter turns is read in two of them first (FIRST_TWO, as it lies
#: and turned a quarter), and in the other two as well (OTHER_TWO) only where those two
#: leave it unsure: their likeliest values differ, or their mean reads it neither as a
#: die (`die_sureness`) nor as no die as surely as SURE_IN_TWO. Clear dice are then read
#: in two turns, the unsure finds, where the turns matter, in four as before. Two turns a
#: quarter apart, not half: a pip face turned by half looks the same, so the half turn
#: adds little (the opposite pair read the test pips turned a quarter with 18 silent
#: errors instead of 14). On the validation scenes 800001–4, the test sets and the test
#: sets turned a quarter as many dice right (22 519 of 24 337 readable), 2 % fewer asked
#: about (12 051 against 12 316), the silent errors 49 against 48; with
#: `Reader.classified`'s rule for finds surely no die, a five-dice frame takes 43 crop
#: reads of the network instead of 55 (models/README.md, "Fewer looks at the dice the
#: classifier is sure of").
SURE_IN_TWO = 0.97
FIRST_TWO = (0, 1)
OTHER_TWO = (2, 3)


class OnnxClassifier:
    """The shipped classifier. Each crop is read in `views` quarter turns (1, 2 or 4) and the
    results averaged: a die's value does not depend on how it lies, and the average cancels
    some of the network's orientation-dependent mistakes (on synthetic tables 4 views read
    2.5 points more pip dice right, at about 4 ms more per frame). With 4 views a crop sure
    in two (SURE_IN_TWO) is read in those two only."""

    def __init__(self, path: Path = CLASSIFIER_PATH, threads: int = 1, views: int = 4) -> None:
        self.views = checked_views(views)
        self.session = open_session(path, threads)
        meta = metadata(self.session)
        #: Trained on dice seen at an angle cut upright (vision.preprocess.upright_angle;
        #: `train.py classifier --upright`): the reader cuts them so and says which crops
        #: it turned (`classify`'s `turned`).
        self.upright = meta.get("upright") == "1"
        faces = json.loads(meta.get("faces", "[]"))
        quality = json.loads(meta.get("quality", "[]"))
        if [str(f) for f in FACES] != faces or list(QUALITY) != quality:
            raise ValueError(f"{path}: model outputs {faces} / {quality} do not match this "
                             f"program's {FACES} / {QUALITY}: run `make models`")

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        """Value and quality probabilities of each crop. A crop the reader `turned` upright
        is read as it is and mirrored (both keep it upright), the others in quarter turns."""
        n = len(crops)
        value = np.zeros((n, len(FACES)))
        quality = np.zeros((n, len(QUALITY)))
        is_turned = [False] * n if turned is None else list(turned)
        up = [i for i, t in enumerate(is_turned) if t]
        flat = [i for i, t in enumerate(is_turned) if not t]
        if up:
            value[up], quality[up] = self._read(mirrored([crops[i] for i in up]), 2)
        if flat and self.views < 4:
            value[flat], quality[flat] = self._read(
                quarter_turns([crops[i] for i in flat], self.views), self.views)
        elif flat:
            value[flat], quality[flat] = self._read_in_four([crops[i] for i in flat])
        return FaceScores(value, quality)

    def _read_in_four(self, crops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The mean of the crops' reads in four quarter turns, or in the first two where
        those are sure (SURE_IN_TWO)."""
        batch = crops_tensor(crops)
        value, quality = self._reads(turned_by(batch, FIRST_TWO), 2)
        mean_value, mean_quality = value.mean(axis=0), quality.mean(axis=0)
        no_die = mean_quality[:, QUALITY.index("no_die")]
        as_die = die_sureness(FaceScores(mean_value, mean_quality))
        sure = np.maximum(as_die, no_die) >= SURE_IN_TWO
        unsure = np.flatnonzero(~sure | (value[0].argmax(axis=1) != value[1].argmax(axis=1)))
        if len(unsure):
            more_value, more_quality = self._reads(turned_by(batch[unsure], OTHER_TWO), 2)
            mean_value[unsure] = (value[:, unsure].sum(axis=0) + more_value.sum(axis=0)) / 4
            mean_quality[unsure] = (quality[:, unsure].sum(axis=0)
                                    + more_quality.sum(axis=0)) / 4
        return mean_value, mean_quality

    def _read(self, batch: np.ndarray, views: int) -> tuple[np.ndarray, np.ndarray]:
        """The mean over `views` of `_reads`."""
        value, quality = self._reads(batch, views)
        return value.mean(axis=0), quality.mean(axis=0)

    def _reads(self, batch: np.ndarray, views: int) -> tuple[np.ndarray, np.ndarray]:
        """Value and quality probabilities of a batch of `views` views of the same crops,
        one view after the other: views × crops × faces (qualities)."""
        logits_value, logits_quality = self.session.run(["value", "quality"], {"crops": batch})
        return (softmax(logits_value).reshape(views, len(batch) // views, -1),
                softmax(logits_quality).reshape(views, len(batch) // views, -1))
