"""Motion for the demo camera: the frames of a throw that ends in a given scene."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .geometry import CameraModel
from .model import Die, Occluder, Scene


def _ease(t: float) -> float:
    return 1 - (1 - min(max(t, 0.0), 1.0)) ** 3


def throw(final: Scene, rng: np.random.Generator, frames: int = 24, cup: bool = True,
          entry_side: int | None = None) -> list[Scene]:
    """Scenes of a throw: the dice of `final` fly in from one side of the picture, bounce
    and tumble, and come to rest exactly as in `final` (the last frame is `final`, with
    its own occluders).  The cup, when asked for, empties at the entry side and leaves.
    Only the dice and occluders change, so the cached background is reused."""
    cam = CameraModel(final.camera)
    w, h = final.camera.width, final.camera.height
    side = int(rng.integers(4)) if entry_side is None else entry_side
    u, v = [(0.5 * w, -0.3 * h), (0.5 * w, 1.3 * h), (-0.3 * w, 0.5 * h),
            (1.3 * w, 0.5 * h)][side]
    entry = cam.unproject_to_plane(np.array([[u, v]]))[0][:2]
    plans = []
    for d in final.dice:
        start = entry + rng.normal(0, d.size_mm * 1.5, 2)
        plans.append({
            "start": start, "delay": float(rng.uniform(0, 0.15)),
            "spin": 360.0 * int(rng.integers(1, 4)), "dir": float(rng.uniform(0, 360)),
            "yaw0": d.yaw_deg + float(rng.uniform(-180, 180)),
            "hop": d.size_mm * float(rng.uniform(1.5, 3.5)), "bounces": int(rng.integers(2, 4)),
        })
    scenes = []
    for k in range(frames):
        t = k / max(frames - 1, 1)
        dice = []
        for d, p in zip(final.dice, plans, strict=True):
            tt = min(max((t - p["delay"]) / (0.85 - p["delay"]), 0.0), 1.0)
            e = _ease(tt)
            pos = p["start"] + (np.array([d.x, d.y]) - p["start"]) * e
            hop = p["hop"] * (1 - e) * abs(math.sin(math.pi * p["bounces"] * e))
            dice.append(Die(d.value, float(pos[0]), float(pos[1]),
                            p["yaw0"] + (d.yaw_deg - p["yaw0"]) * e, d.size_mm, d.style,
                            tilt_deg=d.tilt_deg + p["spin"] * (1 - e),
                            tilt_dir_deg=d.tilt_dir_deg if d.tilt_deg else p["dir"],
                            z_mm=d.z_mm + hop))
        occ: tuple[Occluder, ...] = ()
        if cup and t < 0.35:
            c = entry + (entry - np.array([final.camera.target[0], final.camera.target[1]])) \
                * (t / 0.35) * 0.6
            occ = (Occluder("cup", float(c[0]), float(c[1]), 0.0, 85.0, 100.0,
                            (0.1, 0.2, 0.35), (0.2, 0.5, 0.7), open_top=False),)
        scenes.append(dataclasses.replace(final, dice=tuple(dice), occluders=occ,
                                          seed=final.seed + k + 1))
    scenes[-1] = final
    return scenes
