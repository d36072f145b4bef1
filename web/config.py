"""The table's configuration and where it keeps its state.

One TOML file (default /etc/kniffel/config.toml, or $CONFIGURATION_DIRECTORY/config.toml
under systemd, or KNIFFEL_CONFIG) with defaults for everything. Every part of the program
reads its settings from these dataclasses; loading and validation live in `load_config`.

A broken file must never keep the table from starting: `load_config` reports every bad key
in one line each and returns a *safe* configuration (camera off, every bad key at its
default, every good key kept, so the page is still served where the family expects it and
can say what is wrong).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from vision.files import write_durably

Point = tuple[float, float]

CAMERA_KINDS = ("picamera2", "usb", "replay", "demo", "none")
LANGUAGES = ("de", "en")
BUILTIN_DICE_SETS = ("auto", "pips", "animals")
#: Same rule as vision.teach.NAME_PATTERN (kept here so loading the config stays cheap).
DICE_SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
#: BCM numbers of the 40-pin header's GPIOs (Pi 4 and Pi 5).
GPIO_PINS = range(2, 28)
DEFAULT_CONFIG_PATH = Path("/etc/kniffel/config.toml")


@dataclass(frozen=True)
class CameraConfig:
    #: "picamera2" | "usb" | "replay" | "demo" | "none"
    kind: str = "demo"
    #: usb: device index or path; replay: a folder of images or a video file.
    source: str = ""
    #: Main stream (what is read) and lores stream (what motion is judged on), in pixels.
    main_size: tuple[int, int] = (1640, 1232)
    lores_size: tuple[int, int] = (320, 240)
    #: replay: play at the recorded pace (True) or as fast as possible.
    realtime: bool = True
    #: Locked by `kniffel calibrate`; None means automatic.
    exposure_us: int | None = None
    analogue_gain: float | None = None
    colour_gains: tuple[float, float] | None = None
    lens_position: float | None = None
    #: Degrees clockwise (0, 90, 180, 270) that turn the picture upright: the table's side
    #: nearest the camera at the bottom. The reader reads it so turned (vision.reader.TURNS).
    turn: int = 0

    @property
    def quarters(self) -> int:
        """`turn` in quarter turns, as vision.reader.Reader takes it."""
        return self.turn // 90


@dataclass(frozen=True)
class TableConfig:
    #: Polygons in main-stream pixel coordinates; empty = the whole view is the throw area.
    throw_area: tuple[Point, ...] = ()
    keep_area: tuple[Point, ...] = ()
    #: Seconds the view must stay still before a throw is read.
    settle_seconds: float = 0.6
    #: Which dice: "auto" (the game's: pips for Kniffel, animals for Kniffel Kids; the
    #: table service, web.serve.ReadsTheGamesDice), "pips", "animals" or a taught set.
    dice_set: str = "auto"
    #: Whether a taught set learns the table from the dice people check there (web.learn).
    learn: bool = True


@dataclass(frozen=True)
class ServerConfig:
    host: str = "0.0.0.0"
    port: int = 8000
    language: str = "de"


@dataclass(frozen=True)
class GpioConfig:
    enabled: bool = False
    button_pin: int | None = None
    led_pin: int | None = None
    long_press_seconds: float = 1.0


@dataclass(frozen=True)
class Config:
    camera: CameraConfig = field(default_factory=CameraConfig)
    table: TableConfig = field(default_factory=TableConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    gpio: GpioConfig = field(default_factory=GpioConfig)


def state_dir() -> Path:
    """KNIFFEL_STATE_DIR, else systemd's STATE_DIRECTORY, else ~/.local/state/kniffel."""
    explicit = os.environ.get("KNIFFEL_STATE_DIR") or os.environ.get("STATE_DIRECTORY")
    if explicit:
        return Path(explicit.split(":")[0])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kniffel"


def config_path() -> Path:
    """KNIFFEL_CONFIG, else systemd's CONFIGURATION_DIRECTORY/config.toml, else
    /etc/kniffel/config.toml."""
    explicit = os.environ.get("KNIFFEL_CONFIG")
    if explicit:
        return Path(explicit)
    systemd = os.environ.get("CONFIGURATION_DIRECTORY")
    if systemd:
        return Path(systemd.split(":")[0]) / "config.toml"
    return DEFAULT_CONFIG_PATH


# ---- validation -------------------------------------------------------------------------

class _Bad(ValueError):
    """One value that does not fit; the message says what would."""


