"""hardware.notify: sd_notify datagrams on a real socket, and silence without one."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hardware.notify import SystemdNotifier


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield sock, path
    sock.close()


def test_messages(listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch) -> None:
    sock, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    notifier = SystemdNotifier()
    assert notifier.enabled
    assert notifier.ready("camera\nstarting")
    assert sock.recv(4096) == b"READY=1\nSTATUS=camera starting"
    assert notifier.watchdog()
    assert sock.recv(4096) == b"WATCHDOG=1"
    assert notifier.status("reading dice")
    assert sock.recv(4096) == b"STATUS=reading dice"
    assert notifier.stopping()
    assert sock.recv(4096) == b"STOPPING=1"
    notifier.close()


def test_abstract_namespace() -> None:
    name = f"kniffel-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2)
    try:
        assert SystemdNotifier("@" + name).watchdog()
        assert sock.recv(64) == b"WATCHDOG=1"
    finally:
        sock.close()


def test_without_systemd_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = SystemdNotifier()
    assert not notifier.enabled
    assert notifier.ready() is False and notifier.watchdog() is False
    notifier.status("x")
    notifier.stopping()


def test_never_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier(str(tmp_path / "gone.sock"))
    assert notifier.ready() is False
    assert notifier.watchdog() is False
    assert sum("cannot notify systemd" in r.message for r in caplog.records) == 1


def test_watchdog_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    notifier = SystemdNotifier("")
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert notifier.watchdog_seconds is None
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert notifier.watchdog_seconds == 15.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert notifier.watchdog_seconds == 15.0
    monkeypatch.setenv("WATCHDOG_PID", "1")
    assert notifier.watchdog_seconds is None
