"""Tell systemd how the table is doing (sd_notify), without libsystemd.

The unit is Type=notify with WatchdogSec=: systemd waits for `ready()` before it calls the
service started, and restarts it when `watchdog()` stops arriving. The server calls
`watchdog()` only from the camera loop, so a hung camera (the usual failure on a Pi) gets
the service restarted, while a slow page does not.

Outside systemd (no NOTIFY_SOCKET) every method does nothing; no method ever raises, since
a lost status message must never stop the table.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket

log = logging.getLogger(__name__)


class SystemdNotifier:
    """sd_notify over the AF_UNIX datagram socket in $NOTIFY_SOCKET ('@' = abstract)."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address if address is not None else os.environ.get("NOTIFY_SOCKET", "")
        self._socket: socket.socket | None = None
        self._warned = False

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    @property
    def watchdog_seconds(self) -> float | None:
        """How often to call `watchdog()`: half of systemd's WatchdogSec, or None when no
        watchdog is set (WATCHDOG_PID, when given, must be this process)."""
        usec = os.environ.get("WATCHDOG_USEC", "")
        pid = os.environ.get("WATCHDOG_PID", "")
        if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
            return None
        return int(usec) / 2_000_000

    def notify(self, message: str) -> bool:
        """Send one message (e.g. "READY=1"); True when it was sent."""
        if not self.address:
            return False
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX,
                                             socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.sendto(message.encode("utf-8", "replace"), target)
            return True
        except OSError as exc:
            if not self._warned:  # once: a missing socket would otherwise flood the journal
                log.warning("cannot notify systemd at %s: %s", self.address, exc)
                self._warned = True
            self.close()
            return False

    def ready(self, status: str | None = None) -> bool:
        return self.notify("READY=1" + (f"\nSTATUS={_one_line(status)}" if status else ""))

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def status(self, text: str) -> bool:
        """Shown by `systemctl status kniffel`."""
        return self.notify(f"STATUS={_one_line(text)}")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")

    def close(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
            self._socket = None


def _one_line(text: str) -> str:
    return " ".join(text.split())
