"""The camera loop: watch the table, read each throw once it has settled, keep the dice in
a stable order so held dice keep their index, and survive a camera that fails.

    watcher = TableWatcher(camera, reader, config.table, on_throw=service.observe_throw,
                           on_status=service.set_camera_status, on_alive=notifier.watchdog)
    watcher.start()          # a daemon thread; never raises, retries the camera itself
    watcher.new_turn()       # the next throw is the first of a turn (all five thrown)
    watcher.preview_jpeg()   # for the MJPEG preview: the last read drawn in, or live
    with watcher.using_camera() as camera: ...   # calibration: the loop waits meanwhile
    watcher.use(reader=..., table=...)           # a new dice set or areas, no restart
    watcher.pause_throws(600, "calibrating")     # dice laid out on purpose are no throw

Only the small lores stream is looked at all the time (vision.settle); the full frame is
captured and read once per throw (the mean of a few frames: `still_frame`), and again when
a die is nudged afterwards (then the throw is updated, not added).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vision.reading import (
    DICE_IN_A_THROW,
    DiceReader,
    DieReading,
    DieValue,
    Reading,
    count_problem,
    dice_of_the_throw,
    die_problem,
    looks_like,
    teach_again,
)
from vision.settle import (
    MOVING,
    NUDGED,
    QUIET,
    SETTLED,
    SettleConfig,
    SettleDetector,
    SettleEvent,
    changed_pixels,
    motion_picture,
)

log = logging.getLogger(__name__)

Point = tuple[float, float]
#: A die within this share of its size of where a die of the same value lay has not moved.
UNMOVED = 0.3
PREVIEW_WIDTH = 960
#: A settled throw is read from the mean of this many full frames: each has its own sensor
#: noise, and four have half of one's. Noisy, dim pictures are where the reader errs most:
#: the synthetic test scenes, each rendered with four noise draws, read 94.34 → 94.71 %
#: of the pip dice right (within 0–30° 96.71 → 97.33 %) and 94.17 → 94.78 % of the animal
#: dice, with a sixth fewer extra finds and a tenth fewer dice asked; two frames gain about
#: three quarters of that (models/README.md, "A settled throw read from four frames"). A
#: camera whose captures do not differ by noise (a replay, the demo table) says
#: `still_frames = 1`.
STILL_FRAMES = 4


@dataclass(frozen=True)
class ObservedThrow:
    """A settled throw as the camera saw it.

    values: one per die in a stable order (at least five; a die not seen is None): held dice
    keep the index they had. reading: the dice in the same order (a die not seen is a
    placeholder with value None and confidence 0). held: indices kept from the previous
    observed throw of the turn ([] on the first throw; None: unknown). update: a re-read of
    the same throw (a die was nudged): replace it, don't add one. problems: why the table
    should ask instead of trusting it ("4 dice seen, 5 expected", "die 3 is tilted"; a
    taught set's dice unlike its teaching photos: vision.reading.teach_again; dice of the
    other kind: vision.reading.looks_like)."""

    values: list[DieValue | None]
    held: list[int] | None
    reading: Reading
    frame_jpeg: bytes
    update: bool
    problems: list[str]


# ---- the settled picture --------------------------------------------------------------------

def still_frame(capture: Callable[[], np.ndarray], frames: int = STILL_FRAMES,
                settle: SettleConfig | None = None) -> np.ndarray:
    """The mean of `frames` captures of the settled table (less sensor noise than one), or
    the first capture alone where a later one differs from it as the settle detector sees
    motion (`settle`: its pixel threshold and share): something moved meanwhile."""
    first = capture()
    if frames <= 1:
        return first
    settle = settle or SettleConfig()
    still = _quarter_motion_picture(first, settle.blur)
    total = first.astype(np.float32)
    for _ in range(frames - 1):
        frame = capture()
        if frame.shape != first.shape:
            return first
        changed = changed_pixels(_quarter_motion_picture(frame, settle.blur), still,
                                 settle.pixel_threshold)
        if np.count_nonzero(changed) > settle.motion_share * changed.size:
            return first
        total += frame
    total *= 1.0 / frames
    total += 0.5
    return total.astype(np.uint8)


def _quarter_motion_picture(frame: np.ndarray, blur: int) -> np.ndarray:
    """A full frame at a quarter of its size (about the lores stream's, where the settle
    detector looks for motion), as a motion picture."""
    h, w = frame.shape[:2]
    small = cv2.resize(frame, (max(1, w // 4), max(1, h // 4)), interpolation=cv2.INTER_AREA)
    return motion_picture(small, blur)


# ---- geometry -------------------------------------------------------------------------------

def inside(point: Point, polygon: Sequence[Point]) -> bool:
    """Whether `point` lies in `polygon` (an empty polygon is the whole view)."""
    if len(polygon) < 3:
        return True
    contour = np.asarray(polygon, np.float32).reshape(-1, 1, 2)
    return cv2.pointPolygonTest(contour, (float(point[0]), float(point[1])), False) >= 0


def die_size(die: DieReading) -> float:
    x0, y0, x1, y1 = die.box
    return max(1.0, math.sqrt(max(1, x1 - x0) * max(1, y1 - y0)))


def _distance(a: DieReading, b: DieReading) -> float:
    return math.hypot(a.x - b.x, a.y - b.y)


def _scaled(polygon: Sequence[Point], sx: float, sy: float) -> tuple[Point, ...]:
    return tuple((x * sx, y * sy) for x, y in polygon)


def placeholder() -> DieReading:
    """Stands in for a die that was not seen, so values and reading stay aligned."""
    return DieReading(None, 0.0, 0.0, 0.0, (0, 0, 0, 0), None)


def unmoved(die: DieReading, before: DieReading, tolerance: float = UNMOVED) -> bool:
    return (die.value is not None and die.value == before.value
            and _distance(die, before) <= tolerance * die_size(before))


def assign_indices(previous: Sequence[DieReading | None] | None, dice: Sequence[DieReading],
                   keep_area: Sequence[Point] = (), expected: int = DICE_IN_A_THROW,
                   tolerance: float = UNMOVED) -> tuple[list[DieReading | None], list[int]]:
    """Put the dice of a new throw in slots: (slots, held indices).

    First throw of a turn (`previous` None): the reader's order, nobody held. Later throws:
    with a keep area, its dice are the held ones, each taking the slot of the previous die
    with the same value nearest to it; without one, a die lying (within `tolerance` of its
    size) where a die of the same value lay is held and keeps that slot. Thrown dice fill
    the free slots in the reader's order."""
    slots: list[DieReading | None] = [None] * max(expected, len(dice),
                                                  len(previous or ()))
    if not previous:
        for i, die in enumerate(dice):
            slots[i] = die
        return slots, []
    pairs: list[tuple[float, int, int]] = []
    for j, die in enumerate(dice):
        in_keep = bool(keep_area) and inside((die.x, die.y), keep_area)
        if keep_area and not in_keep:
            continue
        for i, before in enumerate(previous):
            if before is None or die.value is None or die.value != before.value:
                continue
            if in_keep or unmoved(die, before, tolerance):
                pairs.append((_distance(die, before), j, i))
    used_dice: set[int] = set()
    held: list[int] = []
    for _, j, i in sorted(pairs):
        if j in used_dice or slots[i] is not None:
            continue
        slots[i] = dice[j]
        used_dice.add(j)
        held.append(i)
    free = (i for i in range(len(slots)) if slots[i] is None and i not in held)
    for j, die in enumerate(dice):
        if j not in used_dice:
            slot = next(free, None)
            if slot is None:
                slots.append(die)
            else:
                slots[slot] = die
    return slots, sorted(held)


