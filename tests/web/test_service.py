"""The camera side of TableService: trusted throws are pushed, doubtful ones asked about,
re-reads replace, a fourth throw is refused; the button; the camera loop wiring (with a fake
TableWatcher that follows vision/watch.py's interface)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.web.conftest import ORIGIN, Table
from web.serve import CameraLink
from web.service import DemoPlayer, foreign_problem, shows_foreign


@dataclass(frozen=True)
class Die:
    value: Any
    confidence: float = 0.97
    flag: str | None = None


@dataclass(frozen=True)
class Reading:
    dice: tuple[Die, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ObservedThrow:
    """As vision/watch.py defines it."""

    values: list[Any]
    held: list[int] | None
    reading: Reading
    frame_jpeg: bytes = b""
    update: bool = False
    problems: list[str] = field(default_factory=list)


def observed(values: list[Any], held: list[int] | None = None, flags: dict[int, str] | None = None,
             update: bool = False, problems: list[str] | None = None,
             confidence: float | list[float] = 0.97) -> ObservedThrow:
    flags = flags or {}
    conf = confidence if isinstance(confidence, list) else [confidence] * len(values)
    dice = tuple(Die(v, conf[i], flags.get(i)) for i, v in enumerate(values))
    return ObservedThrow(list(values), held, Reading(dice), b"", update, problems or [])


def turn(table: Table) -> dict[str, Any]:
    return table.service.state()["block"]["turn"]  # type: ignore[no-any-return]


def test_a_trusted_throw_is_pushed_with_its_confidence(table: Table) -> None:
    table.service.observe_throw(observed([2, 2, 3, 3, 3], confidence=0.7))
    s = table.service.state()
    assert s["block"]["turn"]["throws"] == [{"dice": [2, 2, 3, 3, 3], "held": []}]
    assert s["last_throw"]["source"] == "camera"
    assert s["last_throw"]["confidence"] == [0.7] * 5
    assert s["pending"] is None


def test_a_flagged_die_is_asked_about_and_one_correction_settles_it(table: Table) -> None:
    table.service.observe_throw(observed([2, 2, 3, 3, 3], flags={4: "tilted"}))
    s = table.service.state()
    assert s["block"]["turn"]["throws"] == []
    assert s["pending"]["flags"][4] == "tilted" and s["pending"]["complete"]
    phone = table.phone()
    s = phone.ok("corrections", index=4, value=2)
    assert s["pending"] is None
    assert s["block"]["turn"]["throws"][0]["dice"] == [2, 2, 3, 3, 2]
    log = table.store.events(table.service.game_id)
    assert [e.kind for e in log] == ["pending", "correct"]
    assert log[1].actor.startswith("p")


def test_four_dice_seen_asks_for_the_fifth(table: Table) -> None:
    table.service.observe_throw(observed([1, 2, 3, 4]))
    s = table.service.state()
    assert s["pending"]["dice"] == [1, 2, 3, 4, None]
    assert s["pending"]["count"] == {"seen": 4, "expected": 5}  # the page words it
    assert s["pending"]["problems"] == []
    phone = table.phone()
    resp = phone.post("accept")
    assert resp.status_code == 422 and resp.json["error"]["code"] == "die_missing"
    s = phone.ok("corrections", index=4, value=5)
    assert s["block"]["turn"]["throws"][0]["dice"] == [1, 2, 3, 4, 5]


def test_problems_from_the_watcher_ask_and_rethrow_drops(table: Table) -> None:
    table.service.observe_throw(observed([6, 6, 6, 6, 6], problems=["die 3 is tilted"]))
    phone = table.phone()
    assert phone.state()["pending"]["problems"] == ["die 3 is tilted"]
    s = phone.ok("dismiss")
    assert s["pending"] is None and s["block"]["turn"]["throws"] == []
    table.service.observe_throw(observed([6, 6, 6, 6, 6], problems=["die 3 is tilted"]))
    s = phone.ok("accept")
    assert s["block"]["turn"]["throws"][0]["dice"] == [6, 6, 6, 6, 6]


def test_a_throw_whose_dice_the_taught_set_does_not_know_offers_teaching_it_here(
        table: Table) -> None:
    """The reader's warning that a taught set recognises none of the dice (vision.reader
    `_warnings`, ending in TEACH_AGAIN) makes the pending throw say `teach_here`: the phone
    offers to teach the set at this table."""
    from vision.reading import TEACH_AGAIN

    unlike = ("none of the 5 dice looks like the teaching photos of dice set 'holz' (other "
              f"light or camera?): if the table asks about most dice, {TEACH_AGAIN}")
    table.service.observe_throw(observed([6, 6, 6, 6, 6], problems=[unlike]))
    pending = table.service.state()["pending"]
    assert pending["teach_here"] is True
    assert pending["problems"] == []  # the page says it in its own words
    assert table.store.events(table.service.game_id)[-1].payload["problems"] == [unlike]
    table.service.observe_throw(observed([6, 6, 6, 6, 5], problems=["die 3 is tilted"]))
    assert table.service.state()["pending"]["teach_here"] is False


def test_dice_of_the_other_kind_than_the_games_say_so(table: Table) -> None:
    """Kniffel Kids dice thrown in a Kniffel game: read as pips, every die is asked about,
    and the reader's warning (vision.reading.other_kind_warning) makes the pending throw say
    `other_kind`, which the pages word in their language (start a game of that edition)."""
    from vision.reading import other_kind_warning

    kids = other_kind_warning(5, animals=True)
    table.service.observe_throw(observed([None] * 5, problems=[kids]))
    pending = table.service.state()["pending"]
    assert pending["other_kind"] == "animals" and pending["problems"] == []
    assert table.store.events(table.service.game_id)[-1].payload["problems"] == [kids]
    table.service.observe_throw(observed([6, 6, 6, 6, 5], problems=["die 3 is tilted"]))
    assert table.service.state()["pending"]["other_kind"] is None


def test_a_pending_throw_shows_each_problem_once(table: Table) -> None:
    """The watcher's line for each flagged or unread die repeats `flags` and `dice`, and its
    count of dice `count`, which the pages word in their own language: left out of what
    they are given, not of the log. A problem they cannot word stays."""
    watched = ["4 dice seen, 5 expected", "die 2 is tilted", "die 3 cannot be read"]
    table.service.observe_throw(observed([1, 2, None, 4], flags={1: "tilted"},
                                         problems=watched))
    pending = table.service.state()["pending"]
    assert pending["flags"] == [None, "tilted", None, None, None]
    assert pending["count"] == {"seen": 4, "expected": 5}
    assert pending["problems"] == []
    assert table.store.events(table.service.game_id)[-1].payload["problems"] == watched
    logged = table.service.game_detail(table.service.game_id)["log"][-1]
    assert logged["payload"]["problems"] == watched  # as recorded, and as the table showed it
    assert logged["pending"]["problems"] == [] and logged["pending"]["count"]["seen"] == 4
    table.service.observe_throw(observed([1, 2, 3, 4, 5], problems=["the lamp flickered"]))
    pending = table.service.state()["pending"]
    assert pending["problems"] == ["the lamp flickered"] and pending["count"] is None


def test_a_new_throw_replaces_a_pending_one(table: Table) -> None:
    table.service.observe_throw(observed([1, 2, 3], problems=[]))
    table.service.observe_throw(observed([4, 4, 4, 5, 5]))
    s = table.service.state()
    assert s["pending"] is None
    assert s["block"]["turn"]["throws"][0]["dice"] == [4, 4, 4, 5, 5]


def test_a_reread_replaces_the_camera_throw_but_not_a_persons_correction(table: Table) -> None:
    svc = table.service
    svc.observe_throw(observed([1, 2, 3, 4, 4]))
    svc.observe_throw(observed([1, 2, 3, 4, 5], update=True))
    assert turn(table)["throws"] == [{"dice": [1, 2, 3, 4, 5], "held": []}]
    phone = table.phone()
    phone.ok("corrections", index=0, value=6)
    svc.observe_throw(observed([1, 2, 3, 4, 6], update=True))
    assert turn(table)["throws"][-1]["dice"] == [6, 2, 3, 4, 5]
    kinds = [e.kind for e in table.store.events(svc.game_id)]
    assert kinds == ["throw", "reread", "correct"]


def test_held_dice_from_the_watcher_and_a_fourth_throw_refused(table: Table) -> None:
    svc = table.service
    svc.observe_throw(observed([6, 6, 1, 2, 3], held=[0, 1]))  # first throw: all five
    svc.observe_throw(observed([6, 6, 6, 2, 1], held=[0, 1]))
    # The watcher believes die 4 stayed, but it changed: the throw counts, held unknown.
    svc.observe_throw(observed([6, 6, 6, 5, 1], held=[0, 1, 2, 3]))
    throws = turn(table)["throws"]
    assert [t["held"] for t in throws] == [[], [0, 1], None]
    version = svc.state()["game"]["version"]
    svc.observe_throw(observed([6, 6, 6, 6, 6]))
    s = svc.state()
    assert s["game"]["version"] == version
    assert s["notice"]["code"] == "fourth_throw"
    assert "three times" in s["notice"]["text"]
    assert svc.status == "attention"


def test_animal_dice_in_a_pip_game_are_asked_about(table: Table) -> None:
    """The page words a face the game's dice lack itself (`foreign`); the log keeps the line."""
    table.service.observe_throw(observed(["duck", 2, 3, 4, 5]))
    pending = table.service.state()["pending"]
    assert pending["dice"][0] is None and pending["foreign"] == [{"die": 1, "shows": "duck"}]
    assert pending["problems"] == []
    logged = table.store.events(table.service.game_id)[-1].payload["problems"]
    assert logged == ["die 1 shows 'duck', which is not a face of Kniffel dice"]


