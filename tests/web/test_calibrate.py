"""web.calibrate with a fake camera and a fake reader: areas, lock, focus, check, teach."""

from __future__ import annotations

import argparse
import os
import sys
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vision.reading import DieReading, Reading
from vision.teach import load_dice_set
from web import calibrate
from web.calibrate import (
    CalibrationError,
    better_turn,
    camera_controls,
    check_reading,
    inside,
    locked,
    parse_points,
    teach_set,
    with_changes,
)
from web.cli import UserError
from web.config import CameraConfig, Config, TableConfig, load_config, save_config

META = {"ExposureTime": 12345, "AnalogueGain": 1.87654, "ColourGains": (1.91, 1.52),
        "LensPosition": 2.4567, "Lux": 300.0}


class FakeSource:
    """What hardware.camera.open_camera returns for picamera2, minus the camera."""

    def __init__(self, config: CameraConfig) -> None:
        self.config = config
        self.controls: list[dict[str, Any]] = []
        self.started = self.stopped = False
        self.frames = 0

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def capture(self) -> np.ndarray:
        self.frames += 1
        h, w = self.config.main_size[1], self.config.main_size[0]
        frame = np.full((h, w, 3), 90, np.uint8)
        frame[100:200, 100:200] = 250
        return frame

    def lores(self) -> np.ndarray:
        return np.zeros((240, 320), np.uint8)

    def set_controls(self, controls: dict[str, Any]) -> None:
        self.controls.append(controls)

    def metadata(self) -> dict[str, Any]:
        return dict(META)


@pytest.fixture
def camera(monkeypatch: pytest.MonkeyPatch) -> list[FakeSource]:
    """Every source opened, through a stand-in hardware.camera module."""
    opened: list[FakeSource] = []

    def open_camera(config: CameraConfig) -> FakeSource:
        opened.append(FakeSource(config))
        return opened[-1]

    module = types.ModuleType("hardware.camera")
    module.open_camera = open_camera  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hardware.camera", module)
    return opened


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KNIFFEL_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "config.toml"
    monkeypatch.setenv("KNIFFEL_CONFIG", str(path))
    save_config(path, Config(camera=CameraConfig(kind="picamera2", main_size=(800, 600))))
    return path


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kniffel calibrate")
    calibrate.add_arguments(parser)
    return calibrate.run(parser.parse_args(list(argv)))


def die(value: object, x: float, y: float, flag: str | None = None, size: int = 40
        ) -> DieReading:
    h = size // 2
    return DieReading(value, 0.9, x, y, (int(x) - h, int(y) - h, int(x) + h, int(y) + h), flag)


# ---- the pieces ---------------------------------------------------------------------------

def test_parse_points() -> None:
    assert parse_points(["1,2", "3.5,4", "0,9"]) == ((1.0, 2.0), (3.5, 4.0), (0.0, 9.0))
    assert parse_points(["all"]) == ()
    with pytest.raises(CalibrationError, match="write each point as x,y"):
        parse_points(["1;2"])


def test_inside() -> None:
    square = ((0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0))
    assert inside((5, 5), square) and not inside((15, 5), square)
    assert inside((1e6, 1e6), ())


def test_with_changes_validates_like_the_file() -> None:
    config = Config(camera=CameraConfig(main_size=(800, 600)))
    area = ((0.0, 0.0), (800.0, 0.0), (800.0, 600.0))
    assert with_changes(config, table={"throw_area": area}).table.throw_area == area
    with pytest.raises(CalibrationError, match=r"point 2 \[900, 0\] lies outside"):
        with_changes(config, table={"throw_area": ((0, 0), (900, 0), (0, 5))})
    with pytest.raises(CalibrationError, match="needs at least 3 points"):
        with_changes(config, table={"keep_area": ((0, 0), (9, 0))})


