"""Data-set generation: N reproducible random scenes -> JPEGs + labels.jsonl."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

from vision.reading import SceneLabel, save_labels

from .model import Scene
from .renderer import render
from .sampling import random_scene


def scene_for_index(seed: int, index: int, kind: str = "pips",
                    resolution: tuple[int, int] | None = None,
                    camouflage: float = 0.0, worn: float = 0.0, bright: float = 0.0) -> Scene:
    """Scene number `index` of the data set with `seed` (independent of worker count);
    `camouflage`: the share of scenes whose dice are the colour of their table; `worn`:
    the share of pip dice sets whose paint chance left whole drawn worn; `bright`: the
    share of scenes overexposed."""
    rng = np.random.default_rng([int(seed), int(index)])
    return random_scene(rng, kind, resolution=resolution, camouflage=camouflage, worn=worn,
                        bright=bright)


def _one(args: tuple[str, int, int, str, int, tuple[int, int] | None,
                     Callable[[Scene], bool] | None, float, float, float]) -> SceneLabel | None:
    """Render and write scene `index`, or nothing where `only` does not keep it: the worker
    samples each scene once and decides there, so a filtered set is sampled in parallel."""
    out, seed, index, kind, quality, resolution, only, camouflage, worn, bright = args
    cv2.setNumThreads(1)
    scene = scene_for_index(seed, index, kind, resolution, camouflage, worn, bright)
    if only is not None and not only(scene):
        return None
    img, label = render(scene)
    name = f"{index:06d}.jpg"
    cv2.imwrite(str(Path(out) / name), img, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return dataclasses.replace(label, image=name)


#: A photo's sensor noise (`Photo.noise`, only dim scenes have more) above which the
#: detector finds dice worst.
NOISY = 0.04


def hard_to_find(scene: Scene) -> bool:
    """A scene whose dice the detector finds worst, which it is tuned on (models/README.md,
    "The detector tuned on the scenes it finds dice in worst"): on a printed cloth, whose
    shapes look like dice and pips, or in a noisy picture. About one scene in seven."""
    return scene.table.surface.kind == "printed" or scene.photo.noise > NOISY


def generate(out: Path, count: int, seed: int = 0, kind: str = "pips", workers: int = 1,
             quality: int = 95, start: int = 0,
             resolution: tuple[int, int] | None = None,
             only: Callable[[Scene], bool] | None = None,
             camouflage: float = 0.0, worn: float = 0.0,
             bright: float = 0.0) -> list[SceneLabel]:
    """Write images start..start+count-1 (those whose scene `only` keeps, if given) and
    `labels.jsonl` into `out`. `only` goes to the workers, so it must be a module-level
    function (as `hard_to_find` is). `camouflage`: the share of scenes whose dice are the
    colour of their table (the training sets' `--camouflage`); `worn`: the share of pip dice
    sets whose paint chance left whole drawn worn (`--worn`); `bright`: the share of scenes
    overexposed (`--bright`)."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(str(out), seed, i, kind, quality, resolution, only, camouflage, worn, bright)
            for i in range(start, start + count)]
    if workers <= 1:
        written = [_one(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=min(workers, os.cpu_count() or 1)) as ex:
            written = list(ex.map(_one, jobs, chunksize=8))
    labels = [label for label in written if label is not None]
    save_labels(out, labels)
    return labels
