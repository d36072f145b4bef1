"""Rulesets (one subclass per edition, registered by id) and the variants that combine
with them. Only scoring lives here; whose turn it is and what is filled lives in board.py.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from game.core import ANIMALS, PIPS, Face, is_kniffel
from game.errors import MalformedError

UPPER: tuple[str, ...] = ("ones", "twos", "threes", "fours", "fives", "sixes")
LOWER: tuple[str, ...] = (
    "three_of_a_kind", "four_of_a_kind", "full_house", "small_straight",
    "large_straight", "kniffel", "chance",
)
KIDS_UPPER: tuple[str, ...] = ("duck", "lion", "mouse", "cat", "dog", "elephant")
KIDS_LOWER: tuple[str, ...] = (
    "three_of_a_kind", "two_pairs", "full_house", "all_different", "kniffel",
)

#: The highest score of each box, which a joker Kniffel earns in the current edition.
BOX_MAXIMUM: dict[str, int] = {
    "ones": 5, "twos": 10, "threes": 15, "fours": 20, "fives": 25, "sixes": 30,
    "three_of_a_kind": 30, "four_of_a_kind": 30, "full_house": 25,
    "small_straight": 30, "large_straight": 40, "chance": 30,
}

#: Boxes that `scharf` doubles: the lower combinations, not chance.
SCHARF_BOXES = frozenset(
    {"three_of_a_kind", "four_of_a_kind", "full_house", "small_straight",
     "large_straight", "kniffel"}
)

VARIANTS: tuple[str, ...] = ("scharf", "strict-order")
COLUMN_KINDS: tuple[str, ...] = ("down", "up", "announce", "free")


@dataclass(frozen=True)
class Earn:
    """What a throw earns in one box. ``points`` is None where the throw does not fit.

    ``extra_bonus`` goes to the column's extra-Kniffel line with this entry (also when the
    box is scratched); ``bonus_exempt`` is the part of ``points`` that does not count
    towards the upper bonus (the house rule's 100 for a further Kniffel).
    """

    points: int | None
    extra_bonus: int = 0
    bonus_exempt: int = 0


@dataclass(frozen=True)
class ColumnView:
    """What a ruleset may look at when scoring: the boxes of the column being entered."""

    boxes: dict[str, int | None]

    def free(self, box: str) -> bool:
        return self.boxes[box] is None

    def kniffel_scored(self) -> bool:
        value = self.boxes.get("kniffel")
        return value is not None and value > 0


def _straight(values: set[Face], length: int) -> bool:
    runs = [set(range(start, start + length)) for start in range(1, 8 - length)]
    return any(run <= values for run in runs)


def pip_points(box: str, dice: Sequence[Face]) -> int | None:
    """Scores of the printed block for pip dice, before any Kniffel special rule."""
    counts = Counter(dice)
    total = sum(int(d) for d in dice)
    if box in UPPER:
        face = UPPER.index(box) + 1
        return face * counts[face] if counts[face] else None
    most = max(counts.values())
    values = set(dice)
    if box == "three_of_a_kind":
        return total if most >= 3 else None
    if box == "four_of_a_kind":
        return total if most >= 4 else None
    if box == "full_house":
        return 25 if sorted(counts.values()) == [2, 3] else None
    if box == "small_straight":
        return 30 if _straight(values, 4) else None
    if box == "large_straight":
        return 40 if _straight(values, 5) else None
    if box == "kniffel":
        return 50 if most == 5 else None
    if box == "chance":
        return total
    raise MalformedError(f"unknown box {box!r}")


def _joker_lower(box: str, dice: Sequence[Face]) -> int | None:
    """A Kniffel used as a joker in the lower part: full value for every lower box."""
    fixed = {"full_house": 25, "small_straight": 30, "large_straight": 40}
    if box in fixed:
        return fixed[box]
    if box in LOWER:
        return sum(int(d) for d in dice)
    return None


class Ruleset:
    """A Kniffel edition. Subclasses set class-level options and override `earn`."""

    name: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    faces: ClassVar[tuple[Face, ...]] = PIPS
    upper: ClassVar[tuple[str, ...]] = UPPER
    lower: ClassVar[tuple[str, ...]] = LOWER
    min_players: ClassVar[int] = 1
    max_players: ClassVar[int] = 8
    upper_bonus_threshold: ClassVar[int | None] = 63
    upper_bonus: ClassVar[int] = 35
    #: True: any box may be scratched at any time. False: only when nothing fits.
    scratch_any: ClassVar[bool] = False
    #: Whether the variants (scharf, strict-order, columns) apply to this edition.
    takes_variants: ClassVar[bool] = True

    @property
    def boxes(self) -> tuple[str, ...]:
        return self.upper + self.lower

    def check_face(self, face: object) -> Face:
        # 6.0 == 6 and True == 1, but neither is the face of a die.
        if (isinstance(face, bool) or not isinstance(face, numbers.Integral | str)
                or face not in self.faces):
            shown = ", ".join(str(f) for f in self.faces)
            raise MalformedError(f"die value {face!r} is not a face of these dice ({shown})")
        return self.faces[self.faces.index(face)]

    def base_points(self, box: str, dice: Sequence[Face]) -> int | None:
        return pip_points(box, dice)

    def earn(self, column: ColumnView, box: str, dice: Sequence[Face]) -> Earn:
        """What the final throw earns in a free box of this column."""
        return Earn(self.base_points(box, dice))

    def forced_box(self, column: ColumnView, dice: Sequence[Face]) -> str | None:
        """A box this throw must go into, if the edition forces one in this column."""
        return None

    def __repr__(self) -> str:
        return f"ruleset({self.name!r})"


RULESETS: dict[str, type[Ruleset]] = {}


def register(cls: type[Ruleset]) -> type[Ruleset]:
    RULESETS[cls.name] = cls
    return cls


def ruleset(name: str) -> Ruleset:
    """Look a ruleset up by its public id."""
    try:
        return RULESETS[name]()
    except (KeyError, TypeError):
        known = ", ".join(RULESETS)
        raise MalformedError(f"unknown ruleset {name!r} (known: {known})") from None


@register
class Kniffel(Ruleset):
    """Current edition (seed 002): further Kniffel +50 and a joker at box maximum."""

    name = "kniffel"
    title = "Kniffel"
    source = "002"

    def earn(self, column: ColumnView, box: str, dice: Sequence[Face]) -> Earn:
        if is_kniffel(dice) and column.kniffel_scored():
            return Earn(BOX_MAXIMUM[box], extra_bonus=50)
        return Earn(self.base_points(box, dice))


@register
class KniffelChampionship(Ruleset):
    """Meisterschaftsregel (seed 002): scratch any box; a further Kniffel +50, fits as usual."""

    name = "kniffel-championship"
    title = "Kniffel (Meisterschaftsregel)"
    source = "002"
    scratch_any = True

    def earn(self, column: ColumnView, box: str, dice: Sequence[Face]) -> Earn:
        bonus = 50 if is_kniffel(dice) and column.kniffel_scored() else 0
        return Earn(self.base_points(box, dice), extra_bonus=bonus)


class _UpperFirstJoker(Ruleset):
    """Older editions: a further Kniffel must go to its upper box while that is free;
    otherwise it is a joker for the lower part at full value."""

    joker_bonus: ClassVar[int]
    bonus_only_in_upper: ClassVar[bool]

    def forced_box(self, column: ColumnView, dice: Sequence[Face]) -> str | None:
        if is_kniffel(dice) and not column.free("kniffel"):
            upper_box = UPPER[int(dice[0]) - 1]
            if column.free(upper_box):
                return upper_box
        return None

    def earn(self, column: ColumnView, box: str, dice: Sequence[Face]) -> Earn:
        if not is_kniffel(dice) or column.free("kniffel"):
            return Earn(self.base_points(box, dice))
        bonus = self.joker_bonus if column.kniffel_scored() else 0
        upper_box = UPPER[int(dice[0]) - 1]
        if column.free(upper_box):
            # In a free column forced_box closes every other box. Where an order or an
            # announcement picks another box, the Kniffel counts there as what it is.
            if box != upper_box and self.bonus_only_in_upper:
                bonus = 0
            return Earn(self.base_points(box, dice), extra_bonus=bonus)
        if self.bonus_only_in_upper:
            bonus = 0
        return Earn(_joker_lower(box, dice), extra_bonus=bonus)


@register
class KniffelClassic(_UpperFirstJoker):
    """Older edition (seed 000): upper box first (+50 there), else joker without bonus."""

    name = "kniffel-classic"
    title = "Kniffel (ältere Ausgabe)"
    source = "000"
    joker_bonus = 50
    bonus_only_in_upper = True


@register
class KniffelInternational(_UpperFirstJoker):
    """Schmidt International (seed 001): scratch any box; a further Kniffel +100."""

    name = "kniffel-international"
    title = "Kniffel (Schmidt International)"
    source = "001"
    scratch_any = True
    joker_bonus = 100
    bonus_only_in_upper = False


@register
class KniffelHouse(Ruleset):
    """House rules (seed 003): a further Kniffel is worth 100 in any box; a Kniffel is a
    full house while the kniffel box does not hold a Kniffel."""

    name = "kniffel-house"
    title = "Kniffel (Hausregeln)"
    source = "003"
    scratch_any = True

    def earn(self, column: ColumnView, box: str, dice: Sequence[Face]) -> Earn:
        if is_kniffel(dice):
            if column.kniffel_scored():
                if box in UPPER:
                    return Earn((self.base_points(box, dice) or 0) + 100, bonus_exempt=100)
                return Earn(100)
            if box == "full_house":
                return Earn(25)
        return Earn(self.base_points(box, dice))


@register
class Kids(Ruleset):
    """Kniffel Kids (seed 004): animal dice, 11 boxes, no bonus."""

    name = "kids"
    title = "Kniffel Kids"
    source = "004"
    faces = ANIMALS
    upper = KIDS_UPPER
    lower = KIDS_LOWER
    max_players = 6
    upper_bonus_threshold = None
    upper_bonus = 0
    takes_variants = False

    def base_points(self, box: str, dice: Sequence[Face]) -> int | None:
        counts = Counter(dice)
        shape = sorted(counts.values(), reverse=True)
        if box in KIDS_UPPER:
            return counts[box] or None
        if box == "three_of_a_kind":
            return 2 if shape[0] >= 3 else None
        if box == "two_pairs":
            return 3 if len(shape) >= 2 and shape[1] >= 2 else None
        if box == "full_house":
            return 4 if shape == [3, 2] else None
        if box == "all_different":
            return 5 if len(shape) == 5 else None
        if box == "kniffel":
            return 10 if shape == [5] else None
        raise MalformedError(f"unknown box {box!r}")


@dataclass(frozen=True)
class Rules:
    """A ruleset with the variants and the columns a table plays."""

    ruleset: Ruleset
    variants: tuple[str, ...] = ()
    columns: tuple[str, ...] = ("free",)

    @classmethod
    def make(
        cls, name: str, variants: Sequence[str] = (), columns: Sequence[str] = ("free",)
    ) -> Rules:
        rs = ruleset(name)
        for variant in variants:
            if variant not in VARIANTS:
                raise MalformedError(
                    f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
        if len(set(variants)) != len(variants):
            raise MalformedError("a variant is listed twice")
        if not columns:
            raise MalformedError("at least one column is needed")
        for kind in columns:
            if kind not in COLUMN_KINDS:
                raise MalformedError(
                    f"unknown column {kind!r} (known: {', '.join(COLUMN_KINDS)})")
        if len(set(columns)) != len(columns):
            raise MalformedError("each column kind may be used once")
        if not rs.takes_variants and (variants or tuple(columns) != ("free",)):
            raise MalformedError(f"ruleset {rs.name!r} is played without variants or columns")
        order = {v: i for i, v in enumerate(VARIANTS)}
        return cls(rs, tuple(sorted(variants, key=order.__getitem__)), tuple(columns))

    @property
    def boxes(self) -> tuple[str, ...]:
        return self.ruleset.boxes

    @property
    def scharf(self) -> bool:
        return "scharf" in self.variants

    def order(self, column: str) -> str:
        """How a column is filled: 'down', 'up', 'announce' or 'free'."""
        if column == "free" and "strict-order" in self.variants:
            return "down"
        return column

    def earn(self, column: ColumnView, box: str, dice: Sequence[Face], all_five: bool) -> Earn:
        earned = self.ruleset.earn(column, box, dice)
        if self.scharf and all_five and box in SCHARF_BOXES and earned.points:
            return Earn(earned.points * 2, earned.extra_bonus, earned.bonus_exempt * 2)
        return earned

    def __repr__(self) -> str:
        return (f"Rules.make({self.ruleset.name!r}, variants={list(self.variants)!r}, "
                f"columns={list(self.columns)!r})")
