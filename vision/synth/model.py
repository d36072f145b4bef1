"""The scene description: plain frozen dataclasses, so scenes are hashable and cacheable.

Colours are BGR tuples of floats in 0..1 (OpenCV order).  Lengths are millimetres on the
table (world frame: table plane z = 0, z up); angles are degrees.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from vision.reading import DieValue

BGR = tuple[float, float, float]


#: Art sets for picture dice: sheet `vision/assets/<name>.png`, face names in sheet order.
#: "animals" are the Kniffel Kids faces the models learn; "farm" is never used in training,
#: it stands for a dice set the reader has never seen (the teach evaluation).
ART_SETS: dict[str, tuple[str, ...]] = {
    "animals": ("duck", "lion", "mouse", "cat", "dog", "elephant"),
    "farm": ("frog", "pig", "monkey", "chicken", "rabbit", "bear"),
}
#: Sheets of art sets that are not in vision/assets (registered by register_art_sets).
ART_SHEETS: dict[str, Path] = {}


def register_art_sets(folder: Path) -> list[str]:
    """Add the training-only art sets of `folder` (its `pool.json`, written by
    `models/make_animal_art.py --pool`) to ART_SETS and return their names. Training renders
    dice with them so that the classifier's embedding learns to tell many faces apart."""
    sets = json.loads((folder / "pool.json").read_text(encoding="utf-8"))
    for name, faces in sets.items():
        if name in ("animals", "farm"):
            raise ValueError(f"{folder / 'pool.json'}: {name!r} is a shipped art set")
        ART_SETS[name] = tuple(faces)
        ART_SHEETS[name] = folder / f"{name}.png"
    return list(sets)


@dataclass(frozen=True)
class Camera:
    """Pinhole camera looking at `target` on the table."""

    width: int = 800
    height: int = 600
    focal_px: float = 700.0
    tilt_deg: float = 0.0  # 0 = straight down; angle between optical axis and table normal
    yaw_deg: float = 0.0  # turns the camera (and the image) about the table normal
    roll_deg: float = 0.0
    distance_mm: float = 450.0  # camera centre to `target` along the optical axis
    target: tuple[float, float] = (0.0, 0.0)  # table point seen at the image centre
    k1: float = 0.0  # radial lens distortion (< 0 barrel, > 0 pincushion)


@dataclass(frozen=True)
class Surface:
    """A procedural material: table top, tray floor, ..."""

    kind: str = "wood"  # wood | felt | paper | cloth | laminate | leather | dotted | printed
    color: BGR = (0.45, 0.6, 0.78)
    color2: BGR = (0.25, 0.38, 0.55)  # grain / thread / line colour
    scale_mm: float = 250.0  # table size covered by one texture tile
    angle_deg: float = 0.0  # direction of grain / weave on the table
    contrast: float = 1.0
    pattern: int = 0  # variant: planks, paper ruling, gingham, speckle ...
    gloss: float = 0.0  # strength of a broad light reflection on the surface
    seed: int = 0


@dataclass(frozen=True)
class Table:
    surface: Surface = field(default_factory=Surface)
    # one straight table edge: the table is where (x, y) . (cos a, sin a) <= edge_mm
    edge_deg: float | None = None  # None: the table fills the view
    edge_mm: float = 400.0
    beyond: BGR = (0.18, 0.2, 0.22)  # floor / room seen past the table edge


@dataclass(frozen=True)
class Tray:
    """A dice tray: floor rectangle with a raised rim, lying on the table."""

    x: float = 0.0
    y: float = 0.0
    width_mm: float = 300.0  # inner floor size
    depth_mm: float = 220.0
    yaw_deg: float = 0.0
    rim_width_mm: float = 18.0
    rim_height_mm: float = 22.0
    floor: Surface = field(default_factory=lambda: Surface(kind="felt", color=(0.25, 0.45, 0.2)))
    rim: Surface = field(default_factory=lambda: Surface(kind="wood"))


@dataclass(frozen=True)
class Lighting:
    azimuth_deg: float = 135.0  # direction the light comes from
    elevation_deg: float = 55.0
    ambient: float = 0.45  # share of light that reaches shadowed surfaces
    color: BGR = (1.0, 1.0, 1.0)  # white balance of light + camera
    exposure: float = 1.0
    shadow_blur: float = 0.08  # penumbra, as a fraction of the die size
    gradient: float = 0.0  # uneven light across the image (0..0.6)
    gradient_deg: float = 0.0
    gloss: float = 1.0  # multiplies the specular strength of dice


