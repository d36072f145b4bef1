"""CLI: python -m vision.synth --out DIR --count N --seed S --kind pips|animals|mixed
[--hard-to-find] [--camouflage SHARE] [--worn SHARE] [--bright SHARE]."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .dataset import generate, hard_to_find
from .sampling import KINDS


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m vision.synth",
                                 description="Render synthetic dice photos with labels.")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    ap.add_argument("--count", type=int, required=True, help="number of images")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kind", choices=KINDS, default="pips")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--quality", type=int, default=95, help="JPEG quality of the files")
    ap.add_argument("--resolution", default=None,
                    help="fixed image size WxH (default: random 0.3-2 MP, 4:3 and 16:9)")
    ap.add_argument("--hard-to-find", action="store_true",
                    help="only those of the --count scenes whose dice the detector finds "
                         "worst: a printed cloth or a noisy picture (about one in seven)")
    ap.add_argument("--camouflage", type=float, default=0.0,
                    help="the share of scenes whose dice are the colour of their table "
                         "(black dice on black felt, or felt of the dice's colour): 0-1, "
                         "default 0")
    ap.add_argument("--worn", type=float, default=0.0,
                    help="the share of pip dice sets whose paint chance left whole drawn "
                         "worn: 0-1, default 0")
    ap.add_argument("--bright", type=float, default=0.0,
                    help="the share of scenes overexposed (a camera whose exposure was "
                         "fixed in dimmer light): 0-1, default 0")
    args = ap.parse_args(argv)
    for name in ("camouflage", "worn", "bright"):
        if not 0 <= getattr(args, name) <= 1:
            ap.error(f"--{name} must be a share from 0 to 1, not {getattr(args, name)}")
    resolution = None
    if args.resolution:
        w, h = (int(v) for v in args.resolution.lower().split("x"))
        resolution = (w, h)
    t0 = time.perf_counter()
    labels = generate(args.out, args.count, args.seed, args.kind, args.workers, args.quality,
                      resolution=resolution, only=hard_to_find if args.hard_to_find else None,
                      camouflage=args.camouflage, worn=args.worn, bright=args.bright)
    dt = time.perf_counter() - t0
    n = sum(len(lb.dice) for lb in labels)
    print(f"wrote {len(labels)} images with {n} dice to {args.out} in {dt:.1f} s")


if __name__ == "__main__":
    main()
