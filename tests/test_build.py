"""`make models` / `make eval` data sets (models/build.py): rendered again when stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
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


def test_the_training_sets_get_their_shares_and_a_set_of_another_share_is_redone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make models` renders every training set with TRAINING_CAMOUFLAGE (0 as shipped),
    TRAINING_WORN and TRAINING_BRIGHT, and a set's stamp says its shares: the same set with
    another share is rendered again."""
    monkeypatch.setattr(build, "DATA", tmp_path)
    monkeypatch.setattr(build, "TRAINING_CAMOUFLAGE", 0.1)  # shipped 0 for now
    monkeypatch.setattr(build, "TRAINING_WORN", 0.3)
    monkeypatch.setattr(build, "TRAINING_BRIGHT", 0.2)
    asked: list[tuple[str, float, float, float]] = []

    def fake_generate(folder: str, *spec: object, hard_to_find: bool = False,
                      camouflage: float = 0.0, worn: float = 0.0, bright: float = 0.0) -> Path:
        asked.append((folder, camouflage, worn, bright))
        raise SystemExit(0)  # only the first set's call is looked at

    real_generate = build.generate
    monkeypatch.setattr(build, "generate", fake_generate)
    monkeypatch.setattr(build, "missing_real_photos", lambda: None)
    monkeypatch.setattr(sys, "argv", ["build.py"])
    with pytest.raises(SystemExit):
        build.main()
    assert asked == [(build.TRAIN_SETS[0][0], 0.1, 0.3, 0.2)]

    out = real_generate("tiny", "pips", 2, 5, workers=1, camouflage=0.5)
    assert json.loads((out / "stamp.json").read_text())["camouflage"] == 0.5
    (out / "labels.jsonl").write_text("stale\n")
    real_generate("tiny", "pips", 2, 5, workers=1, camouflage=0.5)
    assert (out / "labels.jsonl").read_text() == "stale\n"
    real_generate("tiny", "pips", 2, 5, workers=1)
    assert (out / "labels.jsonl").read_text() != "stale\n"
    assert "camouflage" not in json.loads((out / "stamp.json").read_text())
    real_generate("tiny", "pips", 2, 5, workers=1, worn=0.5)
    assert json.loads((out / "stamp.json").read_text())["worn"] == 0.5
    real_generate("tiny", "pips", 2, 5, workers=1, bright=0.5)
    assert json.loads((out / "stamp.json").read_text()) == {
        "kind": "pips", "count": 2, "seed": 5, "generator": build.generator_version(),
        "bright": 0.5}


