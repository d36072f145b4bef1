"""`make models`: generate the synthetic training data and train the models, seeded.

Data goes to data/ (not committed; regenerated when missing), models to models/*.onnx
and the judge's doubt fitted to them to models/doubt.json (committed); models/README.md
says what each step does. Each step prints its time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
MODELS = ROOT / "models"

#: (folder, kind, count, seed) — training seeds are 1xx; test sets use 9xxxxx (evaluate.py).
TRAIN_SETS = [
    ("synth-train-pips", "pips", 3000, 101),
    ("synth-train-animals", "animals", 1500, 102),
    ("synth-train-mixed", "mixed", 1000, 103),
]
#: As many scenes again for the classifier alone: it gains from more scenes and steps
#: (models/README, "The classifier trained in bfloat16 on twice the scenes"); the detector
#: trained on them read more dice right but made more silent errors ("The detector on
#: twice the scenes and steps").
MORE_CLASSIFIER_SETS = [
    ("synth-train-pips-b", "pips", 3000, 104),
    ("synth-train-animals-b", "animals", 1500, 105),
    ("synth-train-mixed-b", "mixed", 1000, 106),
]


def generator_version() -> str:
    """A hash of the generator's source: a set rendered by other code is rendered again."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "vision" / "synth").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def generate(folder: str, kind: str, count: int, seed: int, workers: int = 2) -> Path:
    """Render a synthetic data set unless the same one, by the same generator, is there."""
    out = DATA / folder
    stamp = out / "stamp.json"
    want = {"kind": kind, "count": count, "seed": seed, "generator": generator_version()}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return out
    t = time.time()
    subprocess.run([sys.executable, "-m", "vision.synth", "--out", str(out), "--count",
                    str(count), "--seed", str(seed), "--kind", kind, "--workers",
                    str(workers)], check=True, cwd=ROOT)
    stamp.write_text(json.dumps(want))
    print(f"generated {folder}: {count} {kind} scenes in {time.time() - t:.0f}s", flush=True)
    return out


def art_pool() -> Path:
    """The training-only emoji faces of the embedder (make_animal_art.py --pool), drawn
    once from Debian's Noto Color Emoji font."""
    out = DATA / "art-pool"
    if not (out / "pool.json").is_file():
        subprocess.run([sys.executable, str(MODELS / "make_animal_art.py"), "--pool",
                        str(out)], check=True, cwd=ROOT)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--detector-steps", type=int, default=6000)
    ap.add_argument("--body-steps", type=int, default=3000)
    ap.add_argument("--refiner-steps", type=int, default=3000)
    ap.add_argument("--classifier-steps", type=int, default=8000)
    ap.add_argument("--embedder-steps", type=int, default=4000)
    ap.add_argument("--embedder-scenes", type=int, default=6000,
                    help="scenes of dice painted with the emoji pool for the embedder")
    ap.add_argument("--embedder-width", type=int, default=16)
    ap.add_argument("--only", choices=["detector", "body", "refiner", "classifier", "embedder",
                                       "whiten", "judge"],
                    default=None, help="one step (detector: with its body head; embedder: "
                    "with its whitening; after a network, run --only judge: the judge's "
                    "doubt belongs to the networks)")
    args = ap.parse_args()
    start = time.time()
    judge = [sys.executable, str(MODELS / "fit_judge.py")]
    whiten = [sys.executable, str(MODELS / "whiten_embedder.py")]
    if args.only in ("judge", "whiten"):  # the validation scenes, not the training sets
        subprocess.run(judge if args.only == "judge" else whiten, check=True, cwd=ROOT)
        return 0
    folders = [str(generate(*spec)) for spec in TRAIN_SETS]
    classifier_folders = folders + [str(generate(*spec)) for spec in MORE_CLASSIFIER_SETS
                                    if args.only in (None, "classifier")]
    train = [sys.executable, str(MODELS / "train.py")]

    def command(step: str, threads: int) -> list[str]:
        data = classifier_folders if step == "classifier" else folders
        common = ["--data", *data, "--real", "Train", "--threads", str(threads)]
        if step == "detector":
            return [*train, "detector", *common, "--out", str(MODELS / "detector.onnx"),
                    "--steps", str(args.detector_steps), "--batch", "16", "--seed", "11"]
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
                    "--hard-negatives", str(MODELS / "detector.onnx"), "--upright"]
        return [*train, "embedder", *common, "--identity-pool", str(art_pool()),
                "--identity-scenes", str(args.embedder_scenes), "--width",
                str(args.embedder_width), "--out", str(MODELS / "embedder.onnx"), "--steps",
                str(args.embedder_steps), "--batch", "32", "--seed", "13"]

    if args.only:
        for step in ("detector", "body") if args.only == "detector" else (args.only,):
            subprocess.run(command(step, threads=2), check=True, cwd=ROOT)
        if args.only == "embedder":
            subprocess.run(whiten, check=True, cwd=ROOT)
    else:
        subprocess.run(command("detector", threads=2), check=True, cwd=ROOT)
        # The rest needs the detector at most, not each other: two lanes of one thread
        # each. Small networks use a second thread poorly (on the 2-core development
        # machine a classifier step takes 167 ms on two threads, 257 ms on one, and about
        # as long with another training beside it; in bfloat16 75 and 137 ms), so the two
        # lanes take a little over half the time of the steps one after another. The
        # classifier's lane is the longer one: when the other is done, it is told to take
        # the second core too.
        classifier = subprocess.Popen([*command("classifier", threads=1),
                                       "--threads-on-signal", "2"], cwd=ROOT)
        try:
            for step in ("body", "refiner", "embedder"):
                subprocess.run(command(step, threads=1), check=True, cwd=ROOT)
            if classifier.poll() is None:
                classifier.send_signal(signal.SIGUSR1)
        except BaseException:
            classifier.terminate()
            raise
        if classifier.wait():
            raise subprocess.CalledProcessError(classifier.returncode, classifier.args)
        subprocess.run(whiten, check=True, cwd=ROOT)
        subprocess.run(judge, check=True, cwd=ROOT)
    print(f"make models: done in {(time.time() - start) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
