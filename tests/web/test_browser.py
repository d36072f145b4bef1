"""A short game in real Chromium, a phone-sized browser (390×844) and the table's screen
(1280×800) side by side. Screenshots go to artifacts/screenshots/.

test_a_replayed_throw_*: `kniffel serve --camera replay:tests/fixtures/replay` as a real
process — the recorded throw is watched, settles and is read by the real dice reader; the
phone joins with the printed PIN, sees the dice (they must be the labelled ones), corrects
one, chooses a box and undoes, and the table's screen follows live. It needs the ONNX models
in models/ to fit vision/ (it skips, saying why, while they are missing or stale).

test_what_a_recording_cannot_show: what a clean recording never does — a die the camera
flags (tilted), the camera failing and a throw typed in by hand, English, the history — with
the app under waitress in this process and a scripted camera behind CameraLink.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_service import FakeCameraConfig, FakeConfig, FakeWatcher, observed
from web.app import create_app
from web.auth import TableSecret
from web.serve import CameraLink
from web.service import TableService
from web.store import Store

ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "tests" / "fixtures" / "replay"
CHROMIUM = os.environ.get("KNIFFEL_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = ROOT / "artifacts" / "screenshots"
#: Server start (imports, models) + 3.6 s of recording + settling + one read, on a busy Pi.
READ_TIMEOUT_MS = 60_000

playwright_api = pytest.importorskip("playwright.sync_api",
                                     reason="the playwright package is not installed")
if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
    pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install chromium` (make test does)",
                allow_module_level=True)


# ---- browsers -----------------------------------------------------------------------------


@pytest.fixture
def browsers(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """Two separate Chromium processes, each with a fresh profile: the table and a phone."""
    with playwright_api.sync_playwright() as p:
        table = p.chromium.launch_persistent_context(
            str(tmp_path / "profile-table"), executable_path=CHROMIUM, args=ARGS,
            headless=True, viewport={"width": 1280, "height": 800})
        phone = p.chromium.launch_persistent_context(
            str(tmp_path / "profile-phone"), executable_path=CHROMIUM, args=ARGS,
            headless=True, viewport={"width": 390, "height": 844}, device_scale_factor=2,
            is_mobile=True, has_touch=True, locale="de-DE")
        try:
            yield table, phone
        finally:
            phone.close()
            table.close()


def first_page(context: Any, errors: list[str], who: str) -> Any:
    page = context.pages[0] if context.pages else context.new_page()
    page.on("pageerror", lambda e: errors.append(f"{who}: {e}"))
    return page


def shot(page: Any, name: str, full: bool = False) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def dice_shown(dice: Any) -> list[str]:
    """The values of the dice a locator finds, as the page labels them."""
    return [dice.nth(i).get_attribute("aria-label") for i in range(dice.count())]


# ---- the real server on the recorded throw ------------------------------------------------


@pytest.fixture(scope="module")
def models_ready() -> None:
    """Skips while the dice reader cannot be built (models missing, or older than vision/)."""
    try:
        from vision.reader import Reader

        Reader.default()
    except Exception as exc:
        pytest.skip("the dice reader cannot load the models in models/ (`make models`): "
                    + " ".join(str(exc).split())[:300])


def assert_one_handed(phone: Any) -> None:
    """A small phone in one hand: nothing wider than the screen (no sideways scrolling),
    every control big enough for a thumb (at least 40 CSS px each way; the platforms advise
    44-48) and the dice on the first screen without scrolling."""
    width, height = phone.viewport_size["width"], phone.viewport_size["height"]
    assert phone.evaluate("document.documentElement.scrollWidth") <= width
    for selector in ("#dice .die-btn", ".box-btn", "#undo", "#menu-button"):
        for box in [b.bounding_box() for b in phone.locator(selector).all()]:
            assert box is not None and box["height"] >= 40 and box["width"] >= 40, (
                selector, box)
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box)
    dice = phone.locator("#dice .die-btn").first.bounding_box()
    assert dice is not None and dice["y"] < height, dice


def labelled_dice() -> list[int]:
    """The dice of the recording's last frame, left to right (the order the reader gives)."""
    rows = [json.loads(line) for line in (REPLAY / "labels.jsonl").read_text().splitlines()
            if line.strip()]
    dice = sorted(rows[-1]["dice"], key=lambda d: (d["center"][0], d["center"][1]))
    return [d["value"] for d in dice]