def test_without_the_real_photos_make_models_stops_at_once_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every network trains on the real Train split: where it is missing, `build.py` says
    so before rendering anything, not after ten minutes from inside the first network."""
    monkeypatch.setattr(build, "DATA", tmp_path / "data")
    monkeypatch.setenv(build.REAL_ENV, str(tmp_path / "nowhere"))
    monkeypatch.setattr(sys, "argv", ["build.py"])
    assert build.main() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and build.REAL_ENV in err and "nowhere" in err, err
    assert not (tmp_path / "data").exists()
    (tmp_path / "nowhere" / "Train").mkdir(parents=True)
    assert build.missing_real_photos() is None


def test_the_body_head_at_the_finds_gives_what_it_gives_over_the_whole_grid(
        tmp_path: Path) -> None:
    """`train.py body` writes the detector with the tensors its head reads as outputs (its
    own output unchanged) and the head apart, computed at chosen cells: there, to the
    edges of the grid, it gives what the head over the whole grid gives (only where
    PyTorch, the `train` extra, is installed)."""
    torch = pytest.importorskip("torch")
    import numpy as np
    import onnx
    import onnxruntime as ort
    import train
    from nets import BodyHead

    from vision.detector import BODY_ID, BodyOffsets

    detector = train.detector_only(onnx.load(str(build.MODELS / "detector.onnx")))
    torch.manual_seed(0)
    head = BodyHead(8).eval()
    with_features, body = train.with_body_head(detector, head)
    again, _ = train.with_body_head(train.detector_only(with_features), head)
    image = np.random.default_rng(0).uniform(-0.5, 0.5, (1, 3, 96, 128)).astype(np.float32)
    plain = ort.InferenceSession(detector.SerializeToString()).run(None, {"image": image})
    out, features, context = ort.InferenceSession(with_features.SerializeToString()).run(
        None, {"image": image})
    assert [o.name for o in again.graph.output] == ["out", "features", "context"]
    assert np.array_equal(out, plain[0])
    with torch.no_grad():
        whole = head(torch.from_numpy(features), torch.from_numpy(context)).numpy()[0]
    cells = np.array([(row, col) for row in range(24) for col in range(32)])
    path = tmp_path / "detector.body.onnx"
    path.write_bytes(body.SerializeToString())
    ids = {p.value for model in (with_features, body) for p in model.metadata_props
           if p.key == BODY_ID}
    at = BodyOffsets(path, 1, ids.pop()).at(features, context, cells)
    assert not ids
    assert np.allclose(at, whole[:, cells[:, 0], cells[:, 1]].T, atol=1e-5)
    assert {p.key for p in with_features.metadata_props} >= {"long_side", "stride"}


def test_a_detector_read_back_from_its_file_says_what_the_file_says(tmp_path: Path) -> None:
    """`train.py detector-tune` starts from the exported detector: read back into PyTorch
    (its batch norms folded into the convolutions by the export), it must compute what the
    file does; tuning keeps those batch norms' statistics and exports a detector that says
    what the tuned network says (only where PyTorch, the `train` extra, is installed)."""
    torch = pytest.importorskip("torch")
    import onnx
    import onnxruntime as ort
    import train

    shipped = train.detector_only(onnx.load(str(build.MODELS / "detector.onnx")))
    net = train.detector_from_onnx(shipped)
    image = np.random.default_rng(1).uniform(-0.5, 0.5, (1, 3, 96, 128)).astype(np.float32)
    want = ort.InferenceSession(shipped.SerializeToString()).run(["out"], {"image": image})[0]
    with torch.no_grad():
        got = net(torch.from_numpy(image)).numpy()
    assert np.allclose(got, want, atol=1e-4)

    rng = np.random.default_rng(2)
    samples = [train.DetSample(rng.integers(0, 256, (120, 160, 3), dtype=np.uint8),
                               np.array([[60.0, 50.0]], np.float32),
                               np.array([[20.0, 20.0]], np.float32),
                               np.zeros((1, 2), np.float32)) for _ in range(3)]
    norms = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    first_weight = next(net.parameters()).detach().clone()
    tuned = train.tune_detector(net, samples[:2], samples[2:], steps=2, batch=4, crop=64,
                                seed=3)
    assert all(float(m.running_mean.abs().max()) == 0.0 for m in norms)
    assert not torch.equal(next(tuned.parameters()), first_weight)
    out = tmp_path / "tuned.onnx"
    train.export(tuned, torch.zeros(1, 3, 96, 128), out, ["image"], ["out"],
                 {"image": {2: "height", 3: "width"}}, {})
    with torch.no_grad():
        want = tuned(torch.from_numpy(image)).numpy()
    got = ort.InferenceSession(str(out)).run(["out"], {"image": image})[0]
    assert np.allclose(got, want, atol=1e-4)


def test_the_refiners_targets_point_at_the_top_face_in_the_turned_crop() -> None:
    """`train.py refiner`: whatever the crop's place, size and turn, its target must lead
    from the crop centre to the die's top-face centre, at the die's size (only where
    PyTorch, the `train` extra, is installed)."""
    pytest.importorskip("torch")
    import numpy as np
    import train

    from vision.preprocess import CROP_SIZE, REFINE_SPAN
    from vision.reading import DieLabel, SceneLabel

    image = np.full((300, 400, 3), 60, np.uint8)
    image[130:170, 180:220] = 255  # one die, 40 px, top face centred on (200, 150)
    image[147:154, 197:204] = (0, 0, 255)  # a red mark centred on (200, 150)
    label = SceneLabel("one.jpg", 400, 300, (DieLabel(3, (180, 130, 220, 170), (200, 150)),))
    crops, targets = train.refiner_crops([(image, label, "synth")], np.random.default_rng(1),
                                         per_synth_die=40, per_real_die=0)
    assert crops.shape == (40, CROP_SIZE, CROP_SIZE, 3) and targets.shape == (40, 3)
    found_px = CROP_SIZE / REFINE_SPAN  # one found size, in crop pixels
    far = 0
    for crop, (dx, dy, log_size) in zip(crops, targets, strict=True):
        x, y = CROP_SIZE / 2 + dx * found_px, CROP_SIZE / 2 + dy * found_px
        if not (4 <= x < CROP_SIZE - 4 and 4 <= y < CROP_SIZE - 4):
            continue
        c = crop.astype(int)
        ys, xs = np.nonzero(c[..., 2] - c[..., 1] > 40)  # the red mark
        assert len(xs) and np.hypot(xs.mean() - x, ys.mean() - y) < 1.0, (dx, dy)
        die_px = found_px * np.exp(log_size)  # the die's side in the crop
        white = (crop.min(axis=2) > 200).sum()
        if die_px < 0.8 * CROP_SIZE / 1.5 and np.hypot(dx, dy) < 0.3:
            assert white == pytest.approx(die_px ** 2, rel=0.25)  # turned: corners cut
        far += np.hypot(dx, dy) > 0.2
    assert far >= 5  # some crops were placed well off the top face


def test_the_judge_is_fitted_on_the_readings_it_trusts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """models/fit_judge.py: one row of evidence per trusted reading, and wrong where the
    label says another value."""
    import fit_judge

    from vision.doubt import FEATURES
    from vision.reader import Reader

    monkeypatch.setattr(build, "DATA", tmp_path)
    folder = build.generate("tiny", "pips", 4, 800001, workers=1)
    features, wrong = fit_judge.trusted_readings(Reader.default, [folder])
    assert features.shape == (len(wrong), len(FEATURES)) and len(wrong) >= 5
    assert wrong.mean() < 0.5  # the shipped models read most of these dice right
    labels = folder / "labels.jsonl"
    relabelled = []
    for line in labels.read_text().splitlines():
        scene = json.loads(line)
        for die in scene["dice"]:
            die["value"] = die["value"] % 6 + 1  # every die labelled one pip more
        relabelled.append(json.dumps(scene))
    labels.write_text("\n".join(relabelled) + "\n")
    again, wrong_now = fit_judge.trusted_readings(Reader.default, [folder], workers=2)
    assert np.array_equal(again, features) and wrong_now.all()  # read in two processes


def _exports_float32_that_reads_like(net: Any, dummy: Any, x: Any, out: Path,
                                     input_name: str, outputs: list[str],
                                     axes: dict[str, dict[int, str]]) -> None:
    """`train.export` writes `net` (traced on `dummy`) as an ONNX file whose inputs and
    outputs are float32 and whose first output reads `x` as the network does."""
    import onnx
    import onnxruntime as ort
    import torch
    import train

    train.export(net, dummy, out, [input_name], outputs, axes, {"precision": train.PRECISION})
    model = onnx.load(str(out))
    float32 = onnx.TensorProto.FLOAT
    assert all(i.type.tensor_type.elem_type == float32 for i in model.graph.input)
    assert all(o.type.tensor_type.elem_type == float32 for o in model.graph.output)
    with torch.no_grad():
        want = net(x)
    want = (want[0] if isinstance(want, tuple) else want).numpy()
    got = ort.InferenceSession(str(out)).run([outputs[0]], {input_name: x.numpy()})[0]
    assert got.dtype == np.float32 and np.allclose(got, want, atol=1e-4)


def test_the_classifier_trains_in_the_cpus_precision_and_exports_float32(
        tmp_path: Path) -> None:
    """`train.py classifier` trains under bfloat16 autocast where the CPU has it; the ONNX
    file the reader loads is float32 either way and reads like the trained network (only
    where PyTorch, the `train` extra, is installed)."""
    torch = pytest.importorskip("torch")
    import train

    from vision.preprocess import CROP_SIZE

    rng = np.random.default_rng(0)
    crops = rng.integers(0, 256, (16, CROP_SIZE, CROP_SIZE, 3), dtype=np.uint8)
    values = rng.integers(-1, 12, 16).astype(np.int64)
    quality = rng.integers(0, 5, 16).astype(np.int64)
    net = train.train_classifier(crops, values, quality, steps=2, batch=8, seed=3, width=8)
    _exports_float32_that_reads_like(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE),
                                     train.crops_to_tensor(crops[:4]),
                                     tmp_path / "classifier.onnx", "crops",
                                     ["value", "quality"], {"crops": {0: "n"}})


def test_the_classifier_in_8_bit_integers_reads_like_the_float_one_and_is_not_quantized_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`train.py classifier-int8` calibrates on crops of the training scenes and writes the
    classifier with its convolutions in 8-bit integers, the first one and the linear layers
    in float32, its metadata kept: it reads the crops as the float file does, and the
    reader opens it. A file in 8-bit integers already is refused in one line."""
    torch = pytest.importorskip("torch")
    import onnxruntime as ort
    import train

    from vision.classifier import OnnxClassifier
    from vision.preprocess import CROP_SIZE

    monkeypatch.setattr(build, "DATA", tmp_path)
    scenes = build.generate("tiny", "mixed", 4, 5, workers=1)
    rng = np.random.default_rng(0)
    crops = rng.integers(0, 256, (32, CROP_SIZE, CROP_SIZE, 3), dtype=np.uint8)
    values = rng.integers(-1, 12, 32).astype(np.int64)
    quality = rng.integers(0, 5, 32).astype(np.int64)
    net = train.train_classifier(crops, values, quality, steps=20, batch=16, seed=3, width=8)
    plain = tmp_path / "classifier.onnx"
    train.export(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE), plain, ["crops"],
                 ["value", "quality"], {"crops": {0: "n"}},
                 {"faces": json.dumps(train.FACES), "quality": json.dumps(train.QUALITY),
                  "upright": "1"})
    int8 = tmp_path / "int8.onnx"
    args = ["classifier-int8", "--data", str(scenes), "--classifier", str(plain), "--seed", "1"]
    assert train.main([*args, "--out", str(int8)]) == 0

    meta = _in_8_bit_integers_with_float(int8, ("/embed", "/value", "/quality"))
    assert meta["upright"] == "1" and json.loads(meta[train.INT8_KEY])["seed"] == 1

    x = train.crops_to_tensor(crops).numpy()
    want, got = (ort.InferenceSession(str(f)).run(["value"], {"crops": x})[0]
                 for f in (plain, int8))
    assert np.abs(got - want).max() < 0.1 * np.abs(want).max()
    assert (got.argmax(axis=1) == want.argmax(axis=1)).mean() >= 0.9
    assert OnnxClassifier(int8).classify(list(crops[:3])).value.shape == (3, 12)
    _refused_in_8_bit_integers_already([*args[:3], "--classifier", str(int8)], tmp_path,
                                       capsys)