def test_locked_and_controls() -> None:
    cam = locked(CameraConfig(kind="picamera2"), META)
    assert (cam.exposure_us, cam.analogue_gain, cam.colour_gains, cam.lens_position) == \
        (12345, 1.877, (1.91, 1.52), 2.46)
    assert camera_controls(cam) == {
        "AeEnable": False, "ExposureTime": 12345, "AnalogueGain": 1.877,
        "AwbEnable": False, "ColourGains": (1.91, 1.52), "AfMode": 0, "LensPosition": 2.46}
    assert camera_controls(CameraConfig()) == {}
    # HQ camera: no lens position reported, focus stays as it was.
    no_af = {k: v for k, v in META.items() if k != "LensPosition"}
    assert locked(CameraConfig(lens_position=None), no_af).lens_position is None
    with pytest.raises(CalibrationError, match="did not report"):
        locked(CameraConfig(), {"Lux": 1})


def test_check_reading() -> None:
    five = Reading(tuple(die(v, 100 + 50 * v, 100) for v in (1, 2, 3, 4, 5)))
    assert check_reading(five).ok
    assert check_reading(five).message == "read 1 2 3 4 5: all 5 dice read"
    four = Reading(five.dice[:4])
    assert not check_reading(four).ok and "found 4 dice, expected 5" in check_reading(
        four).message
    tilted = Reading(five.dice[:4] + (die(6, 400, 100, "tilted"),))
    assert check_reading(tilted).message == "read 1 2 3 4 6?: 1 need a look (tilted)"
    area = ((0.0, 0.0), (320.0, 0.0), (320.0, 300.0), (0.0, 300.0))
    result = check_reading(five, area)
    assert not result.ok and "1 outside the throw area" in result.message
    unlike = ("none of the 5 dice looks like the teaching photos of dice set 'farm' (other "
              "light or camera?): if the table asks about most dice, teach the set here too, "
              "adding to what it knows")
    result = check_reading(Reading(five.dice, ("found 5 dice, expected 6", unlike)))
    # a taught set's dice in other light: the check says so; the count it checks itself
    assert not result.ok and result.message == f"read 1 2 3 4 5: {unlike}"


class TurningReader:
    """Says the picture reads better `quarters` further turned (or not: None)."""

    def __init__(self, quarters: int | None) -> None:
        self.quarters = quarters

    def better_turn(self, frame: Any, reading: Reading) -> int | None:
        return self.quarters


def test_the_check_says_when_the_picture_reads_better_turned() -> None:
    """A camera mounted turned a quarter: the check names the turn (in degrees, as
    camera.turn has it) under which the reader reads the picture clearly better."""
    five = Reading(tuple(die(v, 100 + 50 * v, 100) for v in (1, 2, 3, 4, 5)))
    assert better_turn(TurningReader(1), None, five) == 90
    assert better_turn(TurningReader(0), None, five) == 0
    assert better_turn(TurningReader(None), None, five) is None
    assert better_turn(object(), None, five) is None  # a reader that cannot turn
    result = check_reading(five, turn=90)
    assert not result.ok and result.message.endswith(
        "the dice read better with the picture turned 90° (the camera looks from the "
        "picture's side): set the turn to 90°")


def five_white_dice() -> tuple[np.ndarray, Reading]:
    """A picture of five white dice of 80 px with three black pips each, on grey, and
    their reading."""
    import cv2

    frame = np.full((480, 640, 3), 120, np.uint8)
    dice = Reading(tuple(die(v, 80 + 120 * v - 120, 240, size=80) for v in (1, 2, 3, 4, 5)))
    for d in dice.dice:
        x0, y0, x1, y1 = d.box
        frame[y0:y1, x0:x1] = 240
        for dx in (-20, 0, 20):
            cv2.circle(frame, (int(d.x) + dx, int(d.y)), 7, (20, 20, 20), -1)
    return frame, dice


def test_the_check_says_when_the_picture_is_too_blurred_to_read_well() -> None:
    """Five white dice: sharp as drawn, blurred by σ 2 px (the real photos still read
    every die) and by 5 px (where they read 92 %)."""
    import cv2

    frame, dice = five_white_dice()
    assert check_reading(dice, frame=frame).ok
    assert check_reading(dice, frame=cv2.GaussianBlur(frame, (0, 0), 2)).ok
    result = check_reading(dice, frame=cv2.GaussianBlur(frame, (0, 0), 5))
    assert not result.ok and result.message.startswith("read 1 2 3 4 5: the picture is blurred")
    assert result.message.endswith(": focus the camera")
    assert check_reading(dice).ok  # without the frame it is not judged