def toml_value(value: object) -> str:
    """`value` written as TOML (also used to quote the bad value in error messages)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    return _toml_string(str(value))  # dates and the like: only ever shown, never written


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise _Bad("must be a string (in quotes)")
    return value


def _choice(*allowed: str) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise _Bad(f"must be one of {', '.join(allowed)}")
        return value
    return check


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Bad("must be true or false")
    return value


def _integer(low: int, high: int) -> Callable[[object], int]:
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Bad(f"must be a whole number from {low} to {high}")
        if not low <= value <= high:
            raise _Bad(f"must be from {low} to {high}")
        return value
    return check


def _number(low: float, high: float) -> Callable[[object], float]:
    def check(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Bad(f"must be a number from {low:g} to {high:g}")
        if not (math.isfinite(value) and low <= value <= high):
            raise _Bad(f"must be from {low:g} to {high:g}")
        return float(value)
    return check


def _size(low: int, high: int) -> Callable[[object], tuple[int, int]]:
    def check(value: object) -> tuple[int, int]:
        if (not isinstance(value, list) or len(value) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) for v in value)):
            raise _Bad("must be [width, height] in whole pixels")
        if not all(low <= v <= high for v in value):
            raise _Bad(f"width and height must be from {low} to {high}")
        return (value[0], value[1])
    return check


def _pair(low: float, high: float) -> Callable[[object], tuple[float, float]]:
    def check(value: object) -> tuple[float, float]:
        if (not isinstance(value, list) or len(value) != 2
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
            raise _Bad("must be [red, blue], two numbers")
        if not all(math.isfinite(v) and low <= v <= high for v in value):
            raise _Bad(f"both must be from {low:g} to {high:g}")
        return (float(value[0]), float(value[1]))
    return check


def _polygon(value: object) -> tuple[Point, ...]:
    if not isinstance(value, list):
        raise _Bad("must be a list of [x, y] points, e.g. [[0, 0], [800, 0], [800, 600]]")
    points: list[Point] = []
    for i, p in enumerate(value, 1):
        if (not isinstance(p, list) or len(p) != 2
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in p)
                or not all(math.isfinite(v) for v in p)):
            raise _Bad(f"point {i} must be [x, y], two numbers")
        if p[0] < 0 or p[1] < 0:
            raise _Bad(f"point {i} {toml_value(p)} must not be negative")
        points.append((float(p[0]), float(p[1])))
    if 0 < len(points) < 3:
        raise _Bad("needs at least 3 points (or [] for the whole view)")
    return tuple(points)


def _dice_set(value: object) -> str:
    if not isinstance(value, str) or not (value in BUILTIN_DICE_SETS
                                          or DICE_SET_NAME.match(value)):
        raise _Bad(f"must be one of {', '.join(BUILTIN_DICE_SETS)} or the name of a taught "
                   "set (letters, digits, '-', '_', '.')")
    return value


#: camera.turn's values: degrees clockwise.
TURN_DEGREES = (0, 90, 180, 270)


def is_turn(value: object) -> bool:
    """Whether `value` is one of camera.turn's values (a whole number, not true/false)."""
    return not isinstance(value, bool) and isinstance(value, int) and value in TURN_DEGREES


def _quarter_turn(value: object) -> int:
    if not is_turn(value):
        raise _Bad("must be 0, 90, 180 or 270 (degrees clockwise)")
    assert isinstance(value, int)
    return value


def _optional_pin(value: object) -> int:
    return _integer(GPIO_PINS.start, GPIO_PINS.stop - 1)(value)


#: Every key of the file and its check. A key whose default is None may be left out
#: (TOML has no null): left out means None.
SCHEMA: dict[str, dict[str, Callable[[object], Any]]] = {
    "camera": {
        "kind": _choice(*CAMERA_KINDS),
        "source": _string,
        "main_size": _size(64, 8192),
        "lores_size": _size(32, 2048),
        "realtime": _boolean,
        "exposure_us": _integer(1, 10_000_000),
        "analogue_gain": _number(1.0, 64.0),
        "colour_gains": _pair(0.0, 32.0),
        "lens_position": _number(0.0, 32.0),
        "turn": _quarter_turn,
    },
    "table": {
        "throw_area": _polygon,
        "keep_area": _polygon,
        "settle_seconds": _number(0.0, 10.0),
        "dice_set": _dice_set,
        "learn": _boolean,
    },
    "server": {
        "host": _string,
        "port": _integer(1, 65535),
        "language": _choice(*LANGUAGES),
    },
    "gpio": {
        "enabled": _boolean,
        "button_pin": _optional_pin,
        "led_pin": _optional_pin,
        "long_press_seconds": _number(0.2, 10.0),
    },
}
_SECTIONS: dict[str, type] = {"camera": CameraConfig, "table": TableConfig,
                              "server": ServerConfig, "gpio": GpioConfig}


