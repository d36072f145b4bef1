"""`make models` / `make eval` data sets (models/build.py): rendered again when stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

import build  # noqa: E402


def test_a_set_rendered_by_an_older_generator_is_rendered_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "DATA", tmp_path)
    out = build.generate("tiny", "pips", 2, 5, workers=1)
    stamp = out / "stamp.json"
    assert json.loads(stamp.read_text())["generator"] == build.generator_version()
    labels = out / "labels.jsonl"
    labels.write_text("stale\n")  # a marker: kept only if the set is not rendered again

    build.generate("tiny", "pips", 2, 5, workers=1)  # same set, same generator: kept
    assert labels.read_text() == "stale\n"

    stamp.write_text(json.dumps({**json.loads(stamp.read_text()), "generator": "older"}))
    build.generate("tiny", "pips", 2, 5, workers=1)
    assert labels.read_text() != "stale\n" and len(labels.read_text().splitlines()) == 2
    assert json.loads(stamp.read_text())["generator"] == build.generator_version()
