"""`make soak` (tests/soak.py): its verdict, and the tool against the real server for a
quarter of a minute (the hour itself is not run here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.soak import Sample, report

SOAK = Path(__file__).resolve().parent / "soak.py"


def run(rss: list[float], threads: int = 31, files: int = 14, last_threads: int = 31,
        playing: bool = True) -> list[Sample]:
    n = len(rss)
    return [Sample(minute=k / 2, rss_mb=mb, threads=last_threads if k >= 3 * n // 4 else threads,
                   files=files, game=1, version=k if playing else 7)
            for k, mb in enumerate(rss)]


def test_a_table_whose_memory_settles_holds(capsys: pytest.CaptureFixture[str]) -> None:
    samples = run([220, 310, 320, 326, 326, 327, 326, 328, 327, 329, 328, 327])
    assert report(samples, [], [{"finished": True}, {"finished": False}], 0, "ok") == 0
    out = capsys.readouterr().out
    assert "games: 2 begun, 1 finished" in out and out.rstrip().endswith("soak: held")


@pytest.mark.parametrize(("samples", "said"), [
    (run([300 + 10 * k for k in range(12)]), "memory grew by 60 MB"),
    (run([320] * 12, last_threads=40), "threads +9"),
    (run([320] * 12, playing=False), "the table stopped playing"),
])
def test_growth_or_a_table_that_stops_does_not_hold(
        samples: list[Sample], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert report(samples, [], [], 0, "ok") == 1
    assert said in capsys.readouterr().out


def test_a_server_that_failed_or_a_damaged_database_does_not_hold(
        capsys: pytest.CaptureFixture[str]) -> None:
    samples = run([320] * 12)
    assert report(samples, ["GET /api/state: 500"], [], 0, "ok") == 1
    assert report(samples, [], [], -9, "ok") == 1
    assert report(samples, [], [], 0, "*** in database main ***") == 1
    out = capsys.readouterr().out
    assert "unexpected: GET /api/state: 500" in out and "exit status -9" in out


def test_a_short_soak_of_the_demo_table_holds() -> None:
    """The tool itself, against the real server: a quarter of a minute."""
    done = subprocess.run([sys.executable, str(SOAK), "--minutes", "0.25", "--every", "5"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("soak: http://127.0.0.1:") and lines[-1] == "soak: held"
    assert any(" min  memory " in line for line in lines)
    assert "the database: ok" in done.stdout