def parse_config(data: dict[str, Any], name: str = "config.toml") -> tuple[Config, list[str]]:
    """A Config from parsed TOML: every good key taken, every bad key reported (and left at
    its default). `name` starts each message."""
    errors: list[str] = []
    sections: dict[str, dict[str, Any]] = {s: {} for s in SCHEMA}
    for section, table in data.items():
        if section not in SCHEMA:
            errors.append(f"{name}: [{section}]: unknown section "
                          f"(known: {', '.join(SCHEMA)})")
            continue
        if not isinstance(table, dict):
            errors.append(f"{name}: {section} = {toml_value(table)}: must be a section "
                          f"[{section}]")
            continue
        for key, value in table.items():
            check = SCHEMA[section].get(key)
            if check is None:
                errors.append(f"{name}: {section}.{key}: unknown key "
                              f"(known: {', '.join(SCHEMA[section])})")
                continue
            try:
                sections[section][key] = check(value)
            except _Bad as bad:
                errors.append(f"{name}: {section}.{key} = {toml_value(value)}: {bad}")
    config = Config(**{s: _SECTIONS[s](**values) for s, values in sections.items()})
    errors.extend(_cross_checks(config, name))
    return config, errors


def _cross_checks(config: Config, name: str) -> list[str]:
    """Rules between keys: areas inside the picture, distinct pins, a pin when enabled."""
    errors = []
    width, height = config.camera.main_size
    for key in ("throw_area", "keep_area"):
        for i, (x, y) in enumerate(getattr(config.table, key), 1):
            if x > width or y > height:
                errors.append(f"{name}: table.{key}: point {i} [{x:g}, {y:g}] lies outside "
                              f"the camera picture ({width}x{height}, camera.main_size)")
                break
    gpio = config.gpio
    if gpio.button_pin is not None and gpio.button_pin == gpio.led_pin:
        errors.append(f"{name}: gpio.led_pin = {gpio.led_pin}: must differ from "
                      "gpio.button_pin")
    if gpio.enabled and gpio.button_pin is None and gpio.led_pin is None:
        errors.append(f"{name}: gpio.enabled = true: set gpio.button_pin and/or gpio.led_pin")
    return errors


def safe_config(config: Config) -> Config:
    """What runs while the file is broken: the camera off, everything else as given."""
    return replace(config, camera=replace(config.camera, kind="none"))


def load_config(path: Path | None = None) -> tuple[Config, list[str]]:
    """The configuration and a list of errors (empty when the file is fine).

    Path: the argument, else KNIFFEL_CONFIG, else $CONFIGURATION_DIRECTORY/config.toml,
    else /etc/kniffel/config.toml. A missing file means all defaults and no error. With
    any error the returned config is `safe_config(...)`: the camera is off, so the table
    still starts and the page can show the errors.
    """
    path = path if path is not None else config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config(), []
    except OSError as exc:
        return safe_config(Config()), [f"{path.name}: cannot read {path} "
                                       f"({exc.strerror or exc.__class__.__name__})"]
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return safe_config(Config()), [f"{path.name}: not UTF-8 text"]
    except tomllib.TOMLDecodeError as exc:
        return safe_config(Config()), [f"{path.name}: not valid TOML: {exc}"]
    config, errors = parse_config(data, path.name)
    return (safe_config(config), errors) if errors else (config, [])


# ---- writing ----------------------------------------------------------------------------

def dump_config(config: Config) -> str:
    """The whole configuration as TOML; keys that are None (automatic) are left out."""
    lines = ["# Kniffel scanner configuration; every key is explained in",
             "# /opt/kniffel/src/systemd/config.example.toml. Written by kniffel calibrate.",
             ""]
    for section, cls in _SECTIONS.items():
        lines.append(f"[{section}]")
        values = getattr(config, section)
        assert isinstance(values, cls)
        for f in fields(cls):
            value = getattr(values, f.name)
            if value is None:
                continue
            lines.append(f"{f.name} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def save_config(path: Path, config: Config) -> None:
    """Write `config` to `path` whole or not at all (a half-written file would put the
    table in safe mode at the next start); keeps the old file's permission bits."""
    text = dump_config(config)
    write_durably(path, lambda f: f.write(text.encode("utf-8")))
