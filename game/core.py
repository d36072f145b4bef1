"""Small immutable value types: faces, throws and the three kinds of move."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from game.errors import MalformedError

Face = int | str  # 1..6 on pip dice, an animal name on Kniffel Kids dice

DICE_PER_THROW = 5
MAX_THROWS = 3

PIPS: tuple[Face, ...] = (1, 2, 3, 4, 5, 6)
ANIMALS: tuple[Face, ...] = ("duck", "lion", "mouse", "cat", "dog", "elephant")


@dataclass(frozen=True)
class Throw:
    """Five dice as they lie after one throw.

    ``held`` are the indices of dice kept from the previous throw (they must show the same
    faces); ``None`` means unknown, ``()`` means all five dice were thrown.
    """

    dice: tuple[Face, ...]
    held: tuple[int, ...] | None = None

    @classmethod
    def of(cls, dice: Iterable[Face], held: Iterable[int] | None = None) -> Throw:
        """Build a throw, checking only its shape (faces are checked by the ruleset)."""
        dice_t = tuple(dice)
        if len(dice_t) != DICE_PER_THROW:
            raise MalformedError(f"a throw has {DICE_PER_THROW} dice, not {len(dice_t)}")
        held_t: tuple[int, ...] | None = None
        if held is not None:
            held_t = tuple(held)
            for index in held_t:
                if isinstance(index, bool) or not isinstance(index, int):
                    raise MalformedError(f"held index {index!r} is not a whole number")
                if not 0 <= index < DICE_PER_THROW:
                    raise MalformedError(f"held index {index} is not between 0 and 4")
            if len(set(held_t)) != len(held_t):
                raise MalformedError("a held index is listed twice")
            held_t = tuple(sorted(held_t))
        return cls(dice_t, held_t)

    @property
    def all_five(self) -> bool:
        """True when it is known that no die was kept (what `scharf` asks for)."""
        return self.held == ()

    def __repr__(self) -> str:
        if self.held is None:
            return f"Throw.of({list(self.dice)!r})"
        return f"Throw.of({list(self.dice)!r}, held={list(self.held)!r})"


@dataclass(frozen=True)
class Announce:
    """Names the target box of the `announce` column, right after the first throw."""

    box: str

    def __repr__(self) -> str:
        return f"Announce({self.box!r})"


@dataclass(frozen=True)
class Entry:
    """Ends the turn by writing into one box. ``scratch`` writes 0 even where it fits."""

    box: str
    column: str | None = None
    scratch: bool = False

    def __repr__(self) -> str:
        args = [repr(self.box)]
        if self.column is not None:
            args.append(f"column={self.column!r}")
        if self.scratch:
            args.append("scratch=True")
        return f"Entry({', '.join(args)})"


Move = Throw | Announce | Entry


def is_kniffel(dice: Sequence[Face]) -> bool:
    return len(set(dice)) == 1
