"""`kniffel calibrate`: set up a new table once, then never again.

    kniffel calibrate --snapshot table.jpg            # a picture to find the areas on
    kniffel calibrate --throw-area 100,80 1500,80 1500,1150 100,1150 \\
                      --keep-area 0,0 1640,0 1640,70 0,70
    kniffel calibrate --focus auto --lock             # fix focus, exposure, white balance
    kniffel calibrate --check                         # five dice in view: all read?
    kniffel calibrate --teach holz 1 2 3 4 5 6        # teach a dice set from the camera

Everything is saved to config.toml (areas, fixed camera values, the dice set in use). A
table whose light changes between throws reads worse than one with fixed exposure and white
balance; a throw area keeps hands and cups at the edge out of the reading.

The functions without `args` are what the page's calibration calls too; this module only
imports argparse and web.config at the top, so `kniffel --help` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from web.config import (
    BUILTIN_DICE_SETS,
    TURN_DEGREES,
    CameraConfig,
    Config,
    Point,
    config_path,
    dump_config,
    load_config,
    parse_config,
    save_config,
    state_dir,
)

#: picamera2/libcamera control values (ints, so libcamera need not be imported here).
AF_MODE_MANUAL, AF_MODE_AUTO = 0, 1
AF_TRIGGER_START = 0
#: Back to automatic exposure and white balance on a camera that is already running.
AUTO_EXPOSURE = {"AeEnable": True, "AwbEnable": True}
#: Frames to let auto exposure / white balance settle before reading them.
SETTLE_FRAMES = 15
AUTOFOCUS_SECONDS = 3.0
EXPECTED_DICE = 5


class CalibrationError(ValueError):
    """A calibration step that cannot be done; the message says why in one line."""


# ---- areas --------------------------------------------------------------------------------

def parse_points(items: Sequence[str]) -> tuple[Point, ...]:
    """["x,y", ...] → polygon; "all" (alone) → () = the whole view."""
    if list(items) in (["all"], ["none"], []):
        return ()
    points = []
    for item in items:
        x, sep, y = item.partition(",")
        try:
            if not sep:
                raise ValueError
            points.append((float(x), float(y)))
        except ValueError:
            raise CalibrationError(f"{item!r}: write each point as x,y in pixels "
                                   "(e.g. 120,80)") from None
    return tuple(points)


def with_changes(config: Config, **sections: Mapping[str, Any]) -> Config:
    """`config` with some keys changed (e.g. table={"throw_area": ...}), validated by the
    same rules as config.toml; CalibrationError names the first bad key."""
    changed = {name: replace(getattr(config, name), **values)
               for name, values in sections.items()}
    candidate = replace(config, **changed)
    checked, errors = parse_config(tomllib.loads(dump_config(candidate)), "calibration")
    if errors:
        raise CalibrationError(errors[0].removeprefix("calibration: "))
    return checked


def inside(point: Point, polygon: Sequence[Point]) -> bool:
    """Whether `point` lies in `polygon` (an empty polygon is the whole view)."""
    if not polygon:
        return True
    x, y = point
    result = False
    j = len(polygon) - 1
    for i in range(len(polygon)):
        (xi, yi), (xj, yj) = polygon[i], polygon[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            result = not result
        j = i
    return result


# ---- camera -------------------------------------------------------------------------------

def open_source(camera: CameraConfig) -> Any:
    """The configured camera, started (hardware.camera.open_camera)."""
    if camera.kind == "none":
        raise CalibrationError("the camera is off (camera.kind = \"none\" in config.toml)")
    try:
        from hardware.camera import open_camera  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise CalibrationError(f"camera support is not installed ({exc})") from None
    try:
        source = open_camera(camera)
        source.start()
    except CalibrationError:
        raise
    except Exception as exc:  # libcamera, OpenCV and friends raise their own types
        raise CalibrationError(
            f"cannot open the {camera.kind} camera ({exc}); if the table is running, "
            "calibrate from its page or stop it first: sudo systemctl stop kniffel") from None
    return source


def close_source(source: Any) -> None:
    with contextlib.suppress(Exception):  # closing must not hide the real result
        source.stop()


def capture(source: Any, settle: int = 0) -> Any:
    """One main-stream BGR frame, after `settle` frames for exposure to settle."""
    frame = None
    for _ in range(settle + 1):
        frame = source.capture()
    if frame is None:
        raise CalibrationError("the camera gave no picture")
    return frame


def metadata(source: Any) -> dict[str, Any]:
    """The camera's current picture metadata (picamera2: ExposureTime, AnalogueGain,
    ColourGains, LensPosition)."""
    for get in (getattr(source, "metadata", None), getattr(source, "capture_metadata", None),
                getattr(getattr(source, "picam2", None), "capture_metadata", None)):
        if callable(get):
            data = get()
            if isinstance(data, Mapping):
                return dict(data)
    raise CalibrationError("this camera cannot report exposure and white balance "
                           "(--lock and --focus auto need camera.kind = \"picamera2\")")


def set_controls(source: Any, controls: Mapping[str, Any]) -> None:
    setter = getattr(source, "set_controls", None)
    if not callable(setter):
        raise CalibrationError("this camera cannot be adjusted (picamera2 only)")
    setter(dict(controls))


def camera_controls(camera: CameraConfig) -> dict[str, Any]:
    """picamera2 controls for the values fixed in `camera` (none fixed → {}: automatic)."""
    controls: dict[str, Any] = {}
    if camera.exposure_us is not None or camera.analogue_gain is not None:
        controls["AeEnable"] = False
        if camera.exposure_us is not None:
            controls["ExposureTime"] = camera.exposure_us
        if camera.analogue_gain is not None:
            controls["AnalogueGain"] = camera.analogue_gain
    if camera.colour_gains is not None:
        controls["AwbEnable"] = False
        controls["ColourGains"] = camera.colour_gains
    if camera.lens_position is not None:
        controls["AfMode"] = AF_MODE_MANUAL
        controls["LensPosition"] = camera.lens_position
    return controls


def unlocked(camera: CameraConfig) -> CameraConfig:
    return replace(camera, exposure_us=None, analogue_gain=None, colour_gains=None)


def locked(camera: CameraConfig, meta: Mapping[str, Any]) -> CameraConfig:
    """`camera` with exposure, gain, white balance (and focus, where the lens has one)
    fixed at what auto mode chose for `meta`."""
    try:
        exposure = int(meta["ExposureTime"])
        gain = round(max(1.0, float(meta["AnalogueGain"])), 3)
        red, blue = (round(float(g), 3) for g in meta["ColourGains"])
    except (KeyError, TypeError, ValueError):
        raise CalibrationError("the camera did not report exposure, gain and colour gains "
                               f"(got: {', '.join(sorted(meta)) or 'nothing'})") from None
    lens = meta.get("LensPosition")
    return replace(camera, exposure_us=max(1, exposure), analogue_gain=gain,
                   colour_gains=(red, blue),
                   lens_position=round(float(lens), 2) if lens is not None
                   else camera.lens_position)


def autofocus(source: Any, wait: Callable[[float], None] = time.sleep) -> float:
    """Run one autofocus cycle (Camera Module 3) and return the lens position (dioptres)."""
    set_controls(source, {"AfMode": AF_MODE_AUTO, "AfTrigger": AF_TRIGGER_START})
    deadline = time.monotonic() + AUTOFOCUS_SECONDS
    while True:
        capture(source)
        wait(0.1)
        if time.monotonic() >= deadline:
            break
    lens = metadata(source).get("LensPosition")
    if lens is None:
        raise CalibrationError("this camera has no autofocus (HQ camera: focus the lens by "
                               "hand, then --focus is not needed)")
    return round(float(lens), 2)


# ---- checking and teaching -----------------------------------------------------------------

@dataclass(frozen=True)
class CheckResult:
    ok: bool
    values: tuple[object, ...]
    message: str


def better_turn(reader: Any, frame: Any, reading: Any) -> int | None:
    """camera.turn (degrees) under which `reader` reads `frame` clearly better than it did
    (`reading`), if any (vision.reader.Reader.better_turn); None for a reader that cannot
    turn."""
    turns = getattr(reader, "better_turn", None)
    quarters = turns(frame, reading) if turns is not None else None
    return None if quarters is None else int(quarters) * 90


def check_reading(reading: Any, throw_area: Sequence[Point] = (),
                  expected: int = EXPECTED_DICE, frame: Any = None,
                  turn: int | None = None) -> CheckResult:
    """Whether a Reading of a test throw is good: exactly `expected` dice in the throw area,
    none flagged, large enough in the picture to read well, given the `frame` it was read
    from, sharp, light enough and not overexposed, and a taught set's dice not all unlike
    its teaching photos (teach_again); `turn`: the picture reads better turned so
    (better_turn)."""
    from vision.reading import (
        count_of_dice,
        teach_again,
        too_blurred,
        too_bright,
        too_noisy,
        too_small,
    )

    dice = [d for d in reading.dice if inside((d.x, d.y), throw_area)]
    outside = len(reading.dice) - len(dice)
    values = tuple(d.value for d in dice)
    shown = " ".join(f"{d.value}{'?' if d.flag else ''}" for d in dice) or "-"
    problems = []
    if len(dice) != expected:
        problems.append(f"found {count_of_dice(len(dice))}, expected {expected}")
    flagged = sorted({d.flag for d in dice if d.flag})
    if flagged:
        problems.append(f"{sum(1 for d in dice if d.flag)} need a look ({', '.join(flagged)})")
    if outside:
        problems.append(f"{outside} outside the throw area")
    small = too_small(dice)
    if small:
        problems.append(small)
    if frame is not None:
        problems.extend(p for p in (too_blurred(frame, dice), too_noisy(frame, dice),
                                    too_bright(frame)) if p)
    problems.extend(teach_again(reading.warnings))
    if turn is not None:
        problems.append(f"the dice read better with the picture turned {turn}° (the camera "
                        f"looks from the picture's side): set the turn to {turn}°")
    if problems:
        return CheckResult(False, values, f"read {shown}: " + "; ".join(problems))
    return CheckResult(True, values, f"read {shown}: all {expected} dice read")


def make_reader(config: Config, expected: int | None = EXPECTED_DICE) -> Any:
    """The dice reader for the configured dice set (builtin or taught)."""
    from vision.models import ModelMissingError
    from vision.reader import Reader

    try:
        return Reader.for_dice_set(config.table.dice_set, state_dir(), expected=expected,
                                   turn=config.camera.quarters)
    except (ModelMissingError, ValueError) as exc:  # DiceSetError is a ValueError
        raise CalibrationError(str(exc)) from None


@dataclass(frozen=True)
class Taught:
    """A dice set taught and saved: where, how many dice of each face this teaching added,
    how many the set had before (0: a new set, or one taught again from scratch), and what
    the user should know of its photos (vision.teach.teaching_doubts)."""

    path: Path
    counts: dict[object, int]
    doubts: list[str]
    before: int = 0

    def report(self, name: str) -> str:
        """What `kniffel teach` and `kniffel calibrate --teach` print."""
        found = ", ".join(f"{v}: {n}" for v, n in self.counts.items())
        total = self.before + sum(self.counts.values())
        done = (f"added to dice set {name!r} ({found} dice; {total} in all)" if self.before
                else f"taught dice set {name!r} ({found} dice)")
        return "\n".join([f"{done} -> {self.path}",
                          *(f"warning: {doubt}" for doubt in self.doubts)])


def teach_set(name: str, photos: Mapping[Any, Sequence[Any]], reader: Any = None,
              folder: Path | None = None, turn: int = 0, add: bool = False) -> Taught:
    """Teach dice set `name` from frames per value (vision.teach) and save it in the state
    directory `folder` (default: state_dir()); without a `reader`, the shipped models read
    the frames turned `turn` quarters (camera.turn). With `add`, the set taught before under
    that name keeps what it knows and learns these photos too (DiceSet.adding: the same
    dice in another place); else a set of that name is replaced."""
    from vision.models import ModelMissingError
    from vision.teach import DiceSetError, load_dice_set, teach, teaching_doubts

    folder = folder or state_dir()
    try:
        earlier = load_dice_set(folder, name) if add else None
        if reader is None:
            from vision.reader import Reader

            reader = Reader.default(turn=turn)
        taught, counts = teach(reader, name, photos)
        found: dict[object, int] = {value: n for value, n in counts.items()}
        if earlier is None:
            return Taught(taught.save(folder), found, teaching_doubts(taught))
        if earlier.embedder != taught.embedder:  # taught by an older embedder
            earlier = earlier.embedded_with(reader.embedder)
        both = earlier.adding(taught)  # refused where teaching doubts these photos
        return Taught(both.save(folder), found, [], len(earlier.patch_values))
    except (DiceSetError, ModelMissingError) as exc:
        raise CalibrationError(str(exc)) from None
    except OSError as exc:  # the state directory a file, a full card
        raise CalibrationError(f"cannot save dice set {name!r} in {folder}: "
                               f"{exc.strerror or exc}") from None


def forget_play(name: str, folder: Path | None = None) -> str:
    """Dice set `name` without what it learnt at tables (web.learn), saved in the state
    directory `folder` (default: state_dir()); what is said of it."""
    from vision.teach import DiceSetError, load_dice_set

    folder = folder or state_dir()
    try:
        dice_set = load_dice_set(folder, name)
        kept = dice_set.forgetting_play()
        kept.save(folder)
    except DiceSetError as exc:
        raise CalibrationError(str(exc)) from None
    forgotten = len(dice_set.patch_values) - len(kept.patch_values)
    return (f"dice set {name!r} forgot the {forgotten} dice it learnt at tables; it keeps "
            f"the {len(kept.patch_values)} its photos taught")


# ---- the command --------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Set up the table: areas, fixed exposure, focus, a test read and "
                          "new dice sets. Saves to config.toml. Without options: show the "
                          "current calibration.")
    parser.add_argument("--config", type=Path, metavar="PATH",
                        help="config file (default: $KNIFFEL_CONFIG or "
                             "/etc/kniffel/config.toml)")
    parser.add_argument("--snapshot", type=Path, metavar="OUT.jpg",
                        help="save a camera picture (to find the area corners on)")
    parser.add_argument("--throw-area", nargs="+", metavar="X,Y",
                        help="corners of the throw area in picture pixels (at least 3), "
                             "or 'all' for the whole picture")
    parser.add_argument("--keep-area", nargs="+", metavar="X,Y",
                        help="corners of the area where kept dice are put aside, or 'all' "
                             "to remove it")
    parser.add_argument("--focus", metavar="auto|DIOPTRES",
                        help="auto: focus once now (Camera Module 3); a number: fix the lens "
                             "there (1/metres: 2.5 = 40 cm)")
    parser.add_argument("--lock", action="store_true",
                        help="fix exposure, gain and white balance at what the camera "
                             "chooses now (picamera2)")
    parser.add_argument("--unlock", action="store_true",
                        help="back to automatic exposure and white balance")
    parser.add_argument("--turn", type=int, choices=TURN_DEGREES, metavar="DEG",
                        help="degrees clockwise that turn the camera's picture upright, the "
                             "table's side nearest the camera at the bottom (0, 90, 180, "
                             "270): the reader reads the picture so turned")
    parser.add_argument("--check", action="store_true",
                        help="read one picture: are exactly five dice read, none doubtful?")
    parser.add_argument("--teach", nargs="+", metavar=("NAME", "VALUE[=PHOTO]"),
                        help="teach a dice set: NAME, then per face VALUE=PHOTO, or VALUE "
                             "alone to take the picture with the camera (guided)")
    parser.add_argument("--add", action="store_true",
                        help="with --teach: add to the set taught before under NAME (the same "
                             "dice here, in this light) instead of replacing it")


def run(args: argparse.Namespace) -> int:
    from web.cli import UserError

    try:
        return _run(args)
    except CalibrationError as exc:
        raise UserError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    path: Path = args.config or config_path()
    config, errors = load_config(path)
    wants_camera = bool(args.snapshot or args.lock or args.focus or args.check
                        or (args.teach and any("=" not in v for v in args.teach[1:])))
    changes = bool(args.throw_area is not None or args.keep_area is not None or args.lock
                   or args.unlock or args.focus or args.teach or args.turn is not None)
    if errors:
        for error in errors:
            print(f"kniffel calibrate: {error}", file=sys.stderr)
        if wants_camera or changes:
            raise CalibrationError(f"fix {path} first (the table runs with the camera off "
                                   "until then)")
        return 1
    if args.lock and args.unlock:
        raise CalibrationError("--lock and --unlock together: choose one")
    if args.add and not args.teach:
        raise CalibrationError("--add adds to a dice set being taught: use it with --teach")

    new = config
    table: dict[str, Any] = {}
    if args.throw_area is not None:
        table["throw_area"] = parse_points(args.throw_area)
    if args.keep_area is not None:
        table["keep_area"] = parse_points(args.keep_area)
    if table:
        new = with_changes(new, table=table)
    if args.unlock:
        new = replace(new, camera=unlocked(new.camera))
    if args.turn is not None:
        new = replace(new, camera=replace(new.camera, turn=args.turn))

    ok = True
    if wants_camera:
        new, ok = _with_camera(args, new)
    elif args.teach:
        new = _teach(args.teach, new, None, args.add)

    if new != config:
        try:
            save_config(path, new)
        except PermissionError:
            raise CalibrationError(f"cannot write {path}: permission denied "
                                   "(run with sudo)") from None
        print(f"saved {path}; restart the table to use it: sudo systemctl restart kniffel")
    if not (wants_camera or changes):
        _show(path, new)
    return 0 if ok else 1


def _with_camera(args: argparse.Namespace, config: Config) -> tuple[Config, bool]:
    """The steps that need the camera, in a sensible order: focus and exposure first, then
    the snapshot and check see the fixed picture."""
    camera = unlocked(config.camera) if args.lock else config.camera
    source = open_source(camera)
    ok = True
    try:
        controls = camera_controls(camera)
        if controls and camera.kind == "picamera2":
            set_controls(source, controls)
        if args.focus:
            if args.focus == "auto":
                lens = autofocus(source)
            else:
                try:
                    lens = float(args.focus)
                except ValueError:
                    raise CalibrationError(f"--focus {args.focus!r}: write auto or a number "
                                           "of dioptres (e.g. 2.5)") from None
                set_controls(source, {"AfMode": AF_MODE_MANUAL, "LensPosition": lens})
            config = with_changes(config, camera={"lens_position": lens})
            print(f"focus: lens position {lens:g} dioptres (about {_distance(lens)})")
        if args.lock:
            capture(source, SETTLE_FRAMES)
            cam = locked(config.camera, metadata(source))
            config = with_changes(config, camera={
                "exposure_us": cam.exposure_us, "analogue_gain": cam.analogue_gain,
                "colour_gains": cam.colour_gains, "lens_position": cam.lens_position})
            set_controls(source, camera_controls(config.camera))
            gains = config.camera.colour_gains or (0.0, 0.0)
            print(f"locked: exposure {config.camera.exposure_us} µs, gain "
                  f"{config.camera.analogue_gain:g}, colour gains {gains[0]:g}/{gains[1]:g}")
        if args.snapshot:
            _write_image(args.snapshot, capture(source, SETTLE_FRAMES))
            print(f"snapshot: {args.snapshot} ({_size(config)})")
        if args.check:
            reader = make_reader(config)
            frame = capture(source, SETTLE_FRAMES)
            reading = reader.read(frame)
            result = check_reading(reading, config.table.throw_area, frame=frame,
                                   turn=better_turn(reader, frame, reading))
            print(f"check: {'OK' if result.ok else 'NOT OK'}, {result.message}")
            ok = result.ok
        if args.teach:
            config = _teach(args.teach, config, source, args.add)
    finally:
        close_source(source)
    return config, ok


def _teach(items: Sequence[str], config: Config, source: Any, add: bool = False) -> Config:
    from vision.teach import check_name, parse_value

    name, *faces = items
    try:
        check_name(name)
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    if not faces:
        raise CalibrationError("--teach NAME needs faces: e.g. --teach holz 1 2 3 4 5 6")
    photos: dict[object, list[Any]] = {}
    for item in faces:
        value, sep, photo = item.partition("=")
        if not value or (sep and not photo):
            raise CalibrationError(f"{item!r}: write VALUE or VALUE=PHOTO (e.g. duck=duck.jpg)")
        try:
            face = parse_value(value)
        except ValueError as exc:
            raise CalibrationError(str(exc)) from None
        if sep:
            frame = _read_image(Path(photo))
        else:
            assert source is not None
            _prompt(f"Put every die {value} up in the throw area, hands away, then press "
                    "Enter ")
            frame = capture(source, SETTLE_FRAMES)
        photos.setdefault(face, []).append(frame)
    print(teach_set(name, photos, turn=config.camera.quarters, add=add).report(name))
    return with_changes(config, table={"dice_set": name})


def _prompt(text: str) -> None:
    try:
        input(text)
    except EOFError:
        raise CalibrationError("no answer on standard input (teach from the camera needs "
                               "someone at the table; or give VALUE=PHOTO)") from None


def _read_image(path: Path) -> Any:
    from vision.photo import read_whole_photo

    try:
        return read_whole_photo(path)
    except ValueError as exc:
        raise CalibrationError(f"{path}: {exc}") from None


def _write_image(path: Path, frame: Any) -> None:
    from vision.photo import encoded

    problem = CalibrationError(f"{path}: cannot write the picture (does the folder exist? "
                               "use .jpg or .png)")
    data = encoded(frame, path.suffix)
    if data is None:
        raise problem
    try:
        path.write_bytes(data)
    except OSError:
        raise problem from None


def _distance(dioptres: float) -> str:
    return "infinity" if dioptres <= 0 else f"{100 / dioptres:.0f} cm"


def _size(config: Config) -> str:
    width, height = config.camera.main_size
    return f"{width}x{height}; mark areas in these pixels"


def _show(path: Path, config: Config) -> None:
    """What is calibrated so far, and what is missing."""
    from vision.teach import learnt_at_tables

    cam, table = config.camera, config.table

    def area(points: Iterable[Point]) -> str:
        pts = list(points)
        return " ".join(f"{x:g},{y:g}" for x, y in pts) if pts else "whole picture"

    print(f"config:     {path}")
    print(f"camera:     {cam.kind}, {_size(config)}"
          + (f", read turned {cam.turn}° clockwise" if cam.turn else ""))
    print(f"throw area: {area(table.throw_area)}")
    print(f"keep area:  {area(table.keep_area) if table.keep_area else 'none'}")
    if cam.exposure_us is None:
        print("exposure:   automatic (run --lock once the light is as it will be)")
    else:
        gains = cam.colour_gains or (0.0, 0.0)
        print(f"exposure:   locked: {cam.exposure_us} µs, gain {cam.analogue_gain:g}, "
              f"colour gains {gains[0]:g}/{gains[1]:g}")
    print("focus:      " + ("automatic" if cam.lens_position is None
                            else f"{cam.lens_position:g} dioptres "
                                 f"(about {_distance(cam.lens_position)})"))
    learns = "" if table.dice_set in BUILTIN_DICE_SETS else (
        " (learns each table from the throws the players check)" if table.learn
        else " (does not learn at tables: table.learn = false)")
    print(f"dice set:   {table.dice_set}{learns}")
    learnt = learnt_at_tables(state_dir()).get(table.dice_set)
    if learnt:
        print(f"            {learnt} dice learnt at tables (kniffel teach --dice-set "
              f"{table.dice_set} --forget-learnt takes them back)")
