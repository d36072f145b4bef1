"""hardware.gpio on gpiozero's mock pins: press, long press, LED states, no-op fallbacks."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator

import pytest

from web.config import GpioConfig

gpiozero = pytest.importorskip("gpiozero", reason="gpiozero is in the test extra")
from gpiozero import Device  # noqa: E402
from gpiozero.pins.mock import MockFactory  # noqa: E402

from hardware.gpio import TableControls  # noqa: E402

BUTTON, LED_PIN = 17, 27
CONFIG = GpioConfig(enabled=True, button_pin=BUTTON, led_pin=LED_PIN, long_press_seconds=0.25)


@pytest.fixture
def mock_factory() -> Iterator[MockFactory]:
    """As gpiozero's own tests/conftest.py: a fresh MockFactory per test, reset afterwards
    (MockFactory keeps pin reservations at class level)."""
    saved = Device.pin_factory
    Device.pin_factory = MockFactory()
    try:
        yield Device.pin_factory
    finally:
        if Device.pin_factory is not None:
            Device.pin_factory.reset()
        Device.pin_factory = saved


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def press(self) -> None:
        self.events.append("press")

    def long_press(self) -> None:
        self.events.append("long")


@pytest.fixture
def controls(mock_factory: MockFactory) -> Iterator[tuple[TableControls, Recorder]]:
    rec = Recorder()
    with TableControls(CONFIG, rec.press, rec.long_press) as c:
        yield c, rec


def wait_for(condition: Callable[[], bool], timeout: float = 2.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_short_press(controls: tuple[TableControls, Recorder],
                     mock_factory: MockFactory) -> None:
    c, rec = controls
    pin = mock_factory.pin(BUTTON)
    assert c.active
    pin.drive_low()  # pull-up: pressed connects the pin to ground
    time.sleep(0.04)
    assert rec.events == []  # nothing on the way down: it may still become a long press
    pin.drive_high()
    assert wait_for(lambda: rec.events == ["press"])


def test_long_press_is_undo_not_press(controls: tuple[TableControls, Recorder],
                                      mock_factory: MockFactory) -> None:
    c, rec = controls
    pin = mock_factory.pin(BUTTON)
    pin.drive_low()
    assert wait_for(lambda: rec.events == ["long"])
    time.sleep(0.3)  # held on: no repeat
    pin.drive_high()
    time.sleep(0.05)
    assert rec.events == ["long"]
    # The next short press counts again.
    pin.drive_low()
    time.sleep(0.04)
    pin.drive_high()
    assert wait_for(lambda: rec.events == ["long", "press"])


def test_a_failing_action_does_not_stop_the_button(mock_factory: MockFactory) -> None:
    calls: list[int] = []

    def fail() -> None:
        calls.append(1)
        raise RuntimeError("boom")

    with TableControls(CONFIG, fail, fail):
        pin = mock_factory.pin(BUTTON)
        for _ in range(2):
            pin.drive_low()
            time.sleep(0.04)
            pin.drive_high()
            time.sleep(0.04)
        assert wait_for(lambda: len(calls) == 2)


def changes(pin: object, seconds: float) -> int:
    """How often the LED pin switched during the next `seconds`."""
    before = len(pin.states)  # type: ignore[attr-defined]
    time.sleep(seconds)
    return len(pin.states) - before  # type: ignore[attr-defined]


def test_led_states(controls: tuple[TableControls, Recorder],
                    mock_factory: MockFactory) -> None:
    c, _ = controls
    led = mock_factory.pin(LED_PIN)
    assert c.status == "off" and led.state is False
    c.ready()
    assert c.status == "ready" and led.state is True
    assert changes(led, 0.25) == 0  # steady
    c.reading()
    assert changes(led, 0.5) >= 3  # fast: 0.1 s on / 0.1 s off
    c.attention()
    assert changes(led, 0.5) <= 1  # slow: 1 s on / 1 s off
    c.off()
    assert led.state is False and changes(led, 0.25) == 0
    with pytest.raises(ValueError):
        c.set_status("party")  # type: ignore[arg-type]


def test_close_releases_pins(mock_factory: MockFactory) -> None:
    rec = Recorder()
    c = TableControls(CONFIG, rec.press, rec.long_press)
    c.ready()
    c.close()
    c.close()
    assert not c.active and mock_factory.pin(LED_PIN).state is False
    # Pins are free again: a second instance can take them.
    TableControls(CONFIG, rec.press, rec.long_press).close()


def test_only_a_led(mock_factory: MockFactory) -> None:
    with TableControls(GpioConfig(enabled=True, led_pin=LED_PIN), print, print) as c:
        c.ready()
        assert mock_factory.pin(LED_PIN).state is True


def test_explicit_pin_factory() -> None:
    factory = MockFactory()
    try:
        rec = Recorder()
        with TableControls(CONFIG, rec.press, rec.long_press, pin_factory=factory) as c:
            c.ready()
            assert factory.pin(LED_PIN).state is True
    finally:
        factory.reset()


def test_disabled_is_a_no_op(mock_factory: MockFactory) -> None:
    rec = Recorder()
    with TableControls(GpioConfig(), rec.press, rec.long_press) as c:
        assert not c.active and c.problem is None
        c.ready()
        c.reading()
        assert c.status == "reading"
        assert mock_factory.pin(LED_PIN).state is False


def test_pin_in_use_is_reported_not_raised(mock_factory: MockFactory) -> None:
    from gpiozero import LED

    taken = LED(LED_PIN)
    try:
        with TableControls(CONFIG, print, print) as c:
            assert not c.active and c.problem and "GPIO not available" in c.problem
            c.attention()
    finally:
        taken.close()


def test_without_gpiozero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gpiozero", None)  # import gpiozero -> ImportError
    with TableControls(CONFIG, print, print) as c:
        assert not c.active and c.problem == "gpio.enabled is set but gpiozero is not installed"
        c.ready()
        c.off()
