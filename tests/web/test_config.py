"""web.config: loading, validation with one-line messages, safe mode, atomic writing."""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from web.config import (
    CAMERA_KINDS,
    SCHEMA,
    CameraConfig,
    Config,
    GpioConfig,
    ServerConfig,
    TableConfig,
    config_path,
    dump_config,
    load_config,
    save_config,
    state_dir,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "systemd" / "config.example.toml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_is_all_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "nope.toml") == (Config(), [])


def test_path_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNIFFEL_CONFIG", raising=False)
    monkeypatch.delenv("CONFIGURATION_DIRECTORY", raising=False)
    assert config_path() == Path("/etc/kniffel/config.toml")
    monkeypatch.setenv("CONFIGURATION_DIRECTORY", str(tmp_path / "etc"))
    assert config_path() == tmp_path / "etc" / "config.toml"
    monkeypatch.setenv("KNIFFEL_CONFIG", str(tmp_path / "mine.toml"))
    assert config_path() == tmp_path / "mine.toml"
    (tmp_path / "mine.toml").write_text('[server]\nport = 8080\n')
    config, errors = load_config()
    assert errors == [] and config.server.port == 8080


def test_state_dir_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNIFFEL_STATE_DIR", raising=False)
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}/a:{tmp_path}/b")
    assert state_dir() == tmp_path / "a"
    monkeypatch.setenv("KNIFFEL_STATE_DIR", str(tmp_path / "k"))
    assert state_dir() == tmp_path / "k"


def test_full_file_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, """
[camera]
kind = "picamera2"
main_size = [2028, 1520]
exposure_us = 12000
analogue_gain = 2
colour_gains = [1.8, 1.5]
lens_position = 2.5
turn = 270
[table]
throw_area = [[10, 10], [1000, 10], [1000, 900.5]]
settle_seconds = 1
dice_set = "holz"
[server]
port = 80
language = "en"
[gpio]
enabled = true
button_pin = 17
led_pin = 27
""")
    config, errors = load_config(path)
    assert errors == []
    assert config.camera == CameraConfig(kind="picamera2", main_size=(2028, 1520),
                                         exposure_us=12000, analogue_gain=2.0,
                                         colour_gains=(1.8, 1.5), lens_position=2.5,
                                         turn=270)
    assert config.table.throw_area == ((10.0, 10.0), (1000.0, 10.0), (1000.0, 900.5))
    assert config.table.settle_seconds == 1.0 and config.table.dice_set == "holz"
    assert config.server == ServerConfig(port=80, language="en")
    assert config.gpio == GpioConfig(enabled=True, button_pin=17, led_pin=27)


def test_the_issue_example_message(tmp_path: Path) -> None:
    config, errors = load_config(write(tmp_path, '[camera]\nkind = "webcam"\n'))
    assert errors == ['config.toml: camera.kind = "webcam": must be one of picamera2, usb, '
                      'replay, demo, none']
    assert config.camera.kind == "none"


@pytest.mark.parametrize(("text", "message"), [
    ('[kamera]\nkind = "usb"', "config.toml: [kamera]: unknown section (known: camera, "
                               "table, server, gpio)"),
    ("[camera]\nexposure = 100", "config.toml: camera.exposure: unknown key (known: kind, "),
    ('[server]\nport = "80"', 'config.toml: server.port = "80": must be a whole number from '
                              '1 to 65535'),
    ("[server]\nport = 70000", "config.toml: server.port = 70000: must be from 1 to 65535"),
    ("[server]\nport = true", "config.toml: server.port = true: must be a whole number"),
    ('[server]\nlanguage = "fr"', 'config.toml: server.language = "fr": must be one of de, en'),
    ('[camera]\nrealtime = "yes"', 'camera.realtime = "yes": must be true or false'),
    ("[camera]\nmain_size = [640]", "camera.main_size = [640]: must be [width, height]"),
    ("[camera]\nanalogue_gain = 0.5", "camera.analogue_gain = 0.5: must be from 1 to 64"),
    ("[camera]\ncolour_gains = [1, -2]", "camera.colour_gains = [1, -2]: both must be from"),
    ("[camera]\nlens_position = nan", "camera.lens_position = nan: must be from 0 to 32"),
    ("[camera]\nturn = 45", "camera.turn = 45: must be 0, 90, 180 or 270 (degrees clockwise)"),
    ("[camera]\nturn = 90.0", "camera.turn = 90.0: must be 0, 90, 180 or 270"),
    ("[table]\nthrow_area = [[1, 2], [3, 4]]", "table.throw_area = [[1, 2], [3, 4]]: needs "
                                               "at least 3 points"),
    ("[table]\nkeep_area = [[1, 2], [3], [5, 6]]", "point 2 must be [x, y]"),
    ("[table]\nthrow_area = [[0, 0], [5000, 0], [0, 10]]", "table.throw_area: point 2 "
                                                           "[5000, 0] lies outside"),
    ('[table]\ndice_set = "../x"', 'table.dice_set = "../x": must be one of auto, pips, '
                                   'animals or the name'),
    ("[table]\nsettle_seconds = -1", "table.settle_seconds = -1: must be from 0 to 10"),
    ("[gpio]\nbutton_pin = 40", "gpio.button_pin = 40: must be from 2 to 27"),
    ("[gpio]\nbutton_pin = 17\nled_pin = 17", "gpio.led_pin = 17: must differ from"),
    ("[gpio]\nenabled = true", "gpio.enabled = true: set gpio.button_pin"),
    ("camera = 1", "config.toml: camera = 1: must be a section [camera]"),
    ("[camera\nkind=1", "config.toml: not valid TOML: "),
])
def test_bad_values_are_named(tmp_path: Path, text: str, message: str) -> None:
    config, errors = load_config(write(tmp_path, text))
    assert len(errors) == 1, errors
    assert message in errors[0]
    assert config.camera.kind == "none"


