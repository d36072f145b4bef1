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


def test_the_body_head_is_added_beside_the_detectors_own_output() -> None:
    """`train.py body` adds an output and changes nothing the detector said before (only
    where PyTorch, the `train` extra, is installed)."""
    torch = pytest.importorskip("torch")
    import numpy as np
    import onnx
    import onnxruntime as ort
    import train
    from nets import BodyHead

    detector = train.detector_only(onnx.load(str(build.MODELS / "detector.onnx")))
    torch.manual_seed(0)
    merged = train.with_body_head(detector, BodyHead(8).eval())
    again = train.with_body_head(train.detector_only(merged), BodyHead(8).eval())
    image = np.random.default_rng(0).uniform(-0.5, 0.5, (1, 3, 96, 128)).astype(np.float32)
    plain = ort.InferenceSession(detector.SerializeToString()).run(None, {"image": image})
    out, body = ort.InferenceSession(merged.SerializeToString()).run(None, {"image": image})
    assert [o.name for o in again.graph.output] == ["out", "body"]
    assert np.array_equal(out, plain[0]) and body.shape == (1, 2, 24, 32)
    assert {p.key for p in merged.metadata_props} >= {"long_side", "stride"}
