"""`make models`: generate the synthetic training data and train the models, seeded.

Data goes to data/ (not committed; regenerated when missing), models to models/*.onnx
and the judge's doubt fitted to them to models/doubt.json (committed); models/README.md
says what each step does. Each step prints its time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vision.datasets import REAL_ENV, real_root  # noqa: E402

DATA = ROOT / "data"
MODELS = ROOT / "models"
#: The embedder's crops of dice painted with the art pool (`train.py pool-crops`).
POOL_CROPS = DATA / "pool-crops.npz"
#: The training scenes shrunk for the detector, made by its first step and read by the
#: others (`train.py --samples-cache`); 3.3 GB, removed at the end like POOL_CROPS.
SAMPLES_CACHE = DATA / "detector-samples"

#: (folder, kind, count, seed) — training seeds are 1xx; test sets use 9xxxxx (evaluate.py).
TRAIN_SETS = [
    ("synth-train-pips", "pips", 3000, 101),
    ("synth-train-animals", "animals", 1500, 102),
    ("synth-train-mixed", "mixed", 1000, 103),
]
#: As many scenes again for the classifier and the detector (with its body head): both
#: gain from more scenes and steps (models/README, "The classifier trained in bfloat16 on
#: twice the scenes", "A deeper detector on twice the scenes"); the refiner and the
#: embedder train on the first sets.
MORE_SETS = [
    ("synth-train-pips-b", "pips", 3000, 104),
    ("synth-train-animals-b", "animals", 1500, 105),
    ("synth-train-mixed-b", "mixed", 1000, 106),
]
#: The steps that train on MORE_SETS too (and the classifier's quantization calibrates on).
ON_MORE_SETS = ("classifier", "classifier-int8", "detector", "detector-tune", "body")
#: The scenes whose dice are hardest to find — on a printed cloth or in a noisy picture,
#: about one in seven — among this many of its seed: the trained detector is tuned on
#: them (`train.py detector-tune`; models/README.md, "The detector tuned on the scenes it
#: finds dice in worst").
HARD_SET = ("synth-train-hard", "mixed", 11500, 120)
#: The steps that put a trained network in 8-bit integers, and their calibration seeds
#: (models/README.md, "The classifier in 8-bit integers", "The centre refiner in 8-bit
#: integers", "The embedder in 8-bit integers").
INT8_SEEDS = {"classifier-int8": 16, "refiner-int8": 17, "embedder-int8": 18}
#: (folder, kind, count, seed): the validation scenes, never trained on: the judge's doubt
#: (fit_judge.py) and the embedder's whitening (whiten_embedder.py) are fitted on them.
VALIDATION_SETS = [
    ("synth-val-800001", "pips", 300, 800001),
    ("synth-val-800002", "animals", 300, 800002),
    ("synth-val-800003", "pips", 300, 800003),
    ("synth-val-800004", "animals", 300, 800004),
]
#: The share of the training scenes drawn again with their dice the colour of their table
#: (black dice on black felt, or felt the colour of the dice:
#: `vision.synth.sampling.camouflaged`), where the reader misses and doubts the most dice;
#: the validation and test sets are always drawn without. 0 for now: at 0.1 the networks
#: found more black dice on black felt, but made half as many extra finds again on the
#: test sets (models/README.md, "Dice the colour of their table"); in the detector's data
#: alone, two draws found a point more of them within 0-30° and made 18 silent errors on
#: the test sets, against 11 and 17 without ("Hidden dice in the detector's data only").
TRAINING_CAMOUFLAGE = 0.0
#: The share of the training scenes' pip dice sets whose paint chance left whole drawn worn
#: too (`vision.synth.sampling.worn_again`): chance wears an eighth of the pip dice sets,
#: and with this share a third are worn. The classifier trained so read 400 scenes of worn
#: pip dice better (1510 against 1487-1493 of 1574 dice right) and the test pips as well or
#: better, with fewer silent errors (models/README.md, "Worn pips"). The validation and
#: test sets are always drawn without.
TRAINING_WORN = 0.25
#: The share of the training scenes drawn overexposed (`vision.synth.sampling.overexposed`):
#: a camera whose exposure was fixed in dimmer light, where a white die on a light table
#: keeps little more than its pips. The validation and test sets are always drawn without;
#: `make eval` reads the real photos overexposed. In two draws each with and without it,
#: 0.1 read 300 overexposed test scenes of each kind better (79 and 113 more of 2392 dice
#: right, 3 and 9 silent errors against 11 and 16) but the test sets and validation scenes
#: worse both times (51 and 58 fewer right of 14 616). 0.03 lost nothing against a draw
#: without it and halved the overexposed scenes' silent errors; with TRAINING_PRINTED it
#: gives back most of what the pictograms cost the overexposed real photos (81.25 % of
#: their dice right against 64.84 % without it; models/README.md, "Overexposed pictures
#: and a lamp's glare", "Dice that are only pictures"). The camera check warns of an
#: overexposed picture.
TRAINING_BRIGHT = 0.03
#: Crops of printed and displayed die pictograms (a score sheet, the game's box, a tablet
#: showing the table's page: `printed.py`) among the classifier's negatives, beside its
#: about 196 000 crops of the scenes. With the shipped detector and TRAINING_BRIGHT 0.03,
#: pictograms pasted beside the 86 real validation photos were trusted 38 times against
#: 828 (beside 97 synthetic tables 10 against 211), for 0.19 / 0.10 points of the test
#: sets (a retrain's spread) and the real photos made overexposed read 81.25 % of their
#: dice right against 85.94 % (more asked, no more silent errors; models/README.md, "Dice
#: that are only pictures").
TRAINING_PRINTED = 6000


def generator_version() -> str:
    """A hash of the generator's source: a set rendered by other code is rendered again."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "vision" / "synth").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def generate(folder: str, kind: str, count: int, seed: int, workers: int = 2,
             hard_to_find: bool = False, camouflage: float = 0.0, worn: float = 0.0,
             bright: float = 0.0) -> Path:
    """Render a synthetic data set unless the same one, by the same generator, is there
    (`hard_to_find`: only those of its `count` scenes, `python -m vision.synth
    --hard-to-find`; `camouflage`, `worn` and `bright`: its `--camouflage`, `--worn` and
    `--bright`)."""
    out = DATA / folder
    stamp = out / "stamp.json"
    shares = {name: share for name, share in (("camouflage", camouflage), ("worn", worn),
                                               ("bright", bright)) if share}
    want = {"kind": kind, "count": count, "seed": seed, "generator": generator_version(),
            **({"hard_to_find": True} if hard_to_find else {}), **shares}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return out
    t = time.time()
    subprocess.run([sys.executable, "-m", "vision.synth", "--out", str(out), "--count",
                    str(count), "--seed", str(seed), "--kind", kind, "--workers",
                    str(workers), *(["--hard-to-find"] if hard_to_find else []),
                    *(arg for name, share in shares.items() for arg in (f"--{name}", str(share)))],
                   check=True, cwd=ROOT)
    stamp.write_text(json.dumps(want))
    which = "those hard to find of " if hard_to_find else ""
    print(f"generated {folder}: {which}{count} {kind} scenes in {time.time() - t:.0f}s",
          flush=True)
    return out


