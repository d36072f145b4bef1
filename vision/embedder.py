"""The face embedder behind taught dice sets (`kniffel teach`).

A die crop → a unit-length vector; crops of the same face lie close together, crops of
different faces apart — also for faces nobody trained on, because the network learnt to
tell about 1200 faces apart (models/train.py embedder), not just the twelve the classifier
reads. Only used when a taught set is being read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

import numpy as np

from vision.models import EMBEDDER_PATH, metadata, open_session
from vision.preprocess import checked_views, quarter_turns

#: Crops embedded in one run: teaching embeds thousands (every taught die in 72 views), and
#: one run for all of them took 1.8 GB at its peak (`make bench`), in runs of 64 crops 0.56
#: GB and less time; a Pi may have 1 GB.
BATCH = 64


class Embedder(Protocol):
    #: Names the model: a taught set's stored vectors are only comparable with the same one.
    version: str

    def embed(self, crops: list[np.ndarray]) -> np.ndarray: ...


class OnnxEmbedder:
    """The shipped embedder; like the classifier it looks at each crop in quarter turns and
    averages (a die lies any way round)."""

    def __init__(self, path: Path = EMBEDDER_PATH, threads: int = 1, views: int = 4) -> None:
        self.views = checked_views(views)
        self.session = open_session(path, threads)
        self.dim = int(metadata(self.session).get("embed_dim", "0"))
        self.version = hashlib.sha256(path.read_bytes()).hexdigest()[:16] + f"/{views}"

    def embed(self, crops: list[np.ndarray]) -> np.ndarray:
        if not crops:
            return np.zeros((0, self.dim), np.float32)
        return np.concatenate([self._embed(crops[i:i + BATCH])
                               for i in range(0, len(crops), BATCH)])

    def _embed(self, crops: list[np.ndarray]) -> np.ndarray:
        (out,) = self.session.run(None, {"crops": quarter_turns(crops, self.views)})
        mean = out.reshape(self.views, len(crops), -1).mean(axis=0)
        unit: np.ndarray = mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-9)
        return unit
