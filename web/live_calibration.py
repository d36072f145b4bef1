"""Calibrate from the page: the steps of `kniffel calibrate` (web/calibrate.py) done on the
camera the running table already owns, so the camera is never opened twice and nothing
needs a restart.

    calibration = LiveCalibration(config, path, folder, link, make_reader)
    calibration.describe()                       # what the page shows
    calibration.snapshot_jpeg()                  # a still to mark the areas on
    calibration.save_areas(throw, keep)          # corners in main-stream pixels
    calibration.set_exposure(lock=True)          # or False: automatic again
    calibration.focus()                          # one autofocus run
    calibration.check()                          # five dice read?
    calibration.capture(phone, name, face) ...   # one picture per face, then
    calibration.teach(phone, name, faces)        # the new dice set, in use at once
    calibration.forget_learnt(name)              # what a set learnt at tables, taken back
    calibration.set_learn(False)                 # taught sets learn no table (table.learn)

Every change is written to config.toml the way the CLI writes it (with_changes, then
save_config) and only then used by the running camera loop; a refused change leaves both
as they were. While someone calibrates, the table reads no throws: dice laid out to check
the reading or to teach a set are no game's throw.
"""

from __future__ import annotations

import base64
import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from game.core import ANIMALS, PIPS
from web.calibrate import (
    AUTO_EXPOSURE,
    SETTLE_FRAMES,
    CalibrationError,
    autofocus,
    better_turn,
    camera_controls,
    capture,
    check_reading,
    forget_play,
    inside,
    locked,
    metadata,
    set_controls,
    teach_set,
    unlocked,
    with_changes,
)
from web.config import CameraConfig, Config, Point, is_turn, load_config, save_config
from web.service import BadRequest, ServiceError

if TYPE_CHECKING:
    import numpy as np

    from vision.reading import DiceReader, Reading
    from vision.watch import TableWatcher
    from web.serve import CameraLink

#: Calibrating pauses the table's reading of throws this long (begin() and every step renew
#: it, end() ends it), so a phone that is simply put away does not stop the table for good.
PAUSE_SECONDS = 600.0
PAUSE_MESSAGE = "calibrating: throws are not read until calibration is finished"
SNAPSHOT_WIDTH = 1280
PICTURE_WIDTH = 960
#: The camera values calibration fixes (CameraConfig fields).
FIXED_VALUES = ("exposure_us", "analogue_gain", "colour_gains", "lens_position")


class NoCamera(ServiceError):
    """No camera loop runs, or its camera is not delivering pictures now."""

    status, code = 409, "no_camera"


class NoControls(ServiceError):
    """The camera has no exposure, white balance or focus controls (usb, replay, demo)."""

    status, code = 422, "no_controls"


class NotSaved(ServiceError):
    """config.toml is broken or cannot be written: nothing was changed."""

    status, code = 409, "config_not_saved"


class CannotCalibrate(ServiceError):
    """A well-formed step that did not work: no die found, no models, the camera refused."""

    status, code = 422, "cannot_calibrate"


