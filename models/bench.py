"""`make bench`: milliseconds per frame for the full reader (find + read + judge) with
onnxruntime on one thread, at 800×600 and 1640×1232, beside the blob baseline; peak memory
and model sizes; how long `kniffel teach` takes for six photos, and a table learning a set
from checked throws. Frames are real validation photos scaled to each size (or synthetic
scenes where the real photos are absent: close-ups of one to five dice, three on average),
synthetic scenes of a throw's five dice as a camera over the table sees them, and synthetic
scenes whose dice are small in the frame."""

from __future__ import annotations

import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vision.baseline import BlobBaselineReader  # noqa: E402
from vision.datasets import load_real, one_photo_per_value, real_root  # noqa: E402
from vision.models import (  # noqa: E402
    CLASSIFIER_PATH,
    DETECTOR_PATH,
    EMBEDDER_PATH,
    REFINER_PATH,
    body_path,
)
from vision.reader import Reader  # noqa: E402
from vision.teach import Checked, learn, teach  # noqa: E402

SIZES = [(800, 600), (1640, 1232)]
FRAMES = 40
#: Each frame is read this many times, in rounds over all frames, and its fastest read
#: counts: what the reader costs on the machine alone. A shared machine's neighbours
#: slow single reads by a third and more, and not always the same ones (the tenth
#: session's Xeon: a median of 22.9 ms in one run, 33.2 ms in the next); the median and
#: 90th percentile of all reads are printed beside it (`timeit` takes the minimum too).
REPEATS = 3


def frames() -> list[np.ndarray]:
    if real_root().is_dir():
        paths = [p for p, _ in load_real("Valid")[:FRAMES]]
        return [cv2.imread(str(p)) for p in paths]
    from vision.synth import random_scene, render

    rng = np.random.default_rng(424242)
    return [render(random_scene(rng, "pips"))[0] for _ in range(FRAMES)]


def five_dice_frames() -> list[np.ndarray]:
    """Synthetic scenes of a throw's five dice, pip and animal dice by turns, drawn as the
    generator draws its scenes (camera 0–60°, dice 22–115 px across at 1640×1232, half
    that at 800×600; hands, cups, cloths): what a camera over the whole table sees. The
    real photos are close-ups of three dice on average, about 100 px across at 800×600,
    which the detector finds in one search; dice as small as a table's are searched again
    closer (vision.detector.SMALL_DIE)."""
    from vision.synth import random_scene, render

    rng = np.random.default_rng(424244)
    return [render(random_scene(rng, "pips" if k % 2 == 0 else "animals",
                                resolution=(1640, 1232), n_dice=5))[0]
            for k in range(FRAMES)]


def small_dice_frames() -> list[np.ndarray]:
    """Synthetic scenes whose dice are small in the frame (a camera mounted high: 28–60 px
    at 1640×1232, 14–29 px at 800×600), where the reader searches again, larger."""
    from vision.synth import random_scene, render

    rng = np.random.default_rng(424243)
    return [render(random_scene(rng, "pips", resolution=(1640, 1232),
                                die_px=float(rng.uniform(28, 60))))[0]
            for _ in range(FRAMES)]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    cv2.setNumThreads(1)
    images = frames()
    ours = Reader.default(threads=1)
    readers: dict[str, Reader | BlobBaselineReader] = {"ours": ours}
    print(f"machine: {cpu_name()}, {platform.machine()}, Python {platform.python_version()}, "
          f"onnxruntime 1 thread, OpenCV 1 thread; {len(images)} frames per size")
    if real_root().is_dir():
        photos = {value: [cv2.imread(str(path))]
                  for value, path in one_photo_per_value("Train").items()}
        t = time.perf_counter()
        taught, counts = teach(ours, "bench", photos)
        print(f"kniffel teach, {len(photos)} photos ({sum(counts.values())} dice): "
              f"{time.perf_counter() - t:.2f} s on one thread")
        readers["ours, taught set"] = ours.reading(taught)
        # A table learning the set from a game (web.learn): the dice of the throws the
        # players checked, about 50 as in `make eval`'s games.
        table = ours.reading(taught)
        throws: list[Checked] = []
        for path, _ in load_real("Valid"):
            frame = cv2.imread(str(path))
            throws.append(Checked(frame, [(d.x, d.y, d.value) for d in table.read(frame).dice
                                          if d.value is not None]))
            if sum(len(throw.dice) for throw in throws) >= 50:
                break
        t = time.perf_counter()
        learnt = learn(ours, "bench", throws)
        print(f"a table learning the set from {len(throws)} checked throws "
              f"({len(learnt.patch_values)} dice): {time.perf_counter() - t:.2f} s on one "
              "thread")
    # camera.turn: the same frames turned upright first (as a camera mounted turned)
    readers["ours, turned 90°"] = ours.turned(1)
    readers["blob baseline"] = BlobBaselineReader()
    for name, reader in readers.items():
        timed(name, reader, images)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sizes = {path.stem: path.stat().st_size / 1e6
             for path in (DETECTOR_PATH, body_path(DETECTOR_PATH), REFINER_PATH,
                          CLASSIFIER_PATH, EMBEDDER_PATH)}
    print(f"peak memory (whole process): {peak:.0f} MB; models: {sum(sizes.values()):.2f} MB ("
          + ", ".join(f"{name} {mb:.2f} MB" for name, mb in sizes.items()) + ")")
    # after the peak: rendering the scenes takes more memory than reading them
    timed("ours, five dice", ours, five_dice_frames())
    timed("ours, small dice", ours, small_dice_frames())
    return 0


def timed(name: str, reader: Reader | BlobBaselineReader, images: list[np.ndarray]) -> None:
    """Prints the median and 90th percentile milliseconds per frame at each of SIZES, of
    each frame's fastest read (REPEATS) and of all reads."""
    for w, h in SIZES:
        scaled = [cv2.resize(im, (w, h), interpolation=cv2.INTER_LINEAR) for im in images]
        reader.read(scaled[0])  # warm-up
        reads: list[list[float]] = [[] for _ in scaled]
        for _ in range(REPEATS):
            for frame, times in zip(scaled, reads, strict=True):
                t = time.perf_counter()
                reader.read(frame)
                times.append((time.perf_counter() - t) * 1000)
        fastest = [min(times) for times in reads]
        every = [ms for times in reads for ms in times]
        print(f"{name:16s} {w}x{h}: median {statistics.median(fastest):6.1f} ms, "
              f"p90 {p90(fastest):6.1f} ms per frame (fastest of {REPEATS}; all reads: "
              f"median {statistics.median(every):.1f}, p90 {p90(every):.1f})")


def p90(times: list[float]) -> float:
    return sorted(times)[int(0.9 * len(times)) - 1]


if __name__ == "__main__":
    sys.exit(main())
