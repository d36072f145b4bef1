"""`make soak`: the table left running, as at a family's or a club's evening — does it keep
playing without growing? Starts `kniffel serve` on the demo camera (a table that throws and
plays by itself, its dice read by the real reader) in a fresh state directory, and for
`--minutes` visits it as phones do: every minute the page, the state, the games and the
statistics, the live updates (server-sent events) for a few seconds, the camera preview for
20 frames, now and then a phone joining with the PIN and a die corrected or a box undone.
Every `--every` seconds it notes the server's memory (resident set), threads and open files.

At the end it says what was played and whether the server held: it exits 1 where the
server ended, an answer was not the one expected, the table stopped playing, its memory
grew by more than GROWTH_MB from the run's second quarter to its last, its threads or open
files grew by more than a few, or the database does not pass SQLite's integrity check.
Linux only (it reads /proc). An hour by default; `make test` runs it for a quarter of a
minute (tests/test_soak.py), to keep the tool working."""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Memory the server may gain from the run's second quarter (its caches and the reader's
#: buffers are warm by then) to its last before the run counts as leaking.
GROWTH_MB = 40.0
#: Threads and open files it may gain over the same span (a phone's stream still open).
GROWTH_THREADS = 3
GROWTH_FILES = 6


@dataclass
class Sample:
    minute: float
    rss_mb: float
    threads: int
    files: int
    game: int
    version: int


