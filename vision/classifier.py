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
from vision.preprocess import checked_views, mirrored, quarter_turns
from vision.reading import ANIMALS, PIP_VALUES, DieValue

FACES: tuple[DieValue, ...] = PIP_VALUES + ANIMALS
QUALITY: tuple[str, ...] = ("ok", "tilted", "stacked", "unreadable", "no_die")


@dataclass(frozen=True)
class FaceScores:
    """Per crop: value probabilities (over FACES), quality probabilities."""

    value: np.ndarray  # N x 12
    quality: np.ndarray  # N x 5


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    p: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return p


class OnnxClassifier:
    """The shipped classifier. Each crop is read in `views` quarter turns (1, 2 or 4) and the
    results averaged: a die's value does not depend on how it lies, and the average cancels
    some of the network's orientation-dependent mistakes (on synthetic tables 4 views read
    2.5 points more pip dice right, at about 4 ms more per frame)."""

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
        if not crops:
            return FaceScores(np.zeros((0, len(FACES))), np.zeros((0, len(QUALITY))))
        is_turned = [False] * n if turned is None else list(turned)
        up = [i for i, t in enumerate(is_turned) if t]
        flat = [i for i, t in enumerate(is_turned) if not t]
        value = np.zeros((n, len(FACES)))
        quality = np.zeros((n, len(QUALITY)))
        for rows, batch, k in (
                (up, mirrored([crops[i] for i in up]), 2),
                (flat, quarter_turns([crops[i] for i in flat], self.views), self.views)):
            if rows:
                v, q = self.session.run(["value", "quality"], {"crops": batch})
                value[rows] = softmax(v).reshape(k, len(rows), -1).mean(axis=0)
                quality[rows] = softmax(q).reshape(k, len(rows), -1).mean(axis=0)
        return FaceScores(value, quality)