class ServeProcess:
    """`kniffel serve --camera replay:DIR` as its own process on a free port."""

    def __init__(self, state: Path, camera: str | None = f"replay:{REPLAY}",
                 config: Path | None = None) -> None:
        env = {**os.environ, "KNIFFEL_STATE_DIR": str(state), "PYTHONUNBUFFERED": "1"}
        env.pop("KNIFFEL_CONFIG", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "web.cli", "serve", *(["--camera", camera] if camera else []),
             "--host", "127.0.0.1", "--port", "0",
             "--config", str(config or state / "no-config.toml")],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output: list[str] = []
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        banner = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"kniffel serve ended (rc={self.proc.wait()}):\n"
                                     + "".join(self.output))
            self.output.append(line)
            if line.startswith("Kniffel table:"):
                banner = line
                break
        match = re.search(r"(http://\S+/)\s+PIN (\d{4})", banner)
        assert match, "".join(self.output)
        self.url, self.pin = match.group(1).rstrip("/"), match.group(2)
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()

    def _read_rest(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._drain.join(timeout=5)
        return self.proc.returncode


@pytest.fixture
def replay_server(tmp_path: Path, models_ready: None,
                  browsers: tuple[Any, Any]) -> Iterator[ServeProcess]:
    """Started after the browsers, so the table's screen is up before the throw settles."""
    server = ServeProcess(tmp_path / "state")
    try:
        yield server
    finally:
        rc = server.stop()
        out = "".join(server.output)
        assert "Traceback" not in out, out
        assert rc == 0, out


def test_a_replayed_throw_is_read_corrected_entered_and_undone_from_a_phone(
        replay_server: ServeProcess, browsers: tuple[Any, Any]) -> None:
    expect = playwright_api.expect
    server = replay_server
    table_ctx, phone_ctx = browsers
    errors: list[str] = []
    labelled = labelled_dice()
    assert len(labelled) == 5

    table = first_page(table_ctx, errors, "table")
    table.goto(server.url + "/")
    expect(table.locator("#pin-value")).to_have_text(server.pin)
    expect(table.locator(".turn .player-name")).to_contain_text("Spieler 1")
    shot(table, "01-replay-table")

    # Join with the PIN the server printed (and the table shows).
    phone = first_page(phone_ctx, errors, "phone")
    phone.goto(server.url + "/phone")
    expect(phone.locator("#join-screen")).to_be_visible()
    phone.locator("#pin").fill(server.pin)
    phone.locator("#phone-name").fill("Annas Handy")
    shot(phone, "02-replay-phone-join")
    phone.locator("#join-button").tap()
    expect(phone.locator("#who")).to_contain_text("Spieler 1")

    # The recorded throw settles and is read: the labelled dice. The reader may still ask
    # about one it read right (its doubt, models/doubt.json, asks from a 2 % chance of an
    # error: the shipped models ask about the leftmost six here); then the phone says
    # which, and "So stimmt's" takes the dice as read.
    phone_dice = phone.locator("#dice button.die-btn svg.die")
    table_dice = table.locator(".turn .dice-row svg.die")
    expect(phone_dice).to_have_count(5, timeout=READ_TIMEOUT_MS)
    expect(table_dice).to_have_count(5)
    assert dice_shown(phone_dice) == [str(v) for v in labelled], (
        dice_shown(phone_dice), labelled, "".join(server.output))
    assert dice_shown(table_dice) == [str(v) for v in labelled]
    if phone.locator("#pending").is_visible():
        expect(phone.locator("#pending p").first).to_have_text(re.compile(r"Würfel \d: "))
        phone.locator("#accept").tap()
    expect(phone.locator("#pending")).to_be_hidden()
    assert dice_shown(phone_dice) == [str(v) for v in labelled]
    expect(phone.locator("#throwno")).to_contain_text("Wurf 1 von 3")
    expect(table.locator("#camera")).to_have_class(re.compile(r"camera-status (ok|moving)"))
    shot(phone, "03-replay-phone-dice-read")
    assert_one_handed(phone)
    shot(table, "04-replay-table-dice-read")

    # Correct one die on the phone (tap it, pick the value); the table follows live.
    odd = 0  # the leftmost die, read right, is "misread"
    new_value = 2 if labelled[odd] != 2 else 5
    corrected = list(labelled)
    corrected[odd] = new_value
    phone.locator("#dice .die-btn").nth(odd).tap()
    expect(phone.locator("#sheet .face-btn")).to_have_count(6)
    phone.locator(f"#sheet .face-btn[data-v='{new_value}']").tap()
    expect(phone.locator("#dice svg.die.corrected")).to_have_count(1)
    expect(table.locator(".turn .dice-row svg.die.corrected")).to_have_count(1)
    assert dice_shown(table_dice) == [str(v) for v in corrected]
    shot(phone, "05-replay-phone-corrected")
    shot(table, "06-replay-table-corrected")

    # Choose a box: Chance takes any throw (tap, confirm).
    total = sum(corrected)
    chance = phone.locator(".box-btn[data-box='chance']")
    expect(chance.locator(".bpts")).to_have_text(str(total))
    chance.tap()
    expect(phone.locator("#confirm")).to_be_visible()
    phone.locator("#confirm-yes").tap()
    expect(phone.locator("#who")).to_contain_text("Spieler 2")
    first_total = table.locator(".kblock tr.total td").first
    expect(first_total).to_have_text(str(total))
    expect(table.locator(".turn .player-name")).to_contain_text("Spieler 2")
    shot(table, "07-replay-table-after-entry")

    # Undo: the corrected throw is back, the box is free again — on both screens.
    phone.locator("#undo").tap()
    expect(phone.locator("#who")).to_contain_text("Spieler 1")
    expect(first_total).to_have_text("0")
    expect(table.locator(".turn .player-name")).to_contain_text("Spieler 1")
    expect(table_dice).to_have_count(5)
    assert dice_shown(table_dice) == [str(v) for v in corrected]
    expect(phone.locator("#dice svg.die.corrected")).to_have_count(1)
    shot(phone, "08-replay-phone-after-undo", full=True)
    shot(table, "09-replay-table-after-undo")
    assert not errors, errors



def test_make_run_the_demo_table_plays_by_itself_and_anyone_can_join(
        tmp_path: Path, models_ready: None, browsers: tuple[Any, Any]) -> None:
    """What `make run` starts (`kniffel serve --camera demo`): rendered dice are thrown,
    read by the real models and written into the block, and a phone joins with the PIN."""
    expect = playwright_api.expect
    table_ctx, phone_ctx = browsers
    errors: list[str] = []
    server = ServeProcess(tmp_path / "state", camera="demo")
    try:
        table = first_page(table_ctx, errors, "table")
        table.goto(server.url + "/")
        expect(table.locator("#pin-value")).to_have_text(server.pin)
        expect(table.locator(".turn .dice-row svg.die")).to_have_count(
            5, timeout=READ_TIMEOUT_MS)
        expect(table.locator("#camera")).to_have_class(re.compile(r"camera-status (ok|moving)"))

        phone = first_page(phone_ctx, errors, "phone")
        phone.goto(server.url + "/phone")
        phone.locator("#pin").fill(server.pin)
        phone.locator("#join-button").tap()
        expect(phone.locator("#who")).to_contain_text("Spieler")
        expect(phone.locator("#dice svg.die").first).to_be_visible(timeout=READ_TIMEOUT_MS)

        # Nobody touches anything: the demo keeps playing, turns are written into the block.
        totals = table.locator(".kblock tr.total td")
        expect(totals.first).not_to_have_text("0", timeout=3 * READ_TIMEOUT_MS)
        shot(table, "40-demo-table-playing")
        shot(phone, "41-demo-phone-joined")
    finally:
        rc = server.stop()
    out = "".join(server.output)
    assert rc == 0 and "Traceback" not in out, out
    assert not errors, errors

# ---- a scripted camera: what a recording cannot show ---------------------------------------


class LiveTable:
    """The app under waitress in this process; the test decides what the camera saw."""

    def __init__(self, folder: Path) -> None:
        from waitress.server import create_server

        self.store = Store(folder / "kniffel.db")
        self.service = TableService(self.store, default_players=("Anna", "Ben"))
        self.secret = TableSecret.load_or_create(folder)
        FakeWatcher.instances.clear()
        self.link = CameraLink(self.service, FakeConfig(FakeCameraConfig("replay")), None,
                               retry_seconds=0.05, open_camera=lambda c: object(),
                               watcher_class=FakeWatcher)
        self.link.start()
        deadline = time.monotonic() + 5
        while self.link.watcher is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.app = create_app(self.service, self.secret, camera_jpeg=self.link.preview_jpeg)
        self.server: Any = create_server(self.app, host="127.0.0.1", port=0, threads=12)
        self.url = f"http://127.0.0.1:{self.server.effective_port}"
        self.closing = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.server.run()
        except OSError:  # the sockets were closed under the loop: that is how it stops
            if not self.closing:
                raise

    def settle(self, values: list[Any], **kw: Any) -> None:
        """The camera sees a throw come to rest."""
        watcher: Any = self.link.watcher
        watcher.on_throw(observed(values, **kw))

    def close(self) -> None:
        self.service.close()  # ends the event streams, so waitress's threads can finish
        self.link.stop()
        self.closing = True
        self.server.task_dispatcher.shutdown(timeout=5)
        self.server.close()
        self.thread.join(timeout=5)
        self.store.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveTable]:
    table = LiveTable(tmp_path / "state")
    yield table
    table.close()