def follow(current: Sequence[DieReading | None], dice: Sequence[DieReading],
           expected: int = DICE_IN_A_THROW) -> list[DieReading | None]:
    """The dice of a re-read in the slots of the throw they update: each takes the slot of
    the nearest die it can be (within its size); others fill free slots."""
    slots: list[DieReading | None] = [None] * max(expected, len(dice), len(current))
    pairs = sorted((_distance(d, c), j, i) for j, d in enumerate(dice)
                   for i, c in enumerate(current)
                   if c is not None and _distance(d, c) <= 1.0 * die_size(c))
    used: set[int] = set()
    for _, j, i in pairs:
        if j in used or slots[i] is not None:
            continue
        slots[i] = dice[j]
        used.add(j)
    rest = [d for j, d in enumerate(dice) if j not in used]
    for i in range(len(slots)):
        if slots[i] is None and rest:
            slots[i] = rest.pop(0)
    return slots + rest


def problems_of(slots: Sequence[DieReading | None], expected: int = DICE_IN_A_THROW) -> list[str]:
    """Why a throw needs a person: the wrong number of dice, flagged or unreadable dice."""
    seen = sum(1 for d in slots if d is not None)
    out = [] if seen == expected else [count_problem(seen, expected)]
    for i, die in enumerate(slots):
        if die is None:
            continue
        if die.asked:
            out.append(die_problem(i, die.flag or "unreadable"))
    return out


