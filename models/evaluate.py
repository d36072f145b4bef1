"""`make eval`: how well do the readers read? Real validation photos and synthetic test
sets (seeds never used in training), our reader beside the classical blob baseline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "models"))

from build import DATA, generate  # noqa: E402

from vision.baseline import BlobBaselineReader  # noqa: E402
from vision.datasets import load_real, real_root  # noqa: E402
from vision.evaluation import EvalResult, evaluate, format_table  # noqa: E402
from vision.reader import Reader  # noqa: E402
from vision.reading import load_labels  # noqa: E402

#: Test sets: seeds 9xxxxx are never used for training (build.py uses 1xx).
TEST_SETS = [
    ("synth-test-pips", "pips", 300, 900001),
    ("synth-test-animals", "animals", 300, 900002),
]


def synthetic(folder: Path) -> list[tuple[Path, object]]:
    return [(folder / label.image, label) for label in load_labels(folder)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args()
    sets: dict[str, list] = {}
    if real_root().is_dir():
        sets["Real Valid"] = load_real("Valid")
    else:
        print(f"(real photos not found at {real_root()}: skipped)")
    for folder, kind, count, seed in TEST_SETS:
        sets[f"Synth {kind}"] = synthetic(generate(folder, kind, count, seed))
    readers = {"ours": Reader.default()}
    if not args.no_baseline:
        readers["blob baseline"] = BlobBaselineReader()
    results: dict[str, EvalResult] = {}
    for set_name, samples in sets.items():
        for reader_name, reader in readers.items():
            if reader_name == "blob baseline" and "animals" in set_name:
                continue  # pip counting cannot read animals
            results[f"{reader_name} | {set_name}"] = evaluate(reader, samples)
    print(format_table(results))
    print(f"\nsynthetic test data: {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