def art_pool() -> Path:
    """The training-only emoji faces of the embedder (make_animal_art.py --pool), drawn
    once from Debian's Noto Color Emoji font."""
    out = DATA / "art-pool"
    if not (out / "pool.json").is_file():
        subprocess.run([sys.executable, str(MODELS / "make_animal_art.py"), "--pool",
                        str(out)], check=True, cwd=ROOT)
    return out


@dataclass(frozen=True)
class Step:
    """One command of a lane, run once the steps it `needs` (by name) are done. `widens`:
    the command trains with `--threads-on-signal 2`, and is sent SIGUSR1 to train on both
    cores once the other lane is done."""

    name: str
    command: list[str]
    needs: tuple[str, ...] = ()
    widens: bool = False


#: A process younger than this is not sent SIGUSR1: Python's default for the signal ends
#: the process, until train.py has started and handles it.
WIDEN_AFTER_S = 60.0


def run_lanes(lanes: list[list[Step]]) -> None:
    """Run each lane's steps one after another, the lanes side by side (one core each),
    each step once the steps it needs are done; on a failure the other lane is stopped."""
    queues = [list(lane) for lane in lanes]
    running: list[tuple[Step, subprocess.Popen[bytes], float] | None] = [None] * len(lanes)
    done: set[str] = set()
    widened: set[str] = set()
    try:
        while any(queues) or any(running):
            for k, queue in enumerate(queues):
                if running[k] is None and queue and set(queue[0].needs) <= done:
                    step = queue.pop(0)
                    running[k] = (step, subprocess.Popen(step.command, cwd=ROOT),
                                  time.monotonic())
            if not any(running):
                raise RuntimeError(f"steps wait for steps no lane runs: {queues}")
            for k, slot in enumerate(running):
                if slot is not None and slot[1].poll() is not None:
                    if slot[1].returncode:
                        raise subprocess.CalledProcessError(slot[1].returncode, slot[1].args)
                    done.add(slot[0].name)
                    running[k] = None
            idle_core = any(slot is None and not queue
                            for slot, queue in zip(running, queues, strict=True))
            for slot in running:
                if idle_core and slot is not None and slot[0].widens \
                        and slot[0].name not in widened \
                        and time.monotonic() - slot[2] >= WIDEN_AFTER_S:
                    slot[1].send_signal(signal.SIGUSR1)
                    widened.add(slot[0].name)
            time.sleep(0.5)
    except BaseException:
        for slot in running:
            if slot is not None:
                slot[1].terminate()
        raise


