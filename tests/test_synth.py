"""Tests of the synthetic dice renderer (vision.synth)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.reading import ANIMALS, SceneLabel, load_labels
from vision.synth import (
    FACE_NORMALS,
    Camera,
    CameraModel,
    Die,
    DieStyle,
    Lighting,
    Photo,
    Scene,
    Surface,
    Table,
    die_pose,
    random_scene,
    render,
    sampling,
)
from vision.synth.__main__ import main as cli_main
from vision.synth.dataset import hard_to_find, scene_for_index
from vision.synth.renderer import LEGIBLE
from vision.synth.sampling import OVEREXPOSURE, PATTERNED, _plain_surface, random_surface
from vision.synth.textures import surface_tile

SMALL = (320, 240)
PLAIN = DieStyle(body=(0.95, 0.95, 0.95), pip=(0.05, 0.05, 0.05), engraved=False,
                 gloss=0.0, pip_radius=0.09, corner=0.1)


def _topdown_scene(dice: tuple[Die, ...], **cam: object) -> Scene:
    camera = Camera(**{"width": 400, "height": 300, "focal_px": 600.0, "tilt_deg": 0.0,
                       "yaw_deg": 0.0, "distance_mm": 200.0, **cam})  # type: ignore[arg-type]
    return Scene(camera=camera, table=Table(Surface(kind="felt", color=(0.2, 0.45, 0.15))),
                 lighting=Lighting(elevation_deg=80, ambient=0.6), photo=Photo(), dice=dice)


def test_render_is_deterministic_per_seed() -> None:
    for seed in (1, 2):
        a = random_scene(np.random.default_rng(seed), "mixed", resolution=SMALL)
        b = random_scene(np.random.default_rng(seed), "mixed", resolution=SMALL)
        assert a == b
        img_a, lab_a = render(a)
        img_b, lab_b = render(b)
        assert np.array_equal(img_a, img_b)
        assert lab_a == lab_b
    c = random_scene(np.random.default_rng(3), "mixed", resolution=SMALL)
    assert c != a


def test_image_and_label_format() -> None:
    scene = random_scene(np.random.default_rng(4), "pips", resolution=(640, 480))
    img, label = render(scene)
    assert img.dtype == np.uint8 and img.shape == (480, 640, 3)
    assert (label.width, label.height) == (640, 480)
    json.dumps(label.to_json())


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_boxes_inside_image_and_on_the_dice(seed: int) -> None:
    scene = random_scene(np.random.default_rng(seed), "mixed", resolution=SMALL, clean=True,
                         hand=False, cup=False, die_px=40)
    _, label = render(scene)
    # same geometry with loud magenta dice, so that every die pixel differs from the table
    loud = tuple(dataclasses.replace(d, style=dataclasses.replace(
        d.style, body=(0.9, 0.0, 0.9), finish="plain", opacity=1.0)) for d in scene.dice)
    img, label_loud = render(dataclasses.replace(scene, dice=loud))
    # the same boxes, centres and flags (how plainly the faces show depends on the colours)
    assert [dataclasses.replace(d, legibility=None) for d in label_loud.dice] == \
        [dataclasses.replace(d, legibility=None) for d in label.dice]
    empty, _ = render(dataclasses.replace(scene, dice=()))
    assert label.dice
    h, w = img.shape[:2]
    for d in label.dice:
        x0, y0, x1, y1 = d.box
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        inside = np.abs(img[int(y0):int(y1), int(x0):int(x1)].astype(int)
                        - empty[int(y0):int(y1), int(x0):int(x1)].astype(int)).sum(axis=2)
        assert (inside > 40).mean() > 0.4, "the box should mostly cover the rendered die"
        if d.flag is None:
            cx, cy = d.center
            assert x0 <= cx <= x1 and y0 <= cy <= y1
    # nothing changes far away from the dice (apart from soft shadows)
    mask = np.ones((h, w), bool)
    for d in label.dice:
        x0, y0, x1, y1 = (int(v) for v in d.box)
        pad = 2 * (x1 - x0)  # long shadows under a low light
        mask[max(0, y0 - pad):y1 + pad, max(0, x0 - pad):x1 + pad] = False
    if mask.any():
        assert np.abs(img.astype(int) - empty.astype(int))[mask].max() <= 2


def _count_pips(img: np.ndarray, box: tuple[float, ...]) -> int:
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    gray = cv2.cvtColor(img[y0:y1, x0:x1], cv2.COLOR_BGR2GRAY)
    face = cv2.threshold(gray, 150, 255, cv2.THRESH_BINARY)[1]  # the white die face
    face = cv2.erode(face, np.ones((3, 3), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(255 - face)
    # dark blobs that do not touch the box border are pips
    count = 0
    for i in range(1, n):
        x, y, bw, bh, area = stats[i]
        if x > 0 and y > 0 and x + bw < face.shape[1] and y + bh < face.shape[0] and area > 8:
            count += 1
    return count


@pytest.mark.parametrize("value", [1, 2, 3, 4, 5, 6])
def test_topdown_die_center_value_and_pips(value: int) -> None:
    x, y, size = 12.0, -8.0, 16.0
    scene = _topdown_scene((Die(value, x, y, yaw_deg=17.0, size_mm=size, style=PLAIN),))
    img, label = render(scene)
    assert len(label.dice) == 1
    d = label.dice[0]
    assert d.value == value and d.flag is None
    cam = scene.camera
    zc = cam.distance_mm - size  # depth of the top face
    u = (cam.width - 1) / 2 + cam.focal_px * x / zc
    v = (cam.height - 1) / 2 - cam.focal_px * y / zc  # image down = table -y
    assert d.center == pytest.approx((u, v), abs=0.05)
    # the box hugs the die: edge ~ f * size / depth, rotated by 17 degrees
    side = cam.focal_px * size / zc * (np.cos(np.radians(17)) + np.sin(np.radians(17)))
    assert d.box[2] - d.box[0] == pytest.approx(side, rel=0.08)
    assert _count_pips(img, d.box) == value


@pytest.mark.parametrize("seed", range(6))
def test_worn_printed_pips_fade_but_never_vanish(seed: int) -> None:
    """Printed pips with the most wear are still all there: a pip that vanished would make
    the die show another value than its label says."""
    worn = dataclasses.replace(PLAIN, wear=0.7, seed=seed)
    scene = _topdown_scene((Die(5, 0.0, 0.0, yaw_deg=10.0, size_mm=16.0, style=worn),))
    img, label = render(scene)
    assert _count_pips(img, label.dice[0].box) == 5


def test_opposite_faces_sum_to_seven() -> None:
    for f in range(6):
        g = int(np.argmin(FACE_NORMALS @ FACE_NORMALS[f]))
        assert np.allclose(FACE_NORMALS[g], -FACE_NORMALS[f])
        assert (f + 1) + (g + 1) == 7
    rng = np.random.default_rng(0)
    for _ in range(50):
        die = Die(int(rng.integers(1, 7)), 0, 0, yaw_deg=float(rng.uniform(0, 360)),
                  tilt_deg=float(rng.uniform(0, 40)), tilt_dir_deg=float(rng.uniform(0, 360)))
        pose = die_pose(die)
        top = pose.top_face()
        bottom = int(np.argmin(pose.normals[:, 2]))
        assert top + 1 == die.value and top + bottom + 2 == 7
        assert abs(float(pose.vertices()[:, 2].min())) < 1e-9  # resting on the table


def test_every_value_and_animal_is_reachable() -> None:
    pips: set[object] = set()
    animals: set[object] = set()
    for i in range(12):
        for kind, seen in (("pips", pips), ("animals", animals)):
            s = random_scene(np.random.default_rng([9, i]), kind, resolution=SMALL, n_dice=7)
            seen.update(d.value for d in s.dice)
    assert pips == {1, 2, 3, 4, 5, 6}
    assert animals == set(ANIMALS)
    # and labels of rendered animal dice carry the animal names
    s = random_scene(np.random.default_rng(10), "animals", resolution=SMALL, die_px=40,
                     hand=False, cup=False)
    _, label = render(s)
    assert label.dice and all(d.value in ANIMALS for d in label.dice)


def test_flags_stacked_tilted_cut() -> None:
    style = PLAIN
    scene = _topdown_scene((), tilt_deg=20.0, distance_mm=330.0)
    edge = CameraModel(scene.camera).unproject_to_plane(np.array([[200.0, 0.0]]), 8.0)[0]
    dice = (Die(3, 0, 0, 10, 16, style), Die(5, 1, 1, 40, 16, style, z_mm=16.0),
            Die(2, 40, 0, 0, 16, style, tilt_deg=25, tilt_dir_deg=0.0),
            Die(6, float(edge[0]), float(edge[1]), 0, 16, style))
    scene = dataclasses.replace(scene, dice=dice)
    _, label = render(scene)
    by_value = {d.value: d for d in label.dice}
    assert by_value[5].flag == "stacked"
    assert by_value[3].flag == "unreadable"  # its top face is under the stacked die
    assert by_value[2].flag == "tilted"
    assert by_value[6].flag == "cut"
    assert by_value[6].box[1] == 0


def test_hand_hides_a_die() -> None:
    from vision.synth import Occluder

    dice = (Die(4, 0, 0, 0, 16, PLAIN), Die(1, 50, 0, 0, 16, PLAIN))
    hand = Occluder("hand", 5, 0, yaw_deg=90, size_mm=80, height_mm=30)
    _, label = render(dataclasses.replace(_topdown_scene(dice, distance_mm=300.0),
                                          occluders=(hand,)))
    assert [d.value for d in label.dice] == [1]


def test_cli_writes_images_and_labels(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    cli_main(["--out", str(out), "--count", "3", "--seed", "11", "--kind", "mixed",
              "--resolution", "320x240"])
    labels = load_labels(out)
    assert [lb.image for lb in labels] == ["000000.jpg", "000001.jpg", "000002.jpg"]
    for lb in labels:
        img = cv2.imread(str(out / lb.image))
        assert img is not None and img.shape[:2] == (lb.height, lb.width)
    first = (out / "labels.jsonl").read_text()
    cli_main(["--out", str(tmp_path / "again"), "--count", "3", "--seed", "11",
              "--kind", "mixed", "--workers", "2", "--resolution", "320x240"])
    assert (tmp_path / "again" / "labels.jsonl").read_text() == first


def test_the_cli_renders_only_the_scenes_hard_to_find_when_asked(tmp_path: Path) -> None:
    """`--hard-to-find` (the detector's tuning set, models/build.py HARD_SET): of the
    --count scenes, those on a printed cloth or in a noisy picture, each under its own
    number and as the whole set renders it."""
    args = ["--count", "60", "--seed", "120", "--kind", "mixed", "--resolution", "320x240",
            "--workers", "2"]
    cli_main(["--out", str(tmp_path / "hard"), *args, "--hard-to-find"])
    want = [i for i in range(60)
            if hard_to_find(scene_for_index(120, i, "mixed", (320, 240)))]
    assert 0 < len(want) < 20
    labels = load_labels(tmp_path / "hard")
    assert [lb.image for lb in labels] == [f"{i:06d}.jpg" for i in want]
    image, label = render(scene_for_index(120, want[0], "mixed", (320, 240)))
    assert [d.value for d in labels[0].dice] == [d.value for d in label.dice]
    assert cv2.imread(str(tmp_path / "hard" / labels[0].image)).shape == image.shape


def test_animal_art_on_the_top_face() -> None:
    sheet = cv2.imread(str(Path(__file__).resolve().parents[1] / "vision" / "assets"
                           / "animals.png"), cv2.IMREAD_UNCHANGED)
    assert sheet is not None and sheet.shape == (128, 128 * 6, 4)
    style = DieStyle(kind="animals", body=(0.95, 0.95, 0.95), gloss=0.0, art_scale=0.85,
                     corner=0.08)
    white = np.full((128, 128, 3), 242.0)
    refs = []
    for i in range(6):
        cell = sheet[:, i * 128:(i + 1) * 128].astype(float)
        a = cell[..., 3:] / 255
        refs.append(cv2.resize(cell[..., :3] * a + white * (1 - a), (48, 48)))
    for i, name in enumerate(ANIMALS):
        scene = _topdown_scene((Die(name, 0, 0, 0.0, 16.0, style),), distance_mm=120.0)
        scene = dataclasses.replace(scene, lighting=Lighting(elevation_deg=90, ambient=0.9))
        img, label = render(scene)
        assert label.dice[0].value == name
        x0, y0, x1, y1 = (int(v) for v in label.dice[0].box)
        m = (x1 - x0) * 0.075  # art_scale 0.85 of the face
        crop = img[int(y0 + m):int(y1 - m), int(x0 + m):int(x1 - m)].astype(float)
        crop = cv2.resize(crop, (48, 48))
        crop *= 242.0 / np.percentile(crop, 95)
        # the art may be turned by quarter turns (the side faces rotated up)
        errors = [min(float(np.abs(np.rot90(crop, k) - r).mean()) for k in range(4))
                  for r in refs]
        assert int(np.argmin(errors)) == i, errors


def test_unseen_art_set_labels_its_own_face_names() -> None:
    """The "farm" art (never trained on) renders and labels frog..bear, for teach tests."""
    from vision.synth.model import ART_SETS

    rng = np.random.default_rng(11)
    scene = random_scene(rng, "animals", art="farm", n_dice=5, hand=False, cup=False)
    _, label = render(scene)
    assert label.dice and {d.value for d in label.dice} <= set(ART_SETS["farm"])


def test_registered_art_sets_render_with_their_own_faces(tmp_path: Path) -> None:
    """Training-only art (models/make_animal_art.py --pool): a folder of sheets and a
    pool.json; dice painted with it carry its face names, and the shipped sets are safe."""
    from vision.synth import register_art_sets
    from vision.synth.model import ART_SETS, ART_SHEETS

    sheet = np.zeros((128, 128 * 6, 4), np.uint8)
    for i in range(6):  # six different shapes in six colours
        colour = (40 * i, 255 - 40 * i, 120, 255)
        cv2.circle(sheet, (i * 128 + 64, 64), 20 + 7 * i, colour, -1)
    cv2.imwrite(str(tmp_path / "testpool.png"), sheet)
    faces = [f"shape{i}" for i in range(6)]
    (tmp_path / "pool.json").write_text(json.dumps({"testpool": faces}))
    try:
        assert register_art_sets(tmp_path) == ["testpool"]
        rng = np.random.default_rng(3)
        scene = random_scene(rng, "animals", art="testpool", n_dice=5, hand=False, cup=False)
        image, label = render(scene)
        assert image.shape[2] == 3 and label.dice
        assert {d.value for d in label.dice} <= set(faces)
        (tmp_path / "pool.json").write_text(json.dumps({"animals": faces}))
        with pytest.raises(ValueError, match="shipped art set"):
            register_art_sets(tmp_path)
        assert ART_SETS["animals"] == ANIMALS
    finally:
        ART_SETS.pop("testpool", None)
        ART_SHEETS.pop("testpool", None)


@pytest.mark.parametrize("photo, lighting, readable", [
    (Photo(), Lighting(elevation_deg=80, ambient=0.6), True),
    (Photo(noise=0.03, jpeg_quality=80), Lighting(elevation_deg=80, ambient=0.6), True),
    # a die far too dark for its sensor noise: nobody can count its pips
    (Photo(noise=0.08), Lighting(elevation_deg=80, ambient=0.6, exposure=0.05), False),
    # the same sensor noise, out of focus by more than a pip's size
    (Photo(noise=0.03, blur_px=4.0), Lighting(elevation_deg=80, ambient=0.6), False),
])
def test_a_top_face_the_photo_does_not_show_is_flagged_unreadable(
        photo: Photo, lighting: Lighting, readable: bool) -> None:
    """The label says "unreadable" when the photo does not tell the top face from the
    die's other faces (renderer._legibility), whatever the die's pose."""
    scene = _topdown_scene((Die(5, 0.0, 0.0, yaw_deg=10.0, size_mm=12.0, style=PLAIN),),
                           distance_mm=400.0)
    _, label = render(dataclasses.replace(scene, photo=photo, lighting=lighting))
    assert len(label.dice) == 1
    assert (label.dice[0].flag is None) == readable
    # the label carries the d' it was judged by, and keeps it through its JSON line
    legibility = label.dice[0].legibility
    assert legibility is not None and (legibility >= LEGIBLE) == readable
    again = SceneLabel.from_json(json.loads(json.dumps(label.to_json())))
    assert again.dice[0].legibility == pytest.approx(legibility, abs=0.05)


@pytest.mark.parametrize("kind", ["dotted", "printed"])
def test_a_patterned_cloth_repeats_without_a_seam(kind: str) -> None:
    """Dots and motifs cut by the tile's edge go on across it: a table tiled with it shows
    no seam that a network could learn from."""
    tile = surface_tile(Surface(kind=kind, color=(0.55, 0.3, 0.1), color2=(0.93, 0.93, 0.93),
                                scale_mm=150.0, pattern=1, seed=3))
    grey = tile.mean(axis=2)
    assert grey.std() > 0.05  # a pattern, not a plain cloth
    inside = np.abs(np.diff(grey, axis=0)).mean()
    across = np.abs(grey[0] - grey[-1]).mean()
    assert across < 2 * inside
    inside = np.abs(np.diff(grey, axis=1)).mean()
    assert np.abs(grey[:, 0] - grey[:, -1]).mean() < 2 * inside


def test_polka_dots_are_about_as_large_as_pips() -> None:
    """The dots must look like pips to be worth learning from: 2–7 mm across."""
    s = Surface(kind="dotted", color=(0.1, 0.1, 0.1), color2=(0.93, 0.93, 0.93),
                scale_mm=200.0, seed=5)
    light = (surface_tile(s).mean(axis=2) > 0.5).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(light)
    mm = np.sqrt(4 * stats[1:, cv2.CC_STAT_AREA] / np.pi) * 200.0 / light.shape[0]
    assert n > 10 and 2.0 <= np.median(mm) <= 7.0


@pytest.mark.parametrize("share", [0.0, 0.15])
def test_some_random_tables_are_patterned_and_the_others_as_before(
        share: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """About PATTERNED_SHARE of the random tables are patterned cloths; every other table is
    drawn exactly as before they were added (the same draws from the scene's generator)."""
    monkeypatch.setattr(sampling, "PATTERNED_SHARE", share)
    kinds = [random_surface(np.random.default_rng([7, i])).kind for i in range(400)]
    patterned = sum(k in PATTERNED for k in kinds) / len(kinds)
    assert abs(patterned - share) < 0.06
    for i in range(40):
        table = random_surface(np.random.default_rng([7, i]))
        if table.kind not in PATTERNED:
            assert table == _plain_surface(np.random.default_rng([7, i]))
    assert random_surface(np.random.default_rng(1), "printed").kind == "printed"


@pytest.mark.parametrize("share", [0.0, 0.3])
def test_some_tables_have_a_cable_or_a_label_and_every_other_draw_is_as_before(
        share: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """About CLUTTER_SHARE of the scenes get a cable or a label (from a stream of their
    own); every scene is otherwise drawn exactly as without them."""
    def scenes() -> list[Scene]:
        return [random_scene(np.random.default_rng([11, i]), "pips") for i in range(150)]

    before = scenes()
    monkeypatch.setattr(sampling, "CLUTTER_SHARE", share)
    after = scenes()
    cluttered = 0
    for old, new in zip(before, after, strict=True):
        extra = [p for p in new.props if p.kind in ("cable", "label")]
        cluttered += bool(extra)
        assert dataclasses.replace(new, props=tuple(p for p in new.props if p not in extra)) \
            == old
    assert abs(cluttered / len(after) - share) < 0.1


def test_a_share_of_scenes_have_dice_the_colour_of_their_table_and_the_rest_are_as_before(
        ) -> None:
    """`camouflage` (the training sets' share) recolours about that share of the scenes:
    black pip dice with white pips on black felt, or felt the colour of the dice, under a
    tray too; the dice lie where they did, and every other scene is drawn as without it."""
    def body_gap(scene: Scene) -> float:
        table = np.array(scene.table.surface.color)
        return min(float(np.abs(np.array(d.style.body) - table).max()) for d in scene.dice)

    changed = black = 0
    for i in range(200):
        plain = scene_for_index(101, i, "mixed", SMALL)
        hidden = scene_for_index(101, i, "mixed", SMALL, camouflage=0.25)
        if hidden == plain:
            continue
        changed += 1
        assert hidden.table.surface.kind in ("felt", "leather") and hidden.dice
        assert [(d.x, d.y, d.value) for d in hidden.dice] == \
            [(d.x, d.y, d.value) for d in plain.dice]
        assert dataclasses.replace(hidden, table=plain.table, dice=plain.dice,
                                   tray=plain.tray) == plain
        if hidden.tray is not None:
            assert hidden.tray.floor == hidden.table.surface
        assert body_gap(hidden) < 0.35
        if all(d.style.kind == "pips" and max(d.style.body) < 0.2 < min(d.style.pip)
               for d in hidden.dice):
            black += 1
    assert 30 < changed < 70 and 5 < black < changed
    assert scene_for_index(101, 0, "mixed", SMALL, camouflage=0.0) == \
        scene_for_index(101, 0, "mixed", SMALL)


def test_a_share_of_the_pip_dice_sets_not_worn_are_drawn_worn_and_nothing_else_changes(
        ) -> None:
    """`worn` (a training share) wears about that share of the pip dice sets whose paint
    chance left whole, as chance wears one; animal dice, the dice sets worn already and
    everything else in the scene stay as drawn without it."""
    fresh = worn = 0
    for i in range(150):
        plain = scene_for_index(101, i, "mixed", SMALL)
        again = scene_for_index(101, i, "mixed", SMALL, worn=0.4)
        assert [(d.x, d.y, d.value) for d in again.dice] == \
            [(d.x, d.y, d.value) for d in plain.dice]
        assert dataclasses.replace(again, dice=plain.dice) == plain
        pairs = {(a.style, b.style) for a, b in zip(plain.dice, again.dice, strict=True)}
        for before, after in pairs:
            if before.kind != "pips" or before.wear > 0:
                assert after == before
                continue
            fresh += 1
            if after != before:
                worn += 1
                assert dataclasses.replace(after, wear=0.0) == before
                assert 0.2 <= after.wear <= 0.7
    assert fresh > 60 and 0.25 < worn / fresh < 0.55
    assert scene_for_index(101, 3, "pips", SMALL, worn=0.0) == \
        scene_for_index(101, 3, "pips", SMALL)


def test_a_share_of_the_scenes_is_drawn_overexposed_and_nothing_else_changes() -> None:
    """`bright` (a training share) overexposes about that share of the scenes
    (OVEREXPOSURE, past the random lighting's 0.8-1.2); everything else in the scene stays
    as drawn without it, and the picture is brighter, clipping to white."""
    bright = 0
    for i in range(150):
        plain = scene_for_index(101, i, "mixed", SMALL)
        again = scene_for_index(101, i, "mixed", SMALL, bright=0.3)
        assert dataclasses.replace(again, lighting=plain.lighting) == plain
        if again.lighting != plain.lighting:
            bright += 1
            assert dataclasses.replace(again.lighting, exposure=plain.lighting.exposure) == \
                plain.lighting
            assert OVEREXPOSURE[0] <= again.lighting.exposure <= OVEREXPOSURE[1]
            assert plain.lighting.exposure <= 1.2
    assert 0.2 < bright / 150 < 0.4
    scene = scene_for_index(101, 7, "pips", SMALL)
    lit = dataclasses.replace(scene, lighting=dataclasses.replace(scene.lighting,
                                                                  exposure=2.0))
    dark, light = render(scene)[0], render(lit)[0]
    assert float(light.mean()) > float(dark.mean()) + 20
    assert float((light >= 250).mean()) > float((dark >= 250).mean())


def test_the_cli_renders_a_share_of_camouflaged_scenes_and_refuses_a_share_past_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--count", "12", "--seed", "101", "--kind", "pips", "--resolution", "320x240"]
    cli_main(["--out", str(tmp_path / "hidden"), *args, "--camouflage", "0.5"])
    cli_main(["--out", str(tmp_path / "plain"), *args])
    hidden, plain = load_labels(tmp_path / "hidden"), load_labels(tmp_path / "plain")
    assert [[(d.value, d.center) for d in lb.dice] for lb in hidden] == \
        [[(d.value, d.center) for d in lb.dice] for lb in plain]  # the same dice, in place
    differ = [lb.image for lb in hidden
              if scene_for_index(101, int(lb.image[:6]), "pips", SMALL, camouflage=0.5)
              != scene_for_index(101, int(lb.image[:6]), "pips", SMALL)]
    assert differ
    for name in differ:
        a = cv2.imread(str(tmp_path / "hidden" / name))
        b = cv2.imread(str(tmp_path / "plain" / name))
        assert np.abs(a.astype(int) - b.astype(int)).mean() > 5
    with pytest.raises(SystemExit):
        cli_main(["--out", str(tmp_path / "bad"), *args, "--camouflage", "1.5"])
    assert "--camouflage must be a share from 0 to 1, not 1.5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["--out", str(tmp_path / "bad"), *args, "--worn", "-0.1"])
    assert "--worn must be a share from 0 to 1, not -0.1" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    cli_main(["--out", str(tmp_path / "worn"), *args, "--count", "4", "--worn", "1"])
    worn = load_labels(tmp_path / "worn")
    assert [[(d.value, d.center) for d in lb.dice] for lb in worn] == \
        [[(d.value, d.center) for d in lb.dice] for lb in plain[:4]]


def test_a_cable_is_drawn_along_its_path_and_off_the_dice() -> None:
    """A forced cable lies where cable_path says, clear of every die, and the dice are
    labelled as without it."""
    from vision.synth.geometry import cable_path

    for i in range(6):
        scene = random_scene(np.random.default_rng([12, i]), "pips", clutter=True,
                             resolution=SMALL, tilt_deg=15.0, hand=False, cup=False)
        cables = [p for p in scene.props if p.kind == "cable"]
        if not cables:
            continue
        plain = dataclasses.replace(scene, props=tuple(p for p in scene.props
                                                       if p.kind not in ("cable", "label")))
        with_it, label = render(dataclasses.replace(scene, photo=Photo()))
        without, plain_label = render(dataclasses.replace(plain, photo=Photo()))
        assert label.dice == plain_label.dice
        cam = CameraModel(scene.camera)
        cable = cables[0]
        path = cable_path(cable.x, cable.y, cable.yaw_deg, cable.length_mm, cable.seed)
        line = cam.project(np.column_stack([path, np.full(len(path), cable.width_mm / 2)]))
        inside = [(round(u), round(v)) for u, v in line
                  if 2 <= u < SMALL[0] - 2 and 2 <= v < SMALL[1] - 2]
        if len(inside) < 5:
            continue
        changed = [float(np.abs(with_it[v, u].astype(int) - without[v, u].astype(int)).max())
                   for u, v in inside]
        assert np.median(changed) > 20, changed
        for die in scene.dice:
            point = np.array([[die.x, die.y]])
            assert np.min(np.hypot(*(path - point).T)) > die.size_mm * 0.7
        return
    pytest.fail("no forced cable crossed the picture")


def test_a_label_is_printed_with_a_barcode() -> None:
    from vision.synth.model import Prop
    from vision.synth.renderer import _label_texture

    tag = _label_texture(Prop("label", 0, 0, 0, 60.0, 25.0, 0.3, (0.95, 0.95, 0.95),
                              (0.1, 0.1, 0.1), seed=3))
    middle = tag[tag.shape[0] // 3, :, 0] < 0.5
    assert np.count_nonzero(np.diff(middle.astype(int)) == 1) >= 20  # bars
    assert tag[0].min() > 0.5 and tag[:, 0].min() > 0.5  # a blank margin
