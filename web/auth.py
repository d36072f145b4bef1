"""Who may change the block: the table's secret, the PIN, phone sessions, CSRF checks.

Reading is open on the local network. Changing needs a session cookie, which a phone gets
for the table's secret token (in the QR code) or the 4-digit PIN (shown on the table). Four
digits are few, so failed PINs are slowed down per client (exponential back-off) and for
everyone together (a global budget), which makes guessing take days instead of seconds.
A session cookie alone is not enough: every change must also come from a page of this
server (Origin/Referer check), so no other web site can make a phone's browser post.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from vision.files import write_durably

SECRET_FILE = "table-secret.json"
COOKIE = "kniffel_session"
#: A phone stays joined for a year: the family should not type the PIN every evening.
COOKIE_MAX_AGE = 365 * 24 * 3600


@dataclass(frozen=True)
class TableSecret:
    token: str
    pin: str

    @classmethod
    def load_or_create(cls, folder: Path) -> TableSecret:
        """The table's secret, made once and kept (the PIN on the fridge stays valid)."""
        path = folder / SECRET_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            token, pin = str(data["token"]), str(data["pin"])
            if len(token) >= 16 and len(pin) == 4 and pin.isdigit():
                return cls(token, pin)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        secret = cls(secrets.token_urlsafe(24), f"{secrets.randbelow(10000):04d}")
        text = json.dumps({"token": secret.token, "pin": secret.pin})
        write_durably(path, lambda f: f.write(text.encode("utf-8")), mode=0o600)
        return secret

    def token_ok(self, token: object) -> bool:
        return isinstance(token, str) and hmac.compare_digest(token.encode(),
                                                              self.token.encode())

    def pin_ok(self, pin: object) -> bool:
        return isinstance(pin, str) and hmac.compare_digest(pin.strip().encode(),
                                                            self.pin.encode())


def hash_token(token: str) -> str:
    """Sessions are stored hashed: a copied database file does not let anyone in."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_session_token() -> str:
    return secrets.token_urlsafe(32)


class PinGuard:
    """Slows PIN guessing: per client, free typos then doubling waits; for all clients, a
    budget of failures per window (the QR token is not affected)."""

    def __init__(self, free: int = 3, base: float = 2.0, cap: float = 60.0,
                 window: float = 300.0, budget: int = 10,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.free, self.base, self.cap = free, base, cap
        self.window, self.budget = window, budget
        self.clock = clock
        self._lock = threading.Lock()
        self._clients: dict[str, tuple[int, float]] = {}  # failures, not before
        self._recent: deque[float] = deque()

    def wait(self, client: str) -> float:
        """Seconds this client must wait before its next PIN try (0: try now)."""
        now = self.clock()
        with self._lock:
            while self._recent and self._recent[0] <= now - self.window:
                self._recent.popleft()
            waits = [0.0]
            if len(self._recent) >= self.budget:
                waits.append(self._recent[0] + self.window - now)
            _, not_before = self._clients.get(client, (0, 0.0))
            waits.append(not_before - now)
            return max(waits)

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            self._recent.append(now)
            failures, _ = self._clients.get(client, (0, 0.0))
            failures += 1
            delay = 0.0
            if failures >= self.free:
                delay = min(self.cap, self.base * 2 ** (failures - self.free))
            self._clients[client] = (failures, now + delay)
            if len(self._clients) > 1000:  # forget the oldest strangers
                self._clients.pop(next(iter(self._clients)))

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)


class HeaderSource(Protocol):
    def get(self, key: str) -> str | None: ...


def cross_site_reason(method: str, headers: HeaderSource, host_url: str) -> str | None:
    """Why a changing request is refused as cross-site, or None if it comes from our page.

    Browsers send Origin on every POST (and Sec-Fetch-Site where they can); a request without
    either Origin or Referer is refused too, so a forgotten header never becomes a hole.
    """
    if method in ("GET", "HEAD", "OPTIONS"):
        return None
    ours = urlsplit(host_url)
    ours_origin = (ours.scheme, ours.netloc.lower())
    site = headers.get("Sec-Fetch-Site")
    if site and site not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {site})"
    origin = headers.get("Origin")
    if origin:
        if origin == "null":
            return "cross-site request refused (Origin: null)"
        parts = urlsplit(origin)
        if (parts.scheme, parts.netloc.lower()) != ours_origin:
            return f"cross-site request refused (Origin {origin} is not this table)"
        return None
    referer = headers.get("Referer")
    if referer:
        parts = urlsplit(referer)
        if (parts.scheme, parts.netloc.lower()) != ours_origin:
            return "cross-site request refused (Referer is not this table)"
        return None
    return "request refused: send an Origin header naming this table (CSRF protection)"
