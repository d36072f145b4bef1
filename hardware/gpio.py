"""The optional button and status LED on the Pi's pin header (through gpiozero).

A family at the table should not need a phone for the common step: one press takes the
suggested box (or passes to the next player), a long press undoes. The LED tells at a
glance whether the table can see: steady = ready, fast blink = reading a throw, slow blink
= needs attention (camera off, broken config, dice that need a look), off = not running.

Everything here is optional: with `GpioConfig.enabled = False`, without pins, or without
gpiozero installed, `TableControls` is a no-op object with the same methods, so the server
never needs to ask.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Literal

from web.config import GpioConfig

log = logging.getLogger(__name__)

Status = Literal["ready", "reading", "attention", "off"]
STATUSES: tuple[Status, ...] = ("ready", "reading", "attention", "off")
#: (on seconds, off seconds) of the blinking states.
BLINK: dict[str, tuple[float, float]] = {"reading": (0.1, 0.1), "attention": (1.0, 1.0)}
#: Contacts of a cheap push button chatter for a few milliseconds.
BOUNCE_SECONDS = 0.02


class TableControls:
    """Button (press / long press) and status LED; a no-op where there are none.

    `on_press` runs when the button is released before `long_press_seconds`;
    `on_long_press` runs once when it has been held that long (and then no press follows).
    Both run on gpiozero's thread: keep them short and thread-safe. `pin_factory` is for
    tests (gpiozero's MockFactory); by default gpiozero picks the Pi's (lgpio on Bookworm).
    """

    def __init__(self, config: GpioConfig, on_press: Callable[[], None],
                 on_long_press: Callable[[], None], pin_factory: Any = None) -> None:
        self.config = config
        self._on_press = on_press
        self._on_long_press = on_long_press
        self._button: Any = None
        self._led: Any = None
        self._held = False
        self._status: Status = "off"
        self._lock = threading.Lock()
        self.problem: str | None = None  # why the parts are not in use, for the page
        if not config.enabled:
            return
        try:
            from gpiozero import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
                LED,
                Button,
            )
        except ImportError:
            self.problem = "gpio.enabled is set but gpiozero is not installed"
            log.warning("%s: button and LED are off", self.problem)
            return
        try:
            if config.button_pin is not None:
                self._button = Button(config.button_pin, pull_up=True,
                                      bounce_time=BOUNCE_SECONDS,
                                      hold_time=config.long_press_seconds,
                                      pin_factory=pin_factory)
                self._button.when_pressed = self._pressed
                self._button.when_held = self._long_pressed
                self._button.when_released = self._released
            if config.led_pin is not None:
                self._led = LED(config.led_pin, pin_factory=pin_factory)
        except Exception as exc:  # gpiozero raises many kinds (no pin, pin in use, no chip)
            self.problem = f"GPIO not available: {exc}"
            log.warning("%s: button and LED are off", self.problem)
            self.close()

    @property
    def active(self) -> bool:
        """True when a button or LED is really in use."""
        return self._button is not None or self._led is not None

    @property
    def status(self) -> Status:
        return self._status

    # ---- button --------------------------------------------------------------------------

    def _pressed(self) -> None:
        self._held = False

    def _long_pressed(self) -> None:
        self._held = True
        self._call(self._on_long_press)

    def _released(self) -> None:
        if not self._held:
            self._call(self._on_press)
        self._held = False

    @staticmethod
    def _call(callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:  # a failing action must not kill gpiozero's event thread
            log.exception("button action failed")

    # ---- LED -----------------------------------------------------------------------------

    def set_status(self, status: Status) -> None:
        """Show `status` on the LED (no-op when it is already shown)."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
        with self._lock:
            if status == self._status:
                return
            self._status = status
            led = self._led
            if led is None:
                return
            try:
                if status == "ready":
                    led.on()
                elif status == "off":
                    led.off()
                else:
                    on, off = BLINK[status]
                    led.blink(on_time=on, off_time=off, background=True)
            except Exception:
                log.exception("status LED failed")

    def ready(self) -> None:
        self.set_status("ready")

    def reading(self) -> None:
        self.set_status("reading")

    def attention(self) -> None:
        self.set_status("attention")

    def off(self) -> None:
        self.set_status("off")

    # ---- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Switch the LED off and release the pins (safe to call twice)."""
        if self._led is not None:
            try:
                self._led.off()  # close() alone leaves the pin where it was
            except Exception:
                log.exception("status LED failed")
        for device in (self._led, self._button):
            if device is not None:
                try:
                    device.close()
                except Exception:
                    log.exception("closing a GPIO device failed")
        self._led = self._button = None
        self._status = "off"

    def __enter__(self) -> TableControls:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