class Table:
    """`kniffel serve --camera CAMERA` in its own state directory, and requests to it."""

    def __init__(self, state: Path, camera: str) -> None:
        env = {**os.environ, "KNIFFEL_STATE_DIR": str(state), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "web.cli", "serve", "--camera", camera, "--host",
             "127.0.0.1", "--port", "0", "--config", str(state / "no-config.toml")],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout is not None
        said = []
        for line in self.proc.stdout:  # what it says before the banner: warnings
            said.append(line.strip())
            if match := re.search(r"http://[^:/]+:(\d+)/\s+PIN (\d{4})", line):
                break
        else:
            raise SystemExit("soak: the table did not start: " + " / ".join(said[-3:]))
        self.camera = camera
        self.base = f"http://127.0.0.1:{match.group(1)}"
        self.pin = match.group(2)

    def stats(self) -> tuple[float, int, int]:
        """Resident memory (MB), threads and open files of the server process."""
        fields = dict(line.split(":", 1) for line in
                      Path(f"/proc/{self.proc.pid}/status").read_text().splitlines())
        rss_kb = int(fields["VmRSS"].split()[0])
        return rss_kb / 1024, int(fields["Threads"]), len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def visitor(self) -> urllib.request.OpenerDirector:
        """A browser of its own: its own cookies."""
        return urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(self, browser: urllib.request.OpenerDirector, path: str,
             body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={
            "Content-Type": "application/json", "Origin": self.base})
        try:
            with browser.open(request, timeout=15) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def stop(self) -> int:
        """Stops the server as systemd does (SIGTERM); its exit status."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def watch_stream(browser: urllib.request.OpenerDirector, url: str, seconds: float = 0.0,
                 parts: int = 0) -> None:
    """Reads a stream as a page does, for `seconds` or until `parts` MJPEG frames came."""
    with browser.open(url, timeout=15) as response:
        end, seen = time.monotonic() + seconds, 0
        while True:
            line = response.readline()
            if not line:
                raise OSError("the stream ended early")
            seen += line.startswith(b"--frame")
            if (parts and seen >= parts) or (not parts and time.monotonic() >= end):
                return


def visit(table: Table, phone: urllib.request.OpenerDirector, rng: random.Random) -> list[str]:
    """What phones do in a minute at the table; the answers that were not expected."""
    wrong: list[str] = []
    browser = table.visitor()
    for path in ("/", "/api/state", "/api/games", "/api/stats"):
        status, _ = table.call(browser, path)
        if status != 200:
            wrong.append(f"GET {path}: {status}")
    for url, seconds, parts in ((f"{table.base}/api/events", 4.0, 0),
                                (f"{table.base}/api/camera.mjpeg", 0.0, 20)):
        try:
            watch_stream(phone, url, seconds, parts)
        except OSError as exc:
            wrong.append(f"{url}: {exc}")
    if rng.random() < 0.3:
        status, _ = table.call(table.visitor(), "/api/session", {"pin": table.pin})
        if status != 200:
            wrong.append(f"join with the PIN: {status}")
    state = json.loads(table.call(phone, "/api/state")[1])
    game, version = state["game"]["id"], state["game"]["version"]
    turn = state["block"].get("turn")
    if turn and turn["throws"] and rng.random() < 0.5:
        status, answer = table.call(phone, f"/api/games/{game}/corrections", {
            "version": version, "index": rng.randrange(5), "value": rng.randint(1, 6)})
    elif rng.random() < 0.3:
        status, answer = table.call(phone, f"/api/games/{game}/undo", {"version": version})
    else:
        status, answer = 200, b""
    # 409: the demo table changed the game meanwhile, as a second phone might; 422: a
    # change the rules refuse (nothing to undo in a game just begun), as they should
    if status not in (200, 409, 422):
        wrong.append(f"a change: {status} {answer[:120]!r}")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--camera", default="demo", help="as `kniffel serve --camera`")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kniffel-soak-") as folder:
        state = Path(folder)
        table = Table(state, args.camera)
        try:
            samples, wrong, games = soak(table, args.minutes, args.every)
        finally:
            exit_status = table.stop()
        with sqlite3.connect(state / "kniffel.db") as db:
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    return report(samples, wrong, games, exit_status, integrity)


def soak(table: Table, minutes: float, every: float
         ) -> tuple[list[Sample], list[str], list[dict[str, Any]]]:
    """The samples, the unexpected answers and the games of `minutes` at `table`."""
    rng = random.Random(1)
    phone = table.visitor()
    status, _ = table.call(phone, "/api/session", {"pin": table.pin, "name": "Soak"})
    if status != 200:
        return [], [f"joining with the PIN: {status}"], []
    print(f"soak: {table.base}, camera {table.camera}, {minutes:g} minutes", flush=True)
    start = time.monotonic()
    samples: list[Sample] = []
    wrong: list[str] = []
    next_visit = start
    try:
        while time.monotonic() - start < minutes * 60:
            if time.monotonic() >= next_visit:
                next_visit += 60
                wrong += visit(table, phone, rng)
            game = json.loads(table.call(phone, "/api/state")[1])["game"]
            rss, threads, files = table.stats()
            samples.append(Sample((time.monotonic() - start) / 60, rss, threads, files,
                                  game["id"], game["version"]))
            s = samples[-1]
            print(f"{s.minute:6.1f} min  memory {s.rss_mb:6.1f} MB  threads {s.threads}  "
                  f"open files {s.files}  game {s.game} (version {s.version})  "
                  f"unexpected answers {len(wrong)}", flush=True)
            time.sleep(every)
        return samples, wrong, json.loads(table.call(phone, "/api/games")[1])["games"]
    except OSError as exc:  # no answer at all: the server ended or hangs
        ended = table.proc.poll()
        return samples, wrong + [f"no answer ({exc})" if ended is None else
                                 f"the server ended (exit status {ended})"], []


def report(samples: list[Sample], wrong: list[str], games: list[dict[str, Any]],
           exit_status: int, integrity: str) -> int:
    """Prints what the run showed; 1 where the server did not hold."""
    for line in wrong:
        print(f"unexpected: {line}")
    problems = list(wrong[:1])
    if len(samples) >= 8:
        quarter = len(samples) // 4
        second, last = samples[quarter:2 * quarter], samples[-quarter:]
        grown = (statistics.median(s.rss_mb for s in last)
                 - statistics.median(s.rss_mb for s in second))
        threads = max(s.threads for s in last) - max(s.threads for s in second)
        files = max(s.files for s in last) - max(s.files for s in second)
        print(f"memory {min(s.rss_mb for s in samples):.0f}–{max(s.rss_mb for s in samples):.0f}"
              f" MB, {grown:+.1f} MB from the second quarter's median to the last's; threads "
              f"{threads:+d}, open files {files:+d} (most: {max(s.threads for s in samples)}, "
              f"{max(s.files for s in samples)})")
        if grown > GROWTH_MB:
            problems.append(f"memory grew by {grown:.0f} MB")
        if threads > GROWTH_THREADS or files > GROWTH_FILES:
            problems.append(f"threads {threads:+d}, open files {files:+d}")
        if (last[-1].game, last[-1].version) == (last[0].game, last[0].version):
            problems.append("the table stopped playing")
    finished = sum(1 for g in games if g.get("finished"))
    print(f"games: {len(games)} begun, {finished} finished; the server's exit status "
          f"{exit_status}; the database: {integrity}")
    if exit_status != 0:
        problems.append(f"the server's exit status {exit_status}")
    if integrity != "ok":
        problems.append(f"the database: {integrity}")
    print("soak: " + ("held" if not problems else "did not hold: " + "; ".join(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