def test_a_face_not_of_the_game_is_told_back_from_its_line() -> None:
    for index, value in ((0, "duck"), (4, 6), (2, "elephant")):
        problem = foreign_problem(index, value, "Kniffel Kids")
        assert shows_foreign(problem) == (index + 1, value)
    assert shows_foreign("die 2 is tilted") is None
    assert shows_foreign("die 1 shows __import__('os'), which is not a face of X dice") is None


def test_button_enters_the_suggested_box_and_long_press_undoes(table: Table) -> None:
    svc = table.service
    svc.observe_throw(observed([3, 3, 3, 5, 5]))
    assert svc.state()["suggested"]["box"] == "full_house"
    svc.press()
    s = svc.state()
    assert s["block"]["players"][0]["columns"][0]["boxes"]["full_house"] == 25
    assert s["block"]["turn"]["player"] == "Ben"
    svc.long_press()
    s = svc.state()
    assert s["block"]["turn"]["player"] == "Anna"
    assert s["block"]["players"][0]["columns"][0]["boxes"]["full_house"] is None
    log = table.store.events(svc.game_id)
    assert [(e.kind, e.actor) for e in log][-2:] == [("enter", "button"), ("undo", "button")]


def test_a_new_turn_tells_the_watcher(table: Table) -> None:
    calls: list[int] = []
    table.service.turn_listeners.append(lambda: calls.append(1))
    phone = table.phone()
    phone.ok("throws", dice=[1, 2, 3, 4, 5])
    assert calls == []
    phone.ok("entries", box="large_straight")
    assert calls == [1]