@dataclass(frozen=True)
class Photo:
    """Camera and sensor effects applied to the rendered image. Defaults: a clean image."""

    blur_px: float = 0.0  # defocus (Gaussian sigma, pixels)
    motion_px: float = 0.0  # motion blur length
    motion_deg: float = 0.0
    noise: float = 0.0  # sensor noise std (0..1 scale), grows in the dark
    jpeg_quality: int = 0  # 0: no JPEG round trip
    vignette: float = 0.0  # darkening of the corners (0..0.6)
    gamma: float = 1.0
    sharpen: float = 0.0  # unsharp-mask amount (webcam over-sharpening)
    saturation: float = 1.0


@dataclass(frozen=True)
class DieStyle:
    """How one die looks. Pip dice and animal (Kniffel Kids) dice share the body settings."""

    kind: str = "pips"  # pips | animals
    body: BGR = (0.93, 0.94, 0.95)
    body2: BGR = (0.7, 0.7, 0.72)  # second marble colour
    finish: str = "plain"  # plain | translucent | marbled
    opacity: float = 1.0  # < 1 for translucent bodies
    pip: BGR = (0.08, 0.08, 0.08)
    pip_radius: float = 0.095  # fraction of the face edge
    pip_spacing: float = 0.27  # offset of the outer pips from the centre, fraction of edge
    one_pip: BGR | None = None  # colour of the single pip (None: like the others)
    one_radius: float | None = None
    engraved: bool = True  # dark inner shadow + light rim
    wear: float = 0.0  # 0..1 paint missing from pips / art
    corner: float = 0.12  # corner rounding radius, fraction of the edge
    gloss: float = 0.25
    shininess: float = 18.0
    face_spin: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)  # quarter turns
    art_scale: float = 0.82  # animal art size, fraction of the face
    art_rot_deg: float = 0.0
    art_hue: int = 0  # hue shift (OpenCV hue units, 0..179)
    art_sat: float = 1.0
    art_mode: str = "color"  # color | posterize | outline | mono
    ink: BGR = (0.15, 0.12, 0.1)  # print colour for mono / outline art
    art: str = "animals"  # which art set (ART_SETS) an animal die's faces come from
    seed: int = 0


@dataclass(frozen=True)
class Die:
    """One die. value: the face set up pointing up (1..6, or an animal name)."""

    value: DieValue
    x: float  # world position of the die centre (mm)
    y: float
    yaw_deg: float = 0.0
    size_mm: float = 16.0
    style: DieStyle = field(default_factory=DieStyle)
    tilt_deg: float = 0.0  # leaning die: rotation of the whole die about a horizontal axis
    tilt_dir_deg: float = 0.0  # direction the top face tips toward
    z_mm: float = 0.0  # height of the lowest point (stacked die: size of the one below)


@dataclass(frozen=True)
class Prop:
    """Static distractor on the table: coin, pencil, block (Kniffel-Block), mat, cable or
    label. A cable (`geometry.cable_path` from x, y, yaw, length and seed) is width_mm
    thick, with a ferrite bead height_mm thick (0: none) in color2; a label is a paper tag
    printed with a barcode in color2."""

    kind: str
    x: float
    y: float
    yaw_deg: float = 0.0
    length_mm: float = 20.0  # coin diameter, pencil length, block/mat size (long side)
    width_mm: float = 20.0
    height_mm: float = 2.0
    color: BGR = (0.3, 0.7, 0.85)
    color2: BGR = (0.2, 0.2, 0.2)
    seed: int = 0


@dataclass(frozen=True)
class Occluder:
    """Moving thing above the table: a hand reaching in, or the dice cup."""

    kind: str  # hand | cup
    x: float  # palm centre / cup centre (mm)
    y: float
    yaw_deg: float = 0.0  # hand: direction from the palm toward the wrist
    size_mm: float = 85.0  # palm width / cup diameter
    height_mm: float = 40.0  # hand: height above the table; cup: height
    color: BGR = (0.55, 0.65, 0.85)  # skin / cup
    color2: BGR = (0.5, 0.3, 0.2)  # sleeve / cup rim
    open_top: bool = True  # cup: open side up (dark inside)
    spread: float = 0.5  # hand: finger spread 0..1


@dataclass(frozen=True)
class Scene:
    camera: Camera = field(default_factory=Camera)
    table: Table = field(default_factory=Table)
    lighting: Lighting = field(default_factory=Lighting)
    photo: Photo = field(default_factory=Photo)
    dice: tuple[Die, ...] = ()
    props: tuple[Prop, ...] = ()
    tray: Tray | None = None
    occluders: tuple[Occluder, ...] = ()
    seed: int = 0  # sensor noise of this frame
