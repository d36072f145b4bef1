"""The embedder's whitening (models/whiten_embedder.py): what it computes, and that the
shipped embedder carries it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

from whiten_embedder import RAW, WEIGHTS, unwhitened, whitening  # noqa: E402

from vision.embedder import EMBEDDER_PATH, OnnxEmbedder  # noqa: E402
from vision.models import metadata  # noqa: E402


def test_whitening_weighs_down_what_varies_within_a_face() -> None:
    """Two faces whose dice vary most along one shared direction (the light, say): after
    whitening that direction holds far less of each face's spread, and the faces lie
    further apart, measured in that spread."""
    rng = np.random.default_rng(0)
    dim, n = 8, 400
    light = np.zeros(dim)
    light[0] = 1.0
    means = {"duck": np.eye(dim)[1] * 0.5, "lion": np.eye(dim)[2] * 0.5}
    rows, faces = [], []
    for face, mean in means.items():
        rows.append(mean + rng.normal(0, 0.02, (n, dim)) + np.outer(rng.normal(0, 0.4, n), light))
        faces += [face] * n
    x = np.concatenate(rows)
    w = whitening(x, faces, shrink=0.3)
    assert np.allclose(w, w.T, atol=1e-6)

    def spread(v: np.ndarray) -> np.ndarray:
        return np.concatenate([v[:n] - v[:n].mean(0), v[n:] - v[n:].mean(0)])

    def light_share(v: np.ndarray) -> float:
        return float((spread(v)[:, 0] ** 2).sum() / (spread(v) ** 2).sum())

    def apart(v: np.ndarray) -> float:
        return float(np.sum((v[:n].mean(0) - v[n:].mean(0)) ** 2) / np.mean(spread(v) ** 2))

    assert light_share(x) > 0.9
    assert light_share(x @ w) < 0.75
    assert apart(x @ w) > 3 * apart(x)


def test_the_shipped_embedder_is_whitened() -> None:
    meta = metadata(OnnxEmbedder().session)
    assert meta["whitening"].startswith("within-face covariance of ")


def test_whitening_is_a_matmul_after_the_embedders_own_output(tmp_path: Path) -> None:
    """Taken out (as a second run of the step does before it whitens again), the embedder's
    own output whitened by the stored weights is what the shipped file gives."""
    onnx = pytest.importorskip("onnx", reason="onnx is in the `train` extra")
    from onnx import numpy_helper

    model = onnx.load(str(EMBEDDER_PATH))
    weights = numpy_helper.to_array(next(t for t in model.graph.initializer
                                         if t.name == WEIGHTS))
    plain = unwhitened(model)
    assert not any(WEIGHTS in n.input for n in plain.graph.node)
    assert not any(RAW in n.output for n in plain.graph.node)
    assert unwhitened(plain) is plain
    path = tmp_path / "plain.onnx"
    onnx.save(plain, str(path))
    rng = np.random.default_rng(1)
    crops = [rng.integers(0, 255, (64, 64, 3), dtype=np.uint8) for _ in range(3)]
    raw = OnnxEmbedder(path).embed(crops) @ weights
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    assert np.allclose(OnnxEmbedder().embed(crops), raw, atol=1e-5)