def test_the_demo_player_plays_by_itself(table: Table) -> None:
    demo = DemoPlayer(table.service, period=0.01, seed=3)
    version = -1
    for _ in range(400):
        version = demo.step(version)
    s = table.service.state()
    assert s["block"]["players"][0]["columns"][0]["total"] > 0
    assert s["block"]["players"][1]["columns"][0]["total"] > 0


# ---- the camera loop -------------------------------------------------------------------


class FakeWatcher:
    """Follows TableWatcher's interface; `throw()` makes it report a settled throw."""

    instances: list[FakeWatcher] = []

    def __init__(self, camera: Any, reader: Any, table: Any,
                 on_throw: Callable[[Any], None],
                 on_status: Callable[[str, str], None] | None = None,
                 on_alive: Callable[[], None] | None = None) -> None:
        self.camera, self.on_throw, self.on_status = camera, on_throw, on_status
        self.started = self.stopped = False
        self.new_turns = 0
        FakeWatcher.instances.append(self)

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def new_turn(self) -> None:
        self.new_turns += 1

    def preview_jpeg(self) -> bytes | None:
        return b"jpeg"


@dataclass
class FakeConfig:
    camera: Any
    table: Any = None


@dataclass
class FakeCameraConfig:
    kind: str = "usb"
    source: str = ""