def test_what_a_recording_cannot_show_flagged_die_camera_failure_english_history(
        live: LiveTable, browsers: tuple[Any, Any]) -> None:
    expect = playwright_api.expect
    table_ctx, phone_ctx = browsers
    errors: list[str] = []
    table = first_page(table_ctx, errors, "table")
    table.goto(live.url + "/")
    expect(table.locator(".turn .player-name")).to_contain_text("Anna")

    # Joining through the page is the replay test's; here the phone joins by the API.
    joined = phone_ctx.request.post(live.url + "/api/session", headers={"Origin": live.url},
                                    data={"pin": live.secret.pin, "name": "Annas Handy"})
    assert joined.ok, joined.text()
    phone = first_page(phone_ctx, errors, "phone")
    phone.goto(live.url + "/phone")
    expect(phone.locator("#who")).to_contain_text("Anna")

    # The camera flags a tilted die: both screens ask, the phone settles it in two taps.
    sent = time.monotonic()
    live.settle([6, 6, 6, 1, 1], flags={3: "tilted"}, confidence=[0.98, 0.97, 0.99, 0.4, 0.95],
                problems=["die 4 is tilted"])  # as the watcher words it (problems_of)
    expect(table.locator(".pending-box")).to_be_visible()
    latency = time.monotonic() - sent
    expect(phone.locator("#pending")).to_be_visible()
    expect(phone.locator("#pending p").first).to_have_text("Würfel 4: liegt schief")  # once
    shot(phone, "20-phone-check-tilted-die")
    shot(table, "21-table-check-tilted-die")
    assert latency < 2.0
    phone.locator("#dice .die-btn").nth(3).tap()
    phone.locator("#sheet .face-btn[data-v='6']").tap()
    expect(phone.locator("#pending")).to_be_hidden()
    expect(table.locator(".pending-box")).to_have_count(0)
    expect(phone.locator(".box-btn[data-box='four_of_a_kind'] .bpts")).to_have_text("25")
    four = phone.locator(".box-btn[data-box='four_of_a_kind']")
    four.tap()
    four.tap()  # a second tap on the box confirms too
    expect(phone.locator("#who")).to_contain_text("Ben")
    expect(table.locator(".kblock tr.total td").first).to_have_text("25")

    # The camera fails: the page says so, and Ben's throws are typed in by hand.
    live.service.set_camera_status("failed", "camera disappeared")
    expect(phone.locator("#status-line")).to_contain_text("Kamera ausgefallen")
    expect(table.locator("#camera")).to_have_class("camera-status failed")
    phone.locator("#manual").tap()
    for _ in range(5):
        phone.locator("#sheet .face-pad .face-btn[data-v='6']").tap()
    shot(phone, "22-phone-manual-throw")
    phone.locator("#save-throw").tap()
    expect(phone.locator("#throwno")).to_contain_text("Wurf 1 von 3")
    expect(phone.locator(".box-btn.best")).to_contain_text("Kniffel")
    phone.locator(".box-btn.best").tap()
    phone.locator("#confirm-yes").tap()
    expect(table.locator(".kblock tr.total td").nth(1)).to_have_text("50")

    # English, for the guests.
    phone.locator("#lang").tap()
    expect(phone.locator("#who")).to_contain_text("to play")
    shot(phone, "23-phone-english", full=True)
    shot(table, "24-table-live")

    # An animal die in a pip game: each screen says which, in its own language.
    live.settle(["duck", 2, 3, 4, 5])
    expect(phone.locator("#pending p").first).to_have_text(
        "Die 1 shows Duck, which these dice do not have")
    expect(table.locator(".pending-box")).to_contain_text(
        "Würfel 1 zeigt Ente: das gibt es bei diesen Würfeln nicht")
    expect(table.locator(".pending-box")).not_to_contain_text("nicht gesehen")

    history = table_ctx.new_page()
    history.goto(live.url + "/history")
    expect(history.locator(".game-item")).to_have_count(1)
    history.locator(".game-item").first.click()
    expect(history.locator("table.log tr.important")).not_to_have_count(0)
    expect(history.locator("table.log")).to_contain_text("Annas Handy")
    expect(history.locator("table.log")).not_to_contain_text("die 4 is tilted")  # worded
    expect(history.locator("table.log")).to_contain_text("Würfel 1 zeigt Ente")
    shot(history, "25-history-log", full=True)
    assert not errors, errors


