"""`kniffel`: the one command for everything a user does.

Each subcommand imports only what it needs, so `kniffel replay` starts fast and works
without a camera or a model. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from web.config import TURN_DEGREES

if TYPE_CHECKING:
    import numpy as np

    from vision.reader import Reader
    from vision.reading import DieValue, Reading


#: `kniffel read --expect` at most: more dice than a table's photo could show apart.
MAX_EXPECTED = 100


class UserError(Exception):
    """An error to report as one line, with a non-zero exit."""


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ({exc.__class__.__name__})") from None


def cmd_replay(args: argparse.Namespace) -> int:
    from game import KniffelError, loads, to_json, to_text

    text = _read_text(args.file)
    try:
        game = loads(text)
    except KniffelError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    if args.json:
        print(json.dumps(to_json(game), ensure_ascii=False, indent=2))
    else:
        print(to_text(game, lang=args.lang), end="")
    return 0


def photo_reading(reader: Reader, frame: np.ndarray, turn_given: bool
                  ) -> tuple[Reading, list[str]]:
    """How `kniffel read` reads one photo, and its warnings: where the photo reads clearly
    better turned a quarter further (`Reader.better_reading`), that reading unless a turn
    was given (`turn_given`: then it is only named). `make eval` reads its turned sets so
    too (models/evaluate.py, `ReadsTheBetterTurn`)."""
    reading = reader.read(frame)
    warnings = list(reading.warnings)
    better = reader.better_reading(frame, reading)
    if better is None:
        return reading, warnings
    turn, turned = better
    if turn_given:
        return reading, [*warnings, f"the dice read better turned {turn * 90}° "
                         f"(--turn {turn * 90})"]
    # no camera named: the photo is read the way it reads
    return turned, [*turned.warnings, f"read turned {turn * 90}°: the dice read better so "
                    "(--turn 0 reads the photo as it is)"]


def cmd_read(args: argparse.Namespace) -> int:
    from vision.annotate import annotate
    from vision.models import ModelMissingError
    from vision.photo import read_photo
    from vision.reader import Reader
    from web.config import state_dir

    if not 1 <= args.expect <= MAX_EXPECTED:
        raise UserError(f"--expect {args.expect}: the number of dice in each photo, 1 to "
                        f"{MAX_EXPECTED}")
    try:
        reader = Reader.for_dice_set(args.dice_set, state_dir(), expected=args.expect,
                                     turn=(args.turn or 0) // 90)
    except (ModelMissingError, ValueError) as exc:  # DiceSetError is a ValueError
        raise UserError(str(exc)) from None
    if args.annotate:
        if args.annotate.exists() and not args.annotate.is_dir():
            raise UserError(f"--annotate {args.annotate}: not a folder")
        try:
            args.annotate.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--annotate {args.annotate}: {exc.strerror or exc}") from None
    results: list[dict[str, object]] = []
    failed = 0
    for path in args.images:
        try:
            photo = read_photo(path)
            frame = photo.frame
            reading, warnings = photo_reading(reader, frame, turn_given=args.turn is not None)
            warnings = [*photo.warnings, *warnings]
        except ValueError as exc:  # also a frame too small to read
            print(f"kniffel read: {path}: {exc}", file=sys.stderr)
            results.append({"image": str(path), "error": str(exc)})
            failed += 1
            continue
        results.append({"image": str(path), "dice": [d.to_json() for d in reading.dice],
                        "warnings": warnings})
        if args.annotate:
            problem = write_image(args.annotate / path.name, annotate(frame, reading))
            if problem:
                print(f"kniffel read: {path}: {problem}", file=sys.stderr)
                failed += 1
        if not args.json:
            values = " ".join(f"{d.value}{'?' if d.flag else ''}" for d in reading.dice)
            notes = f"  ({'; '.join(warnings)})" if warnings else ""
            print(f"{path}: {values or '-'}{notes}")
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
    return 1 if failed else 0


def write_image(path: Path, image: np.ndarray) -> str | None:
    """Write `image` to `path` (as PNG beside it where OpenCV has no writer for its
    suffix, e.g. a photo named without one); None, or why it could not be written."""
    from vision.photo import encoded

    data = encoded(image, path.suffix)
    if data is None:
        path = path.with_name(path.name + ".png")
        data = encoded(image, ".png")
    if data is None:  # not a picture OpenCV can encode
        return f"cannot write {path}"
    try:
        path.write_bytes(data)
    except OSError:
        return f"cannot write {path}"
    return None


def cmd_teach(args: argparse.Namespace) -> int:
    from vision.photo import read_whole_photo
    from vision.teach import DiceSetError, parse_value
    from web.calibrate import CalibrationError, forget_play, teach_set

    if args.forget_learnt:
        if args.photos or args.add:
            raise UserError("--forget-learnt takes no photos (and no --add)")
        try:
            print(forget_play(args.dice_set))
        except CalibrationError as exc:
            raise UserError(str(exc)) from None
        return 0
    if not args.photos:
        raise UserError("give a photo of each face: VALUE=PHOTO, e.g. duck=duck.jpg")
    photos: dict[DieValue, list[np.ndarray]] = {}
    for item in args.photos:
        value, sep, path = item.partition("=")
        if not sep or not value or not path:
            raise UserError(f"{item!r}: write VALUE=PHOTO, e.g. duck=duck.jpg")
        try:
            face = parse_value(value)
        except DiceSetError as exc:
            raise UserError(str(exc)) from None
        try:
            photos.setdefault(face, []).append(read_whole_photo(Path(path)))
        except ValueError as exc:
            raise UserError(f"{path}: {exc}") from None
    try:
        taught = teach_set(args.dice_set, photos, add=args.add)
    except CalibrationError as exc:  # a set that cannot be taught, missing models
        raise UserError(str(exc)) from None
    print(taught.report(args.dice_set))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kniffel", description="Kniffel scanner: reads dice, keeps the Kniffel-Block.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("replay", help="play a kniffel-record/1 file through the rules engine")
    p.add_argument("file", help="the record (JSON), or - for standard input")
    p.add_argument("--json", action="store_true", help="print the block as JSON")
    p.add_argument("--lang", choices=["de", "en"], default="de", help="row names")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("read", help="read the dice in photographs")
    p.add_argument("images", nargs="+", type=Path, help="image files (JPEG, PNG, ...)")
    p.add_argument("--dice-set", default="auto", metavar="NAME|pips|animals",
                   help="which dice: pips, animals, auto (default) or a taught set")
    p.add_argument("--json", action="store_true", help="print one JSON list for all images")
    p.add_argument("--annotate", type=Path, metavar="DIR",
                   help="write a copy of each image with the dice drawn in")
    p.add_argument("--expect", type=int, default=5,
                   help="dice expected per image (5): another count is warned of, and where "
                        "fewer are found, unsurely or small, the image is searched again")
    p.add_argument("--turn", type=int, choices=TURN_DEGREES, metavar="DEG",
                   help="degrees clockwise that turn the photos upright, the side nearest "
                        "the camera at the bottom (0, 90, 180, 270); without it, a photo "
                        "whose dice read clearly better turned a quarter is read so")
    p.set_defaults(func=cmd_read)

    p = sub.add_parser("teach", help="teach the reader a new dice set from photos")
    p.add_argument("--dice-set", required=True, metavar="NAME", help="name of the set")
    p.add_argument("photos", nargs="*", metavar="VALUE=PHOTO",
                   help="a photo in which every die shows VALUE (e.g. duck=duck.jpg)")
    p.add_argument("--add", action="store_true",
                   help="add to the set taught before under NAME (the same dice in another "
                        "light or place; a photo for every face) instead of replacing it")
    p.add_argument("--forget-learnt", action="store_true",
                   help="forget what the set learnt at tables from the throws people "
                        "checked (`kniffel serve`), keeping what its photos taught")
    p.set_defaults(func=cmd_teach)

    # The table service and calibration live in their own modules; each adds its arguments
    # (cheap imports only) and runs with `run(args) -> int`.
    from web import calibrate, serve

    p = sub.add_parser("serve", help="run the table: camera, reader, Kniffel-Block page")
    serve.add_arguments(p)
    p.set_defaults(func=serve.run)

    p = sub.add_parser("calibrate", help="set up the camera, table areas and dice set")
    calibrate.add_arguments(p)
    p.set_defaults(func=calibrate.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # A file name that is not valid UTF-8 (a card written in another encoding) is printed
    # with its odd bytes escaped, never a traceback; in JSON the escape reads back as the
    # name Python opens the file by.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except UserError as exc:
        print(f"kniffel {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
