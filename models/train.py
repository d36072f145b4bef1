"""Train the dice detector (and its body head), the face classifier and the embedder, and
export them to ONNX.

    python models/train.py detector --data DIR [DIR ...] --real Train --out models/detector.onnx
    python models/train.py detector-tune --data DIR [DIR ...] --real Train \
        --detector models/detector.onnx --hard DIR --out models/detector.onnx
    python models/train.py body --data DIR [DIR ...] --real Train --detector models/detector.onnx \
        --out models/detector.onnx    (and its head in models/detector.body.onnx)
    python models/train.py classifier --data DIR [DIR ...] --real Train --out models/classifier.onnx
    python models/train.py classifier-int8 --data DIR [DIR ...] --real Train \
        --classifier models/classifier.onnx --out models/classifier.onnx
    python models/train.py refiner --data DIR [DIR ...] --real Train --out models/refiner.onnx
    python models/train.py refiner-int8 --data DIR [DIR ...] --real Train \
        --refiner models/refiner.onnx --out models/refiner.onnx
    python models/train.py pool-crops --identity-pool POOL --out data/pool-crops.npz
    python models/train.py embedder --data DIR [DIR ...] --real Train \
        --pool-crops data/pool-crops.npz --out models/embedder.onnx
    python models/train.py embedder-int8 --data DIR [DIR ...] --real Train \
        --embedder models/embedder.onnx --out models/embedder.onnx

Data folders hold images and `labels.jsonl` (vision/reading.py); `--real Train` adds the
real photos' training split (never Valid). Everything is seeded: the same inputs give the
same model. Runs on the CPU; `make models` calls it through models/build.py.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nets import (  # noqa: E402
    EMBED_DIM,
    FACES,
    QUALITY,
    BodyAtCells,
    BodyHead,
    CentreRefiner,
    DiceDetector,
    FaceClassifier,
    FaceEmbedder,
)
from printed import printed_die_crops  # noqa: E402

from vision.datasets import load_real  # noqa: E402
from vision.detector import BODY_ID, BODY_INPUTS  # noqa: E402
from vision.files import write_durably  # noqa: E402
from vision.models import body_path  # noqa: E402
from vision.preprocess import (  # noqa: E402
    CROP_SIZE,
    DETECTOR_LONG_SIDE,
    DETECTOR_STRIDE,
    REFINE_SPAN,
    UPRIGHT_MIN,
    crop_die,
    detector_image,
    upright_angle,
)
from vision.reading import DieLabel, SceneLabel, load_labels  # noqa: E402
from vision.refiner import MAX_MOVE  # noqa: E402


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


Scene = tuple[np.ndarray, SceneLabel, str]


def iter_scenes(folders: list[Path], real_split: str | None, every: int = 1
                ) -> Iterator[Scene]:
    """(image, label, source) for every scene (or every `every`-th of each folder and of
    the real split) of the folders and the real split, one at a time: full-size images are
    never all in memory at once."""
    for folder in folders:
        for label in load_labels(folder)[::every]:
            image = cv2.imread(str(folder / label.image), cv2.IMREAD_COLOR)
            if image is not None:
                yield image, label, "synth"
    if real_split:
        for path, label in load_real(real_split)[::every]:
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is not None:
                yield image, label, "real"


def face_index(value: object) -> int:
    return FACES.index(str(value))


def die_size(box: tuple[float, float, float, float]) -> float:
    return max(box[2] - box[0], box[3] - box[1])


# ---------------------------------------------------------------------------------------
# Detector
# ---------------------------------------------------------------------------------------


@dataclass
class DetSample:
    image: np.ndarray  # at detector scale
    centers: np.ndarray  # N x 2 (input pixels)
    sizes: np.ndarray  # N x 2 (box w, h in input pixels)
    bodies: np.ndarray  # N x 2 (box centre - top-face centre, input pixels)


def body_offset(die: DieLabel) -> tuple[float, float]:
    """From a labelled die's top-face centre to the centre of its visible body (pixels)."""
    return ((die.box[0] + die.box[2]) / 2 - die.center[0],
            (die.box[1] + die.box[3]) / 2 - die.center[1])


def detector_samples(scenes: Iterable[Scene]) -> list[DetSample]:
    samples = []
    for image, label, _ in scenes:
        # shrunk as the reader shrinks each frame: the detector reads pictures as it learnt
        small, s = detector_image(image)
        centers = np.array([d.center for d in label.dice], np.float32).reshape(-1, 2) * s
        sizes = np.array([(d.box[2] - d.box[0], d.box[3] - d.box[1]) for d in label.dice],
                         np.float32).reshape(-1, 2) * s
        bodies = np.array([body_offset(d) for d in label.dice], np.float32).reshape(-1, 2) * s
        samples.append(DetSample(small, centers, sizes, bodies))
    return samples


def samples_key(folders: list[Path], real_split: str | None) -> str:
    """What detector samples are made from: each folder's labels and stamp (the generator
    that rendered it), the real split's files, the detector's scale."""
    digest = hashlib.sha256(f"{DETECTOR_LONG_SIDE}".encode())
    for folder in folders:
        digest.update(str(folder).encode() + b"\0" + (folder / "labels.jsonl").read_bytes())
        stamp = folder / "stamp.json"
        digest.update(stamp.read_bytes() if stamp.is_file() else b"-")
    if real_split:
        for path, _ in load_real(real_split):
            info = path.stat()
            digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    return digest.hexdigest()


def write_pixels(file: IO[bytes], images: list[np.ndarray]) -> None:
    """The images' pixels one after another as one flat uint8 .npy array, written image
    by image (not joined in memory first: 3.3 GB for `make models`' scenes)."""
    total = sum(image.size for image in images)
    np.lib.format.write_array_header_1_0(
        file, {"descr": "|u1", "fortran_order": False, "shape": (total,)})
    for image in images:
        file.write(np.ascontiguousarray(image, np.uint8).data)


def cached_detector_samples(folders: list[Path], real_split: str | None,
                            cache: Path | None) -> list[DetSample]:
    """`detector_samples` of the folders and the real split, kept in the folder `cache`
    (None: not kept) for the next step that trains on the same scenes: the detector, its
    tuning and its body head each spend about 90 seconds of a core decoding the same
    11 000 photos otherwise (models/README.md, "Detector samples decoded once"). The
    pictures are read back mapped from the file, not copied."""
    if cache is None:
        return detector_samples(iter_scenes(folders, real_split))
    key = samples_key(folders, real_split)
    index_path, pixels_path = cache / "index.npz", cache / "pixels.npy"
    if index_path.is_file() and pixels_path.is_file():
        with np.load(index_path) as index:
            # each index[name] reads the array from the file again: once each, here
            kept = {name: index[name] for name in index.files}
        if str(kept["key"]) == key:
            pixels = np.load(pixels_path, mmap_mode="r")
            shapes, dice = kept["shapes"], kept["dice"]
            sizes = np.prod(shapes, axis=1)
            return [DetSample(pixels[end - size:end].reshape(shape),
                              *(kept[name][last - n:last]
                                for name in ("centers", "sizes", "bodies")))
                    for end, size, shape, last, n in zip(np.cumsum(sizes), sizes, shapes,
                                                         np.cumsum(dice), dice, strict=True)]
    samples = detector_samples(iter_scenes(folders, real_split))
    # the pictures first, the index (with the key) last: an index names whole pictures
    index_path.unlink(missing_ok=True)
    write_durably(pixels_path, lambda f: write_pixels(f, [s.image for s in samples]))
    write_durably(index_path, lambda f: np.savez(
        f, key=np.array(key), shapes=np.array([s.image.shape for s in samples], np.int64),
        dice=np.array([len(s.centers) for s in samples], np.int64),
        centers=np.concatenate([s.centers for s in samples]),
        sizes=np.concatenate([s.sizes for s in samples]),
        bodies=np.concatenate([s.bodies for s in samples])))
    return samples


