"""`kniffel serve` as a real process: a throw is acknowledged, the process is killed with
SIGKILL before the entry, and after a restart the game resumes exactly where it was."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, state: Path, port: int) -> None:
        env = {**os.environ, "KNIFFEL_STATE_DIR": str(state), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "web.cli", "serve", "--camera", "none", "--host", "127.0.0.1",
             "--port", str(port), "--config", str(state / "no-config.toml")],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        self.banner = ""
        self.said = ""  # what it printed after the banner, read once it has stopped
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"server ended: rc={self.proc.poll()}")
            if line.startswith("Kniffel table:"):
                self.banner = line.strip()
                break
        match = re.search(r"PIN (\d{4})", self.banner)
        assert match, self.banner
        self.pin = match.group(1)
        while time.monotonic() < deadline:  # listening?
            try:
                self.get("/api/state")
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("server did not answer")

    def request(self, method: str, path: str, body: Any = None,
                cookie: str | None = None) -> tuple[int, Any, dict[str, str]]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Origin", self.base)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if cookie:
            req.add_header("Cookie", cookie)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read()), dict(resp.headers)
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read()), dict(err.headers)

    def get(self, path: str) -> Any:
        return self.request("GET", path)[1]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()

    def stop(self) -> int:
        """Stopped as systemd stops the table: SIGTERM. (Not SIGINT: a test run started in
        the background inherits SIGINT ignored, and so does the server, as it should.)"""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            if self.proc.stdout:
                self.said = self.proc.stdout.read()
                self.proc.stdout.close()
        return rc


def test_killed_between_a_throw_and_the_entry_the_game_resumes_intact(tmp_path: Path) -> None:
    port = free_port()
    server = Server(tmp_path, port)
    try:
        assert server.banner == f"Kniffel table: http://127.0.0.1:{port}/  PIN {server.pin}"
        status, body, headers = server.request("POST", "/api/session",
                                               {"pin": server.pin, "name": "Anna"})
        assert status == 200
        cookie = headers["Set-Cookie"].split(";")[0]
        game = server.get("/api/state")["game"]["id"]

        def change(kind: str, **body: Any) -> Any:
            version = server.get("/api/state")["game"]["version"]
            status, data, _ = server.request("POST", f"/api/games/{game}/{kind}",
                                             {"version": version, **body}, cookie)
            assert status == 200, data
            return data

        change("throws", dice=[2, 2, 5, 5, 5])
        change("entries", box="full_house")
        change("throws", dice=[1, 3, 4, 6, 6])
        acknowledged = change("corrections", index=4, value=5)  # answered = on disk
    finally:
        server.kill()

    server = Server(tmp_path, port)
    try:
        assert server.pin == re.search(r"PIN (\d{4})", server.banner).group(1)  # type: ignore[union-attr]
        after = server.get("/api/state")
        for key in ("game", "block", "last_throw", "pending", "suggested", "undo"):
            assert after[key] == acknowledged[key], key
        assert after["block"]["turn"]["throws"] == [{"dice": [1, 3, 4, 6, 5], "held": []}]
        # The phone is still joined and the turn goes on.
        status, data, _ = server.request("POST", f"/api/games/{game}/entries",
                                         {"version": after["game"]["version"],
                                          "box": "small_straight"}, cookie)
        assert status == 200, data
        assert data["block"]["players"][1]["total"] == 30
    finally:
        assert server.stop() == 0
    assert server.said.splitlines()[-1] == "Kniffel table: stopping"  # the journal's last word


def test_a_damaged_database_is_set_aside_and_the_table_starts(tmp_path: Path) -> None:
    """kniffel.db damaged on the card: the table starts with a new one, says so on the page
    (its notes, the status LED asks for attention) and keeps the damaged file beside it."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "kniffel.db").write_bytes(b"not a database any more")
    server = Server(state, free_port())
    try:
        [note] = server.get("/api/state")["notes"]
        assert note.startswith("the saved games could not be read (file is not a database): "
                               f"the file is kept as {state}/kniffel.db.damaged-")
    finally:
        server.stop()
    [kept] = [p for p in state.iterdir() if p.name.startswith("kniffel.db.damaged-")]
    assert kept.read_bytes() == b"not a database any more"