def encode_jpeg(frame: np.ndarray, quality: int = 85, width: int | None = None) -> bytes:
    if width is not None and frame.shape[1] > width:
        height = round(frame.shape[0] * width / frame.shape[1])
        frame = cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return buf.tobytes() if ok else b""


# ---- the loop -------------------------------------------------------------------------------

class TableWatcher:
    """Watches the table in a daemon thread: lores → SettleDetector; on `settled` the main
    frame is captured and read, the dice are put in stable slots and `on_throw` gets an
    ObservedThrow; on `nudged` the throw is re-read and sent again as an update when it
    changed. `on_status(state, message)`: "ok" | "moving" | "failed" | "paused".
    `on_alive()` after every frame the camera delivers and before every retry of a failed
    camera (the systemd watchdog: silent only while a camera call hangs — a camera that
    fails cleanly is retried here, a restart of the whole table would not help it).
    A failing camera is stopped and started again in the background with a growing pause;
    the thread never dies of an exception."""

    def __init__(self, camera: Any, reader: DiceReader, table: Any,
                 on_throw: Callable[[ObservedThrow], None],
                 on_status: Callable[[str, str], None] | None = None,
                 on_alive: Callable[[], None] | None = None, *, expected: int = DICE_IN_A_THROW,
                 fps: float | None = 12.0, retry: tuple[float, float] = (0.5, 10.0),
                 sleep: Callable[[float], None] | None = None) -> None:
        self.camera = camera
        self.reader = reader
        self.table = table
        self.on_throw = on_throw
        self.on_status = on_status
        self.on_alive = on_alive
        self.expected = expected
        self.fps = fps
        self.retry = retry
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._lock = threading.Lock()
        #: Held for every use of the camera, by the loop and by calibration (using_camera).
        self._camera_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        clock = getattr(camera, "clock", None)
        self._clock: Callable[[], float] = clock if callable(clock) else time.monotonic
        self.detector: SettleDetector | None = None
        self._status: tuple[str, str] | None = None
        self._open = False
        # the turn: the dice of the last observed throw in their slots
        self._current: list[DieReading | None] | None = None
        self._held: list[int] | None = None
        self._problems = False
        self._first = True  # the next throw starts a turn
        self._last_seen: list[DieReading] = []  # every die of the last read, any turn
        # the preview
        self._lores: np.ndarray | None = None
        self._annotated: np.ndarray | None = None
        self._generation = 0
        self._preview: tuple[int, bytes] | None = None
        # throws paused (calibration): until this time.monotonic(), 0 = not paused
        self._paused_until = 0.0
        self._pause_message = ""
        self.frames = 0
        self.reads = 0

    # ---- control ------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="table-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self._close()

    def new_turn(self) -> None:
        """The next throw is the first of a turn: every die is thrown, nobody holds."""
        with self._lock:
            self._first = True

    def use(self, reader: DiceReader | None = None, table: Any = None) -> None:
        """Read with `reader` and watch the areas of `table` from the next frame on (a dice
        set was taught or the areas were marked while the table runs)."""
        with self._lock:
            if reader is not None:
                self.reader = reader
            if table is not None and table != self.table:
                self.table = table
                self.detector = None  # its mask is made from the areas

    @contextlib.contextmanager
    def using_camera(self) -> Iterator[Any]:
        """The running camera for a moment (calibration takes a still, sets exposure or
        focus); the loop waits meanwhile, so the two never use the camera at once. Raises
        CameraUnavailable while the camera is not delivering pictures."""
        with self._camera_lock:
            if not self._open:
                raise CameraUnavailable(self._status[1] if self._status
                                        else "the camera is not started yet")
            yield self.camera

    def pause_throws(self, seconds: float, message: str) -> None:
        """Read no throws for the next `seconds` (dice laid out while the table is set up
        are no game's throw); the status says `message` meanwhile. Calling it again
        extends the pause; resume_throws() ends it."""
        with self._lock:
            self._paused_until = time.monotonic() + seconds
            self._pause_message = message
        self._say("paused", message)

    def resume_throws(self) -> None:
        """The table is set up: throws are read again."""
        with self._lock:
            was_paused, self._paused_until = bool(self._paused_until), 0.0
        if was_paused and self._open:
            self._say("ok", "watching the table")

    def preview_jpeg(self) -> bytes | None:
        """The last read with the dice drawn in, or the live lores picture while the dice
        move (None while the camera fails). The same bytes object until the picture
        changes, so a stream can skip repeats."""
        with self._lock:
            if not self._open:
                return None
            generation = self._generation
            cached = self._preview
            detector = self.detector
            moving = detector is not None and detector.state != "idle"
            frame = self._lores if (moving or self._annotated is None) else self._annotated
        if cached is not None and cached[0] == generation:
            return cached[1]
        if frame is None:
            return None
        if frame.ndim == 2:
            frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
        if frame.shape[1] < 480:
            frame = cv2.resize(frame, (frame.shape[1] * 2, frame.shape[0] * 2),
                               interpolation=cv2.INTER_LINEAR)
        data = encode_jpeg(frame, 80, PREVIEW_WIDTH)
        with self._lock:
            self._preview = (generation, data)
        return data

    # ---- the thread ----------------------------------------------------------------------

    def _say(self, state: str, message: str) -> None:
        if self._status == (state, message) or self.on_status is None:
            self._status = (state, message)
            return
        self._status = (state, message)
        try:
            self.on_status(state, message)
        except Exception:
            log.exception("on_status failed")

    def _alive(self) -> None:
        """The loop is not hung (a frame came, or a failed camera is retried)."""
        if self.on_alive is not None:
            try:
                self.on_alive()
            except Exception:
                log.exception("on_alive failed")

    def _close(self) -> None:
        with self._lock:
            self._open = False
        with self._camera_lock, contextlib.suppress(Exception):
            self.camera.stop()

    def _paused(self) -> bool:
        """Whether throws are paused now; once a pause has run out, says so."""
        with self._lock:
            until, message = self._paused_until, self._pause_message
            lapsed = bool(until) and time.monotonic() >= until
            if lapsed:
                self._paused_until = 0.0
        if lapsed:
            self._say("ok", "watching the table")
        elif until:
            self._say("paused", message)
        return bool(until) and not lapsed

    def _run(self) -> None:
        pause = self.retry[0]
        name = getattr(self.camera, "name", "camera")
        while not self._stop.is_set():
            if not self._open:
                try:
                    with self._camera_lock:
                        self.camera.start()
                except Exception as exc:
                    self._say("failed", f"camera {name}: {_line(exc)} (trying again in "
                              f"{pause:g} s; enter the throws by hand meanwhile)")
                    self._close()
                    self._alive()
                    self._sleep(pause)
                    pause = min(pause * 2, self.retry[1])
                    continue
                with self._lock:
                    self._open = True
                detector = self.detector
                if detector is not None:
                    detector.reset()
                self._say("ok", f"camera {name} is watching the table")
            began = time.monotonic()
            try:
                self._step()
                pause = self.retry[0]
            except _CameraFailed as failed:
                self._say("failed", f"camera {name}: {failed} (trying again in {pause:g} s; "
                          "enter the throws by hand meanwhile)")
                self._close()
                self._alive()
                self._sleep(pause)
                pause = min(pause * 2, self.retry[1])
                continue
            except Exception:  # a bug must not stop the table watching
                log.exception("camera loop")
            if self.fps:
                rest = 1.0 / self.fps - (time.monotonic() - began)
                if rest > 0:
                    self._sleep(rest)

    def _step(self) -> None:
        try:
            with self._camera_lock:
                frame = self.camera.lores()
                if frame is not None:
                    # counted under the lock: one who borrows the camera (using_camera)
                    # sees no frame taken meanwhile
                    self.frames += 1
        except Exception as exc:
            raise _CameraFailed(_line(exc)) from None
        if frame is None:
            raise _CameraFailed("no picture")
        self._alive()
        detector = self.detector  # use() may drop it meanwhile: made again next frame
        if detector is None:
            detector = self.detector = self._detector(frame.shape[1], frame.shape[0])
        with self._lock:
            self._lores = frame
            if detector.state != "idle" or self._annotated is None:
                self._generation += 1
        event = detector.update(frame, self._clock())
        if self._paused():
            return  # the detector still follows the picture; nothing is read
        if event is not None:
            self._handle(event)

    def _detector(self, width: int, height: int) -> SettleDetector:
        main = getattr(getattr(self.camera, "config", None), "main_size", None) or (width, height)
        table = self.table
        areas = [a for a in (table.throw_area, table.keep_area) if a]
        return SettleDetector.for_table(table.settle_seconds, (width, height),
                                        tuple(main), areas)

    def _handle(self, event: SettleEvent) -> None:
        if event.kind == MOVING:
            self._say("moving", "dice are moving")
            return
        if event.kind == QUIET:
            self._say("ok", "watching the table")
            return
        if event.kind in (SETTLED, NUDGED):
            try:
                detector = self.detector  # its thresholds tell motion from noise
                with self._camera_lock:
                    frame = still_frame(self.camera.capture,
                                        getattr(self.camera, "still_frames", STILL_FRAMES),
                                        None if detector is None else detector.config)
            except Exception as exc:
                raise _CameraFailed(_line(exc)) from None
            self._read(frame, update=event.kind == NUDGED)
            self._say("ok", "watching the table")

    # ---- reading -------------------------------------------------------------------------

    def areas_in(self, frame: np.ndarray) -> tuple[tuple[Point, ...], tuple[Point, ...]]:
        """Throw and keep area in the pixels of `frame` (they are set in main_size pixels)."""
        main = getattr(getattr(self.camera, "config", None), "main_size", None)
        sx = sy = 1.0
        if main:
            sx, sy = frame.shape[1] / main[0], frame.shape[0] / main[1]
        table = self.table
        return (_scaled(table.throw_area, sx, sy), _scaled(table.keep_area, sx, sy))

    def _read(self, frame: np.ndarray, update: bool) -> None:
        reading = self.reader.read(frame)
        self.reads += 1
        throw_area, keep_area = self.areas_in(frame)
        # an empty throw area is the whole view; with one, dice elsewhere are not in play
        in_play = [d for d in reading.dice if not throw_area or inside((d.x, d.y), throw_area)
                   or (keep_area and inside((d.x, d.y), keep_area))]
        dice = dice_of_the_throw(in_play, self.expected)
        from vision.annotate import annotate

        with self._lock:
            # every find in play is drawn, those left out of the throw too: the players
            # see what the camera saw
            self._annotated = annotate(frame, Reading(tuple(in_play), reading.warnings))
            self._generation += 1
            first = self._first
        observed = self._observe(dice, reading, frame, update, first, keep_area)
        if observed is None:
            return
        try:
            self.on_throw(observed)
        except Exception:
            log.exception("on_throw failed")

    def _observe(self, dice: list[DieReading], reading: Reading, frame: np.ndarray,
                 update: bool, first: bool, keep_area: tuple[Point, ...]
                 ) -> ObservedThrow | None:
        last_seen, self._last_seen = self._last_seen, list(dice)
        if update and self._current is not None:
            slots = follow(self._current, dice, self.expected)
            if _same(slots, self._current):
                return None
            held = None if self._held is None else [
                i for i in self._held
                if slots[i] is not None and self._current[i] is not None
                and slots[i].value == self._current[i].value]  # type: ignore[union-attr]
        else:
            if not dice or (last_seen and all(any(unmoved(d, b) for b in last_seen)
                                              for d in dice)):
                return None  # nothing was thrown (dice picked up, or back as they were)
            previous = None if first else self._current
            slots, held_list = assign_indices(previous, dice, keep_area, self.expected)
            held = None if (self._problems and not first) else held_list
            update = False
            with self._lock:
                self._first = False
        problems = problems_of(slots, self.expected)
        self._current, self._held, self._problems = slots, held, bool(problems)
        ordered = tuple(d if d is not None else placeholder() for d in slots)
        # A taught set whose dice all look unlike its photos, or dice of the other kind
        # than the game's: the table says why it asks (not a problem of the dice's places,
        # so the next throw's held dice still count).
        problems += teach_again(reading.warnings)
        problems += [w for w in reading.warnings if looks_like(w)]
        return ObservedThrow([d.value for d in ordered], held,
                             Reading(ordered, reading.warnings), encode_jpeg(frame, 85),
                             update, problems)


class CameraUnavailable(RuntimeError):
    """The camera is not delivering pictures now (failed, restarting or stopped)."""


class _CameraFailed(Exception):
    """The camera stopped delivering; the message is one line."""


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or exc.__class__.__name__


def _same(a: Sequence[DieReading | None], b: Sequence[DieReading | None]) -> bool:
    """Same values and (within 0.15 of a die) the same places."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (x is None) != (y is None):
            return False
        if x is not None and y is not None and not unmoved(x, y, 0.15) and not (
                x.value is None and y.value is None and _distance(x, y) <= 0.15 * die_size(y)):
            return False
    return True