def test_a_broken_config_starts_the_table_in_safe_mode_and_the_page_says_why(
        tmp_path: Path, browsers: tuple[Any, Any]) -> None:
    """config.toml names a camera kind that does not exist: the table still starts, the
    camera is off, and the table's screen and a phone say which key is wrong."""
    expect = playwright_api.expect
    config = tmp_path / "config.toml"
    config.write_text('[camera]\nkind = "webcam"\n', encoding="utf-8")
    server = ServeProcess(tmp_path / "state", camera=None, config=config)
    errors: list[str] = []
    try:
        table_ctx, phone_ctx = browsers
        table = first_page(table_ctx, errors, "table")
        table.goto(server.url + "/")
        notes = table.locator("#notes")
        expect(notes).to_be_visible()
        expect(notes).to_contain_text("camera.kind")
        expect(notes).to_contain_text("picamera2")
        expect(table.locator("#turn")).to_contain_text("Würfe von Hand eingeben")
        shot(table, "20-safe-mode-table")
        phone = first_page(phone_ctx, errors, "phone")
        phone.goto(server.url + "/phone")
        phone.locator("#pin").fill(server.pin)
        phone.locator("#join-button").tap()
        expect(phone.locator("#status-line")).to_contain_text("camera.kind")
        shot(phone, "21-safe-mode-phone")
    finally:
        rc = server.stop()
    out = "".join(server.output)
    assert rc == 0 and "Traceback" not in out, out
    assert not errors, errors


