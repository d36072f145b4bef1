"""`make eval` (models/evaluate.py) reads in worker processes: two say what one says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

import build  # noqa: E402
import evaluate  # noqa: E402


def report(workers: int, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`make eval`'s tables without teaching, on small synthetic test sets; the timing
    rows and the rendering's own lines left out, and the padding of the columns and the
    rule under their heads, which the timing rows widen too (a slower read: a wider
    column)."""
    monkeypatch.setattr(sys, "argv", ["evaluate.py", "--no-teach", "--workers", str(workers)])
    assert evaluate.main() == 0
    return [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()
            if not line.startswith(("ms/frame", "generated ")) and line.strip("-")]


def test_two_workers_report_what_one_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(build, "DATA", tmp_path)  # where generate() renders
    monkeypatch.setattr(evaluate, "DATA", tmp_path)
    monkeypatch.setattr(evaluate, "TEST_SETS", [("pips", "pips", 4, 900001),
                                                ("animals", "animals", 3, 900002)])
    monkeypatch.setattr(evaluate, "real_root", lambda: tmp_path / "no real photos")
    one = report(1, monkeypatch, capsys)
    two = report(2, monkeypatch, capsys)
    assert two == one
    # every set and reader is there: the upright and turned sets, the baseline on pips
    heads = " ".join(one)
    for column in ("Synth pips", "Synth animals", "Synth pips turned 90°",
                   "Synth animals turned 90°", "blob baseline"):
        assert column in heads
    labelled = next(line for line in one if line.startswith("labelled dice"))
    assert all(int(count) > 0 for count in labelled.split()[2:])  # dice in every column
