"""Procedural photographs of dice on a table, with exact labels.

Run time needs only numpy, OpenCV and the standard library.

    from vision.synth import random_scene, render
    scene = random_scene(np.random.default_rng(0), kind="pips")
    image_bgr, label = render(scene)          # label: vision.reading.SceneLabel

Scenes are frozen dataclasses (`Scene`, `Camera`, `Table`, `Surface`, `Tray`, `Lighting`,
`Photo`, `Die`, `DieStyle`, `Prop`, `Occluder`) and can be built by hand; rendering is
deterministic for a scene and the static background (camera + table + tray + props + light)
is cached, so a demo camera that only moves dice, a hand or the cup renders quickly.
Data sets: ``python -m vision.synth --out DIR --count N --seed S --kind pips``.
"""

from .animate import throw
from .dataset import generate, scene_for_index
from .geometry import FACE_NORMALS, CameraModel, die_pose
from .model import (
    Camera,
    Die,
    DieStyle,
    Lighting,
    Occluder,
    Photo,
    Prop,
    Scene,
    Surface,
    Table,
    Tray,
    register_art_sets,
)
from .renderer import background, render
from .sampling import KINDS, random_animal_style, random_pip_style, random_scene

__all__ = [
    "FACE_NORMALS", "KINDS", "Camera", "CameraModel", "Die", "DieStyle", "Lighting",
    "Occluder", "Photo", "Prop", "Scene", "Surface", "Table", "Tray", "background", "die_pose",
    "generate", "random_animal_style", "random_pip_style", "random_scene", "register_art_sets",
    "render",
    "scene_for_index", "throw",
]