def test_every_error_is_reported_and_good_keys_are_kept(tmp_path: Path) -> None:
    config, errors = load_config(write(tmp_path, """
[camera]
kind = "webcam"
main_size = [800, 600]
[server]
port = 8080
language = "xx"
[gpio]
enabled = true
led_pin = 99
"""))
    assert [e.split(" =")[0].split(":")[1].strip() for e in errors] == [
        "camera.kind", "server.language", "gpio.led_pin", "gpio.enabled"]
    # Safe mode: camera off; the page stays where the family expects it.
    assert config.camera == CameraConfig(kind="none", main_size=(800, 600))
    assert config.server == ServerConfig(port=8080)


def test_unreadable_bytes(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"\xff\xfe[camera]")
    config, errors = load_config(path)
    assert errors == ["config.toml: not UTF-8 text"] and config.camera.kind == "none"


def test_example_file_documents_every_key_with_its_default() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    config, errors = load_config(EXAMPLE)
    assert errors == [] and config == Config()
    for section, keys in SCHEMA.items():
        for key in keys:
            assert f"{key} = " in text, f"{section}.{key} is not documented"
    # Keys left out (None = automatic) are shown commented out, and valid when uncommented.
    uncommented = "\n".join(line.lstrip("# ") if " = " in line and line.startswith("# ")
                            and line.split(" =")[0].lstrip("# ") in
                            {k for keys in SCHEMA.values() for k in keys} else line
                            for line in text.splitlines())
    full = tomllib.loads(uncommented)
    assert set(full["camera"]) == set(SCHEMA["camera"])
    assert set(full["gpio"]) == set(SCHEMA["gpio"])


def test_save_round_trip_and_atomic(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "config.toml"
    config = Config(
        camera=CameraConfig(kind="picamera2", source='we"ird\\path\n', exposure_us=9000,
                            colour_gains=(1.25, 2.0)),
        table=TableConfig(throw_area=((0.0, 0.0), (100.5, 0.0), (100.0, 80.0)),
                          dice_set="holz-1"),
        gpio=GpioConfig(enabled=True, led_pin=27))
    save_config(path, config)
    assert load_config(path) == (config, [])
    os.chmod(path, 0o640)
    save_config(path, replace(config, server=ServerConfig(port=9000)))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert load_config(path)[0].server.port == 9000
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp files left


def test_save_failure_leaves_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.toml"
    save_config(path, Config())
    before = path.read_text()

    def boom(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        save_config(path, Config(server=ServerConfig(port=1)))
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_dump_leaves_out_automatic_values() -> None:
    text = dump_config(Config())
    assert "exposure_us" not in text and "button_pin" not in text
    assert tomllib.loads(text)["camera"]["kind"] == "demo"


finite = st.floats(min_value=0.0, max_value=1640.0, allow_nan=False)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(CAMERA_KINDS), source=texts,
       exposure=st.none() | st.integers(1, 10_000_000),
       gain=st.none() | st.floats(1.0, 64.0), lens=st.none() | st.floats(0.0, 32.0),
       area=st.sampled_from([0, 3, 5]).flatmap(
           lambda n: st.lists(st.tuples(finite, st.floats(0.0, 1232.0)), min_size=n,
                              max_size=n)),
       settle=st.floats(0.0, 10.0), host=texts, port=st.integers(1, 65535))
def test_any_valid_config_round_trips(kind: str, source: str, exposure: int | None,
                                      gain: float | None, lens: float | None,
                                      area: list[tuple[float, float]], settle: float,
                                      host: str, port: int) -> None:
    config = Config(
        camera=CameraConfig(kind=kind, source=source, exposure_us=exposure,
                            analogue_gain=gain, lens_position=lens),
        table=TableConfig(throw_area=tuple(area), settle_seconds=settle),
        server=ServerConfig(host=host, port=port))
    from web.config import parse_config

    assert parse_config(tomllib.loads(dump_config(config))) == (config, [])


def test_schema_covers_every_field() -> None:
    for section, cls in (("camera", CameraConfig), ("table", TableConfig),
                         ("server", ServerConfig), ("gpio", GpioConfig)):
        assert [f.name for f in fields(cls)] == list(SCHEMA[section])
