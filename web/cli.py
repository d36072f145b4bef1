"""`kniffel`: the one command for everything a user does.

Each subcommand imports only what it needs, so `kniffel replay` starts fast and works
without a camera or a model. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kniffel", description="Kniffel scanner: reads dice, keeps the Kniffel-Block.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("replay", help="play a kniffel-record/1 file through the rules engine")
    p.add_argument("file", help="the record (JSON), or - for standard input")
    p.add_argument("--json", action="store_true", help="print the block as JSON")
    p.add_argument("--lang", choices=["de", "en"], default="de", help="row names")
    p.set_defaults(func=cmd_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