def color_jitter(batch: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Brightness, contrast, per-channel gain and noise on a [-0.5, 0.5] batch."""
    n = batch.shape[0]
    gain = 1 + 0.25 * (torch.rand(n, 3, 1, 1, generator=gen) - 0.5)
    bright = 0.3 * (torch.rand(n, 1, 1, 1, generator=gen) - 0.5)
    contrast = 0.6 + 0.8 * torch.rand(n, 1, 1, 1, generator=gen)
    mean = batch.mean(dim=(1, 2, 3), keepdim=True)
    # ((batch - mean) * contrast + mean + 0.5) * gain - 0.5 + bright, as one multiply-add
    # over the batch: a classifier batch's jitter takes 7 ms on one thread, 17 ms as
    # four passes over it.
    shift = ((1 - contrast) * mean + 0.5) * gain - 0.5 + bright
    out = torch.addcmul(shift, batch, contrast * gain)
    noise = 0.02 * torch.rand(n, 1, 1, 1, generator=gen)
    out.addcmul_(noise, torch.randn(out.shape, generator=gen))
    return out.clamp_(-0.5, 0.5)


@dataclass
class DetBatch:
    """Random crops of detector samples and what the networks must say about them."""

    x: torch.Tensor  # N x 3 x size x size
    heat: torch.Tensor  # N x 1 x g x g: CenterNet heatmap
    reg: torch.Tensor  # N x 4 x g x g: sub-cell offset, log w, log h at each centre cell
    mask: torch.Tensor  # N x 1 x g x g: the centre cells
    body: torch.Tensor  # N x 2 x g x g: body offset in die sizes, on the 3 x 3 cells ...
    body_mask: torch.Tensor  # ... around each centre cell


def det_batch(samples: list[DetSample], idx: np.ndarray, rng: np.random.Generator,
              size: int) -> DetBatch:
    """Random crops (with scale and flips) and their CenterNet and body-offset targets."""
    g = size // DETECTOR_STRIDE
    images = np.zeros((len(idx), size, size, 3), np.uint8)
    heat = np.zeros((len(idx), 1, g, g), np.float32)
    reg = np.zeros((len(idx), 4, g, g), np.float32)
    mask = np.zeros((len(idx), 1, g, g), np.float32)
    body = np.zeros((len(idx), 2, g, g), np.float32)
    body_mask = np.zeros((len(idx), 1, g, g), np.float32)
    yy, xx = np.mgrid[0:g, 0:g].astype(np.float32)
    for b, i in enumerate(idx):
        sample = samples[int(i)]
        scale = float(np.exp(rng.uniform(np.log(0.7), np.log(1.4))))
        src = sample.image
        h, w = src.shape[:2]
        # Choose a crop window (in source pixels) of side size/scale, sometimes on a die.
        side = size / scale
        if len(sample.centers) and rng.random() < 0.7:
            c = sample.centers[rng.integers(len(sample.centers))]
            x0 = c[0] - rng.uniform(0.15, 0.85) * side
            y0 = c[1] - rng.uniform(0.15, 0.85) * side
        else:
            x0 = rng.uniform(min(0, w - side), max(0, w - side))
            y0 = rng.uniform(min(0, h - side), max(0, h - side))
        m = np.array([[scale, 0, -x0 * scale], [0, scale, -y0 * scale]], np.float32)
        flip_x, flip_y = rng.random() < 0.5, rng.random() < 0.5
        if flip_x:
            m[0] = -m[0]
            m[0, 2] += size - 1
        if flip_y:
            m[1] = -m[1]
            m[1, 2] += size - 1
        images[b] = cv2.warpAffine(src, m, (size, size), flags=cv2.INTER_LINEAR,
                                   borderMode=cv2.BORDER_REFLECT)
        for (cx, cy), (bw, bh), (ox, oy) in zip(sample.centers, sample.sizes, sample.bodies,
                                                strict=True):
            x = m[0, 0] * cx + m[0, 1] * cy + m[0, 2]
            y = m[1, 0] * cx + m[1, 1] * cy + m[1, 2]
            if not (0 <= x < size and 0 <= y < size):
                continue
            gx, gy = x / DETECTOR_STRIDE, y / DETECTOR_STRIDE
            bw_s, bh_s = bw * scale, bh * scale
            sigma = max(0.8, 0.12 * max(bw_s, bh_s) / DETECTOR_STRIDE)
            blob = np.exp(-((xx - gx) ** 2 + (yy - gy) ** 2) / (2 * sigma**2))
            heat[b, 0] = np.maximum(heat[b, 0], blob)
            ix, iy = min(int(gx), g - 1), min(int(gy), g - 1)
            heat[b, 0, iy, ix] = 1.0
            reg[b, :, iy, ix] = (gx - ix, gy - iy, math.log(max(bw_s, 1.0)),
                                 math.log(max(bh_s, 1.0)))
            mask[b, 0, iy, ix] = 1.0
            # The flips turn the body offset too (m's diagonal is ±scale).
            span = max(bw, bh, 1.0)
            near = (slice(max(0, iy - 1), iy + 2), slice(max(0, ix - 1), ix + 2))
            body[b, 0][near] = np.sign(m[0, 0]) * ox / span
            body[b, 1][near] = np.sign(m[1, 1]) * oy / span
            body_mask[b, 0][near] = 1.0
    x = torch.from_numpy(images[..., ::-1].copy()).permute(0, 3, 1, 2).float() / 255.0 - 0.5
    return DetBatch(x, torch.from_numpy(heat), torch.from_numpy(reg), torch.from_numpy(mask),
                    torch.from_numpy(body), torch.from_numpy(body_mask))


#: Channels-last tensors: PyTorch's CPU convolutions train about 1.3× faster on them here.
#: The exported ONNX is the same.
FAST_LAYOUT = torch.channels_last

#: Where the CPU computes in bfloat16 (AVX-512 BF16, AMX), every network trains under
#: autocast: the crop networks (classifier, refiner, embedder) about 1.7-1.9× faster steps,
#: so twice the scenes fit in `make models`; the detector's steps 1.3× (models/README.md,
#: "The detector trained in bfloat16; the body head last in its lane"). The weights,
#: optimiser and losses stay float32, and the exported ONNX is float32 either way;
#: elsewhere the same recipe runs in float32.
BFLOAT16 = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
#: What each network's metadata says it trained in.
PRECISION = "bfloat16" if BFLOAT16 else "float32"


def in_bfloat16() -> contextlib.AbstractContextManager[None]:
    """Autocast to bfloat16 where the CPU has it (BFLOAT16): the networks' forward passes;
    their outputs are taken back to float32 before any loss."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=BFLOAT16)


def warmup_cosine(opt: torch.optim.Optimizer, steps: int, warm_up: bool = True
                  ) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over the first 5 % of steps (unless not `warm_up`: a trained network
    tuned further), then a cosine decay to zero."""
    warm = max(1, steps // 20) if warm_up else 1

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warm) * 0.5 * (1 + math.cos(math.pi * step / steps))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def seeded(seed: int) -> tuple[np.random.Generator, torch.Generator]:
    """Seed torch (the weights' initialisation: build the network after this) and return
    the numpy and torch generators a training loop draws its batches from."""
    torch.manual_seed(seed)
    return np.random.default_rng(seed), torch.Generator().manual_seed(seed)


def adamw(params: Iterable[torch.nn.Parameter], steps: int, weight_decay: float,
          lr: float = 3e-3, warm_up: bool = True
          ) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """The optimiser every network here trains with, and its warm-up + cosine schedule."""
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    return opt, warmup_cosine(opt, steps, warm_up)


def descend(opt: torch.optim.Optimizer, sched: torch.optim.lr_scheduler.LRScheduler,
            loss: torch.Tensor) -> None:
    """One optimiser step down `loss`, and one step of the learning-rate schedule."""
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()


def focal_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss on the heatmap."""
    pred = pred.clamp(1e-4, 1 - 1e-4)
    pos = target.eq(1).float()
    neg = 1 - pos
    pos_loss = torch.log(pred) * (1 - pred) ** 2 * pos
    neg_loss = torch.log(1 - pred) * pred**2 * (1 - target) ** 4 * neg
    n = pos.sum().clamp(min=1)
    return -(pos_loss.sum() + neg_loss.sum()) / n


def train_detector(samples: list[DetSample], steps: int, batch: int, crop: int,
                   seed: int) -> DiceDetector:
    rng, gen = seeded(seed)
    net = DiceDetector().to(memory_format=FAST_LAYOUT)
    opt, sched = adamw(net.parameters(), steps, weight_decay=1e-4)
    net.train()
    t0 = time.time()
    for step in range(steps):
        b = det_batch(samples, rng.integers(0, len(samples), batch), rng, crop)
        losses = detector_losses(net, b, gen)
        descend(opt, sched, losses[0])
        if step % 100 == 0 or step == steps - 1:
            log(f"detector step {step}/{steps} {format_losses(losses)} {time.time() - t0:.0f}s")
    return net.eval()


def detector_losses(net: DiceDetector, b: DetBatch, gen: torch.Generator
                    ) -> tuple[torch.Tensor, ...]:
    """The detector's loss on a batch (colour-jittered here) and its parts: the heatmap's
    focal loss, the sub-cell offset's and the size's L1 at the dice's centre cells."""
    with in_bfloat16():
        out = net(color_jitter(b.x, gen).contiguous(memory_format=FAST_LAYOUT))
    out = out.float()
    loss_heat = focal_loss(out[:, 0:1], b.heat)
    n = b.mask.sum().clamp(min=1)
    loss_off = (F.l1_loss(out[:, 1:3], b.reg[:, 0:2], reduction="none") * b.mask).sum() / n
    loss_size = (F.l1_loss(out[:, 3:5], b.reg[:, 2:4], reduction="none") * b.mask).sum() / n
    return loss_heat + loss_off + 0.5 * loss_size, loss_heat, loss_off, loss_size


def format_losses(losses: tuple[torch.Tensor, ...]) -> str:
    total, heat, off, size = (v.item() for v in losses)
    return f"loss {total:.3f} (heat {heat:.3f} off {off:.3f} size {size:.3f})"


#: Tuning the trained detector on the scenes it finds dice in worst (build.py's HARD_SET:
#: printed cloths, noisy pictures): this share of every batch drawn from them and the rest
#: from its own training scenes, at this learning rate (a thirtieth of training's), falling
#: to 0 on a cosine. See models/README.md, "The detector tuned on the scenes it finds dice
#: in worst": fewer extra finds with every seed; at a tenth of training's rate, more silent
#: errors on taught sets.
TUNE_HARD_SHARE = 0.3
TUNE_LR = 1e-4


def detector_from_onnx(model: onnx.ModelProto) -> DiceDetector:
    """The network of an exported detector, to train further. The export folded each batch
    norm into its convolution; here each batch norm holds the folded bias and passes the
    rest through (mean 0, variance 1), so the network computes what the file does, and
    `tune_detector` keeps those statistics fixed."""
    from onnx import numpy_helper

    weights = {t.name: numpy_helper.to_array(t).copy() for t in model.graph.initializer}
    convs = [node for node in model.graph.node if node.op_type == "Conv"]
    net = DiceDetector()
    layers = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    if len(layers) != len(convs):
        raise ValueError(f"the file has {len(convs)} convolutions, the detector {len(layers)}")
    norm_after = {id(seq[0]): seq[1] for seq in net.modules()
                  if isinstance(seq, torch.nn.Sequential) and len(seq) == 3
                  and isinstance(seq[1], torch.nn.BatchNorm2d)}
    with torch.no_grad():
        for layer, node in zip(layers, convs, strict=True):
            weight, bias = (torch.from_numpy(weights[name]) for name in node.input[1:3])
            layer.weight.copy_(weight)
            norm = norm_after.get(id(layer))
            if norm is None:
                layer.bias.copy_(bias)
                continue
            norm.running_mean.zero_()
            norm.running_var.fill_(1 - norm.eps)
            norm.weight.fill_(1.0)
            norm.bias.copy_(bias)
    return net.eval()


def tune_detector(net: DiceDetector, samples: list[DetSample], hard: list[DetSample],
                  steps: int, batch: int, crop: int, seed: int) -> DiceDetector:
    """`net` trained further, TUNE_HARD_SHARE of each batch's crops from `hard`. Its batch
    norms keep their statistics (they are the folded ones of `detector_from_onnx`); their
    scale and shift learn with the rest."""
    rng, gen = seeded(seed)
    net = net.to(memory_format=FAST_LAYOUT)
    opt, sched = adamw(net.parameters(), steps, weight_decay=1e-4, lr=TUNE_LR, warm_up=False)
    net.train()
    for module in net.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.eval()
    both = samples + hard
    t0 = time.time()
    for step in range(steps):
        n_hard = int(rng.binomial(batch, TUNE_HARD_SHARE))
        idx = np.concatenate([rng.integers(0, len(samples), batch - n_hard),
                              len(samples) + rng.integers(0, len(hard), n_hard)])
        losses = detector_losses(net, det_batch(both, idx, rng, crop), gen)
        descend(opt, sched, losses[0])
        if step % 100 == 0 or step == steps - 1:
            log(f"detector tuning step {step}/{steps} {format_losses(losses)} "
                f"{time.time() - t0:.0f}s")
    return net.eval()


def detector_only(detector: onnx.ModelProto) -> onnx.ModelProto:
    """The detector without its body head's inputs among its outputs (one written by an
    earlier `train.py body`): its `out` alone."""
    import onnx.utils

    model = onnx.ModelProto()
    model.CopyFrom(detector)
    renamed(model, dict(zip(BODY_INPUTS, (BodyHead.FEATURES, BodyHead.CONTEXT), strict=True)))
    model = onnx.utils.Extractor(model).extract_model(["image"], ["out"])
    model.metadata_props.extend(p for p in detector.metadata_props
                                if not p.key.startswith("body_"))
    return model


def renamed(model: onnx.ModelProto, names: dict[str, str]) -> None:
    """Renames tensors of `model`'s graph (`names`: from → to), in place."""
    for node in model.graph.node:
        node.input[:] = [names.get(n, n) for n in node.input]
        node.output[:] = [names.get(n, n) for n in node.output]
    for value in [*model.graph.output, *model.graph.value_info]:
        value.name = names.get(value.name, value.name)


def feature_session(detector: onnx.ModelProto, threads: int) -> ort.InferenceSession:
    """The frozen detector up to the tensors the body head reads, for batches of crops."""
    import onnx.shape_inference
    import onnx.utils

    inferred = onnx.shape_inference.infer_shapes(detector)
    model = onnx.utils.Extractor(inferred).extract_model(
        ["image"], [BodyHead.FEATURES, BodyHead.CONTEXT])
    # Any batch size: drop the shapes inferred for a batch of one.
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
    del model.graph.value_info[:]
    for value in model.graph.output:
        value.type.tensor_type.ClearField("shape")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def train_body_head(samples: list[DetSample], detector: onnx.ModelProto, steps: int,
                    batch: int, crop: int, seed: int, width: int, threads: int) -> BodyHead:
    """The body head on the frozen detector's features: the detector's own outputs stay
    exactly as they were. Trained on the detector's crops (same scale, flips, colour)."""
    rng, gen = seeded(seed)
    session = feature_session(detector, threads)
    head = BodyHead(width)
    opt, sched = adamw(head.parameters(), steps, weight_decay=1e-4)
    t0 = time.time()
    for step in range(steps):
        b = det_batch(samples, rng.integers(0, len(samples), batch), rng, crop)
        features, context = session.run(None, {"image": color_jitter(b.x, gen).numpy()})
        out = head(torch.from_numpy(features), torch.from_numpy(context))
        loss = (F.smooth_l1_loss(out, b.body, reduction="none", beta=0.05) * b.body_mask
                ).sum() / (2 * b.body_mask.sum().clamp(min=1))
        descend(opt, sched, loss)
        if step % 200 == 0 or step == steps - 1:
            log(f"body head step {step}/{steps} loss {loss.item():.4f} {time.time() - t0:.0f}s")
    return head.eval()


def with_body_head(detector: onnx.ModelProto, head: BodyHead
                   ) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """The detector with the tensors its body head reads as outputs beside `out`
    (vision.detector.BODY_INPUTS), and the head at chosen cells (nets.BodyAtCells,
    vision.detector.BodyOffsets); both carry the head's id (vision.detector.BODY_ID)."""
    import io

    buffer = io.BytesIO()
    dummy = (torch.zeros(2, head.local.in_channels, 5, 5),
             torch.zeros(2, head.context.in_channels, 3, 3), torch.ones(2, 1, 3, 3))
    torch.onnx.export(BodyAtCells(head).eval(), dummy, buffer,
                      input_names=["features", "context", "inside"], output_names=["body"],
                      dynamic_axes={name: {0: "n"} for name in
                                    ("features", "context", "inside", "body")},
                      opset_version=17, dynamo=False)
    body = onnx.load_from_string(buffer.getvalue())
    base = onnx.ModelProto()
    base.CopyFrom(detector)
    renamed(base, dict(zip((BodyHead.FEATURES, BodyHead.CONTEXT), BODY_INPUTS, strict=True)))
    base.graph.output.extend(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT,
                                                                [None] * 4)
                             for name in BODY_INPUTS)
    body_id = hashlib.sha256(body.SerializeToString()).hexdigest()[:16]
    for model in (base, body):
        entry = model.metadata_props.add()
        entry.key, entry.value = BODY_ID, body_id
        onnx.checker.check_model(model)
    return base, body


# ---------------------------------------------------------------------------------------
# Classifier
# ---------------------------------------------------------------------------------------

QUALITY_OF_FLAG = {None: "ok", "tilted": "tilted", "stacked": "stacked",
                   "unreadable": "unreadable"}


#: Degrees (one standard deviation) an upright crop is turned off upright in training: the
#: reader turns by the detector's estimate of the body offset, which is off by about that.
UPRIGHT_JITTER = 12.0


def crop_turn(upright: float | None, rng: np.random.Generator) -> float:
    """The turn of a training crop: near upright where the die is cut upright
    (vision.preprocess.upright_angle), any turn where it is not."""
    return rng.uniform(0, 360) if upright is None else upright + rng.normal(0, UPRIGHT_JITTER)


#: Die sizes an off-centre training crop lies from its top face (uniform between): the
#: detector's finds of the dice the reader misreads lie a median 0.2 die sizes off
#: (quartiles 0.06-0.32), the crops the classifier otherwise learns from at most a tenth.
OFF_CENTRE = (0.08, 0.35)


def off_centre(body: tuple[float, float], rng: np.random.Generator) -> tuple[float, float]:
    """Where an off-centre crop of a die is cut, from its top face, in die sizes: where the
    detector's misplaced finds lie — towards the side faces (the body offset `body`, in die
    sizes) for a die seen at an angle, any way for one seen from above."""
    r = rng.uniform(*OFF_CENTRE)
    if math.hypot(*body) >= UPRIGHT_MIN:
        a = math.atan2(body[1], body[0]) + rng.normal(0, math.radians(30))
    else:
        a = rng.uniform(0, 2 * math.pi)
    return r * math.cos(a), r * math.sin(a)


def classifier_crops(scenes: Iterable[Scene], rng: np.random.Generator,
                     per_synth_die: int, per_real_die: int, negatives_per_scene: int,
                     detector: object | None = None, turn_upright: bool = False,
                     off_centre_per_die: int = 0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Jittered crops around labelled top faces (and `off_centre_per_die` more cut where a
    misplaced find would cut them), plus crops that show no die: random places, places
    beside a die, and (with a trained detector) the detector's own false finds — the hard
    negatives the classifier must learn to turn down."""
    crops: list[np.ndarray] = []
    values: list[int] = []
    quality: list[int] = []
    for image, label, source in scenes:
        h, w = image.shape[:2]
        per_die = per_real_die if source == "real" else per_synth_die
        sizes = [die_size(d.box) for d in label.dice] or [0.08 * max(w, h)]
        for die in label.dice:
            if die.flag not in QUALITY_OF_FLAG:
                continue  # cut by the frame: the judge decides by geometry, not the crop
            size = die_size(die.box)
            dx, dy = body_offset(die)
            body = (dx / size, dy / size)
            upright = upright_angle(body) if turn_upright else None
            before = len(crops)
            for _ in range(per_die):
                jitter = rng.normal(0, 0.06, 2) * size
                angle = crop_turn(upright, rng)
                crops.append(crop_die(image, die.center[0] + jitter[0], die.center[1] + jitter[1],
                                      size * rng.uniform(0.85, 1.2), angle=angle))
            for _ in range(off_centre_per_die if source != "real" else 0):
                ox, oy = off_centre(body, rng)
                crops.append(crop_die(image, die.center[0] + ox * size,
                                      die.center[1] + oy * size, size * rng.uniform(0.85, 1.2),
                                      angle=crop_turn(upright, rng)))
            values += [face_index(die.value)] * (len(crops) - before)
            quality += [QUALITY.index(QUALITY_OF_FLAG[die.flag])] * (len(crops) - before)
        typical = float(np.median(sizes))
        centers = np.array([d.center for d in label.dice], np.float32).reshape(-1, 2)
        made = tries = 0
        while made < negatives_per_scene and tries < 50:
            tries += 1
            if len(centers) and rng.random() < 0.4:
                # Beside a die: the crop must be centred on a top face to count.
                c = centers[rng.integers(len(centers))]
                a = rng.uniform(0, 2 * np.pi)
                p = c + rng.uniform(0.55, 0.9) * typical * np.array([np.cos(a), np.sin(a)])
            else:
                p = np.array([rng.uniform(0, w), rng.uniform(0, h)])
            if len(centers) and np.min(np.linalg.norm(centers - p, axis=1)) < 0.5 * typical:
                continue
            crops.append(crop_die(image, float(p[0]), float(p[1]),
                                  typical * rng.uniform(0.8, 1.25), angle=rng.uniform(0, 360)))
            values.append(-1)
            quality.append(QUALITY.index("no_die"))
            made += 1
        if detector is not None:
            for cand in detector.detect(image):  # type: ignore[attr-defined]
                near = [die_size(d.box) for d in label.dice
                        if np.hypot(cand.x - d.center[0], cand.y - d.center[1])
                        < 0.5 * die_size(d.box)]
                if not near:
                    upright = upright_angle(cand.body) if turn_upright else None
                    crops.append(crop_die(image, cand.x, cand.y, cand.size,
                                          angle=crop_turn(upright, rng)))
                    values.append(-1)
                    quality.append(QUALITY.index("no_die"))
    return np.stack(crops), np.array(values, np.int64), np.array(quality, np.int64)


def _pool_scene_crops(job: tuple[int, int, list[str]]) -> tuple[list[np.ndarray], list[str]]:
    """Render one scene of dice with training-only art and crop its readable dice."""
    from vision.synth import random_scene, render

    seed, index, names = job
    rng = np.random.default_rng([seed, index])
    art = names[int(rng.integers(len(names)))]
    # Up to eight dice a scene: more faces per (slow) render.
    image, label = render(random_scene(rng, "animals", art=art,
                                       n_dice=int(rng.integers(5, 9))))
    crops, faces = [], []
    for die in label.dice:
        if die.flag is not None:
            continue
        size = die_size(die.box)
        for _ in range(3):
            jitter = rng.normal(0, 0.06, 2) * size
            crops.append(crop_die(image, die.center[0] + jitter[0], die.center[1] + jitter[1],
                                  size * rng.uniform(0.85, 1.2), angle=rng.uniform(0, 360)))
            faces.append(str(die.value))
    return crops, faces


def identity_crops(pool: Path, scenes: int, seed: int, threads: int
                   ) -> tuple[np.ndarray, list[str]]:
    """Crops of dice painted with the art pool (models/make_animal_art.py --pool), labelled
    with their face: hundreds of faces the embedding learns to tell apart, so that a taught
    dice set's faces are apart too."""
    from multiprocessing import Pool

    from vision.synth import register_art_sets

    names = register_art_sets(pool)
    jobs = [(seed, i, names) for i in range(scenes)]
    crops: list[np.ndarray] = []
    faces: list[str] = []
    with Pool(max(1, threads)) as workers:  # forked: the registered sets come along
        for c, f in workers.imap(_pool_scene_crops, jobs, chunksize=16):
            crops.extend(c)
            faces.extend(f)
    return np.stack(crops), faces


def save_identity_crops(path: Path, crops: np.ndarray, faces: list[str]) -> None:
    """Write `train.py pool-crops`' crops for `train.py embedder`, whole or not at all, as
    the networks are."""
    write_durably(path, lambda f: np.savez(f, crops=crops, faces=np.array(faces)))


def load_identity_crops(path: Path) -> tuple[np.ndarray, list[str]]:
    with np.load(path) as data:
        return data["crops"], [str(f) for f in data["faces"]]


class CosineHead(torch.nn.Module):
    """Training-only: cosine softmax with an additive margin (CosFace) on the unit-length
    embedding, over every face of the training data. Not exported."""

    def __init__(self, classes: int, dim: int = EMBED_DIM, scale: float = 16.0,
                 margin: float = 0.2) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(classes, dim) * 0.1)
        self.scale, self.margin = scale, margin

    def forward(self, normed: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        cos = normed @ F.normalize(self.weight, dim=1).T
        ok = target >= 0
        if not ok.any():
            return cos.sum() * 0.0
        cos, target = cos[ok], target[ok]
        logits = self.scale * (cos - self.margin * F.one_hot(target, cos.shape[1]))
        return F.cross_entropy(logits, target)


def train_embedder(crops: np.ndarray, identity: np.ndarray, steps: int, batch: int,
                   seed: int, width: int = 24) -> FaceEmbedder:
    """Cosine softmax with a margin over every face (`identity`: its index per crop), with
    the classifier's augmentations."""
    rng, gen = seeded(seed)
    net = FaceEmbedder(width).to(memory_format=FAST_LAYOUT)
    head = CosineHead(int(identity.max()) + 1, EMBED_DIM, scale=24.0, margin=0.2)
    opt, sched = adamw([*net.parameters(), *head.parameters()], steps, weight_decay=5e-4)
    net.train()
    t0 = time.time()
    for step in range(steps):
        idx, x = augmented_batch(crops, batch, rng, gen)
        with in_bfloat16():
            normed = net(x)
        loss = head(normed.float(), torch.from_numpy(identity[idx]))
        descend(opt, sched, loss)
        if step % 200 == 0 or step == steps - 1:
            log(f"embedder step {step}/{steps} loss {loss.item():.3f} {time.time() - t0:.0f}s")
    return net.eval()


# ---------------------------------------------------------------------------------------
# Centre refiner
# ---------------------------------------------------------------------------------------

#: Where the refiner's training crops are centred: a share near a top face (a find the
#: detector placed well), the rest anywhere within as many die sizes of one as the reader
#: believes a move (a find on a die's edge or front face, or between two touching dice).
REFINE_NEAR_SHARE = 0.5
REFINE_FAR = MAX_MOVE
#: ... and how far off the found size may be (a large die found at half its size).
REFINE_SIZE_RANGE = (0.5, 1.6)


def refiner_crops(scenes: Iterable[Scene], rng: np.random.Generator, per_synth_die: int,
                  per_real_die: int) -> tuple[np.ndarray, np.ndarray]:
    """Crops of REFINE_SPAN found sizes around places near labelled top faces, at any
    rotation, with the target the refiner must give: the offset to the nearest top-face
    centre in found sizes, in the crop's own (rotated) frame, and log(its size / found)."""
    crops: list[np.ndarray] = []
    targets: list[tuple[float, float, float]] = []
    lo, hi = np.log(REFINE_SIZE_RANGE[0]), np.log(REFINE_SIZE_RANGE[1])
    for image, label, source in scenes:
        if not label.dice:
            continue
        centers = np.array([d.center for d in label.dice], np.float64)
        sizes = np.array([die_size(d.box) for d in label.dice], np.float64)
        per_die = per_real_die if source == "real" else per_synth_die
        for centre, size in zip(centers, sizes, strict=True):
            for _ in range(per_die):
                if rng.random() < REFINE_NEAR_SHARE:
                    shift = rng.normal(0, 0.06, 2)
                else:
                    a, r = rng.uniform(0, 2 * np.pi), REFINE_FAR * np.sqrt(rng.random())
                    shift = r * np.array([np.cos(a), np.sin(a)])
                place = centre + shift * size
                found = size * float(np.exp(rng.uniform(lo, hi)))
                nearest = int(np.argmin(np.linalg.norm(centers - place, axis=1)))
                angle = rng.uniform(0, 360)
                crops.append(crop_die(image, float(place[0]), float(place[1]),
                                      REFINE_SPAN * found, angle=angle))
                # crop_die turns the frame by `angle` about the crop centre.
                t = np.deg2rad(angle)
                turn = np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
                dx, dy = turn @ (centers[nearest] - place) / found
                targets.append((float(dx), float(dy), float(np.log(sizes[nearest] / found))))
    return np.stack(crops), np.array(targets, np.float32)


def train_refiner(crops: np.ndarray, targets: np.ndarray, steps: int, batch: int, seed: int,
                  width: int) -> CentreRefiner:
    rng, gen = seeded(seed)
    net = CentreRefiner(width).to(memory_format=FAST_LAYOUT)
    opt, sched = adamw(net.parameters(), steps, weight_decay=5e-4)
    net.train()
    t0 = time.time()
    for step in range(steps):
        idx = rng.integers(0, len(crops), batch)
        x = jittered(crops_to_tensor(crops[idx]), rng, gen)
        with in_bfloat16():
            pred = net(x)
        pred = pred.float()
        loss = F.smooth_l1_loss(pred, torch.from_numpy(targets[idx]), beta=0.05)
        descend(opt, sched, loss)
        if step % 200 == 0 or step == steps - 1:
            with torch.no_grad():
                err = (pred[:, :2] - torch.from_numpy(targets[idx, :2])).norm(dim=1)
            log(f"refiner step {step}/{steps} loss {loss.item():.4f} median centre error "
                f"{err.median().item():.3f} found sizes {time.time() - t0:.0f}s")
    return net.eval()


def crops_to_tensor(crops: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(crops[..., ::-1].copy()).permute(0, 3, 1, 2).float() / 255.0 - 0.5


#: The crop networks' defocus: a 3 x 3 mean of each channel (zero beyond the crop), as a
#: depthwise convolution on channels-last tensors: 2 ms a classifier batch on one thread,
#: where `avg_pool2d` takes 14.
DEFOCUS = torch.full((3, 1, 3, 3), 1 / 9)


def jittered(crops: torch.Tensor, rng: np.random.Generator, gen: torch.Generator
             ) -> torch.Tensor:
    """A batch of crops colour-jittered and, three times in ten, defocused: the crop
    networks' augmentation, in the layout they train in."""
    x = color_jitter(crops, gen).contiguous(memory_format=FAST_LAYOUT)
    if rng.random() < 0.3:
        x = F.conv2d(x, DEFOCUS, padding=1, groups=3)
    return x


def augmented_batch(crops: np.ndarray, batch: int, rng: np.random.Generator,
                    gen: torch.Generator) -> tuple[np.ndarray, torch.Tensor]:
    """A random batch of crops (their indices, and the tensor) with the augmentations of
    both crop networks."""
    idx = rng.integers(0, len(crops), batch)
    x = crops_to_tensor(crops[idx])
    if rng.random() < 0.5:
        x = x.flip(3)  # a mirrored face is still the same face
    return idx, jittered(x, rng, gen)


def train_classifier(crops: np.ndarray, values: np.ndarray, quality: np.ndarray, steps: int,
                     batch: int, seed: int, width: int = 24) -> FaceClassifier:
    rng, gen = seeded(seed)
    net = FaceClassifier(width).to(memory_format=FAST_LAYOUT)
    opt, sched = adamw(net.parameters(), steps, weight_decay=5e-4)
    net.train()
    t0 = time.time()
    for step in range(steps):
        idx, x = augmented_batch(crops, batch, rng, gen)
        v = torch.from_numpy(values[idx])
        q = torch.from_numpy(quality[idx])
        with in_bfloat16():
            logits_v, logits_q = net(x)
        logits_v, logits_q = logits_v.float(), logits_q.float()
        loss_v = F.cross_entropy(logits_v, v, ignore_index=-1, label_smoothing=0.02)
        loss_q = F.cross_entropy(logits_q, q)
        loss = loss_v + loss_q
        descend(opt, sched, loss)
        if step % 200 == 0 or step == steps - 1:
            with torch.no_grad():
                ok = v >= 0
                acc = (logits_v.argmax(1)[ok] == v[ok]).float().mean().item() if ok.any() else 0
            log(f"classifier step {step}/{steps} loss {loss.item():.3f} value-acc {acc:.3f} "
                f"{time.time() - t0:.0f}s")
    return net.eval()


# ---------------------------------------------------------------------------------------
# The classifier in 8-bit integers
# ---------------------------------------------------------------------------------------

#: The trained classifier's convolutions are quantized to 8-bit integers (onnxruntime's
#: static quantization, QDQ, weights per channel): a crop read takes 0.12 ms instead of
#: 0.40 on this AMD EPYC, and the validation and test scenes read as many dice right, with
#: about as many silent errors (models/README.md, "The classifier in 8-bit integers"). The
#: first convolution (it reads the picture itself) and the linear layers at the end stay
#: in float32. The weights take 7 bits (`reduce_range`): x86 CPUs without VNNI sum the
#: products of 8-bit activations and weights in pairs into 16 bits, which 8-bit weights
#: can overflow; here as fast, and as many dice right.
INT8_FLOAT_NODES = ("/features/features.0/features.0.0/Conv", "/ReduceMean", "/embed/Gemm",
                    "/Relu", "/value/Gemm", "/quality/Gemm")
#: So are the centre refiner's (`refiner-int8`): its crops 2.2 times as fast, its moves
#: a median two thousandths of a die size from the float32 network's
#: (models/README.md, "The centre refiner in 8-bit integers"). Its first convolution and
#: its linear layers stay in float32 as the classifier's.
REFINER_INT8_FLOAT_NODES = ("/features/features.0/features.0.0/Conv", "/hidden/Gemm",
                            "/Relu", "/out/Gemm")
#: And the embedder's (`embedder-int8`), before its whitening (models/whiten_embedder.py,
#: which make models runs after it, fits the whitening to the 8-bit network): its first
#: convolution, its pooling and its linear layer stay in float32; so does a whitening an
#: earlier run wrote (whiten it again after).
EMBEDDER_INT8_FLOAT_NODES = ("/features/features.0/features.0.0/Conv", "/ReduceMean",
                             "/embed/Gemm", "whitening")
#: The activations' ranges are calibrated on this many crops cut as for training (for the
#: classifier one per die and one that shows no die per scene; for the refiner and the
#: embedder one per die), from every CALIBRATION_EVERY-th training scene.
CALIBRATION_CROPS = 4096
CALIBRATION_EVERY = 8
#: A network in 8-bit integers says how it was calibrated under this metadata key;
#: `classifier-int8`, `refiner-int8` and `embedder-int8` refuse such a file.
INT8_KEY = "int8"


def quantized(model: onnx.ModelProto, crops: np.ndarray, float_nodes: Sequence[str],
              seed: int) -> onnx.ModelProto:
    """`model` (a float32 crop network: the classifier, the refiner or the embedder, input
    "crops") with its convolutions in 8-bit integers except `float_nodes`, the ranges of
    their inputs calibrated on CALIBRATION_CROPS of `crops` (N x H x W x 3, BGR)."""
    import tempfile

    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    chosen = np.random.default_rng(seed).permutation(len(crops))[:CALIBRATION_CROPS]

    class Batches(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.starts = iter(range(0, len(chosen), 64))

        def get_next(self) -> dict[str, np.ndarray] | None:
            start = next(self.starts, None)
            if start is None:
                return None
            return {"crops": crops_to_tensor(crops[chosen[start:start + 64]]).numpy()}

    with tempfile.TemporaryDirectory() as tmp:
        plain, prepared, out = (Path(tmp) / name for name in ("f.onnx", "p.onnx", "q.onnx"))
        onnx.save(model, str(plain))
        quant_pre_process(str(plain), str(prepared))
        quantize_static(str(prepared), str(out), Batches(), quant_format=QuantFormat.QDQ,
                        per_channel=True, reduce_range=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax,
                        nodes_to_exclude=list(float_nodes))
        return onnx.load(str(out))


# ---------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------


def export(net: torch.nn.Module, dummy: torch.Tensor, out: Path, inputs: list[str],
           outputs: list[str], dynamic: dict[str, dict[int, str]],
           meta: dict[str, str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    net = net.to(memory_format=torch.contiguous_format)
    torch.onnx.export(net, (dummy,), str(out), input_names=inputs, output_names=outputs,
                      dynamic_axes=dynamic, opset_version=17, dynamo=False)
    save(onnx.load(str(out)), out, meta)


def save(model: onnx.ModelProto, out: Path, meta: dict[str, str]) -> None:
    """Write `model` to `out` with `meta` added to its metadata."""
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    # Whole or not at all: a step reading the file meanwhile (make models trains the
    # classifier beside the body head) never sees half of it.
    write_durably(out, lambda f: f.write(model.SerializeToString()))
    log(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=["detector", "detector-tune", "body", "classifier",
                                      "classifier-int8", "refiner", "refiner-int8", "embedder",
                                      "embedder-int8", "pool-crops"],
                    help="detector-tune: train --detector further, partly on --hard scenes; "
                         "classifier-int8, refiner-int8, embedder-int8: --classifier, "
                         "--refiner, --embedder in 8-bit integers; "
                         "pool-crops: render the embedder's scenes of dice painted with the "
                         "art pool and write their crops (--out FILE.npz) for the embedder")
    ap.add_argument("--data", type=Path, nargs="+", default=[])
    ap.add_argument("--real", default=None, help="real split to add (Train; never Valid)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--threads-on-signal", type=int, default=None, metavar="N",
                    help="train on N threads from when the process is sent SIGUSR1 on "
                         "(make models: when the lane beside it is done)")
    ap.add_argument("--width", type=int, default=24,
                    help="classifier, embedder: channels of the first layer; body: of the head")
    ap.add_argument("--detector", type=Path, default=None, metavar="DETECTOR.onnx",
                    help="body: the trained detector to add the body head to; "
                         "detector-tune: the trained detector to tune")
    ap.add_argument("--classifier", type=Path, default=None, metavar="CLASSIFIER.onnx",
                    help="classifier-int8: the trained (float32) classifier to quantize")
    ap.add_argument("--refiner", type=Path, default=None, metavar="REFINER.onnx",
                    help="refiner-int8: the trained (float32) centre refiner to quantize")
    ap.add_argument("--embedder", type=Path, default=None, metavar="EMBEDDER.onnx",
                    help="embedder-int8: the trained (float32) embedder to quantize")
    ap.add_argument("--hard", type=Path, nargs="+", default=[], metavar="DIR",
                    help="detector-tune: the scenes to tune on (build.py's HARD_SET)")
    ap.add_argument("--identity-pool", type=Path, default=None, metavar="DIR",
                    help="pool-crops: the art pool to paint dice with "
                         "(models/make_animal_art.py --pool)")
    ap.add_argument("--identity-scenes", type=int, default=3000,
                    help="pool-crops: how many scenes to render")
    ap.add_argument("--samples-cache", type=Path, default=None, metavar="DIR",
                    help="detector, detector-tune, body: keep the scenes shrunk for the "
                         "detector here, or read them from here if they are of the same data")
    ap.add_argument("--pool-crops", type=Path, default=None, metavar="FILE.npz",
                    help="embedder: the crops `train.py pool-crops` wrote")
    ap.add_argument("--upright", action="store_true",
                    help="classifier: cut dice seen at an angle upright (vision.preprocess."
                         "upright_angle) instead of at a random turn")
    ap.add_argument("--off-centre", type=int, default=0, metavar="N",
                    help="classifier: N more crops of each synthetic die cut off its top "
                         "face, where the detector's misplaced finds lie")
    ap.add_argument("--hard-negatives", type=Path, default=None, metavar="DETECTOR.onnx",
                    help="classifier: add the false finds of this detector as negatives")
    ap.add_argument("--printed", type=int, default=0, metavar="N",
                    help="classifier: N crops of printed or displayed die pictograms "
                         "(printed.py) as negatives")
    args = ap.parse_args(argv)
    if args.real == "Valid":
        ap.error("the real Valid split is for evaluation only")
    torch.set_num_threads(args.threads)
    if args.threads_on_signal:
        more = args.threads_on_signal
        signal.signal(signal.SIGUSR1, lambda *_: torch.set_num_threads(more))
    cv2.setNumThreads(1)
    if args.model == "pool-crops":
        if not args.identity_pool:
            ap.error("pool-crops needs --identity-pool")
        pool_crops, pool_faces = identity_crops(args.identity_pool, args.identity_scenes,
                                                args.seed, args.threads)
        save_identity_crops(args.out, pool_crops, pool_faces)
        log(f"{len(pool_crops)} crops of {len(set(pool_faces))} pool faces, "
            f"{args.identity_scenes} scenes: {args.out}")
        return 0
    scenes = iter_scenes(args.data, args.real)
    info = {"seed": str(args.seed), "steps": str(args.steps),
            "data": json.dumps([str(d) for d in args.data] + ([f"real:{args.real}"]
                               if args.real else []))}
    if args.model == "detector":
        samples = cached_detector_samples(args.data, args.real, args.samples_cache)
        log(f"{len(samples)} scenes, {sum(len(s.centers) for s in samples)} dice")
        net = train_detector(samples, args.steps, args.batch, crop=160, seed=args.seed)
        export(net, torch.zeros(1, 3, 288, DETECTOR_LONG_SIDE), args.out, ["image"], ["out"],
               {"image": {2: "height", 3: "width"}},
               {**info, "long_side": str(DETECTOR_LONG_SIDE), "stride": str(DETECTOR_STRIDE),
                "precision": PRECISION})
    elif args.model == "detector-tune":
        if not args.detector or not args.hard:
            ap.error("detector-tune needs --detector and --hard")
        base = detector_only(onnx.load(str(args.detector)))
        samples = cached_detector_samples(args.data, args.real, args.samples_cache)
        hard = detector_samples(iter_scenes(args.hard, None))
        log(f"{len(samples)} scenes, {len(hard)} hard scenes")
        net = tune_detector(detector_from_onnx(base), samples, hard, args.steps, args.batch,
                            crop=160, seed=args.seed)
        trained = {p.key: p.value for p in base.metadata_props}
        export(net, torch.zeros(1, 3, 288, DETECTOR_LONG_SIDE), args.out, ["image"], ["out"],
               {"image": {2: "height", 3: "width"}},
               {**trained, "tune_seed": str(args.seed), "tune_steps": str(args.steps),
                "tune_hard": json.dumps([str(d) for d in args.hard]),
                "tune_hard_share": str(TUNE_HARD_SHARE), "tune_lr": str(TUNE_LR),
                "tune_precision": PRECISION})
    elif args.model == "body":
        if not args.detector:
            ap.error("the body head needs --detector")
        detector = detector_only(onnx.load(str(args.detector)))
        samples = cached_detector_samples(args.data, args.real, args.samples_cache)
        head = train_body_head(samples, detector, args.steps, args.batch, crop=160,
                               seed=args.seed, width=args.width, threads=args.threads)
        with_features, body = with_body_head(detector, head)
        meta = {"body_seed": str(args.seed), "body_steps": str(args.steps),
                "body_width": str(args.width)}
        # The head first: a step that opens the detector meanwhile (the classifier's hard
        # negatives in `make models`) finds the head that fits it, or a detector without one.
        save(body, body_path(args.out), meta)
        save(with_features, args.out, meta)
    elif args.model in ("classifier-int8", "refiner-int8", "embedder-int8"):
        network = {"classifier-int8": args.classifier, "refiner-int8": args.refiner,
                   "embedder-int8": args.embedder}[args.model]
        if not network:
            ap.error(f"{args.model} needs --{args.model.removesuffix('-int8')}")
        trained = onnx.load(str(network))
        meta = {p.key: p.value for p in trained.metadata_props}
        if INT8_KEY in meta:
            ap.error(f"{network} is in 8-bit integers already")
        calibration = iter_scenes(args.data, args.real, CALIBRATION_EVERY)
        rng = np.random.default_rng(args.seed)
        if args.model == "classifier-int8":
            crops, _, _ = classifier_crops(calibration, rng, per_synth_die=1, per_real_die=1,
                                           negatives_per_scene=1,
                                           turn_upright=meta.get("upright") == "1")
            float_nodes = INT8_FLOAT_NODES
        elif args.model == "refiner-int8":
            crops, _ = refiner_crops(calibration, rng, per_synth_die=1, per_real_die=1)
            float_nodes = REFINER_INT8_FLOAT_NODES
        else:
            crops, _, _ = classifier_crops(calibration, rng, per_synth_die=1, per_real_die=1,
                                           negatives_per_scene=0)
            float_nodes = EMBEDDER_INT8_FLOAT_NODES
        log(f"{len(crops)} calibration crops")
        save(quantized(trained, crops, float_nodes, args.seed), args.out,
             {INT8_KEY: json.dumps({"seed": args.seed,
                                    "crops": min(len(crops), CALIBRATION_CROPS),
                                    "every": CALIBRATION_EVERY})})
    elif args.model == "refiner":
        crops, targets = refiner_crops(scenes, np.random.default_rng(args.seed),
                                       per_synth_die=2, per_real_die=8)
        log(f"{len(crops)} refiner crops")
        net = train_refiner(crops, targets, args.steps, args.batch * 4, args.seed, args.width)
        export(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE), args.out, ["crops"], ["refine"],
               {"crops": {0: "n"}},
               {**info, "span": str(REFINE_SPAN), "crop_size": str(CROP_SIZE),
                "width": str(args.width), "precision": PRECISION})
    elif args.model == "embedder":
        if not args.pool_crops:
            ap.error("the embedder needs --pool-crops (written by `train.py pool-crops`)")
        rng = np.random.default_rng(args.seed)
        crops, values, _ = classifier_crops(scenes, rng, per_synth_die=2, per_real_die=6,
                                            negatives_per_scene=0)
        known = values >= 0
        pool_crops, pool_faces = load_identity_crops(args.pool_crops)
        names = sorted(set(pool_faces))
        log(f"{int(known.sum())} crops of the known faces, {len(pool_crops)} of "
            f"{len(names)} pool faces")
        index = {f: len(FACES) + i for i, f in enumerate(names)}
        identity = np.concatenate([values[known], [index[f] for f in pool_faces]])
        net = train_embedder(np.concatenate([crops[known], pool_crops]), identity,
                             args.steps, args.batch * 4, args.seed, args.width)
        export(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE), args.out, ["crops"],
               ["embedding"], {"crops": {0: "n"}},
               {**info, "faces": str(len(FACES) + len(names)),
                "embed_dim": str(EMBED_DIM), "crop_size": str(CROP_SIZE),
                "width": str(args.width), "precision": PRECISION})
    else:
        rng = np.random.default_rng(args.seed)
        detector = None
        if args.hard_negatives:
            from vision.detector import OnnxDetector

            detector = OnnxDetector(args.hard_negatives, threads=args.threads)
        crops, values, quality = classifier_crops(scenes, rng, per_synth_die=3,
                                                  per_real_die=10, negatives_per_scene=3,
                                                  detector=detector, turn_upright=args.upright,
                                                  off_centre_per_die=args.off_centre)
        if args.printed:  # a stream of its own: the scenes' crops stay as they were
            pictures = printed_die_crops(args.printed, np.random.default_rng([args.seed, 1]))
            crops = np.concatenate([crops, pictures])
            values = np.concatenate([values, np.full(len(pictures), -1, np.int64)])
            quality = np.concatenate([quality, np.full(len(pictures), QUALITY.index("no_die"),
                                                       np.int64)])
        log(f"{len(crops)} crops ({int((values >= 0).sum())} with a value)")
        net = train_classifier(crops, values, quality, args.steps, args.batch * 4, args.seed,
                               args.width)
        export(net, torch.zeros(2, 3, CROP_SIZE, CROP_SIZE), args.out, ["crops"],
               ["value", "quality"], {"crops": {0: "n"}},
               {**info, "faces": json.dumps(FACES), "quality": json.dumps(QUALITY),
                "crop_size": str(CROP_SIZE), "width": str(args.width),
                "upright": str(int(args.upright)),
                "precision": PRECISION})
    return 0


if __name__ == "__main__":
    sys.exit(main())