# ---- calibrate from a phone ----------------------------------------------------------------


@pytest.fixture
def calibration_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The real camera loop and calibration under waitress, in front of the fake table
    camera of test_live_calibration (usb-like: no exposure controls) and its stand-in nets.
    Yields the Running table; its address is `.url`."""
    from waitress.server import create_server

    import vision.reader
    from tests.web.test_live_calibration import (
        Running,
        ShadeClassifier,
        SquareDetector,
        TableCamera,
    )

    monkeypatch.setattr(vision.reader, "OnnxDetector", lambda threads=1: SquareDetector())
    monkeypatch.setattr(vision.reader, "OnnxClassifier", lambda threads=1: ShadeClassifier())
    running: Any = Running(tmp_path / "state", TableCamera, running_kind="usb")
    server: Any = create_server(running.table.app, host="127.0.0.1", port=0, threads=8)
    running.url = f"http://127.0.0.1:{server.effective_port}"
    closing = False

    def serve() -> None:
        try:
            server.run()
        except OSError:  # the sockets were closed under the loop: that is how it stops
            if not closing:
                raise

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.service.close()
        closing = True
        server.task_dispatcher.shutdown(timeout=5)
        server.close()
        thread.join(timeout=5)
        running.close()


def open_calibrate(running: Any, browsers: tuple[Any, Any], errors: list[str]) -> Any:
    """A joined phone with the calibrate sheet open."""
    phone = joined_phone(running, browsers, errors)
    phone.locator("#menu-button").tap()
    phone.locator("#m-calibrate").tap()
    return phone


def joined_phone(running: Any, browsers: tuple[Any, Any], errors: list[str]) -> Any:
    """A phone joined to the table, showing its page."""
    _, phone_ctx = browsers
    joined = phone_ctx.request.post(running.url + "/api/session",
                                    headers={"Origin": running.url},
                                    data={"pin": running.secret.pin, "name": "Opa"})
    assert joined.ok, joined.text()
    phone = first_page(phone_ctx, errors, "phone")
    phone.goto(running.url + "/phone")
    playwright_api.expect(phone.locator("#who")).to_contain_text("Anna")
    return phone


def test_calibrate_from_a_phone_mark_the_throw_area_on_the_picture_and_check(
        calibration_table: Any, browsers: tuple[Any, Any]) -> None:
    from tests.web.test_live_calibration import BRIGHT
    from web.config import load_config

    expect = playwright_api.expect
    running = calibration_table
    errors: list[str] = []
    phone = open_calibrate(running, browsers, errors)
    expect(phone.locator("#c-no-controls")).to_contain_text("keine Einstellungen")
    expect(phone.locator("#status-line")).to_contain_text("Kalibrierung")
    expect(phone.locator("#c-throw")).to_have_text("ganzes Bild")
    shot(phone, "30-phone-calibrate")

    # Four taps on the camera's picture, save: the corners are in config.toml, in pixels.
    phone.locator("#c-areas").tap()
    picture = phone.locator("#a-picture")
    expect(phone.locator("#a-img")).to_have_js_property("naturalWidth", 800)
    box = picture.bounding_box()
    assert box is not None
    for fx, fy in ((0.1, 0.1), (0.9, 0.1), (0.9, 0.7), (0.1, 0.7)):
        picture.tap(position={"x": box["width"] * fx, "y": box["height"] * fy})
    expect(phone.locator("#a-hint")).to_contain_text("4 Ecken gesetzt")
    expect(phone.locator("svg polygon.throw")).to_have_count(1)
    shot(phone, "31-phone-calibrate-throw-area")
    phone.locator("#a-save").tap()
    expect(phone.locator("#c-throw")).to_have_text("4 Ecken")
    area = load_config(running.path)[0].table.throw_area
    want = ((80, 60), (720, 60), (720, 420), (80, 420))
    assert all(abs(x - wx) <= 4 and abs(y - wy) <= 4
               for (x, y), (wx, wy) in zip(area, want, strict=True)), area
    assert running.watcher.table.throw_area == area

    # A camera mounted turned: the reader reads the picture turned, the areas stay.
    expect(phone.locator("#c-turn")).to_have_text("0° gedreht")
    phone.locator("#c-turn-now").tap()
    expect(phone.locator("#c-turn")).to_have_text("90° gedreht")
    assert load_config(running.path)[0].camera.turn == 90
    assert running.watcher.reader.turn == 1 and running.watcher.table.throw_area == area

    running.camera.lay(BRIGHT)
    phone.locator("#c-check").tap()
    expect(phone.locator(".calib-result.good")).to_contain_text("Alle fünf Würfel gelesen")
    shot(phone, "32-phone-calibrate-check", full=True)
    phone.locator("#sheet [data-close]").tap()
    expect(phone.locator("#status-line")).not_to_contain_text("Kalibrierung")
    assert running.service.camera.state == "ok"
    assert not errors, errors


def test_a_phone_takes_back_what_a_set_learnt_at_tables_and_stops_the_learning(
        calibration_table: Any, browsers: tuple[Any, Any]) -> None:
    from dataclasses import replace

    from tests.web.test_live_calibration import BRIGHT, DARK
    from vision.teach import load_dice_set
    from web.config import load_config

    expect = playwright_api.expect
    running = calibration_table
    for face, shade in ((1, DARK), (6, BRIGHT)):
        running.camera.lay(shade)
        running.calibration.capture("setup", "holz", face)
    running.calibration.teach("setup", "holz", [1, 6])
    folder = running.table.folder
    # As if its 6s had been learnt at a table (web.learn marks them so).
    replace(load_dice_set(folder, "holz"), from_play=[False] * 5 + [True] * 5).save(folder)
    errors: list[str] = []
    phone = open_calibrate(running, browsers, errors)
    expect(phone.locator("#c-learn")).to_have_text("ja")
    forget = phone.locator("#c-forget")
    expect(forget).to_have_text("↺ Vergessen, was „holz“ an Tischen gelernt hat (5 Würfel)")
    shot(phone, "35-phone-calibrate-learnt", full=True)
    forget.tap()  # once: it asks
    expect(forget).to_have_text("Wirklich vergessen? Nochmal tippen.")
    assert load_dice_set(folder, "holz").played == [False] * 5 + [True] * 5
    forget.tap()
    expect(phone.locator("#toast")).to_have_text(
        "„holz“ hat vergessen, was es an Tischen gelernt hat – der Tisch liest nur noch mit "
        "dem Angelernten.")
    expect(phone.locator("#c-forget")).to_have_count(0)
    assert load_dice_set(folder, "holz").patch_values == [1] * 5
    assert running.watcher.reader.dice_set.patch_values == [1] * 5

    phone.locator("#c-learn-now").tap()
    expect(phone.locator("#c-learn")).to_have_text("nein")
    expect(phone.locator("#c-learn-now")).to_have_text("Aus geprüften Würfen lernen lassen")
    assert load_config(running.path)[0].table.learn is False
    assert not errors, errors


def test_a_throw_the_taught_set_does_not_know_offers_teaching_it_here(
        calibration_table: Any, browsers: tuple[Any, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Dice unlike every teaching photo (vision.reader's warning): the pending throw's
    button opens teaching, adding to the set the table reads."""
    import vision.reader
    from tests.web.test_live_calibration import BRIGHT, DARK, ShadeEmbedder

    expect = playwright_api.expect
    monkeypatch.setattr(vision.reader, "OnnxEmbedder", lambda threads=1: ShadeEmbedder())
    running = calibration_table
    for face, shade in ((1, DARK), (6, BRIGHT)):
        running.camera.lay(shade)
        running.calibration.capture("setup", "holz", face)
    running.calibration.teach("setup", "holz", [1, 6])
    running.calibration.end()
    errors: list[str] = []
    phone = joined_phone(running, browsers, errors)
    running.camera.throw(128)  # grey: neither the taught dark 1s nor the bright 6s
    teach_here = phone.locator("#teach-here")
    expect(teach_here).to_have_text("🎲 Würfelsatz hier dazulernen lassen", timeout=10_000)
    pending = phone.locator("#pending")
    expect(pending).to_contain_text("Keiner dieser Würfel sieht aus wie auf den Anlern-Bildern "
                                    "des Würfelsatzes (anderes Licht, andere Kamera?).")
    expect(pending).to_contain_text("Würfel 5: nicht lesbar")
    expect(pending).not_to_contain_text("cannot be read")  # said once, in German
    expect(pending).not_to_contain_text("teach the set here too")
    shot(phone, "36-phone-teach-here", full=True)
    teach_here.tap()
    expect(phone.locator("#t-name")).to_have_value("holz")
    expect(phone.locator("#t-known")).to_contain_text(
        "Diesen Würfelsatz kennt der Tisch schon (2 Seiten).")
    phone.locator("#t-start").tap()
    expect(phone.locator("#sheet h3")).to_contain_text("Seite 1 von 6")  # every pip face
    assert not errors, errors