def missing_real_photos() -> str | None:
    """Why the real photos' Train split cannot be trained on (one line), or None: every
    network trains on it, and without it `make models` would stop at its first network,
    after ten minutes of rendering."""
    folder = real_root() / "Train"
    if folder.is_dir():
        return None
    return (f"build.py: the real photos' Train split is not at {folder}; set {REAL_ENV} to "
            "the folder holding Train/ and Valid/ (shared/data/real/matteop65 beside the "
            "checkout)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--detector-steps", type=int, default=12000)
    ap.add_argument("--tune-steps", type=int, default=3000,
                    help="the detector's tuning on the scenes hardest to find dice in")
    ap.add_argument("--body-steps", type=int, default=3000)
    ap.add_argument("--refiner-steps", type=int, default=3000)
    ap.add_argument("--classifier-steps", type=int, default=8000)
    ap.add_argument("--embedder-steps", type=int, default=4000)
    ap.add_argument("--embedder-scenes", type=int, default=6000,
                    help="scenes of dice painted with the emoji pool for the embedder")
    ap.add_argument("--embedder-width", type=int, default=16)
    ap.add_argument("--only", choices=["detector", "detector-tune", "body", "refiner",
                                       "classifier", "embedder", "whiten", "judge"],
                    default=None, help="one step (detector: tuned, with its body head; "
                    "detector-tune: models/detector.onnx tuned further, with a new body head; "
                    "classifier, refiner, embedder: trained, then put in 8-bit integers, "
                    "the embedder whitened; after a network, run --only judge: the "
                    "judge's doubt belongs to the networks)")
    args = ap.parse_args()
    start = time.time()
    judge = [sys.executable, str(MODELS / "fit_judge.py")]
    whiten = [sys.executable, str(MODELS / "whiten_embedder.py")]
    if args.only in ("judge", "whiten"):  # the validation scenes, not the training sets
        subprocess.run(judge if args.only == "judge" else whiten, check=True, cwd=ROOT)
        return 0
    problem = missing_real_photos()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    shares = {"camouflage": TRAINING_CAMOUFLAGE, "worn": TRAINING_WORN,
              "bright": TRAINING_BRIGHT}
    folders = [str(generate(*spec, **shares)) for spec in TRAIN_SETS]
    more_folders = folders + [str(generate(*spec, **shares)) for spec in MORE_SETS
                              if args.only is None or args.only in ON_MORE_SETS]
    hard_folder = (str(generate(*HARD_SET, hard_to_find=True, **shares))
                   if args.only in (None, "detector", "detector-tune") else "")
    if args.only is None:  # with the others, on both cores: the whitening runs in a lane
        for spec in VALIDATION_SETS:
            generate(*spec)
    train = [sys.executable, str(MODELS / "train.py")]

    def command(step: str, threads: int) -> list[str]:
        data = more_folders if step in ON_MORE_SETS else folders
        common = ["--data", *data, "--real", "Train", "--threads", str(threads)]
        if step in ("detector", "detector-tune", "body"):
            common += ["--samples-cache", str(SAMPLES_CACHE)]
        if step == "detector":
            return [*train, "detector", *common, "--out", str(MODELS / "detector.onnx"),
                    "--steps", str(args.detector_steps), "--batch", "16", "--seed", "11"]
        if step == "detector-tune":
            return [*train, "detector-tune", *common, "--detector",
                    str(MODELS / "detector.onnx"), "--hard", hard_folder, "--out",
                    str(MODELS / "detector.onnx"), "--steps", str(args.tune_steps),
                    "--batch", "16", "--seed", "21"]
        if step == "body":
            return [*train, "body", *common, "--detector", str(MODELS / "detector.onnx"),
                    "--out", str(MODELS / "detector.onnx"), "--steps", str(args.body_steps),
                    "--batch", "16", "--seed", "14", "--width", "32"]
        if step == "refiner":
            return [*train, "refiner", *common, "--out", str(MODELS / "refiner.onnx"),
                    "--steps", str(args.refiner_steps), "--batch", "32", "--seed", "15",
                    "--width", "16"]
        if step == "classifier":
            return [*train, "classifier", *common, "--out", str(MODELS / "classifier.onnx"),
                    "--steps", str(args.classifier_steps), "--batch", "32", "--seed", "12",
                    "--hard-negatives", str(MODELS / "detector.onnx"), "--upright",
                    "--printed", str(TRAINING_PRINTED)]
        if step in INT8_SEEDS:  # the trained network's file put in 8-bit integers in place
            network = MODELS / f"{step.removesuffix('-int8')}.onnx"
            return [*train, step, *common, f"--{network.stem}", str(network), "--out",
                    str(network), "--seed", str(INT8_SEEDS[step])]
        if step == "pool-crops":  # the embedder's own scenes, painted with the art pool
            return [*train, "pool-crops", "--identity-pool", str(art_pool()),
                    "--identity-scenes", str(args.embedder_scenes), "--threads",
                    str(threads), "--seed", "13", "--out", str(POOL_CROPS)]
        return [*train, "embedder", *common, "--pool-crops", str(POOL_CROPS), "--width",
                str(args.embedder_width), "--out", str(MODELS / "embedder.onnx"), "--steps",
                str(args.embedder_steps), "--batch", "32", "--seed", "13"]

    if args.only:
        steps = {"detector": ("detector", "detector-tune", "body"),
                 "detector-tune": ("detector-tune", "body"),
                 "classifier": ("classifier", "classifier-int8"),
                 "refiner": ("refiner", "refiner-int8"),
                 "embedder": ("pool-crops", "embedder", "embedder-int8")}
        for step in steps.get(args.only, (args.only,)):
            subprocess.run(command(step, threads=2), check=True, cwd=ROOT)
        shutil.rmtree(SAMPLES_CACHE, ignore_errors=True)
        if args.only == "embedder":
            POOL_CROPS.unlink()  # 1.3 GB, rendered again for the next embedder
            subprocess.run(whiten, check=True, cwd=ROOT)
    else:
        # After the data, two lanes of one thread each. Small networks use a second
        # thread poorly (a classifier step takes 167 ms on two threads, 257 ms on one, and
        # about as long with another training beside it; the detector's 118 and 150 ms on
        # the 2-core Intel Xeon of 2026-11-29), so side by side they take a little over
        # half the time of the steps one after another. The detector, its tuning and then
        # the classifier (the longest step) in one lane; in the other, the embedder's scenes,
        # the refiner and the embedder with its whitening (which need no detector), then the
        # body head once the detector is tuned. When one lane is done, the classifier is
        # told to take the second core too. The tuning and the body head read the scenes
        # the detector shrank (SAMPLES_CACHE).
        run_lanes([
            [Step("detector", command("detector", threads=1)),
             Step("detector-tune", command("detector-tune", threads=1),
                  needs=("detector",)),
             Step("classifier", [*command("classifier", threads=1),
                                 "--threads-on-signal", "2"],
                  needs=("detector-tune",), widens=True),
             Step("classifier-int8", command("classifier-int8", threads=1),
                  needs=("classifier",))],
            [Step("pool-crops", command("pool-crops", threads=1)),
             Step("refiner", command("refiner", threads=1)),
             Step("refiner-int8", command("refiner-int8", threads=1)),
             Step("embedder", command("embedder", threads=1)),
             Step("embedder-int8", command("embedder-int8", threads=1)),
             Step("whiten", whiten),
             Step("body", command("body", threads=1), needs=("detector-tune",))],
        ])
        POOL_CROPS.unlink()
        shutil.rmtree(SAMPLES_CACHE)
        subprocess.run(judge, check=True, cwd=ROOT)  # on both cores: two readers
    print(f"make models: done in {(time.time() - start) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
