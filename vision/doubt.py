"""The judge's second opinion: how likely is a reading it would trust still wrong?

A die read with confidence can still be misread: the detector was unsure of the find, the
classifier thought the die might be tilted, stacked or unreadable without being sure, the
find is much larger or smaller than the frame's other dice (a side face, two dice taken
for one), or its body does not lie along the view as the other finds' bodies do (a side
face seen at an angle, read for a top face). Each of these alone says little; together
they pick out most confident errors. `Doubt` is a logistic regression on those signals,
fitted on validation scenes to the readings the judge trusted (models/fit_judge.py,
written to models/doubt.json); the judge asks about a die whose estimated chance of being
wrong is at least `ask_above`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vision.models import MODELS_DIR, ModelMissingError

DOUBT_PATH = MODELS_DIR / "doubt.json"
#: What the doubt is estimated from, per die (doubt_features).
FEATURES = ("confidence", "unreadable", "tilted", "stacked", "detector_score", "size_off",
            "body_along")
_EPS = 1e-4


def _sigmoid(z: np.ndarray) -> np.ndarray:
    p: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
    return p


def doubt_features(confidence: np.ndarray, quality: np.ndarray, score: np.ndarray,
                   size: np.ndarray, frame_sizes: np.ndarray, body_along: np.ndarray
                   ) -> np.ndarray:
    """N x len(FEATURES): the confidence and the quality probabilities on log scales (the
    differences that matter are between 0.99 and 0.9999, and 0.001 and 0.1), the detector's
    score, how far the find's size lies from the median of the frame's finds (|log|), and
    how far its body lies along the frame's view (vision.judge.body_along_the_view, die
    sizes). `quality` is N x 5 in vision.classifier.QUALITY order."""
    conf = np.clip(np.asarray(confidence, float), 0.0, 1.0 - _EPS)
    median = float(np.median(frame_sizes)) if len(frame_sizes) else 1.0
    return np.stack([
        -np.log(1.0 - conf + _EPS),
        np.log(quality[:, 3] + _EPS),  # unreadable
        np.log(quality[:, 1] + _EPS),  # tilted
        np.log(quality[:, 2] + _EPS),  # stacked
        np.asarray(score, float),
        np.abs(np.log(np.maximum(np.asarray(size, float), 1e-3) / max(median, 1e-3))),
        np.asarray(body_along, float),
    ], axis=1).reshape(-1, len(FEATURES))


class DoubtError(ModelMissingError):
    """A doubt file that cannot be read (a model file like the networks: whoever reports a
    missing model reports this); the message says why in one line."""


@dataclass(frozen=True)
class Doubt:
    weights: tuple[float, ...]  # one per FEATURES
    bias: float
    ask_above: float  # the judge asks where the chance of an error is at least this

    def probability(self, features: np.ndarray) -> np.ndarray:
        """The estimated chance that each trusted reading is wrong."""
        return _sigmoid(np.asarray(features, float) @ np.array(self.weights) + self.bias)

    @classmethod
    def fit(cls, features: np.ndarray, wrong: np.ndarray, ask_above: float,
            l2: float = 0.01, iterations: int = 50) -> Doubt:
        """Logistic regression (Newton's method, a little L2 on standardised features) of
        `wrong` (1 where a trusted reading was wrong) on `features` (doubt_features)."""
        x = np.asarray(features, float)
        y = np.asarray(wrong, float)
        mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-6
        a = np.hstack([(x - mean) / spread, np.ones((len(x), 1))])
        w = np.zeros(a.shape[1])
        penalty = np.full(a.shape[1], 2 * l2 * len(x))
        penalty[-1] = 0.0  # not on the bias
        for _ in range(iterations):
            p = _sigmoid(a @ w)
            grad = a.T @ (p - y) + penalty * w
            hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(penalty + 1e-9)
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        weights = w[:-1] / spread
        bias = float(w[-1] - (mean / spread) @ w[:-1])
        return cls(tuple(float(v) for v in weights), bias, ask_above)

    def save(self, path: Path = DOUBT_PATH, note: str = "") -> None:
        path.write_text(json.dumps({"features": list(FEATURES), "weights": list(self.weights),
                                    "bias": self.bias, "ask_above": self.ask_above,
                                    "note": note}, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path = DOUBT_PATH) -> Doubt | None:
        """The fitted doubt, or None where there is none (the judge then trusts as before)."""
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            features = data["features"]
            weights = tuple(float(v) for v in data["weights"])
            doubt = cls(weights, float(data["bias"]), float(data["ask_above"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DoubtError(f"{path} cannot be read ({exc}): run `make models`") from None
        if features != list(FEATURES):
            raise DoubtError(f"{path}: fitted on {features}, this program computes "
                             f"{list(FEATURES)}: run `make models`")
        if len(weights) != len(FEATURES):
            raise DoubtError(f"{path}: {len(weights)} weights for {len(FEATURES)} features")
        return doubt
