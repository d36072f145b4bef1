"""TableWatcher: the whole camera loop on the demo table and on a replay, with a reader that
reads the renderer's true labels; slot assignment and problems; a camera that fails and
comes back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hardware.camera import CameraError, DemoSource, DemoStep, ReplaySource
from vision.annotate import ASK
from vision.reading import (
    DieReading,
    Reading,
    SceneLabel,
    counted,
    dice_of_the_throw,
    load_labels,
)
from vision.watch import (
    STILL_FRAMES,
    CameraUnavailable,
    ObservedThrow,
    TableWatcher,
    assign_indices,
    follow,
    problems_of,
    still_frame,
)
from web.config import CameraConfig, TableConfig

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "replay"
SMALL = CameraConfig(kind="demo", main_size=(640, 480), lores_size=(320, 240))


def die(value: Any, x: float, y: float, size: float = 40.0, flag: str | None = None
        ) -> DieReading:
    h = size / 2
    return DieReading(value, 0.99, x, y, (round(x - h), round(y - h), round(x + h),
                                           round(y + h)), flag)


def from_label(label: SceneLabel) -> Reading:
    dice = [DieReading(d.value, 0.99, d.center[0], d.center[1],
                       tuple(round(v) for v in d.box), d.flag)  # type: ignore[arg-type]
            for d in label.dice]
    return Reading(tuple(sorted(dice, key=lambda d: (d.x, d.y))))


class LabelReader:
    """Reads what the renderer drew (the demo camera's last label); `tilt` flags the die
    nearest the top-left corner on the next read, `drop` loses one die."""

    def __init__(self, label: Callable[[], SceneLabel | None]) -> None:
        self.label = label
        self.tilt = False
        self.drop = False
        self.reads = 0

    def read(self, frame_bgr: np.ndarray) -> Reading:
        self.reads += 1
        label = self.label()
        assert label is not None
        reading = from_label(label)
        dice = list(reading.dice)
        if self.tilt and dice:
            dice[0] = replace(dice[0], flag="tilted")
            self.tilt = False
        if self.drop and dice:
            dice.pop()
            self.drop = False
        return Reading(tuple(dice))


class Recorder:
    def __init__(self) -> None:
        self.throws: list[ObservedThrow] = []
        self.status: list[tuple[str, str]] = []
        self.alive = 0
        self.lock = threading.Lock()

    def on_throw(self, observed: ObservedThrow) -> None:
        with self.lock:
            self.throws.append(observed)

    def on_status(self, state: str, message: str) -> None:
        with self.lock:
            self.status.append((state, message))

    def on_alive(self) -> None:
        self.alive += 1

    @property
    def new(self) -> list[ObservedThrow]:
        return [t for t in self.throws if not t.update]


def run_until(watcher: TableWatcher, done: Callable[[], bool], timeout: float = 30.0) -> None:
    watcher.start()
    deadline = time.monotonic() + timeout
    try:
        while not done() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        watcher.stop()
    assert done(), "timed out"


# ---- slots and problems ---------------------------------------------------------------------

def test_the_first_throw_takes_the_readers_order_and_holds_nothing() -> None:
    dice = [die(3, 10, 10), die(5, 100, 10), die(1, 200, 10), die(6, 300, 10), die(2, 400, 10)]
    slots, held = assign_indices(None, dice)
    assert [d.value for d in slots if d] == [3, 5, 1, 6, 2] and held == []


def test_unmoved_dice_of_the_same_value_are_held_and_keep_their_index() -> None:
    before = [die(3, 10, 10), die(5, 100, 10), die(1, 200, 10), die(6, 300, 10), die(5, 400, 10)]
    # the 5 at x=100 and the 6 stay; the others are thrown and land elsewhere
    now = [die(2, 50, 200), die(5, 104, 12), die(4, 150, 220), die(6, 300, 10), die(5, 250, 200)]
    slots, held = assign_indices(before, now)
    assert held == [1, 3]
    assert [d.value if d else None for d in slots] == [2, 5, 4, 6, 5]


def test_a_moved_die_or_a_changed_value_is_not_held() -> None:
    before = [die(3, 10, 10), die(5, 100, 10), die(1, 200, 10), die(6, 300, 10), die(2, 400, 10)]
    now = [die(3, 10 + 20, 10), die(4, 100, 10), die(1, 200, 10), die(6, 300, 10),
           die(2, 400, 10)]
    _, held = assign_indices(before, now)
    assert held == [2, 3, 4]


def test_dice_in_the_keep_area_are_held_wherever_they_came_from() -> None:
    keep = ((0.0, 400.0), (640.0, 400.0), (640.0, 480.0), (0.0, 480.0))
    before = [die(3, 50, 100), die(6, 150, 100), die(1, 250, 100), die(6, 350, 100),
              die(2, 450, 100)]
    # both sixes were put into the keep strip; the rest were thrown again
    now = [die(4, 60, 200), die(6, 200, 440), die(6, 300, 440), die(5, 400, 250),
           die(1, 500, 150)]
    slots, held = assign_indices(before, now, keep_area=keep)
    assert held == [1, 3]
    assert [d.value if d else None for d in slots] == [4, 6, 5, 6, 1]
    assert slots[1] is not None and slots[1].x == 200  # the nearer six takes slot 1


def test_a_re_read_follows_the_dice_by_place() -> None:
    current = [die(3, 10, 10), die(5, 100, 10), die(1, 200, 10), die(6, 300, 10),
               die(2, 400, 10)]
    nudged = [die(3, 10, 10), die(1, 205, 30), die(5, 100, 10), die(6, 300, 10),
              die(4, 400, 10)]
    assert [d.value if d else None for d in follow(current, nudged)] == [3, 5, 1, 6, 4]


def test_problems_name_the_count_and_each_doubtful_die() -> None:
    slots = [die(3, 10, 10), die(5, 100, 10, flag="tilted"), None, die(None, 300, 10),
             die(2, 400, 10)]
    assert problems_of(slots) == ["4 dice seen, 5 expected", "die 2 is tilted",
                                  "die 4 cannot be read"]
    assert problems_of([die(1, i * 50, 0) for i in range(5)]) == []
    assert problems_of([die(6, 10, 10), None, None, None, None]) == ["1 die seen, 5 expected"]
    # ... which the table's service reads back to word them in the page's language
    assert [counted(p) for p in problems_of(slots)] == [(4, 5), None, None]
    assert counted("1 die seen, 5 expected") == (1, 5)


def test_finds_asked_about_beside_as_many_trusted_dice_as_were_thrown_are_left_out() -> None:
    five = [die(v, i * 50, 0) for i, v in enumerate((1, 2, 3, 4, 5))]
    cable = die(None, 300, 200)
    shadow = die(6, 400, 200, flag="unreadable")
    assert dice_of_the_throw([*five[:2], cable, *five[2:], shadow]) == five
    assert problems_of(dice_of_the_throw([*five, cable])) == []
    # fewer trusted dice than were thrown: an asked find may be one of them, so it stays
    tilted = replace(five[4], flag="tilted")
    assert dice_of_the_throw([*five[:4], tilted, cable]) == [*five[:4], tilted, cable]
    assert problems_of(dice_of_the_throw([*five[:4], cable])) == ["die 5 cannot be read"]
    # more trusted dice than were thrown: the table asks, as it did
    assert problems_of(dice_of_the_throw([*five, die(6, 300, 0), cable])) == [
        "7 dice seen, 5 expected", "die 7 cannot be read"]
    assert dice_of_the_throw([cable, shadow], expected=0) == []


# ---- the whole loop on the demo table -------------------------------------------------------

def demo_watcher(script: Sequence[DemoStep], seed: int = 2, table: TableConfig | None = None
                 ) -> tuple[DemoSource, LabelReader, Recorder, TableWatcher]:
    camera = DemoSource(SMALL, seed=seed, realtime=False, fps=12.0, script=script)
    reader = LabelReader(lambda: camera.last_label)
    rec = Recorder()
    watcher = TableWatcher(camera, reader, table or TableConfig(), rec.on_throw,
                           rec.on_status, rec.on_alive, fps=None)
    return camera, reader, rec, watcher


def test_a_turn_on_the_demo_table_one_read_per_throw_held_dice_kept_and_a_nudge() -> None:
    script = [DemoStep("throw", seconds=2.5), DemoStep("throw", keep=(0, 2), seconds=2.5),
              DemoStep("nudge", die=4, seconds=2.0), DemoStep("throw", keep=(0, 2, 4),
                                                             seconds=2.5)]
    camera, reader, rec, watcher = demo_watcher(script)
    run_until(watcher, lambda: camera.clock() >= 15.0)
    truth = [t for t in camera.throws if not t.nudge]
    assert len(rec.new) == len(truth) == 3
    first, second, third = rec.new
    assert first.held == [] and first.problems == []
    assert sorted(first.values, key=str) == sorted(truth[0].values, key=str)
    # two dice stayed: they are held and show the same values at the same indices
    assert second.held is not None and len(second.held) == 2
    assert all(second.values[i] == first.values[i] for i in second.held)
    assert sorted(second.values, key=str) == sorted(truth[1].values, key=str)
    # the nudge re-read the second throw
    updates = [t for t in rec.throws if t.update]
    assert len(updates) == 1
    assert rec.throws.index(updates[0]) == rec.throws.index(second) + 1
    assert updates[0].held == second.held
    # the third throw kept three dice
    assert third.held is not None and len(third.held) == 3
    assert sorted(third.values, key=str) == sorted(truth[2].values, key=str)
    assert ("moving", "dice are moving") in rec.status
    assert rec.alive == watcher.frames > 100
    assert reader.reads == 4  # three throws and the nudge; resting frames are never read


def test_a_new_turn_throws_all_five_and_missing_or_flagged_dice_are_problems() -> None:
    script = [DemoStep("throw", seconds=2.5), DemoStep("throw", dice=4, seconds=2.5),
              DemoStep("throw", seconds=2.5)]
    camera, reader, rec, watcher = demo_watcher(script, seed=5)

    def on_throw(observed: ObservedThrow) -> None:
        rec.on_throw(observed)
        watcher.new_turn()
        reader.tilt = len(rec.throws) == 2  # the third throw has a tilted die

    watcher.on_throw = on_throw
    run_until(watcher, lambda: camera.clock() >= 13.0)
    assert len(rec.new) == 3
    assert all(t.held == [] for t in rec.new)
    assert rec.new[0].problems == []
    assert rec.new[1].problems == ["4 dice seen, 5 expected"]
    assert rec.new[1].values[4] is None and rec.new[1].reading.dice[4].value is None
    assert len(rec.new[2].problems) == 1 and rec.new[2].problems[0].endswith("is tilted")


def test_a_throw_read_whole_is_taken_though_the_reader_asks_about_a_find_beside_it() -> None:
    script = [DemoStep("throw", seconds=2.5), DemoStep("throw", keep=(0, 2), seconds=2.5)]
    camera, reader, rec, watcher = demo_watcher(script)
    plain = reader.read

    def read(frame_bgr: np.ndarray) -> Reading:  # a cable's end at the table's corner
        return Reading((die(None, 5, 5, flag="unreadable"), *plain(frame_bgr).dice))

    reader.read = read  # type: ignore[method-assign]
    run_until(watcher, lambda: len(rec.new) == 2 or camera.clock() >= 12.0)
    first, second = rec.new
    assert first.problems == second.problems == []
    assert len(first.values) == 5 and None not in first.values
    assert sorted(second.values, key=str) == sorted(camera.throws[1].values, key=str)
    assert second.held is not None and len(second.held) == 2
    # the picture of the last read still draws the find the throw leaves out
    shown = watcher._annotated
    assert shown is not None and (shown[:26, :26] == ASK).all(axis=-1).any()


def test_a_taught_set_unlike_its_photos_is_a_problem_of_the_throw_not_of_its_dice() -> None:
    unlike = ("none of the 5 dice looks like the teaching photos of dice set 'farm' (other "
              "light or camera?): if the table asks about most dice, teach the set here too, "
              "adding to what it knows")
    script = [DemoStep("throw", seconds=2.5), DemoStep("throw", keep=(0, 2), seconds=2.5)]
    camera, reader, rec, watcher = demo_watcher(script)
    plain = reader.read

    def read(frame_bgr: np.ndarray) -> Reading:
        reading = plain(frame_bgr)
        return Reading(reading.dice, ("5 of 5 dice need a look (unreadable)", unlike))

    reader.read = read  # type: ignore[method-assign]
    run_until(watcher, lambda: len(rec.new) == 2 or camera.clock() >= 12.0)
    first, second = rec.new
    assert first.problems == second.problems == [unlike]  # the reader's other words: its own
    assert second.held is not None and len(second.held) == 2  # the dice still tell held ones


def test_the_preview_shows_the_last_read_and_repeats_the_same_bytes() -> None:
    camera, _, rec, watcher = demo_watcher([DemoStep("throw", seconds=30.0)])
    run_until(watcher, lambda: len(rec.throws) == 1 and camera.clock() >= 4.0)
    watcher._open = True  # stopped, but the last picture is still there to look at
    jpeg = watcher.preview_jpeg()
    assert jpeg is not None and jpeg[:2] == b"\xff\xd8"
    assert watcher.preview_jpeg() is jpeg
    assert rec.throws[0].frame_jpeg[:2] == b"\xff\xd8"


def test_the_replay_fixture_is_one_throw_of_five() -> None:
    (label,) = load_labels(FIXTURE)
    camera = ReplaySource(CameraConfig(kind="replay", source=str(FIXTURE), realtime=False))
    rec = Recorder()
    watcher = TableWatcher(camera, LabelReader(lambda: label), TableConfig(), rec.on_throw,
                           rec.on_status, fps=None)
    run_until(watcher, lambda: camera.finished and camera.clock() >= 6.0)
    assert len(rec.throws) == 1
    assert rec.throws[0].values == [d.value for d in from_label(label).dice]
    assert rec.throws[0].problems == []


def test_the_real_reader_reads_a_demo_throw() -> None:
    from vision.models import ModelMissingError
    from vision.reader import Reader

    try:
        reader = Reader.default(expected=5)
    except (ModelMissingError, ValueError) as exc:  # not built, or from another version
        pytest.skip(str(exc))
    camera = DemoSource(CameraConfig(kind="demo", main_size=(800, 600)), seed=3,
                        realtime=False, script=[DemoStep("throw", seconds=30.0)])
    rec = Recorder()
    watcher = TableWatcher(camera, reader, TableConfig(), rec.on_throw, fps=None)
    run_until(watcher, lambda: camera.clock() >= 5.0, timeout=60)
    assert len(rec.new) == 1
    assert sum(v == t for v, t in zip(sorted(map(str, rec.new[0].values)), sorted(
        map(str, camera.throws[0].values)), strict=False)) >= 4


# ---- the settled picture ----------------------------------------------------------------------

def table_picture() -> np.ndarray:
    """A grey table with a white die (black pips) on it."""
    frame = np.full((240, 320, 3), 90, np.uint8)
    frame[100:150, 140:190] = 235
    for x, y in ((150, 110), (165, 125), (180, 140)):
        frame[y - 3:y + 4, x - 3:x + 4] = 20
    return frame


class Captures:
    """A camera's captures of `base`, each with fresh sensor noise (`sigma` grey levels);
    `change(i, frame)` alters the i-th capture before its noise."""

    def __init__(self, base: np.ndarray, sigma: float = 10.0,
                 change: Callable[[int, np.ndarray], np.ndarray] | None = None) -> None:
        self.base, self.sigma, self.change = base, sigma, change
        self.rng = np.random.default_rng(5)
        self.taken: list[np.ndarray] = []

    def __call__(self) -> np.ndarray:
        frame = self.base.astype(np.float32)
        if self.change is not None:
            frame = self.change(len(self.taken), frame)
        frame += self.rng.normal(0, self.sigma, frame.shape)
        self.taken.append(np.clip(np.rint(frame), 0, 255).astype(np.uint8))
        return self.taken[-1]


def test_a_settled_throw_is_read_from_the_mean_of_its_frames() -> None:
    base = table_picture()
    captures = Captures(base)
    frame = still_frame(captures, 4)
    assert len(captures.taken) == 4 and frame.dtype == np.uint8
    mean = np.mean(np.stack(captures.taken).astype(np.float32), axis=0)
    assert np.abs(frame.astype(np.float32) - mean).max() <= 0.5
    # four frames: about half the sensor noise of one
    noise = float(np.std(frame.astype(np.float32) - base))
    assert noise < 0.6 * float(np.std(captures.taken[0].astype(np.float32) - base))
    # a light change over the whole picture (exposure settling) is no motion
    brighter = Captures(base, change=lambda i, f: f + 6 * i)
    assert not np.array_equal(still_frame(brighter, 4), brighter.taken[0])
    assert len(brighter.taken) == 4
    # one frame asked for: one capture, as it came
    one = Captures(base)
    assert still_frame(one, 1) is one.taken[0] and len(one.taken) == 1


def test_frames_that_differ_by_more_than_noise_are_not_mixed() -> None:
    def die_moved(i: int, frame: np.ndarray) -> np.ndarray:
        if i >= 1:  # a die tipped over after the first frame
            frame[100:150, 140:190] = 90
            frame[100:150, 200:250] = 235
        return frame

    captures = Captures(table_picture(), change=die_moved)
    frame = still_frame(captures, 4)
    assert frame is captures.taken[0] and len(captures.taken) == 2
    # the camera changed its size meanwhile (reconfigured): the first frame alone
    sizes = [table_picture(), np.zeros((120, 160, 3), np.uint8)]
    taken = iter(sizes)
    assert still_frame(lambda: next(taken), 4) is sizes[0]


class LiveDemo:
    """The demo table (one long throw) behind a camera of another kind: it has no
    `still_frames` of its own, as a live camera has not."""

    name = "live demo"

    def __init__(self, seed: int, seconds: float) -> None:
        self.inner = DemoSource(SMALL, seed=seed, realtime=False,
                                script=[DemoStep("throw", seconds=seconds)])
        self.config = self.inner.config

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> None:
        self.inner.stop()

    def clock(self) -> float:
        return self.inner.clock()

    def lores(self) -> np.ndarray:
        return self.inner.lores()

    def capture(self) -> np.ndarray:
        return self.inner.capture()


class NoisyDemo(LiveDemo):
    """Every capture with its own sensor noise, as a live camera's frames come."""

    def __init__(self) -> None:
        super().__init__(seed=4, seconds=30.0)
        self.noise = Captures(np.zeros((1, 1, 3), np.uint8))

    def capture(self) -> np.ndarray:
        self.noise.base = self.inner.capture()
        return self.noise()


def test_the_watcher_reads_a_live_cameras_settled_throw_from_several_frames() -> None:
    camera = NoisyDemo()
    frames: list[np.ndarray] = []

    class Keeping(LabelReader):
        def read(self, frame_bgr: np.ndarray) -> Reading:
            frames.append(frame_bgr)
            return super().read(frame_bgr)

    rec = Recorder()
    watcher = TableWatcher(camera, Keeping(lambda: camera.inner.last_label), TableConfig(),
                           rec.on_throw, fps=None)
    run_until(watcher, lambda: camera.clock() >= 5.0)
    assert len(rec.new) == 1 and len(frames) == 1
    assert len(camera.noise.taken) == STILL_FRAMES
    mean = np.mean(np.stack(camera.noise.taken).astype(np.float32), axis=0)
    assert np.abs(frames[0].astype(np.float32) - mean).max() <= 0.5
    # a replay's or the demo's captures are one picture: read once, as it is
    assert ReplaySource.still_frames == DemoSource.still_frames == 1


# ---- a camera that fails ----------------------------------------------------------------------

def test_calibration_borrows_the_camera_pauses_throws_and_swaps_the_reader() -> None:
    script = [DemoStep("throw", seconds=2.5), DemoStep("throw", seconds=2.5)]
    camera, reader, rec, watcher = demo_watcher(script)
    with pytest.raises(CameraUnavailable), watcher.using_camera():
        pass  # not started: nothing to borrow
    watcher.pause_throws(60.0, "calibrating")
    watcher.start()
    try:
        deadline = time.monotonic() + 30
        while camera.clock() < 3.0 and time.monotonic() < deadline:
            time.sleep(0.01)
        with watcher.using_camera() as borrowed:  # the loop waits meanwhile
            frames = watcher.frames
            assert borrowed.capture().shape == (480, 640, 3)
            time.sleep(0.1)
            assert watcher.frames == frames
        assert rec.throws == [] and rec.status[-1] == ("paused", "calibrating")
        second = LabelReader(lambda: camera.last_label)
        watcher.use(reader=second)
        watcher.resume_throws()
        assert rec.status[-1] == ("ok", "watching the table")
        while not rec.throws and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        watcher.stop()
    assert len(rec.throws) == 1 and second.reads == 1 and reader.reads == 0


class FlakyCamera(LiveDemo):
    """A demo camera that stops delivering after `good` frames, refuses to start `refuse`
    times, then works again."""

    name = "flaky"

    def __init__(self, good: int = 30, refuse: int = 2) -> None:
        super().__init__(seed=1, seconds=60.0)
        self.good, self.refuse = good, refuse
        self.frames = self.starts = 0

    def start(self) -> None:
        self.starts += 1
        if self.frames >= self.good and self.refuse > 0:
            self.refuse -= 1
            raise CameraError("USB camera 0 gives no picture (unplugged?)")
        super().start()

    def lores(self) -> np.ndarray:
        self.frames += 1
        if self.frames == self.good:
            raise CameraError("USB camera 0 gives no picture (unplugged?)")
        return super().lores()


def test_a_failing_camera_is_reported_retried_and_recovers() -> None:
    camera = FlakyCamera()
    rec = Recorder()
    watcher = TableWatcher(camera, LabelReader(lambda: camera.inner.last_label), TableConfig(),
                           rec.on_throw, rec.on_status, rec.on_alive, fps=None,
                           retry=(0.01, 0.04))
    run_until(watcher, lambda: camera.frames > 60)
    states = [s for s, _ in rec.status]
    assert "failed" in states
    failed_at = states.index("failed")
    assert "ok" in states[failed_at:]  # back again
    assert camera.starts == 4  # the first start, two refused, one that worked
    assert "unplugged" in rec.status[failed_at][1]
    # every frame delivered, and every retry (one failed picture, two refused starts):
    # a camera that fails cleanly is no reason for systemd to restart the table
    assert rec.alive == (camera.frames - 1) + 3


def test_a_camera_that_never_opens_keeps_the_thread_alive_and_says_so() -> None:
    class Broken:
        name = "usb:7"

        def start(self) -> None:
            raise CameraError("cannot open USB camera 7")

        def stop(self) -> None:
            pass

    rec = Recorder()
    watcher = TableWatcher(Broken(), LabelReader(lambda: None), TableConfig(), rec.on_throw,
                           rec.on_status, rec.on_alive, retry=(0.01, 0.02))
    watcher.start()
    time.sleep(0.2)
    assert watcher._thread is not None and watcher._thread.is_alive()
    watcher.stop()
    assert rec.status and all(s == "failed" for s, _ in rec.status)
    assert "cannot open USB camera 7" in rec.status[0][1]
    assert rec.alive >= 2 and watcher.preview_jpeg() is None  # retrying is not hanging


def test_a_hung_camera_stops_feeding_the_watchdog() -> None:
    class Hanging:
        name = "picamera2"

        def __init__(self) -> None:
            self.release = threading.Event()
            self.calls = 0

        def start(self) -> None:
            pass

        def stop(self) -> None:
            pass

        def lores(self) -> np.ndarray:
            self.calls += 1
            if self.calls > 3:
                self.release.wait(5)  # libcamera stuck in a request
            return np.zeros((60, 80, 3), np.uint8)

    camera = Hanging()
    rec = Recorder()
    watcher = TableWatcher(camera, LabelReader(lambda: None), TableConfig(), rec.on_throw,
                           rec.on_status, rec.on_alive, fps=None, retry=(0.01, 0.02))
    watcher.start()
    time.sleep(0.3)
    fed = rec.alive
    time.sleep(0.3)
    assert fed == rec.alive == 3  # silent: systemd's watchdog restarts the table
    camera.release.set()
    watcher.stop()