def test_teach_a_dice_set_from_a_phone_face_by_face(
        calibration_table: Any, browsers: tuple[Any, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import vision.teach
    from web.config import load_config

    expect = playwright_api.expect
    running = calibration_table
    errors: list[str] = []
    phone = open_calibrate(running, browsers, errors)

    def capture_every_face() -> None:
        for shade in (30, 60, 130, 160, 200, 240):
            running.camera.lay(shade)
            phone.locator("#t-capture").tap()
            expect(phone.locator("#t-result")).to_contain_text("5 Würfel gesehen")
            phone.locator("#t-next").tap()

    phone.locator("#c-teach").tap()
    phone.locator("#t-name").fill("holz")
    phone.locator("#t-start").tap()
    for i, shade in enumerate((30, 60, 130, 160, 200, 240)):
        expect(phone.locator("#sheet h3")).to_contain_text(f"Seite {i + 1} von 6")
        expect(phone.locator("#t-next")).to_be_disabled()
        running.camera.lay(shade)
        phone.locator("#t-capture").tap()
        expect(phone.locator("#t-result")).to_contain_text("5 Würfel gesehen")
        if i == 0:
            shot(phone, "33-phone-teach-face", full=True)
        phone.locator("#t-next").tap()
    # Teaching embeds every die in 72 views with the real embedder: seconds on this machine.
    expect(phone.locator("#c-dice-set")).to_have_text("holz", timeout=30_000)
    # The stand-in classifier counts grey squares as 1s or 6s, not as the faces given:
    # teaching asks whether every die showed its face (vision.teach.teaching_doubts).
    expect(phone.locator("#toast.warn")).to_have_text(
        "Würfelsatz „holz“ angelernt, aber: the dice of a photo count as another face than "
        "the one given: did every die show it? If they did, take that photo again, sharper "
        "and in more light")
    assert load_config(running.path)[0].table.dice_set == "holz"
    assert running.watcher.reader.dice_set.faces == [1, 2, 3, 4, 5, 6]

    # Photos without a doubt: the plain message.
    monkeypatch.setattr(vision.teach, "teaching_doubts", lambda taught: [])
    phone.locator("#c-teach").tap()
    phone.locator("#t-name").fill("holz2")
    phone.locator("#t-start").tap()
    capture_every_face()
    expect(phone.locator("#c-dice-set")).to_have_text("holz2", timeout=30_000)
    expect(phone.locator("#toast")).to_have_text(
        "Würfelsatz „holz2“ angelernt – der Tisch liest jetzt damit.")
    expect(phone.locator("#toast.warn")).to_have_count(0)

    # A set taught before, taught again in another light: it adds to what it knew.
    phone.locator("#c-teach").tap()
    phone.locator("#t-name").fill("holz")
    expect(phone.locator("#t-known")).to_contain_text(
        "Diesen Würfelsatz kennt der Tisch schon (6 Seiten).")
    expect(phone.locator("#t-kind")).to_be_hidden()
    shot(phone, "34-phone-teach-add", full=True)
    phone.locator("#t-start").tap()
    capture_every_face()
    expect(phone.locator("#toast")).to_have_text(
        "Würfelsatz „holz“ hat dazugelernt – der Tisch liest jetzt damit.", timeout=30_000)
    expect(phone.locator("#c-dice-set")).to_have_text("holz")
    assert running.watcher.reader.dice_set.patch_values == [
        face for _ in range(2) for face in range(1, 7) for _ in range(5)]
    assert not errors, errors
