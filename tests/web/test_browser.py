"""A short game in real Chromium: a phone-sized browser joins with the PIN, sees the dice
the camera read, corrects one, chooses a box, undoes; a second browser (the table's screen)
follows live. Screenshots go to artifacts/screenshots/.

The server is the real app under waitress with the camera loop wired as `kniffel serve` wires
it (CameraLink); the camera is a scripted replay that follows vision/watch.py's TableWatcher
interface, so the test decides when a throw "settles" and what the reader saw.
"""

from __future__ import annotations

import os
import shutil
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

CHROMIUM = os.environ.get("KNIFFEL_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

playwright_api = pytest.importorskip("playwright.sync_api",
                                     reason="the playwright package is not installed")
if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
    pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install chromium` (make test does)",
                allow_module_level=True)


class LiveTable:
    """The app under waitress in this process, with a scripted camera."""

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
        self.link.watcher.on_throw(observed(values, **kw))

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


def shot(page: Any, name: str, full: bool = False) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def test_a_short_game_from_a_phone_with_the_table_view_following_live(
        live: LiveTable, browsers: tuple[Any, Any]) -> None:
    expect = playwright_api.expect
    table_ctx, phone_ctx = browsers
    errors: list[str] = []

    table = table_ctx.pages[0] if table_ctx.pages else table_ctx.new_page()
    table.on("pageerror", lambda e: errors.append(f"table: {e}"))
    table.goto(live.url + "/")
    pin = table.locator("#pin-value")
    expect(pin).to_have_text(live.secret.pin)
    expect(table.locator(".join .qr svg")).to_be_visible()
    expect(table.locator(".turn .player-name")).to_contain_text("Anna")
    shot(table, "01-table-waiting")

    # Join with the PIN shown on the table.
    phone = phone_ctx.pages[0] if phone_ctx.pages else phone_ctx.new_page()
    phone.on("pageerror", lambda e: errors.append(f"phone: {e}"))
    phone.goto(live.url + "/phone")
    expect(phone.locator("#join-screen")).to_be_visible()
    phone.locator("#pin").fill(pin.inner_text())
    phone.locator("#phone-name").fill("Annas Handy")
    shot(phone, "02-phone-join")
    phone.locator("#join-button").tap()
    expect(phone.locator("#who")).to_contain_text("Anna")

    # The camera reads a throw; die 5 was read with low confidence.
    sent = time.monotonic()
    live.settle([2, 3, 4, 5, 5], confidence=[0.98, 0.97, 0.99, 0.95, 0.55])
    expect(table.locator(".turn .dice-row svg.die")).to_have_count(5)
    table_latency = time.monotonic() - sent
    expect(phone.locator("#dice .die-btn")).to_have_count(5)
    expect(phone.locator("#dice svg.die.unsure")).to_have_count(1)
    expect(phone.locator(".box-btn.best")).to_contain_text("Kleine Straße")
    shot(phone, "03-phone-dice-read")
    assert table_latency < 2.0

    # Two taps fix the misread die: tap it, pick 6.
    phone.locator("#dice .die-btn").nth(4).tap()
    expect(phone.locator("#sheet .face-btn")).to_have_count(6)
    shot(phone, "04-phone-pick-value")
    phone.locator("#sheet .face-btn[data-v='6']").tap()
    expect(phone.locator("#dice svg.die.corrected")).to_have_count(1)
    expect(table.locator(".turn .dice-row svg.die.corrected")).to_have_count(1)
    expect(phone.locator(".box-btn.best")).to_contain_text("Große Straße")
    expect(table.locator(".olist li.best")).to_contain_text("Große Straße")
    shot(table, "05-table-corrected-die")

    # Choose the box: tap, confirm.
    phone.locator(".box-btn[data-box='large_straight']").tap()
    expect(phone.locator("#confirm")).to_be_visible()
    shot(phone, "06-phone-confirm-box")
    phone.locator("#confirm-yes").tap()
    expect(phone.locator("#who")).to_contain_text("Ben")
    anna_total = table.locator(".kblock tr.total td").first
    expect(anna_total).to_have_text("40")
    expect(table.locator(".turn .player-name")).to_contain_text("Ben")
    shot(table, "07-table-after-entry")

    # Undo: Anna's throw is back on the table, the box is free again.
    phone.locator("#undo").tap()
    expect(phone.locator("#who")).to_contain_text("Anna")
    expect(anna_total).to_have_text("0")
    expect(table.locator(".turn .player-name")).to_contain_text("Anna")
    shot(phone, "08-phone-after-undo", full=True)

    # Anna takes the straight after all; Ben's camera throw needs a look (a tilted die).
    phone.locator(".box-btn[data-box='large_straight']").tap()
    phone.locator(".box-btn[data-box='large_straight']").tap()  # a second tap confirms too
    expect(phone.locator("#who")).to_contain_text("Ben")
    live.settle([6, 6, 6, 1, 1], flags={3: "tilted"})
    expect(phone.locator("#pending")).to_be_visible()
    expect(table.locator(".pending-box")).to_be_visible()
    shot(phone, "09-phone-check-tilted-die")
    shot(table, "10-table-check-tilted-die")
    phone.locator("#dice .die-btn").nth(3).tap()
    phone.locator("#sheet .face-btn[data-v='6']").tap()
    expect(phone.locator("#pending")).to_be_hidden()
    expect(phone.locator(".box-btn[data-box='four_of_a_kind'] .bpts")).to_have_text("25")

    # The camera fails: the page says so, and Ben's next throw is typed in by hand.
    live.service.set_camera_status("failed", "camera disappeared")
    expect(phone.locator("#status-line")).to_contain_text("Kamera ausgefallen")
    expect(table.locator("#camera")).to_have_class("camera-status failed")
    phone.locator("#manual").tap()
    for i in range(3):  # keep the three sixes
        phone.locator(f"#sheet .hold[data-h='{i}']").tap()
    phone.locator("#sheet .face-pad .face-btn[data-v='6']").tap()
    phone.locator("#sheet .face-pad .face-btn[data-v='6']").tap()
    shot(phone, "11-phone-manual-throw")
    phone.locator("#save-throw").tap()
    expect(phone.locator("#throwno")).to_contain_text("Wurf 2 von 3")
    expect(phone.locator(".box-btn.best")).to_contain_text("Kniffel")
    phone.locator(".box-btn.best").tap()
    phone.locator("#confirm-yes").tap()
    expect(table.locator(".kblock tr.total td").nth(1)).to_have_text("50")

    # English, for the guests.
    phone.locator("#lang").tap()
    expect(phone.locator("#who")).to_contain_text("to play")
    shot(phone, "12-phone-english", full=True)
    shot(table, "13-table-live")

    history = table_ctx.new_page()
    history.goto(live.url + "/history")
    expect(history.locator(".game-item")).to_have_count(1)
    history.locator(".game-item").first.click()
    expect(history.locator("table.log tr.important")).not_to_have_count(0)
    expect(history.locator("table.log")).to_contain_text("Annas Handy")
    shot(history, "14-history-log", full=True)
    assert not errors, errors