def test_the_check_says_when_the_picture_is_too_dark_to_read_well() -> None:
    """Five white dice with black pips: lit, and with a little sensor noise, they stand
    out; a twelfth of the light with the same noise leaves them too little above it. A
    picture without noise (drawn, or the fake cameras of these tests) is not judged."""
    frame, dice = five_white_dice()
    noise = np.random.default_rng(1).normal(0, 3, frame.shape[:2])[..., None]
    assert check_reading(dice, frame=np.clip(frame + noise, 0, 255).astype(np.uint8)).ok
    dark = np.clip(frame * 0.08 + noise, 0, 255).astype(np.uint8)
    result = check_reading(dice, frame=dark)
    assert not result.ok and result.message.startswith(
        "read 1 2 3 4 5: the picture is dark and noisy (the dice stand out of the noise only")
    assert result.message.endswith("they read well from 10): more light on the table")
    assert check_reading(dice, frame=(frame * 0.08).astype(np.uint8)).ok


def test_the_check_says_when_the_picture_is_overexposed() -> None:
    """Five white dice on a light table: as lit, and with a glint or two, they read well;
    with most of the picture clipped to white (an exposure locked in dimmer light, then a
    lamp on) they keep little but their pips."""
    frame, dice = five_white_dice()
    frame[frame == 120] = 200  # a light table
    assert check_reading(dice, frame=frame).ok
    frame[:100] = 255  # a glint across a fifth of the picture
    assert check_reading(dice, frame=frame).ok
    bright = np.clip(frame.astype(np.float32) * 1.7, 0, 255).astype(np.uint8)
    result = check_reading(dice, frame=bright)
    assert not result.ok and result.message == (
        "read 1 2 3 4 5: the picture is overexposed (99 % of it is white; dice read well up "
        "to 30 %): lock the exposure in the light you play in, or less light on the table")


def test_the_check_says_when_the_dice_are_too_small_to_read_well() -> None:
    """Pips read well from 30 px across, animal art from about 60 (models/README)."""
    pips = Reading(tuple(die(v, 100 + 50 * v, 100, size=32) for v in (1, 2, 3, 4, 5)))
    assert check_reading(pips).ok
    small = Reading(tuple(die(v, 100 + 50 * v, 100, size=24) for v in (1, 2, 3, 4, 5)))
    result = check_reading(small)
    assert not result.ok and result.message == (
        "read 1 2 3 4 5: the dice are about 24 px across, pip dice read well from 30 px: "
        "mount the camera lower or use a larger picture")
    animals = ("duck", "lion", "mouse", "cat", "dog")
    kids = Reading(tuple(die(v, 100 + 80 * i, 100, size=44) for i, v in enumerate(animals)))
    result = check_reading(kids)
    assert not result.ok and "about 44 px across, picture dice read well from 60 px" in \
        result.message
    large = Reading(tuple(die(v, 100 + 80 * i, 100, size=64) for i, v in enumerate(animals)))
    assert check_reading(large).ok


# ---- the command --------------------------------------------------------------------------

