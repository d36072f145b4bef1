"""Fit the judge's doubt (vision/doubt.py) for the models in models/: models/doubt.json.

Reads the validation scenes (seeds 800001–800004: never trained on, and not the test sets
`make eval` reports) with the doubt off, and fits which of the readings the judge trusted
were wrong (wrong value, or no die there) on what the stages said about them. `make models`
runs it after training, since the doubt belongs to the networks it was fitted with.

    python models/fit_judge.py [--ask-above 0.02] [--workers 2]
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "models"))

from build import VALIDATION_SETS, generate  # noqa: E402
from evaluate import synthetic  # noqa: E402

from vision.doubt import DOUBT_PATH, FEATURES, Doubt  # noqa: E402
from vision.evaluation import match  # noqa: E402
from vision.judge import Judge  # noqa: E402
from vision.reader import Reader  # noqa: E402
from vision.reading import SceneLabel  # noqa: E402

#: Ask where the estimated chance of an error is at least this: about twice the share of
#: trusted readings that are wrong on the validation scenes (45 of 3545 with the models of
#: 2026-11-25). There it asks about 383 more dice, 29 of the 45 among them; on the test
#: sets (not fitted on) `make eval` asked 163 more of 2588 dice and 14 of 21 silent errors
#: were caught; on the real Valid photos not one die more was asked. (2026-11-29, with the
#: body's way along the view: 43 wrong of 3710; it asks about 297 more, 22 of the 43.)
#: 0.02 since the detector's tuning on the scenes hardest to find dice in (2026-11-30):
#: 40 wrong of 4016; it asks about 398 more, 27 of the 40. There it asks about as often
#: as the detector before at 0.025 (`make eval`), and, of all `make eval`'s rows, makes
#: 2 silent errors fewer; at 0.025 the tuned detector made more (models/README.md).
ASK_ABOVE = 0.02


#: The reader of this worker process (`trusted_readings`).
_reader: Reader | None = None


def _start_reader(make_reader: Callable[[], Reader]) -> None:
    global _reader
    _reader = make_reader()


def _start_worker(make_reader: Callable[[], Reader]) -> None:
    """A worker process's reader, on one OpenCV thread: the other worker has the other
    core (as `make eval`'s workers: models/evaluate.py)."""
    cv2.setNumThreads(1)
    _start_reader(make_reader)


def _trusted_in(scene: tuple[Path, SceneLabel]) -> tuple[list[np.ndarray], list[bool]]:
    """Evidence and whether wrong for each reading of one scene the judge trusts."""
    assert _reader is not None, "_start_reader first"
    path, label = scene
    reading, evidence = _reader.judged(cv2.imread(str(path)))
    pairs = dict(match(list(reading.dice), label.dice))
    rows, wrong = [], []
    for i, die in enumerate(reading.dice):
        if die.asked:
            continue
        rows.append(evidence[i])
        wrong.append(i not in pairs or die.value != label.dice[pairs[i]].value)
    return rows, wrong


def trusted_readings(make_reader: Callable[[], Reader], folders: list[Path],
                     workers: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Features and whether wrong, for every reading the judge trusts (not asked), of
    the readers `make_reader` makes: one in each of `workers` processes, each reading
    its share of the scenes (in `make models` both cores are free by then)."""
    scenes = [scene for folder in folders for scene in synthetic(folder)]
    if workers <= 1:
        _start_reader(make_reader)
        results = [_trusted_in(scene) for scene in scenes]
    else:
        # spawned, as `make eval`'s workers are (models/evaluate.py, WORKERS): a forked
        # child inherits the parent's thread pools half-held
        with multiprocessing.get_context("spawn").Pool(workers, _start_worker,
                                                       (make_reader,)) as pool:
            results = pool.map(_trusted_in, scenes, chunksize=8)
    rows = [row for scene_rows, _ in results for row in scene_rows]
    wrong = [w for _, scene_wrong in results for w in scene_wrong]
    return np.array(rows).reshape(-1, len(FEATURES)), np.array(wrong, float)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ask-above", type=float, default=ASK_ABOVE)
    ap.add_argument("--workers", type=int, default=2,
                    help="processes reading the scenes (one reader, one thread each)")
    ap.add_argument("--out", type=Path, default=DOUBT_PATH)
    args = ap.parse_args()
    start = time.time()
    folders = [generate(*spec) for spec in VALIDATION_SETS]
    # Without the doubt there (it may be for other networks or features: not read at all),
    # the steep-view and bodies-pointing-up checks, and asking about the stronger find of a
    # close pair too: all catch side faces read for top faces, and a doubt fitted on what
    # they leave would learn that those are rarer than they are and ask less (on the
    # validation scenes, without the steep-view check 248 instead of 383 more asks and more
    # silent errors on the test sets; fitted with the pair check, 15 more asks catching
    # none of the 23 wrong).
    undoubting = functools.partial(Reader.default, judge=Judge(
        doubt=None, steep_view=None, body_up=None, overlap_both=False))
    features, wrong = trusted_readings(undoubting, folders, args.workers)
    doubt = Doubt.fit(features, wrong, args.ask_above)
    asked = doubt.probability(features) >= doubt.ask_above
    summary = (f"{len(wrong)} trusted readings of {len(VALIDATION_SETS)} validation sets, "
               f"{int(wrong.sum())} wrong; asks about {int(asked.sum())} more, "
               f"{int(wrong[asked].sum())} of the wrong among them")
    doubt.save(args.out, note=summary)
    print(f"fit_judge: {summary}; {args.out} in {time.time() - start:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