class LiveCalibration:
    """Calibration of the running table. `config` is what the table runs with (`--camera`
    may differ from the file: only the changed keys are written); `link` is None when the
    table has no camera loop; `make_reader(config)` builds the dice reader for a config."""

    def __init__(self, config: Config, path: Path, folder: Path, link: CameraLink | None,
                 make_reader: Callable[[Config], DiceReader]) -> None:
        self.config = config
        self.path = path
        self.folder = folder
        self.link = link
        self.make_reader = make_reader
        self._lock = threading.Lock()  # one change of config.toml at a time
        #: The teach pictures taken so far: (phone id, set name, frame per face).
        self._draft: tuple[str, str, dict[object, np.ndarray]] | None = None

    # ---- what the page shows -----------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        from vision.teach import learnt_at_tables, taught_sets

        cam, table = self.config.camera, self.config.table
        watcher = self._running()
        return {
            "camera": {"kind": cam.kind, "available": watcher is not None,
                       "controls": watcher is not None and has_controls(watcher.camera)},
            "size": list(cam.main_size),
            "throw_area": [list(p) for p in table.throw_area],
            "keep_area": [list(p) for p in table.keep_area],
            "exposure": None if cam.exposure_us is None else {
                "exposure_us": cam.exposure_us, "analogue_gain": cam.analogue_gain,
                "colour_gains": list(cam.colour_gains or ())},
            "lens_position": cam.lens_position,
            "turn": cam.turn,
            "dice_set": table.dice_set,
            "faces": {"pips": list(PIPS), "animals": list(ANIMALS)},
            "taught_sets": taught_sets(self.folder),
            "learn": table.learn,
            "learnt": learnt_at_tables(self.folder),
            "config": str(self.path),
        }

    def snapshot_jpeg(self) -> bytes:
        """The main stream now, as JPEG (areas are marked on it in main_size pixels)."""
        from vision.watch import encode_jpeg

        with self._camera() as source:
            frame = capture(source)
        return encode_jpeg(frame, 85, SNAPSHOT_WIDTH)

    # ---- pausing the table -------------------------------------------------------------

    def begin(self) -> None:
        """Someone calibrates: the table reads no throws for a while."""
        watcher = self._running()
        if watcher is not None:
            watcher.pause_throws(PAUSE_SECONDS, PAUSE_MESSAGE)

    def end(self) -> None:
        watcher = self._running()
        if watcher is not None:
            watcher.resume_throws()

    # ---- the steps ---------------------------------------------------------------------

    def save_areas(self, throw_area: object, keep_area: object) -> None:
        """Corners in main-stream pixels: the throw area needs at least 3, the keep area
        none (no keep area) or at least 3."""
        throw = polygon(throw_area, "throw_area")
        keep = polygon(keep_area, "keep_area")
        if len(throw) < 3:
            raise BadRequest("mark at least 3 corners of the throw area")
        if 0 < len(keep) < 3:
            raise BadRequest("mark at least 3 corners of the keep area (or none)")
        self.begin()
        self._save(table={"throw_area": throw, "keep_area": keep})

    def set_exposure(self, lock: bool) -> None:
        """lock: fix exposure, gain and white balance at what auto mode chooses now; else
        automatic again (focus stays as it is)."""
        self.begin()
        with self._camera(needs_controls=True) as source:
            before = self.config.camera
            if lock:
                set_controls(source, AUTO_EXPOSURE)
                capture(source, SETTLE_FRAMES)
                fixed = locked(before, metadata(source))
            else:
                fixed = unlocked(before)
            self._fix(source, before, fixed)

    def focus(self) -> float:
        """One autofocus run (Camera Module 3); the lens stays there. Returns dioptres."""
        self.begin()
        with self._camera(needs_controls=True) as source:
            before = self.config.camera
            lens = autofocus(source)
            self._fix(source, before, replace(before, lens_position=lens))
        return lens

    def set_turn(self, turn: object) -> None:
        """Degrees clockwise that turn the camera's picture upright (camera.turn): the
        table's reader reads it so turned from now on."""
        if not is_turn(turn):
            raise BadRequest("turn must be 0, 90, 180 or 270 (degrees clockwise)")
        self.begin()
        try:
            reader = self.make_reader(with_changes(self.config, camera={"turn": turn}))
        except Exception as exc:  # missing models, a set that will not load
            raise CannotCalibrate(f"the dice reader failed: {one_line(exc)}") from None
        self._save(reader, camera={"turn": turn})

    def check(self) -> dict[str, Any]:
        """Read the picture now with the table's reader: exactly five dice in the throw
        area, none doubtful? With the picture, the dice drawn in."""
        self.begin()
        frame, reading, throw_area = self._read_now()
        try:
            turn = better_turn(self._watcher().reader, frame, reading)
        except Exception as exc:  # a broken model or picture: say so, never a 500
            raise CannotCalibrate(f"the dice reader failed: {one_line(exc)}") from None
        result = check_reading(reading, throw_area, frame=frame, turn=turn)
        return {"ok": result.ok, "values": list(result.values), "message": result.message,
                "picture": picture(frame, reading)}

    def capture(self, phone: str, name: object, face: object) -> dict[str, Any]:
        """The picture for one face of the dice set being taught (every die `face` up);
        taking it again replaces it. Says how many dice are seen in the throw area."""
        name, face = set_name(name), one_face(face)
        self.begin()
        frame, reading, throw_area = self._read_now()
        seen = sum(1 for d in reading.dice if inside((d.x, d.y), throw_area))
        with self._lock:
            if self._draft is None or self._draft[:2] != (phone, name):
                self._draft = (phone, name, {})  # one draft at a time: the latest phone's
            frames = self._draft[2]
            frames[face] = frame
            captured = list(frames)
        return {"face": face, "dice": seen, "captured": captured,
                "picture": picture(frame, reading)}

    def teach(self, phone: str, name: object, faces: object, add: object = False
              ) -> dict[str, Any]:
        """Teach the set from this phone's pictures, save it, make it the table's dice set
        and read with it from the next throw on. With `add`, the set taught before under
        that name learns these pictures too (the same dice in this light: DiceSet.adding);
        else a set of that name is replaced."""
        name, chosen = set_name(name), face_list(faces)
        if not isinstance(add, bool):
            raise BadRequest("add must be true or false")
        self.begin()
        with self._lock:
            draft = self._draft if self._draft and self._draft[:2] == (phone, name) else None
            frames = draft[2] if draft else {}
            missing = [f for f in chosen if f not in frames]
            if missing:
                raise CannotCalibrate(f"no picture for {missing[0]} yet: lay every die with "
                                      f"{missing[0]} up in the throw area and capture")
            photos = {f: [frames[f]] for f in chosen}
        watcher = self._watcher()
        try:
            taught = teach_set(name, photos, watcher.reader, self.folder, add=add)
            reader = self.make_reader(with_changes(self.config, table={"dice_set": name}))
        except Exception as exc:  # DiceSetError, missing models, a set that will not load
            raise CannotCalibrate(f"cannot teach {name!r}: {one_line(exc)}") from None
        self._save(table={"dice_set": name}, reader=reader)
        with self._lock:
            if self._draft is draft:
                self._draft = None
        return {"name": name, "dice": [{"face": f, "count": taught.counts.get(f, 0)}
                                       for f in chosen], "before": taught.before,
                "warnings": taught.doubts}

    def forget_learnt(self, name: object) -> dict[str, Any]:
        """Dice set `name` without the dice it learnt at tables (web.learn), saved; where
        the table reads with it, from the next throw on without them."""
        name = set_name(name)
        self.begin()
        try:
            with self._lock:
                said = forget_play(name, self.folder)
                if name != self.config.table.dice_set:
                    return {"name": name, "message": said}
                reader = self.make_reader(self.config)
        except CalibrationError as exc:
            raise CannotCalibrate(str(exc)) from None
        except Exception as exc:  # missing models, a set that will not load
            raise CannotCalibrate(f"the dice reader failed: {one_line(exc)}") from None
        if self.link is not None:
            self.link.use(self.config, reader)
        return {"name": name, "message": said}

    def set_learn(self, learn: object) -> None:
        """Whether taught sets learn the table from the dice people check (table.learn)."""
        if not isinstance(learn, bool):
            raise BadRequest("learn must be true or false")
        self.begin()
        self._save(table={"learn": learn})

    # ---- helpers -----------------------------------------------------------------------

    def _running(self) -> TableWatcher | None:
        return None if self.link is None else self.link.watcher

    def _watcher(self) -> TableWatcher:
        watcher = self._running()
        if watcher is None:
            raise NoCamera("no camera is running: calibrate once the camera works "
                           "(its status is on the page)")
        return watcher

    @contextlib.contextmanager
    def _camera(self, needs_controls: bool = False) -> Iterator[Any]:
        """The running camera (the table's loop waits meanwhile); its failures become one
        line for the page."""
        from vision.watch import CameraUnavailable

        watcher = self._watcher()
        try:
            with watcher.using_camera() as source:
                if needs_controls and not has_controls(source):
                    raise NoControls(f"the {self.config.camera.kind} camera has no exposure, "
                                     "white balance or focus controls (only the Raspberry Pi "
                                     "camera has)")
                yield source
        except CameraUnavailable as exc:
            raise NoCamera(f"the camera is not delivering pictures now ({exc})") from None
        except ServiceError:
            raise
        except Exception as exc:  # CalibrationError, and libcamera's and OpenCV's own types
            raise CannotCalibrate(f"the camera: {one_line(exc)}") from None

    def _read_now(self) -> tuple[np.ndarray, Reading, tuple[Point, ...]]:
        """A picture now, the table's reading of it and the throw area in its pixels."""
        watcher = self._watcher()
        with self._camera() as source:
            frame = capture(source)
        try:
            reading = watcher.reader.read(frame)
        except Exception as exc:  # a broken model or picture: say so, never a 500
            raise CannotCalibrate(f"the dice reader failed: {one_line(exc)}") from None
        return frame, reading, watcher.areas_in(frame)[0]

    def _fix(self, source: Any, before: CameraConfig, fixed: CameraConfig) -> None:
        """Save the camera values of `fixed`, then set the camera to them; when saving
        fails, the camera goes back to `before`."""
        try:
            self._save(camera={name: getattr(fixed, name) for name in FIXED_VALUES})
        except ServiceError:
            set_controls(source, {**AUTO_EXPOSURE, **camera_controls(before)})
            raise
        set_controls(source, {**AUTO_EXPOSURE, **camera_controls(fixed)})
        if isinstance(getattr(source, "config", None), CameraConfig):
            # picamera2 applies its config's values when it starts: a camera the loop
            # restarts after a failure keeps them
            source.config = replace(source.config, **{
                name: getattr(fixed, name) for name in FIXED_VALUES})

    def _save(self, reader: DiceReader | None = None, **sections: dict[str, Any]) -> None:
        """Write `sections` into config.toml (the file's other keys, its camera kind
        included, stay as they are), then run the table with them (and `reader`)."""
        with self._lock:
            on_file, errors = load_config(self.path)
            if errors:
                raise NotSaved(f"{errors[0]}: fix {self.path} first; it was left as it is")
            try:
                changed = with_changes(on_file, **sections)
                running = with_changes(self.config, **sections)
            except CalibrationError as exc:
                raise BadRequest(str(exc)) from None
            try:
                save_config(self.path, changed)
            except OSError as exc:
                raise NotSaved(f"cannot write {self.path} ({exc.strerror or one_line(exc)}); "
                               "it was left as it is") from None
            self.config = running
            if self.link is not None:
                self.link.use(running, reader)