def test_no_options_shows_the_calibration(conf: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    assert cli() == 0
    out = capsys.readouterr().out
    assert f"config:     {conf}" in out and "throw area: whole picture" in out
    assert "exposure:   automatic" in out and "dice set:   auto" in out


def test_areas_are_saved(conf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("--throw-area", "10,10", "700,10", "700,500", "10,500",
               "--keep-area", "0,520", "800,520", "800,600") == 0
    config, errors = load_config(conf)
    assert errors == []
    assert config.table.throw_area == ((10, 10), (700, 10), (700, 500), (10, 500))
    assert config.table.keep_area == ((0, 520), (800, 520), (800, 600))
    assert "saved" in capsys.readouterr().out
    assert cli("--keep-area", "all") == 0
    assert load_config(conf)[0].table.keep_area == ()


def test_the_turn_is_saved_and_shown(conf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("--turn", "90") == 0
    assert load_config(conf)[0].camera.turn == 90
    assert cli() == 0
    assert "read turned 90° clockwise" in capsys.readouterr().out


def test_bad_area_is_one_line(conf: Path) -> None:
    before = conf.read_text()
    with pytest.raises(UserError, match="lies outside the camera picture"):
        cli("--throw-area", "0,0", "5000,0", "0,10")
    assert conf.read_text() == before


def test_snapshot(conf: Path, camera: list[FakeSource], tmp_path: Path) -> None:
    import cv2

    out = tmp_path / "table.jpg"
    assert cli("--snapshot", str(out)) == 0
    image = cv2.imread(str(out))
    assert image.shape == (600, 800, 3)
    assert camera[0].started and camera[0].stopped
    with pytest.raises(UserError, match="cannot write the picture"):
        cli("--snapshot", str(tmp_path / "no" / "dir" / "x.jpg"))
    with pytest.raises(UserError, match="cannot write the picture"):
        cli("--snapshot", str(tmp_path / "table.xyz"))  # no writer for it
    # a name in another encoding, as Python gives it: written (OpenCV would crash on it)
    odd = tmp_path / os.fsdecode(b"Tisch-\xfc.jpg")
    assert cli("--snapshot", str(odd)) == 0
    assert b"Tisch-\xfc.jpg" in os.listdir(os.fsencode(tmp_path))


def test_lock_and_unlock(conf: Path, camera: list[FakeSource]) -> None:
    save_config(conf, Config(camera=CameraConfig(kind="picamera2", exposure_us=99,
                                                 analogue_gain=3.0, colour_gains=(1.0, 1.0))))
    assert cli("--lock") == 0
    # Opened in automatic mode, so the values are what auto exposure chose now.
    assert camera[0].config.exposure_us is None and camera[0].config.colour_gains is None
    cam = load_config(conf)[0].camera
    assert (cam.exposure_us, cam.analogue_gain, cam.colour_gains, cam.lens_position) == \
        (12345, 1.877, (1.91, 1.52), 2.46)
    assert camera[0].controls[-1]["AeEnable"] is False
    assert cli("--unlock") == 0
    cam = load_config(conf)[0].camera
    assert cam.exposure_us is None and cam.colour_gains is None
    assert cam.lens_position == 2.46  # focus stays fixed
    with pytest.raises(UserError, match="choose one"):
        cli("--lock", "--unlock")


def test_focus(conf: Path, camera: list[FakeSource], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibrate, "AUTOFOCUS_SECONDS", 0.0)
    assert cli("--focus", "auto") == 0
    assert camera[0].controls[0] == {"AfMode": 1, "AfTrigger": 0}
    assert load_config(conf)[0].camera.lens_position == 2.46
    assert cli("--focus", "3") == 0
    assert camera[1].controls[-1] == {"AfMode": 0, "LensPosition": 3.0}
    assert load_config(conf)[0].camera.lens_position == 3.0
    with pytest.raises(UserError, match="write auto or a number"):
        cli("--focus", "near")
    with pytest.raises(UserError, match="lens_position = 99.0: must be from 0 to 32"):
        cli("--focus", "99")


class FakeReader:
    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.frames: list[np.ndarray] = []

    def read(self, frame: np.ndarray) -> Reading:
        self.frames.append(frame)
        return self.reading


def test_check(conf: Path, camera: list[FakeSource], monkeypatch: pytest.MonkeyPatch,
               capsys: pytest.CaptureFixture[str]) -> None:
    five = Reading(tuple(die(v, 100 + 50 * v, 100) for v in (1, 2, 3, 4, 5)))
    monkeypatch.setattr(calibrate, "make_reader", lambda config: FakeReader(five))
    assert cli("--check") == 0
    assert "check: OK, read 1 2 3 4 5: all 5 dice read" in capsys.readouterr().out
    monkeypatch.setattr(calibrate, "make_reader",
                        lambda config: FakeReader(Reading(five.dice[:3])))
    assert cli("--check") == 1
    assert "NOT OK" in capsys.readouterr().out


def test_check_without_models_is_one_line(conf: Path, camera: list[FakeSource],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import vision.reader
    from vision.models import ModelMissingError

    def missing(**_: object) -> None:
        raise ModelMissingError("model models/detector.onnx is missing: run `make models`")

    monkeypatch.setattr(vision.reader, "OnnxDetector", missing)
    with pytest.raises(UserError, match="is missing: run `make models`"):
        cli("--check")


@pytest.fixture
def fake_teach(monkeypatch: pytest.MonkeyPatch) -> list[dict[object, list[np.ndarray]]]:
    """vision.teach.teach without models: records the photos, returns a small set."""
    from vision import teach as teach_module
    from vision.reader import Reader

    calls: list[dict[object, list[np.ndarray]]] = []

    def teach(reader: object, name: str, photos: dict[object, list[np.ndarray]]) -> Any:
        calls.append(photos)
        values = [v for v in photos for _ in range(5)]  # five dice in each photo ...
        patches = np.zeros((len(values), teach_module.PATCH_PIXELS,
                            teach_module.PATCH_PIXELS, 3), np.uint8)
        # ... embedded as the n-th face given: faces told apart, no teaching doubt
        embeddings = np.eye(8, dtype=np.float32)[[list(photos).index(v) for v in values]]
        return (teach_module.DiceSet(name, values, patches, embedder="stand-in",
                                     labels=values, embeddings=embeddings),
                {v: 5 for v in photos})

    monkeypatch.setattr(teach_module, "teach", teach)
    monkeypatch.setattr(Reader, "default", classmethod(lambda cls, **kw: object()))
    return calls


def test_teach_from_photos(conf: Path, tmp_path: Path, fake_teach: list[Any],
                           capsys: pytest.CaptureFixture[str]) -> None:
    import cv2

    for name in ("duck", "lion"):
        cv2.imwrite(str(tmp_path / f"{name}.png"), np.full((64, 64, 3), 128, np.uint8))
    assert cli("--teach", "holz", f"duck={tmp_path / 'duck.png'}",
               f"lion={tmp_path / 'lion.png'}") == 0
    assert list(fake_teach[0]) == ["duck", "lion"]
    assert (tmp_path / "state" / "dice-sets" / "holz.npz").is_file()
    assert load_config(conf)[0].table.dice_set == "holz"
    assert "taught dice set 'holz' (duck: 5, lion: 5 dice)" in capsys.readouterr().out
    with pytest.raises(UserError, match="no such file"):
        cli("--teach", "holz", f"duck={tmp_path / 'nope.png'}")
    with pytest.raises(UserError, match="dice set name"):
        cli("--teach", "auto", "1=x.png")
    capsys.readouterr()
    assert cli() == 0  # what is set: a taught set learns each table (web.learn)
    assert "dice set:   holz (learns each table from the throws the players check)" \
        in capsys.readouterr().out
    written = conf.read_text(encoding="utf-8")
    assert "learn = true" in written  # the whole table section is written
    conf.write_text(written.replace("learn = true", "learn = false"), encoding="utf-8")
    assert cli() == 0
    assert "dice set:   holz (does not learn at tables: table.learn = false)" \
        in capsys.readouterr().out
    state = tmp_path / "state"  # as if its lions had been learnt at a table (web.learn)
    replace(load_dice_set(state, "holz"), from_play=[False] * 5 + [True] * 5).save(state)
    assert cli() == 0
    assert ("            5 dice learnt at tables (kniffel teach --dice-set holz "
            "--forget-learnt takes them back)") in capsys.readouterr().out


def test_a_set_that_cannot_be_saved_is_one_line(tmp_path: Path, fake_teach: list[Any]
                                                ) -> None:
    blocked = tmp_path / "state"  # a file where the state directory should be
    blocked.write_text("not a folder")
    faces = {value: [np.full((64, 64, 3), 128, np.uint8)] for value in ("duck", "lion")}
    with pytest.raises(CalibrationError, match=r"^cannot save dice set 'holz' in .*/state: "
                                               r"Not a directory$"):
        teach_set("holz", faces, folder=blocked)
    assert blocked.read_text() == "not a folder"


def test_teach_a_set_more_in_another_place(conf: Path, tmp_path: Path, fake_teach: list[Any],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`--add` keeps the set's earlier dice beside the new ones; without it a set of the
    name is replaced. An addition shows every face of the set, else nothing changes."""
    import cv2

    photos = []
    for name, shade in (("duck", 100), ("lion", 150), ("cat", 200)):
        cv2.imwrite(str(tmp_path / f"{name}.png"), np.full((64, 64, 3), shade, np.uint8))
        photos.append(f"{name}={tmp_path / name}.png")
    assert cli("--teach", "holz", *photos[:2]) == 0
    saved = tmp_path / "state" / "dice-sets" / "holz.npz"
    before = saved.read_bytes()
    with pytest.raises(UserError, match=r"^to add to dice set 'holz', give a photo of every "
                                        r"face it has \(missing: lion\)$"):
        cli("--teach", "holz", photos[0], photos[2], "--add")
    assert saved.read_bytes() == before
    with pytest.raises(UserError, match=r"^no dice set 'zoo' \(taught: holz\)$"):
        cli("--teach", "zoo", *photos, "--add")
    with pytest.raises(UserError, match="use it with --teach"):
        cli("--add")
    capsys.readouterr()
    assert cli("--teach", "holz", *photos, "--add") == 0
    assert "added to dice set 'holz' (duck: 5, lion: 5, cat: 5 dice; 25 in all)" \
        in capsys.readouterr().out
    assert load_dice_set(tmp_path / "state", "holz").patch_values == \
        ["duck"] * 5 + ["lion"] * 5 + ["duck"] * 5 + ["lion"] * 5 + ["cat"] * 5
    assert cli("--teach", "holz", *photos[:2]) == 0  # taught anew: the earlier dice go
    assert load_dice_set(tmp_path / "state", "holz").patch_values == \
        ["duck"] * 5 + ["lion"] * 5


def test_teach_guided_from_the_camera(conf: Path, camera: list[FakeSource],
                                      fake_teach: list[Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    prompts: list[str] = []
    monkeypatch.setattr("builtins.input", lambda text="": prompts.append(text) or "")
    assert cli("--teach", "holz", "1", "2", "3", "4", "5", "6") == 0
    assert len(prompts) == 6 and "every die 1 up" in prompts[0]
    assert list(fake_teach[0]) == [1, 2, 3, 4, 5, 6]
    assert fake_teach[0][1][0].shape == (600, 800, 3)

    def eof(text: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", eof)
    with pytest.raises(UserError, match="no answer on standard input"):
        cli("--teach", "holz2", "1", "2")


def test_broken_config_is_never_overwritten(conf: Path, camera: list[FakeSource],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    conf.write_text('[camera]\nkind = "webcam"\n')
    assert cli() == 1
    assert 'camera.kind = "webcam": must be one of' in capsys.readouterr().err
    with pytest.raises(UserError, match="fix .* first"):
        cli("--throw-area", "all")
    assert conf.read_text() == '[camera]\nkind = "webcam"\n'
    assert camera == []


def test_camera_off_or_missing(conf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_config(conf, Config(camera=CameraConfig(kind="none")))
    with pytest.raises(UserError, match='camera is off'):
        cli("--snapshot", "x.jpg")
    save_config(conf, Config(camera=CameraConfig(kind="picamera2")))
    monkeypatch.setitem(sys.modules, "hardware.camera", None)
    with pytest.raises(UserError, match="camera support is not installed"):
        cli("--check")


def test_busy_camera_says_what_to_do(conf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("hardware.camera")

    def busy(config: CameraConfig) -> Any:
        raise RuntimeError("Failed to acquire camera: Device or resource busy")

    module.open_camera = busy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hardware.camera", module)
    with pytest.raises(UserError, match="busy.*systemctl stop kniffel"):
        cli("--lock")


def test_permission_denied(conf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: Path, config: Config) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(calibrate, "save_config", denied)
    with pytest.raises(UserError, match="permission denied .run with sudo"):
        cli("--throw-area", "all", "--keep-area", "0,0", "10,0", "10,10")


def test_demo_camera_cannot_lock(conf: Path, camera: list[FakeSource],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(FakeSource, "metadata")
    with pytest.raises(UserError, match="cannot report exposure"):
        cli("--lock")
    assert TableConfig() == load_config(conf)[0].table
