"""The shipped ONNX models on frames they were not trained on, through the real reader and
the `kniffel read` / `kniffel teach` commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.annotate import overlaps
from vision.datasets import load_real, real_root
from vision.detector import Candidate
from vision.evaluation import evaluate
from vision.models import (
    CLASSIFIER_PATH,
    DETECTOR_PATH,
    EMBEDDER_PATH,
    REFINER_PATH,
    body_path,
)
from vision.preprocess import crop_die
from vision.reader import Reader
from vision.synth import random_scene, render
from vision.synth.textures import PIP_LAYOUT, rounded_cover

pytestmark = pytest.mark.skipif(
    not all(p.is_file() for p in (DETECTOR_PATH, body_path(DETECTOR_PATH), REFINER_PATH,
                                  CLASSIFIER_PATH, EMBEDDER_PATH)),
    reason="models/*.onnx missing: run `make models`")

#: Seeds for these tests: never used for training (1xx) or the eval sets (9xxxxx, 7xxxxx).
SEED = 31337


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader.default()


def table_scenes(kind: str, count: int) -> list[tuple[np.ndarray, object]]:
    """Plain table conditions: five dice, nothing in the way, a mounted camera."""
    rng = np.random.default_rng(SEED + (kind == "animals"))
    scenes = []
    for _ in range(count):
        scene = random_scene(rng, kind, n_dice=5, hand=False, cup=False, tilted=False,
                             stacked=False, cut=False, tilt_deg=float(rng.uniform(0, 30)),
                             resolution=(800, 600))
        scenes.append(render(scene))
    return scenes


#: What the shipped models must keep doing (regression guards, set a little below what they
#: measure; the issue's targets are measured by `make eval`, see models/README.md).
SYNTHETIC_FLOOR = {"pips": 0.89, "animals": 0.94}


@pytest.mark.parametrize("kind", ["pips", "animals"])
def test_reads_synthetic_tables(reader: Reader, kind: str) -> None:
    result = evaluate(reader, table_scenes(kind, 40))
    assert result.readable_accuracy >= SYNTHETIC_FLOOR[kind], result.summary()
    assert result.silent_rate <= 0.02, result.summary()


@pytest.mark.parametrize("kind", ["pips", "animals"])
def test_a_die_photographed_from_close_is_read_whole(reader: Reader, kind: str) -> None:
    """A photo taken close to a die (it fills most of the picture, larger than any die the
    detector was trained on) is read as that die, not as its pips or its picture's parts
    (before the coarse search none of these was; with it 11 and 10 of 12, with the
    networks and rules of the forty-eighth session 8 and 9; of 60 such photos 42 and 46;
    models/README.md "Dice photographed from close", "Worn pips" and "A die so large the
    first search finds nothing")."""
    right = 0
    for frame, label in table_scenes(kind, 12):
        die = label.dice[0]
        x0, y0, x1, y1 = die.box
        margin = 0.35 * (x1 - x0)
        crop = frame[max(0, int(y0 - margin)):int(y1 + margin),
                     max(0, int(x0 - margin)):int(x1 + margin)]
        photo = cv2.resize(crop, None, fx=800 / max(crop.shape[:2]), fy=800 / max(crop.shape[:2]),
                           interpolation=cv2.INTER_CUBIC)
        h, w = photo.shape[:2]
        seen = [d for d in reader.read(photo).dice if d.flag != "cut"]
        right += ([d.value for d in seen] == [die.value] and abs(seen[0].x - w / 2) < w / 5
                  and abs(seen[0].y - h / 2) < h / 5)
    assert right >= 7, f"{right} of 12 close-ups read as their die"


@pytest.mark.skipif(not real_root().is_dir(), reason="shared real photos not present")
def test_reads_real_photos(reader: Reader) -> None:
    result = evaluate(reader, load_real("Valid"))
    assert result.readable_accuracy >= 0.995, result.summary()  # the target
    assert result.silent_rate <= 0.01, result.summary()


#: What a screen lying in view shows behind the page's dice (BGR): the table's view (its
#: felt), the phone's page (its paper), and a screen in dark mode.
PAGE_BACKGROUNDS = {"felt": (73, 122, 31), "paper": (232, 240, 243), "dark": (30, 30, 30)}


def the_tables_page_on_a_screen(die: int, background: tuple[int, int, int]) -> np.ndarray:
    """A tablet or phone lying on the table showing the table's page: six dice drawn as the
    page draws them (web/static: white faces with rounded corners, rx 18 of 96, outlined in
    #333, dark pips of radius 9.5), each `die` pixels wide. Drawn here from the page's
    measures, not by models/printed.py, so that the test is not the training's pictures."""
    gap = die // 3
    line = max(1, die * 3 // 192)  # the outline's half outside the face
    screen = np.full((die + 2 * gap, 6 * die + 7 * gap, 3), background, np.float32)
    outline = rounded_cover(die + 2 * line, 18 / 96)[..., None]
    face = rounded_cover(die, 18 / 96)[..., None]
    for i, value in enumerate(range(1, 7)):
        x0, y0 = gap + i * (die + gap), gap
        for cover, colour, at in ((outline, 51.0, line), (face, 250.0, 0)):
            region = screen[y0 - at:y0 - at + cover.shape[0], x0 - at:x0 - at + cover.shape[1]]
            region[:] = region * (1 - cover) + colour * cover
        middle_x, middle_y, spacing = x0 + die // 2, y0 + die // 2, die * 25 // 96
        for dx, dy in PIP_LAYOUT[value]:
            cv2.circle(screen, (middle_x + dx * spacing, middle_y + dy * spacing),
                       max(1, die * 19 // 192), (28, 28, 28), -1, cv2.LINE_AA)
    return screen.astype(np.uint8)


def pictured_dice_trusted(reader: Reader, kind: str, background: str) -> int:
    """Beside 12 tables of `kind`: the page's dice on a screen lying in the corner farthest
    from the dice, seen at a slant, 0.5-1 of a real die: how many the reader trusts."""
    rng = np.random.default_rng(SEED + 2)
    trusted = 0
    for frame, label in table_scenes(kind, 12):
        size = float(np.median([d.box[2] - d.box[0] for d in label.dice]))
        screen = the_tables_page_on_a_screen(max(8, int(size * rng.uniform(0.5, 1.0))),
                                             PAGE_BACKGROUNDS[background])
        screen = cv2.resize(screen, (screen.shape[1], int(screen.shape[0] * 0.7)),
                            interpolation=cv2.INTER_AREA)[:580, :780]
        h, w = screen.shape[:2]
        corners = [(10, 10), (790 - w, 10), (10, 590 - h), (790 - w, 590 - h)]
        x0, y0 = min(corners, key=lambda c: sum(
            overlaps(d.box, (c[0], c[1], c[0] + w, c[1] + h)) for d in label.dice))
        photo = frame.copy()
        photo[y0:y0 + h, x0:x0 + w] = screen
        trusted += sum(bool(x0 <= d.x <= x0 + w and y0 <= d.y <= y0 + h and not d.asked)
                       for d in reader.read(photo).dice)
    return trusted


@pytest.mark.parametrize("kind", ["pips", "animals"])
def test_dice_on_a_screen_beside_the_dice_are_seldom_trusted(reader: Reader, kind: str
                                                             ) -> None:
    """Pictures of dice are not dice: the table's own page on a tablet or phone lying in
    view is turned down or asked about nearly always. Pictured dice trusted beside 12
    tables each with the page on felt / paper / a dark screen: by the classifier trained
    without pictures of dice, pips 34 / 10 / 24 and animals 19 / 0 / 19; by the one trained
    with them (shipped since the seventy-second session) 6 / 0 / 0 and 2 / 0 / 0
    (models/README.md "Dice that are only pictures")."""
    trusted = {background: pictured_dice_trusted(reader, kind, background)
               for background in PAGE_BACKGROUNDS}
    assert sum(trusted.values()) <= 10, trusted


def kniffel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "web.cli", *args], capture_output=True,
                          text=True, check=False, env=env, timeout=120)


def test_read_cli_json_annotate_and_bad_files(tmp_path: Path) -> None:
    frame, label = table_scenes("pips", 1)[0]
    good = tmp_path / "table.jpg"
    cv2.imwrite(str(good), frame)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a picture")
    tiny = tmp_path / "tiny.png"
    cv2.imwrite(str(tiny), frame[:10, :12])
    cut = tmp_path / "cut.jpg"  # a copy that did not finish
    cut.write_bytes(good.read_bytes()[:4000])
    damaged = tmp_path / "damaged.jpg"  # bytes lost inside: read, part of it garbled
    data = good.read_bytes()
    damaged.write_bytes(data[:len(data) // 2] + data[len(data) // 2 + 2000:])
    out = tmp_path / "annotated"
    result = kniffel("read", str(good), str(broken), str(tmp_path / "missing.jpg"), str(tiny),
                     str(cut), str(damaged), "--json", "--annotate", str(out))
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert errors == [f"kniffel read: {broken}: not a readable image",
                      f"kniffel read: {tmp_path / 'missing.jpg'}: no such file",
                      f"kniffel read: {tiny}: too small to read (12×10 pixels; at least 16 "
                      f"each way)",
                      f"kniffel read: {cut}: the JPEG file is cut short (a copy or an upload "
                      f"that did not finish?)"]
    doc = json.loads(result.stdout)
    assert [d["image"] for d in doc] == [str(good), str(broken), str(tmp_path / "missing.jpg"),
                                         str(tiny), str(cut), str(damaged)]
    assert doc[0]["warnings"] == []
    assert doc[5]["warnings"][0].startswith("damaged JPEG data (")  # libjpeg's own line: none
    assert doc[5]["warnings"][0].endswith("): part of the picture may be garbled, and dice "
                                          "there missed")
    assert doc[3] == {"image": str(tiny), "error": errors[2].split(": ", 2)[2]}
    dice = doc[0]["dice"]
    assert len(dice) == 5 and set(dice[0]) == {"value", "confidence", "x", "y", "box", "flag"}
    assert sorted(d["value"] for d in dice) == sorted(d.value for d in label.dice)
    assert (out / "table.jpg").is_file()


@pytest.mark.parametrize("count", ["0", "-1", "101"])
def test_read_cli_refuses_a_count_of_dice_it_cannot_expect(count: str) -> None:
    result = kniffel("read", "--expect", count, "table.jpg")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"kniffel read: --expect {count}: the number of dice in each "
                             "photo, 1 to 100\n")


def test_read_cli_a_photo_named_in_another_encoding(tmp_path: Path) -> None:
    """A file name that is not valid UTF-8 (a card written by an old camera): read, its
    annotated copy written under the same name (OpenCV, given such a path, crashes), and
    printed escaped — in JSON the escape reads back as the name Python opens it by —
    whatever the terminal's encoding."""
    frame, _label = table_scenes("pips", 1)[0]
    name = os.fsdecode(b"W\xfcrfel.jpg")
    photo = tmp_path / name
    photo.write_bytes(cv2.imencode(".jpg", frame)[1].tobytes())
    out = tmp_path / "annotated"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    result = kniffel("read", str(photo), "--json", "--annotate", str(out), env=env)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc[0]["image"] == str(photo) and len(doc[0]["dice"]) == 5
    assert (out / name).is_file()
    plain = kniffel("read", str(photo), env=env)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith(f"{tmp_path}/W\\udcfcrfel.jpg: ")


def test_a_camera_turned_a_quarter_is_read_as_if_upright(reader: Reader, tmp_path: Path
                                                         ) -> None:
    """`kniffel read --turn 90` (camera.turn at the table): the photo of a camera mounted a
    quarter turned is read as the upright picture is, the dice given in its own pixels."""
    frame, _ = table_scenes("pips", 1)[0]
    width = frame.shape[1]
    upright = reader.read(frame)
    photo = tmp_path / "turned.png"
    cv2.imwrite(str(photo), np.rot90(frame, 1))  # the table's near side on the right
    result = kniffel("read", str(photo), "--turn", "90", "--json")
    assert result.returncode == 0, result.stderr
    dice = sorted((d["x"], d["y"], d["value"], d["flag"])
                  for d in json.loads(result.stdout)[0]["dice"])
    expected = sorted((d.y, width - 1 - d.x, d.value, d.flag) for d in upright.dice)
    assert [(v, f) for _, _, v, f in dice] == [(v, f) for _, _, v, f in expected]
    assert np.allclose([(x, y) for x, y, _, _ in dice], [(x, y) for x, y, _, _ in expected],
                       atol=0.06)
    assert "invalid choice: 45" in kniffel("read", str(photo), "--turn", "45").stderr


def test_read_cli_annotates_a_photo_named_without_suffix(tmp_path: Path) -> None:
    frame, _ = table_scenes("pips", 1)[0]
    photo = tmp_path / "IMG_0001"
    cv2.imwrite(str(photo.with_suffix(".jpg")), frame)
    photo.with_suffix(".jpg").rename(photo)
    result = kniffel("read", str(photo), "--annotate", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "IMG_0001.png").is_file()
    result = kniffel("read", str(photo), "--annotate", str(photo))
    assert result.returncode != 0
    assert result.stderr.strip() == f"kniffel read: --annotate {photo}: not a folder"


def test_teach_a_dice_set_and_read_with_it(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`kniffel teach` from one photo per face, then `kniffel read --dice-set`: one pip set
    (colours, pips, table and light drawn from a seed the models never saw). How well
    teaching works on faces the models never saw at all, and on patterned cloths, is
    measured by `make eval`."""
    import dataclasses

    from vision.synth import random_pip_style, sampling

    # The photos are drawn on plain tables, as when this test was written: drawn with
    # patterned cloths, the fives of the second teaching lie on a polka-dot cloth seen at
    # 59 degrees, and teaching rightly refuses them as not all fives.
    monkeypatch.setattr(sampling, "PATTERNED_SHARE", 0.0)

    rng = np.random.default_rng(SEED + 7)
    style = random_pip_style(rng)

    def photo(value: int | None) -> tuple[np.ndarray, object]:
        scene = random_scene(rng, "pips", n_dice=5, hand=False, cup=False, tilted=False,
                             stacked=False, cut=False, dim=False, resolution=(800, 600))
        dice = tuple(dataclasses.replace(d, style=style, value=value or d.value)
                     for d in scene.dice)
        return render(dataclasses.replace(scene, dice=dice))

    args = []
    for face in range(1, 7):
        path = tmp_path / f"{face}.jpg"
        cv2.imwrite(str(path), photo(face)[0])
        args.append(f"{face}={path}")
    env = {**__import__("os").environ, "KNIFFEL_STATE_DIR": str(tmp_path / "state")}
    cut = tmp_path / "cut.jpg"  # half a photo teaches nothing
    cut.write_bytes((tmp_path / "6.jpg").read_bytes()[:3000])
    refused = kniffel("teach", "--dice-set", "wood", *args[:5], f"6={cut}", env=env)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (f"kniffel teach: {cut}: the JPEG file is cut short "
                                      "(a copy or an upload that did not finish?)")
    assert not (tmp_path / "state" / "dice-sets" / "wood.npz").exists()
    data = (tmp_path / "6.jpg").read_bytes()
    damaged = tmp_path / "damaged.jpg"  # a garbled die taught would draw other dice to it
    damaged.write_bytes(data[:len(data) // 2] + data[len(data) // 2 + 2000:])
    refused = kniffel("teach", "--dice-set", "wood", *args[:5], f"6={damaged}", env=env)
    assert refused.returncode == 1
    assert re.fullmatch(rf"kniffel teach: {re.escape(str(damaged))}: damaged JPEG data "
                        r"\(.+\): take or copy the photo again", refused.stderr.strip())
    assert not (tmp_path / "state" / "dice-sets" / "wood.npz").exists()
    taught = kniffel("teach", "--dice-set", "wood", *args, env=env)
    assert taught.returncode == 0, taught.stderr
    assert "warning" not in taught.stdout  # clear photos: nothing to take again
    assert (tmp_path / "state" / "dice-sets" / "wood.npz").is_file()
    right = total = 0
    for n in range(3):
        frame, label = photo(None)
        test = tmp_path / f"test{n}.jpg"
        cv2.imwrite(str(test), frame)
        read = kniffel("read", str(test), "--dice-set", "wood", "--json", env=env)
        assert read.returncode == 0, read.stderr
        values = sorted(d["value"] for d in json.loads(read.stdout)[0]["dice"])
        expected = sorted(d.value for d in label.dice)
        total += len(expected)
        right += sum(min(values.count(v), expected.count(v)) for v in set(expected))
    assert right >= 0.8 * total, (right, total)  # the built-in reader: ~90 % here

    # After a model update `kniffel read` embeds the set's dice again, once, and keeps that.
    from vision.embedder import OnnxEmbedder
    from vision.teach import embedding_version, load_dice_set

    state = tmp_path / "state"
    dataclasses.replace(load_dice_set(state, "wood"), embedder="older").save(state)
    again = kniffel("read", str(test), "--dice-set", "wood", "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(read.stdout)
    assert load_dice_set(state, "wood").embedder == embedding_version(OnnxEmbedder())
    unknown = kniffel("read", str(test), "--dice-set", "zoo", env=env)
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == "kniffel read: no dice set 'zoo' (taught: wood)"

    # Taught again elsewhere with --add, the set keeps its dice beside the new ones.
    before = len(load_dice_set(state, "wood").patch_values)
    for face in range(1, 7):
        cv2.imwrite(str(tmp_path / f"{face}.jpg"), photo(face)[0])
    added = kniffel("teach", "--dice-set", "wood", "--add", *args, env=env)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added to dice set 'wood' (1: ")
    grown = load_dice_set(state, "wood")
    assert len(grown.patch_values) > before and f"{len(grown.patch_values)} in all" \
        in added.stdout


def test_teaching_doubts_small_blurred_photos_and_a_photo_of_another_face(reader: Reader
                                                                          ) -> None:
    """Six photos of a pip set, as taken, are not doubted (teaching_doubts). As from a
    camera far off and out of focus (0.3 of the size, blurred), their faces look alike (over
    five sets, seeds 1000-1004, clear photos were never doubted; made small and blurred
    by 1.5 px, two of five were with the classifier of 33cf067), and blurred by 2 px the
    classifier cannot count them (by 1.5 px, the classifier of the seventy-second session
    still counts them). With the photo for 2 showing 3s (a user's slip), the classifier's
    count says so."""
    import dataclasses

    from vision.synth import random_pip_style
    from vision.teach import teach, teaching_doubts

    rng = np.random.default_rng(1001)
    style = random_pip_style(rng)

    def photo(value: int) -> np.ndarray:
        scene = random_scene(rng, "pips", n_dice=5, hand=False, cup=False, tilted=False,
                             stacked=False, cut=False, dim=False, resolution=(800, 600))
        dice = tuple(dataclasses.replace(d, style=style, value=value) for d in scene.dice)
        return render(dataclasses.replace(scene, dice=dice))[0]

    photos = {face: [photo(face)] for face in range(1, 7)}
    clear, _ = teach(reader, "clear", photos)
    assert teaching_doubts(clear) == []
    slip, _ = teach(reader, "slip", {**photos, 2: [photo(3)]})
    (doubt,) = teaching_doubts(slip)
    assert doubt.startswith("the dice of a photo count as another face than the one given")
    far = {face: [cv2.GaussianBlur(cv2.resize(p, None, fx=0.3, fy=0.3,
                                              interpolation=cv2.INTER_AREA), (0, 0), 2.0)
                  for p in frames] for face, frames in photos.items()}
    doubted, _ = teach(reader, "far", far)
    doubts = teaching_doubts(doubted)
    assert any("look more like another face than their own" in d for d in doubts), doubts
    # and the classifier no longer counts every photo's dice as its face
    assert not doubted.counted and any("count as another face" in d for d in doubts)


def test_four_views_read_a_die_the_same_however_it_is_turned(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from vision import classifier
    from vision.classifier import OnnxClassifier
    from vision.embedder import OnnxEmbedder

    frame, label = table_scenes("pips", 1)[0]
    die = label.dice[0]
    size = max(die.box[2] - die.box[0], die.box[3] - die.box[1])
    crop = crop_die(frame, die.center[0], die.center[1], size)
    four, one = OnnxClassifier(views=4), OnnxClassifier(views=1)
    # a crop sure in its first two turns (SURE_IN_TWO) is read in those two
    quarters = [np.ascontiguousarray(np.rot90(crop, k)) for k in range(4)]
    sure = four.classify([crop])
    assert sure.value[0].max() >= classifier.SURE_IN_TWO
    in_two = sum(one.classify([quarters[k]]).value for k in classifier.FIRST_TWO) / 2
    assert np.allclose(sure.value, in_two, atol=1e-5)
    # one unsure in two is read in all four: the same however it is turned
    monkeypatch.setattr(classifier, "SURE_IN_TWO", 1.01)
    turned = four.classify([quarters[0], quarters[1]])
    assert np.allclose(turned.value[0], turned.value[1], atol=1e-5)
    in_four = sum(one.classify([q]).value for q in quarters) / 4
    assert np.allclose(turned.value[0], in_four[0], atol=1e-5)
    assert not np.allclose(in_four[0], in_two[0], atol=1e-5)
    embedded = OnnxEmbedder(views=4).embed([crop, quarters[1]])
    assert np.allclose(embedded[0], embedded[1], atol=1e-5)
    assert np.allclose(np.linalg.norm(embedded, axis=1), 1.0, atol=1e-5)
    assert np.allclose(turned.value.sum(axis=1), 1.0, atol=1e-5)
    single = one.classify([crop, quarters[1]])
    assert single.value.shape == turned.value.shape == (2, 12)
    with pytest.raises(ValueError, match="views must be 1, 2 or 4"):
        OnnxClassifier(views=3)
    with pytest.raises(ValueError, match="views must be 1, 2 or 4"):
        OnnxEmbedder(views=3)


def test_a_crop_cut_upright_is_read_as_it_is_and_mirrored() -> None:
    """Upright crops (vision.preprocess.upright_angle) keep their turn: the classifier reads
    them and their mirror image, the other crops of the batch in quarter turns."""
    from vision.classifier import OnnxClassifier

    frame, label = table_scenes("pips", 1)[0]
    crops = [crop_die(frame, d.center[0], d.center[1],
                      max(d.box[2] - d.box[0], d.box[3] - d.box[1])) for d in label.dice[:3]]
    four, one = OnnxClassifier(views=4), OnnxClassifier(views=1)
    mixed = four.classify(crops, turned=[False, True, False])
    upright = (one.classify([crops[1]]).value[0]
               + one.classify([np.ascontiguousarray(crops[1][:, ::-1])]).value[0]) / 2
    assert np.allclose(mixed.value[1], upright, atol=1e-5)
    assert np.allclose(mixed.value[[0, 2]], four.classify([crops[0], crops[2]]).value,
                       atol=1e-5)
    assert np.allclose(mixed.quality.sum(axis=1), 1.0, atol=1e-5)


def test_the_detector_says_where_each_die_body_lies() -> None:
    """Seen at 45°, every die's body lies from its top face towards the camera's vertical
    vanishing point; the detector's body offsets must point the way the labels do."""
    from vision.detector import OnnxDetector

    detector = OnnxDetector()
    rng = np.random.default_rng(SEED + 7)
    agree = judged = 0
    for _ in range(10):
        frame, label = render(random_scene(rng, "pips", n_dice=5, hand=False, cup=False,
                                           tilted=False, stacked=False, cut=False,
                                           tilt_deg=45.0, resolution=(800, 600)))
        for found in detector.detect(frame):
            die = min(label.dice, key=lambda d: np.hypot(found.x - d.center[0],
                                                          found.y - d.center[1]))
            size = max(die.box[2] - die.box[0], die.box[3] - die.box[1])
            true = np.array([(die.box[0] + die.box[2]) / 2 - die.center[0],
                             (die.box[1] + die.box[3]) / 2 - die.center[1]]) / size
            if np.hypot(found.x - die.center[0], found.y - die.center[1]) < 0.3 * size \
                    and np.linalg.norm(true) > 0.1:
                assert found.body is not None
                judged += 1
                agree += float(np.dot(found.body, true)) > 0
    # 90 % of 149 such dice in 30 scenes when the head was trained (80 % at 35°, 75 % at
    # 20°, where the offsets are smaller); the judge asks only where the other dice agree
    assert judged >= 30 and agree >= 0.8 * judged, (agree, judged)


def test_a_detector_opens_only_with_the_body_head_made_with_it(tmp_path: Path) -> None:
    """The body head ships beside the detector (vision.models.body_path); one that is
    missing, or was trained on another detector's features, is a clear error, not wrong
    offsets."""
    import shutil

    from vision.detector import OnnxDetector
    from vision.models import ModelMissingError

    detector = tmp_path / "detector.onnx"
    shutil.copy(DETECTOR_PATH, detector)
    with pytest.raises(ModelMissingError, match=r"detector\.body\.onnx is missing"):
        OnnxDetector(detector)
    onnx = pytest.importorskip("onnx")
    head = onnx.load(str(body_path(DETECTOR_PATH)))
    for entry in head.metadata_props:
        if entry.key == "body_id":
            entry.value = "another detector"
    body_path(detector).write_bytes(head.SerializeToString())
    with pytest.raises(ModelMissingError, match="not made with the detector beside it"):
        OnnxDetector(detector)
    shutil.copy(body_path(DETECTOR_PATH), body_path(detector))
    assert OnnxDetector(detector).body is not None


def test_the_refiner_puts_a_misplaced_find_back_on_the_top_face() -> None:
    """A find a third of a die off its top face, at up to 1.4 times or 0.7 of its size,
    is moved back to the face and given the die's size."""
    from vision.refiner import OnnxRefiner

    refiner = OnnxRefiner()
    rng = np.random.default_rng(SEED + 8)
    before, after, size_error = [], [], []
    for frame, label in table_scenes("pips", 10):
        dice = [d for d in label.dice if d.flag is None]
        finds = []
        for die in dice:
            size = max(die.box[2] - die.box[0], die.box[3] - die.box[1])
            a, found = rng.uniform(0, 2 * np.pi), size * rng.uniform(0.7, 1.4)
            x, y = die.center[0] + size / 3 * np.cos(a), die.center[1] + size / 3 * np.sin(a)
            finds.append(Candidate(x, y, (x - found / 2, y - found / 2, x + found / 2,
                                          y + found / 2), 0.9))
        for die, find, put in zip(dice, finds, refiner.refine(frame, finds), strict=True):
            size = max(die.box[2] - die.box[0], die.box[3] - die.box[1])
            before.append(np.hypot(find.x - die.center[0], find.y - die.center[1]) / size)
            after.append(np.hypot(put.x - die.center[0], put.y - die.center[1]) / size)
            size_error.append(abs(np.log(put.size / size)))
    # the shipped refiner: median 0.33 → 0.05 die sizes, all within 0.2, size within 7 %
    assert len(after) >= 40
    assert np.median(after) < 0.12 and np.mean(np.array(after) < 0.2) > 0.85, np.median(after)
    assert np.median(size_error) < np.log(1.15)


def test_the_embedder_embeds_many_crops_in_runs_as_in_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Teaching embeds thousands of crops: in runs of BATCH (memory), with the same result."""
    import vision.embedder
    from vision.embedder import OnnxEmbedder

    embedder = OnnxEmbedder()
    rng = np.random.default_rng(3)
    crops = [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(70)]
    runs = embedder.embed(crops)
    monkeypatch.setattr(vision.embedder, "BATCH", len(crops))
    assert runs.shape == (70, embedder.dim) and np.allclose(runs, embedder.embed(crops),
                                                            atol=1e-6)


def test_the_larger_second_search_looks_only_around_the_first_finds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Dice small in a large frame are searched again larger (vision.detector.SMALL_DIE),
    only around the first finds: the dice are found there as a search of the whole frame,
    enlarged, finds them, for a part of its pixels."""
    import vision.detector as detector_module
    from vision.detector import OnnxDetector

    detector = OnnxDetector()
    searched: list[tuple[int, int]] = []
    search = detector._search

    def recorded(image: np.ndarray, *args: object) -> object:
        searched.append(image.shape[:2])
        return search(image, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(detector, "_search", recorded)
    rng = np.random.default_rng(SEED + 11)
    shares = []
    for _ in range(3):
        frame, label = render(random_scene(
            rng, "pips", n_dice=5, hand=False, cup=False, tilted=False, stacked=False,
            cut=False, tilt_deg=10.0, resolution=(1640, 1232), die_px=40.0))
        searched.clear()
        around = detector.detect(frame)
        part = searched[-1]
        with monkeypatch.context() as whole_frame:
            whole_frame.setattr(detector_module, "AROUND", 1e6)
            searched.clear()
            everywhere = detector.detect(frame)
        whole = searched[-1]
        assert whole[1] > 384  # searched larger
        shares.append(part[0] * part[1] / (whole[0] * whole[1]))
        centres = [d.center for d in label.dice]
        assert len(near_dice(around, centres)) >= 5
        # The same finds. Where a die the first search missed lies a few die sizes from
        # the part's edge, the network's context reaches past it: its place and size may
        # differ by a little (the tuned detector of 2026-11-30: 5 % of its size in place,
        # 2 % in size, for one die in these scenes; none of 200 in 40 others; both
        # finds lay as near the die's centre).
        part_finds, whole_finds = (np.array(near_dice(f, centres)) for f in (around, everywhere))
        assert part_finds.shape == whole_finds.shape
        apart = np.hypot(*(part_finds[:, :2] - whole_finds[:, :2]).T)
        assert np.all(apart <= 0.08 * whole_finds[:, 2]), (part_finds, whole_finds)
        assert np.allclose(part_finds[:, 2], whole_finds[:, 2], rtol=0.04, atol=0)
    assert max(shares) < 1.0 and min(shares) < 0.6, shares


def near_dice(finds: list[Candidate], centres: list[tuple[float, float]]
              ) -> list[tuple[float, float, float]]:
    """The finds within 60 px of a die's centre: place and size, rounded to 0.1 px."""
    return sorted((round(c.x, 1), round(c.y, 1), round(c.size, 1)) for c in finds
                  if any(np.hypot(c.x - x, c.y - y) < 60 for x, y in centres))


def test_the_weak_peaks_reported_leave_the_finds_as_they_were(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first search decodes down to WEAK_SCORE to report its weak peaks; its finds at
    the threshold are those of a search that decodes at the threshold alone."""
    import vision.detector as detector_module
    from vision.detector import OnnxDetector

    detector = OnnxDetector()
    rng = np.random.default_rng(SEED + 12)
    weak_seen = 0
    for _ in range(4):
        frame, _ = render(random_scene(rng, "pips", n_dice=5, resolution=(800, 600)))
        search = detector.search(frame)
        assert all(c.score >= detector.threshold for c in search.found)
        assert all(detector_module.WEAK_SCORE <= c.score < detector.threshold
                   for c in search.weak)
        weak_seen += len(search.weak)
        with monkeypatch.context() as m:
            m.setattr(detector_module, "WEAK_SCORE", detector.threshold)
            alone = detector.search(frame)
        assert alone.weak == [] and alone.found == search.found
    assert weak_seen > 0
