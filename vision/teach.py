"""Teach the reader a new dice set from a few photos ("put every die duck-up").

Real dice never look exactly like the ones we trained on. The face classifier's embedding
separates faces well beyond its training set, so a new set is learnt without training: the
dice of each photo are found, cropped in several rotations, embedded, and stored; reading
then takes the value whose stored embeddings are nearest (cosine). Seconds on a Pi.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vision.classifier import QUALITY
from vision.preprocess import crop_die
from vision.reading import DieValue

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
RESERVED = ("auto", "pips", "animals")
#: Rotations of every taught crop: a die lands any way round.
ROTATIONS = tuple(range(0, 360, 30))
#: Sharpness of the similarity → probability softmax.
TEMPERATURE = 0.03
#: A die less similar than this to every taught crop does not look like the taught photos
#: (other light, a steep view, a die of another set): its confidence is capped at that
#: similarity, so the table asks about it. Chosen on unseen-art sets of seeds 710001–710003
#: (not the 7000xx sets `make eval` reports): it asked about 9 of 32 confident errors for 4
#: dice read right.
FAMILIAR = 0.85


class DiceSetError(ValueError):
    """A dice set that cannot be taught or loaded; the message says why in one line."""


@dataclass
class DiceSet:
    name: str
    labels: list[DieValue]  # one per stored embedding
    embeddings: np.ndarray  # N x D, unit length

    @property
    def faces(self) -> list[DieValue]:
        return list(dict.fromkeys(self.labels))

    def values(self, embeddings: np.ndarray) -> tuple[list[DieValue], np.ndarray]:
        """Nearest taught face of each embedding, with a probability from the similarities
        (capped for a die unlike anything taught: FAMILIAR)."""
        if len(embeddings) == 0:
            return [], np.zeros(0)
        faces = self.faces
        sims = embeddings @ self.embeddings.T  # M x N
        per_face = np.stack([
            np.sort(sims[:, [i for i, lab in enumerate(self.labels) if lab == f]], axis=1)
            [:, -3:].mean(axis=1)
            for f in faces], axis=1)
        z = (per_face - per_face.max(axis=1, keepdims=True)) / TEMPERATURE
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        best = p.argmax(axis=1)
        nearest = sims.max(axis=1)
        prob = p[np.arange(len(best)), best]
        prob = np.where(nearest < FAMILIAR, np.minimum(prob, nearest), prob)
        return [faces[int(i)] for i in best], prob

    def save(self, state_dir: Path) -> Path:
        folder = state_dir / "dice-sets"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.npz"
        tmp = folder / f".{self.name}.tmp.npz"
        np.savez_compressed(tmp, embeddings=self.embeddings.astype(np.float32),
                            labels=np.array(json.dumps(self.labels)))
        tmp.replace(path)  # never leave a half-written set behind
        return path


def check_name(name: str) -> str:
    if not NAME_PATTERN.match(name) or name in RESERVED:
        raise DiceSetError(f"dice set name {name!r}: use letters, digits, '-', '_' or '.' "
                           f"(not {', '.join(RESERVED)})")
    return name


def load_dice_set(state_dir: Path, name: str) -> DiceSet:
    check_name(name)
    path = state_dir / "dice-sets" / f"{name}.npz"
    if not path.is_file():
        known = sorted(p.stem for p in (state_dir / "dice-sets").glob("*.npz")) \
            if (state_dir / "dice-sets").is_dir() else []
        raise DiceSetError(f"no dice set {name!r} (taught: {', '.join(known) or 'none'})")
    try:
        with np.load(path) as data:
            labels = json.loads(str(data["labels"]))
            embeddings = data["embeddings"]
    except (OSError, ValueError, KeyError) as exc:
        raise DiceSetError(f"dice set {name!r} is damaged ({exc}); teach it again") from None
    return DiceSet(name, labels, embeddings)


def parse_value(text: str) -> DieValue:
    return int(text) if text.isdigit() else text


def teach(reader: object, name: str, photos: Mapping[DieValue, Sequence[np.ndarray]]
          ) -> tuple[DiceSet, dict[DieValue, int]]:
    """Learn a set from photos in which every die shows the given value.

    `reader` is a vision.reader.Reader (its detector and classifier are used). Returns the
    set and how many dice were found per value.
    """
    from vision.reader import Reader

    assert isinstance(reader, Reader)
    check_name(name)
    if len(photos) < 2:
        raise DiceSetError("teach at least two values (e.g. duck=duck.jpg lion=lion.jpg)")
    labels: list[DieValue] = []
    chunks: list[np.ndarray] = []
    counts: dict[DieValue, int] = {}
    no_die = QUALITY.index("no_die")
    for value, frames in photos.items():
        counts[value] = 0
        for frame in frames:
            candidates = reader.detector.detect(frame)
            if not candidates:
                continue
            check = reader.classifier.classify(
                [crop_die(frame, c.x, c.y, c.size) for c in candidates])
            dice = [c for c, q in zip(candidates, check.quality, strict=True)
                    if q[no_die] < 0.5]
            counts[value] += len(dice)
            crops = [crop_die(frame, c.x, c.y, c.size * s, angle=a)
                     for c in dice for a in ROTATIONS for s in (0.92, 1.08)]
            if crops:
                chunks.append(reader.classifier.classify(crops).embedding)
                labels.extend([value] * len(crops))
        if counts[value] == 0:
            raise DiceSetError(f"no die found in the photos for {value!r}")
    return DiceSet(name, labels, np.concatenate(chunks)), counts
