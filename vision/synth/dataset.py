"""Data-set generation: N reproducible random scenes -> JPEGs + labels.jsonl."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

from vision.reading import SceneLabel, save_labels

from .model import Scene
from .renderer import render
from .sampling import random_scene


def scene_for_index(seed: int, index: int, kind: str = "pips",
                    resolution: tuple[int, int] | None = None) -> Scene:
    """Scene number `index` of the data set with `seed` (independent of worker count)."""
    rng = np.random.default_rng([int(seed), int(index)])
    return random_scene(rng, kind, resolution=resolution)


def _one(args: tuple[str, int, int, str, int, tuple[int, int] | None]) -> SceneLabel:
    out, seed, index, kind, quality, resolution = args
    cv2.setNumThreads(1)
    img, label = render(scene_for_index(seed, index, kind, resolution))
    name = f"{index:06d}.jpg"
    cv2.imwrite(str(Path(out) / name), img, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return dataclasses.replace(label, image=name)


def generate(out: Path, count: int, seed: int = 0, kind: str = "pips", workers: int = 1,
             quality: int = 95, start: int = 0,
             resolution: tuple[int, int] | None = None) -> list[SceneLabel]:
    """Write images start..start+count-1 and `labels.jsonl` into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(str(out), seed, i, kind, quality, resolution) for i in range(start, start + count)]
    if workers <= 1:
        labels = [_one(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=min(workers, os.cpu_count() or 1)) as ex:
            labels = list(ex.map(_one, jobs, chunksize=8))
    save_labels(out, labels)
    return labels