# ---- checks of what the page sends -------------------------------------------------------

def has_controls(source: Any) -> bool:
    """Whether the camera can be adjusted and report exposure (picamera2)."""
    return callable(getattr(source, "set_controls", None)) and \
        callable(getattr(source, "metadata", None))


def polygon(value: object, key: str) -> tuple[Point, ...]:
    """[[x, y], ...] in pixels, rounded to whole pixels; [] or None: no area."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
            isinstance(p, list) and len(p) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v) for v in p) for p in value):
        raise BadRequest(f"{key} must be a list of [x, y] points in picture pixels")
    return tuple((float(round(x)), float(round(y))) for x, y in value)


def set_name(value: object) -> str:
    from vision.teach import check_name

    if not isinstance(value, str):
        raise BadRequest("name must be the dice set's name as a text")
    try:
        return check_name(value.strip())
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def one_face(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or \
            value not in (*PIPS, *ANIMALS):
        raise BadRequest(f"unknown face {value!r}: 1 to 6 or one of {', '.join(map(str, ANIMALS))}")
    return value


def face_list(value: object) -> list[object]:
    """At least two different faces, all pips or all animals."""
    if not isinstance(value, list) or len(value) < 2:
        raise BadRequest("faces: choose at least two faces to teach")
    faces = [one_face(v) for v in value]
    if len(set(faces)) != len(faces):
        raise BadRequest("faces: each face only once")
    if not (all(f in PIPS for f in faces) or all(f in ANIMALS for f in faces)):
        raise BadRequest("faces: all pips (1 to 6) or all animals, not both")
    return faces


def picture(frame: np.ndarray, reading: Reading) -> str:
    """The frame with the dice drawn in, as a data: URL for an <img>."""
    from vision.annotate import annotate
    from vision.watch import encode_jpeg

    data = encode_jpeg(annotate(frame, reading), 80, PICTURE_WIDTH)
    return "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or exc.__class__.__name__
