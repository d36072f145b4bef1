"""Small helpers to set up positions quickly in rule tests."""

from __future__ import annotations

from collections.abc import Sequence

from game import Game
from game.core import Face


def fill(game: Game, entries: dict[str, Sequence[Face]], column: str | None = None) -> None:
    """Play one turn per entry for the current player (single-player games)."""
    for box, dice in entries.items():
        game.throw(list(dice))
        game.enter(box, column)


def points(game: Game, dice: Sequence[Face], column: str | None = None) -> dict[str, int]:
    """Throw once and return the points of every legal box it fits (then undo the throw)."""
    game.throw(list(dice))
    try:
        return {o.box: o.points for o in game.options()
                if o.legal and o.fits and (column is None or o.column == column)}
    finally:
        game.pop()