def test_a_failing_camera_is_retried_in_the_background_and_manual_entry_works(
        table: Table, caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[int] = []
    ready = threading.Event()

    def open_camera(config: Any) -> object:
        attempts.append(1)
        if len(attempts) < 3:
            raise OSError("no camera on /dev/video0")
        ready.set()
        return object()

    FakeWatcher.instances.clear()
    caplog.set_level(logging.INFO, logger="kniffel.serve")
    alive: list[int] = []
    link = CameraLink(table.service, FakeConfig(FakeCameraConfig()), reader=None,
                      retry_seconds=0.05, open_camera=open_camera, watcher_class=FakeWatcher,
                      on_alive=lambda: alive.append(1))
    link.start()
    deadline = time.monotonic() + 5
    failed_seen = False
    while time.monotonic() < deadline and not ready.is_set():
        if table.service.state()["camera"]["state"] == "failed":
            failed_seen = True
            # Manual entry keeps working while the camera is away.
            table.phone().ok("throws", dice=[1, 1, 2, 2, 2])
            table.phone().ok("undo")
        time.sleep(0.01)
    time.sleep(0.1)
    assert failed_seen and len(attempts) >= 3
    assert len(alive) == 2  # each retry tells systemd's watchdog the table is not hung
    cam = table.service.state()["camera"]
    assert cam["state"] == "ok"
    watcher = FakeWatcher.instances[-1]
    assert watcher.started and link.preview_jpeg() == b"jpeg"
    watcher.on_throw(observed([5, 5, 5, 5, 5]))
    assert turn(table)["throws"][0]["dice"] == [5, 5, 5, 5, 5]
    turns = watcher.new_turns
    table.service.press()
    assert watcher.new_turns == turns + 1
    watcher.on_status("failed", "camera disappeared")  # type: ignore[misc]
    assert table.service.state()["camera"] == {"state": "failed", "message": "camera disappeared"}
    link.stop()
    assert watcher.stopped
    # the console hears when the camera fails and when it is back, not of every retry
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "kniffel.serve"]
    assert said == [("WARNING", "camera usb: no camera on /dev/video0 (retrying every 0 s)"),
                    ("INFO", "camera usb is watching the table"),
                    ("WARNING", "camera disappeared")]


def test_the_led_asks_for_attention_when_a_part_is_off_because_of_a_problem(
        table: Table) -> None:
    svc = table.service
    svc.set_camera_status("off", "no camera: enter the throws by hand")
    assert svc.status == "ready"  # no camera by choice: nothing to look at
    svc.set_camera_status("failed", "camera usb: cannot open /dev/video0")
    assert svc.status == "attention"
    svc.set_camera_status("ok", "camera usb is watching the table")
    assert svc.status == "ready"
    svc.notes.append("config: camera.kind = 'webcam': must be one of picamera2, usb, ...")
    assert svc.status == "attention"  # safe mode: the page says why


class KindReader:
    """Stands in for vision.reader.Reader: `reading(kind)` gives a reader that reads every
    frame as dice of that kind."""

    def __init__(self, dice_set: str = "auto", kind: str | None = None) -> None:
        self.dice_set, self.kind = dice_set, kind

    def reading(self, kind: str) -> KindReader:
        return KindReader(kind, kind)

    def read(self, frame: Any) -> str | None:
        return self.kind

    def better_turn(self, frame: Any, reading: Any) -> int | None:
        return 1 if self.kind == "animals" else None


def test_auto_dice_are_read_as_the_dice_of_the_game_being_played(table: Table) -> None:
    """The table set to "auto" dice: a Kniffel game's throws are read as pip dice, a
    Kniffel Kids game's as animal dice (one or two dice in view are not enough to tell);
    a set named in the config is read as it is."""
    link = CameraLink(table.service, FakeConfig(FakeCameraConfig()), reader=KindReader(),
                      open_camera=lambda config: object(), watcher_class=FakeWatcher)
    assert link.reader.read(None) == "pips" and link.reader.dice_set == "auto"
    resp = table.phone().client.post("/api/games", json={"players": ["Mia"], "rules": "kids"},
                                     headers=ORIGIN)
    assert resp.status_code == 201, resp.json
    assert link.reader.read(None) == "animals" and link.reader.better_turn(None, None) == 1
    link.use(FakeConfig(FakeCameraConfig()), KindReader("animals", "animals"))
    assert isinstance(link.reader, KindReader)  # a named set: the config's word