def test_the_refiner_in_8_bit_integers_moves_finds_like_the_float_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`train.py refiner-int8` likewise: the refiner's convolutions but the first in 8-bit
    integers, its linear layers in float32; its moves are the float file's within a
    hundredth of a die size on most crops, and the reader opens it."""
    torch = pytest.importorskip("torch")
    import onnxruntime as ort
    import train

    from vision.detector import Candidate
    from vision.preprocess import CROP_SIZE
    from vision.refiner import OnnxRefiner

    monkeypatch.setattr(build, "DATA", tmp_path)
    scenes = build.generate("tiny", "mixed", 4, 5, workers=1)
    crops, targets = train.refiner_crops(train.iter_scenes([scenes], None),
                                         np.random.default_rng(0), 2, 0)
    net = train.train_refiner(crops, targets, steps=20, batch=16, seed=3, width=8)
    plain = tmp_path / "refiner.onnx"
    train.export(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE), plain, ["crops"], ["refine"],
                 {"crops": {0: "n"}}, {"width": "8"})
    int8 = tmp_path / "int8.onnx"
    args = ["refiner-int8", "--data", str(scenes), "--refiner", str(plain), "--seed", "2"]
    assert train.main([*args, "--out", str(int8)]) == 0

    meta = _in_8_bit_integers_with_float(int8, ("/hidden", "/out"))
    assert meta["width"] == "8" and json.loads(meta[train.INT8_KEY])["seed"] == 2

    x = train.crops_to_tensor(crops).numpy()
    want, got = (ort.InferenceSession(str(f)).run(["refine"], {"crops": x})[0]
                 for f in (plain, int8))
    assert float(np.median(np.abs(got - want))) < 0.01
    assert np.abs(got - want).max() < 0.1 * max(np.abs(want).max(), 0.1)
    frame = np.full((240, 320, 3), 90, np.uint8)
    (moved,) = OnnxRefiner(int8).refine(frame, [Candidate(160, 120, (150, 110, 170, 130), 0.9)])
    assert isinstance(moved, Candidate)
    _refused_in_8_bit_integers_already([*args[:3], "--refiner", str(int8)], tmp_path, capsys)


def test_the_embedder_in_8_bit_integers_embeds_like_the_float_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`train.py embedder-int8` likewise: the embedder's convolutions but the first in 8-bit
    integers, its pooling and linear layer in float32; its embeddings point where the float
    file's do, and the reader's embedder opens it."""
    torch = pytest.importorskip("torch")
    import train

    from vision.embedder import OnnxEmbedder
    from vision.preprocess import CROP_SIZE

    monkeypatch.setattr(build, "DATA", tmp_path)
    scenes = build.generate("tiny", "mixed", 4, 5, workers=1)
    crops, values, _ = train.classifier_crops(train.iter_scenes([scenes], None),
                                              np.random.default_rng(0), 2, 0, 0)
    crops, values = crops[values >= 0], values[values >= 0]
    net = train.train_embedder(crops, values, steps=20, batch=16, seed=3, width=8)
    plain = tmp_path / "embedder.onnx"
    train.export(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE), plain, ["crops"],
                 ["embedding"], {"crops": {0: "n"}}, {"embed_dim": str(train.EMBED_DIM)})
    int8 = tmp_path / "int8.onnx"
    args = ["embedder-int8", "--data", str(scenes), "--embedder", str(plain), "--seed", "3"]
    assert train.main([*args, "--out", str(int8)]) == 0

    meta = _in_8_bit_integers_with_float(int8, ("/ReduceMean", "/embed"))
    assert meta["embed_dim"] == str(train.EMBED_DIM)
    calibration = json.loads(meta[train.INT8_KEY])
    # four scenes give far fewer crops than the step takes at most: it says how many it had
    assert calibration["seed"] == 3 and 0 < calibration["crops"] < train.CALIBRATION_CROPS
    want, got = (OnnxEmbedder(f, views=1).embed(list(crops)) for f in (plain, int8))
    assert got.shape == want.shape == (len(crops), train.EMBED_DIM)
    assert float(np.median((got * want).sum(axis=1))) > 0.99
    _refused_in_8_bit_integers_already([*args[:3], "--embedder", str(int8)], tmp_path, capsys)


def _in_8_bit_integers_with_float(path: Path, float_layers: tuple[str, ...]) -> dict[str, str]:
    """Checks that the crop network at `path` has every convolution but the first (which
    reads the crops themselves) fed in 8-bit integers and nothing of `float_layers`
    quantized; its metadata."""
    import onnx

    model = onnx.load(str(path))
    quantized = {n.input[0] for n in model.graph.node if n.op_type == "QuantizeLinear"}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert convs[0].input[0] == "crops"
    assert all(n.input[0].endswith("_DequantizeLinear_Output") for n in convs[1:])
    assert not any(name.startswith(float_layers) for name in quantized)
    return {p.key: p.value for p in model.metadata_props}


def _refused_in_8_bit_integers_already(args: list[str], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`train.main(args)`, given a network in 8-bit integers already, refuses in one line
    and writes nothing."""
    import train

    with pytest.raises(SystemExit) as refused:
        train.main([*args, "--out", str(tmp_path / "q2.onnx")])
    assert refused.value.code == 2 and not (tmp_path / "q2.onnx").exists()
    assert "in 8-bit integers already" in capsys.readouterr().err


def test_the_detector_trains_in_the_cpus_precision_and_exports_float32(
        tmp_path: Path) -> None:
    """`train.py detector` also trains under bfloat16 autocast where the CPU has it, its
    losses in float32; the ONNX file is float32 and reads like the trained network."""
    torch = pytest.importorskip("torch")
    import train

    rng = np.random.default_rng(0)
    samples = [train.DetSample(rng.integers(0, 256, (200, 240, 3), dtype=np.uint8),
                               np.array([[100.0, 90.0]], np.float32),
                               np.array([[30.0, 32.0]], np.float32),
                               np.array([[0.0, 4.0]], np.float32)) for _ in range(3)]
    batch = train.det_batch(samples, np.array([0, 1]), rng, 64)
    losses = train.detector_losses(train.DiceDetector(), batch, torch.Generator())
    assert all(v.dtype == torch.float32 and torch.isfinite(v) for v in losses)
    net = train.train_detector(samples, steps=2, batch=2, crop=64, seed=3)
    image = torch.rand(1, 3, 64, 96) - 0.5
    _exports_float32_that_reads_like(net, image, image, tmp_path / "detector.onnx", "image",
                                     ["out"], {"image": {2: "height", 3: "width"}})


def test_the_augmentation_is_the_colour_jitter_and_defocus_it_says() -> None:
    """The crop networks' augmentation, computed the fast way, is the jitter written out
    step by step (brightness, contrast, gain, noise, from the same draws) and the defocus
    is a 3 x 3 mean, as `avg_pool2d` takes it."""
    torch = pytest.importorskip("torch")
    import train
    from torch.nn import functional as F

    x = torch.rand(4, 3, 16, 16) - 0.5
    got = train.color_jitter(x, torch.Generator().manual_seed(5))
    gen = torch.Generator().manual_seed(5)
    gain = 1 + 0.25 * (torch.rand(4, 3, 1, 1, generator=gen) - 0.5)
    bright = 0.3 * (torch.rand(4, 1, 1, 1, generator=gen) - 0.5)
    contrast = 0.6 + 0.8 * torch.rand(4, 1, 1, 1, generator=gen)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    want = ((x - mean) * contrast + mean + 0.5) * gain - 0.5 + bright
    want = want + 0.02 * torch.rand(4, 1, 1, 1, generator=gen) * torch.randn(
        want.shape, generator=gen)
    assert torch.allclose(got, want.clamp(-0.5, 0.5), atol=1e-6)
    assert not torch.equal(got, x.clamp(-0.5, 0.5))
    defocused = np.random.default_rng(
        next(seed for seed in range(100) if np.random.default_rng(seed).random() < 0.3))
    blurred = train.jittered(x, defocused, torch.Generator().manual_seed(5))
    assert blurred.is_contiguous(memory_format=train.FAST_LAYOUT)
    assert torch.allclose(blurred, F.avg_pool2d(got, 3, 1, 1), atol=1e-6)


def test_off_centre_crops_lie_towards_the_side_faces_and_keep_the_top_faces_value() -> None:
    """`train.py classifier --off-centre`: crops cut where the detector's misplaced finds
    lie — off the top face towards the body of a die seen at an angle — labelled with the
    top face's value (only where PyTorch, the `train` extra, is installed)."""
    pytest.importorskip("torch")
    import train

    from vision.preprocess import CROP_SIZE
    from vision.reading import DieLabel, SceneLabel

    image = np.full((300, 400, 3), 60, np.uint8)
    image[125:185, 180:220] = 255  # a die seen at an angle: its body lies below the top face
    image[137:144, 197:204] = (0, 0, 255)  # a red mark on the top face's centre (200, 140)
    label = SceneLabel("one.jpg", 400, 300, (DieLabel(3, (180, 125, 220, 185), (200, 140)),))
    crops, values, quality = train.classifier_crops(
        [(image, label, "synth")], np.random.default_rng(2), per_synth_die=0, per_real_die=0,
        negatives_per_scene=0, turn_upright=True, off_centre_per_die=40)
    assert crops.shape == (40, CROP_SIZE, CROP_SIZE, 3)
    assert (values == train.face_index(3)).all() and (quality == 0).all()
    angles, distances = [], []
    for crop in crops:
        c = crop.astype(int)
        ys, xs = np.nonzero(c[..., 2] - c[..., 1] > 40)  # the red mark
        dx, dy = xs.mean() - CROP_SIZE / 2, ys.mean() - CROP_SIZE / 2
        angles.append(np.degrees(np.arctan2(-dy, dx)))  # 90: straight up in the crop
        distances.append(np.hypot(dx, dy) / CROP_SIZE)  # in crop sides (about die sizes)
    # the crop moved down onto the body, so the top face shows above its centre
    assert abs(np.median(angles) - 90) < 15 and np.mean(np.array(angles) > 0) >= 0.9
    assert min(distances) > 0.05 and max(distances) < 0.45
    assert np.median(distances) == pytest.approx(np.mean(train.OFF_CENTRE), abs=0.08)


def test_printed_die_crops_are_drawn_again_alike_for_a_seed_each_with_a_face_in_its_middle(
        ) -> None:
    """`train.py classifier --printed N`: the crops of found pictograms (printed.py) are the
    same for the same seed, other for another, and each shows a face across its middle:
    pips against the face, not a blank page."""
    from printed import printed_die_crops

    from vision.preprocess import CROP_SIZE

    crops = printed_die_crops(40, np.random.default_rng(5))
    assert crops.shape == (40, CROP_SIZE, CROP_SIZE, 3) and crops.dtype == np.uint8
    assert np.array_equal(crops, printed_die_crops(40, np.random.default_rng(5)))
    assert not np.array_equal(crops, printed_die_crops(40, np.random.default_rng(6)))
    quarter = CROP_SIZE // 4
    middle = crops[:, quarter:-quarter, quarter:-quarter].astype(np.float32).mean(axis=3)
    spread = middle.reshape(len(crops), -1).std(axis=1)
    assert spread.min() > 4 and np.median(spread) > 15
    assert printed_die_crops(0, np.random.default_rng(5)).shape == (0, CROP_SIZE, CROP_SIZE, 3)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_lanes_run_side_by_side_each_step_after_the_steps_it_needs(tmp_path: Path) -> None:
    """`make models`' two lanes: a step waits for the other lane's step it needs, and not
    for anything else."""
    log = tmp_path / "log"

    def step(name: str, seconds: float, needs: tuple[str, ...] = ()) -> build.Step:
        code = (f"import time; open({str(log)!r}, 'a').write('start {name}\\n'); "
                f"time.sleep({seconds}); open({str(log)!r}, 'a').write('end {name}\\n')")
        return build.Step(name, _python(code), needs)

    build.run_lanes([[step("detector", 2.0), step("classifier", 0.1, ("detector",))],
                     [step("scenes", 0.1), step("body", 0.1, ("detector",))]])
    events = log.read_text().splitlines()
    assert events.index("end scenes") < events.index("end detector")  # side by side
    assert events.index("end detector") < events.index("start body")
    assert events.index("end detector") < events.index("start classifier")
    assert len(events) == 8


def test_a_failing_step_stops_the_other_lane(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    slow = build.Step("slow", _python(f"import time; time.sleep(30); "
                                      f"open({str(marker)!r}, 'w')"))
    with pytest.raises(build.subprocess.CalledProcessError):
        build.run_lanes([[slow], [build.Step("broken", _python("raise SystemExit(3)"))]])
    assert not marker.exists()


def test_steps_that_wait_for_a_step_no_lane_runs_are_an_error() -> None:
    with pytest.raises(RuntimeError, match="no lane runs"):
        build.run_lanes([[build.Step("body", _python("pass"), ("detector",))]])


def test_the_step_left_running_is_told_it_may_take_the_second_core(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "WIDEN_AFTER_S", 1.0)
    told = tmp_path / "told"
    code = ("import signal, time\n"
            f"signal.signal(signal.SIGUSR1, lambda *_: open({str(told)!r}, 'w'))\n"
            "for _ in range(100):\n"
            "    time.sleep(0.05)\n")
    build.run_lanes([[build.Step("classifier", _python(code), widens=True)],
                     [build.Step("refiner", _python("pass"))]])
    assert told.exists()


def test_the_embedders_pool_crops_come_back_as_written(tmp_path: Path) -> None:
    """`train.py pool-crops` writes what `train.py embedder` reads (only where PyTorch,
    the `train` extra, is installed)."""
    pytest.importorskip("torch")
    import train

    crops = np.random.default_rng(0).integers(0, 256, (5, 64, 64, 3), dtype=np.uint8)
    faces = ["pool-a/1", "pool-a/2", "pool-b/1", "pool-b/1", "pool-c/6"]
    path = tmp_path / "pool-crops.npz"
    train.save_identity_crops(path, crops, faces)
    back, back_faces = train.load_identity_crops(path)
    assert np.array_equal(back, crops) and back_faces == faces
    assert [p.name for p in tmp_path.iterdir()] == ["pool-crops.npz"]


def test_the_detector_samples_come_back_from_the_cache_as_made_and_are_made_again_for_other_data(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`train.py --samples-cache`: the detector's tuning and body head read the scenes the
    detector shrank, unless the data changed (only where PyTorch, the `train` extra, is
    installed)."""
    pytest.importorskip("torch")
    import train

    monkeypatch.setattr(build, "DATA", tmp_path)
    folders = [build.generate("a", "pips", 3, 5, workers=1),
               build.generate("b", "animals", 2, 6, workers=1)]
    cache = tmp_path / "cache"
    made = train.cached_detector_samples(folders, None, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["index.npz", "pixels.npy"]
    want = train.detector_samples(train.iter_scenes(folders, None))
    back = train.cached_detector_samples(folders, None, cache)
    assert len(made) == len(back) == len(want) == 5
    for a, b in zip(back, want, strict=True):
        for field in ("image", "centers", "sizes", "bodies"):
            assert np.array_equal(getattr(a, field), getattr(b, field))
            assert getattr(a, field).dtype == getattr(b, field).dtype
    assert isinstance(back[0].image, np.memmap)  # read from the file, not decoded again
    assert back[0].centers.base is back[-1].centers.base  # the index read once, not per scene

    labels = folders[1] / "labels.jsonl"  # other labels: another data set
    labels.write_text(labels.read_text().replace('"value": ', '"value":'))
    again = train.cached_detector_samples(folders, None, cache)
    assert not isinstance(again[0].image, np.memmap)
    assert len(train.cached_detector_samples(folders[:1], None, cache)) == 3
