"""The Kniffel-Block of one game: whose turn, which throws, what is entered.

Like a chess board it is changed only by `push(move)` and restored by `pop()`; every state
is an immutable value, so undo gives back exactly what was there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from game.core import MAX_THROWS, Announce, Entry, Face, Move, Throw
from game.errors import IllegalMoveError, MalformedError
from game.rules import ColumnView, Rules


@dataclass(frozen=True)
class ColumnState:
    name: str
    boxes: tuple[int | None, ...]
    extra_bonus: int = 0
    bonus_exempt: int = 0

    @property
    def full(self) -> bool:
        return all(v is not None for v in self.boxes)


@dataclass(frozen=True)
class PlayerState:
    name: str
    columns: tuple[ColumnState, ...]


@dataclass(frozen=True)
class TurnState:
    player: int
    throws: tuple[Throw, ...] = ()
    announce: str | None = None


@dataclass(frozen=True)
class GameState:
    players: tuple[PlayerState, ...]
    turn: TurnState
    entries: int = 0


@dataclass(frozen=True)
class BoxOption:
    """One free box for the current throw: what entering it gives and whether it is legal.

    ``legal``: entering the box is allowed and writes ``points`` (0 where the throw does
    not fit). ``can_scratch``: writing 0 on purpose is allowed although the throw fits.
    ``reason``: why entering is not allowed, for the block to show beside a greyed box.
    """

    column: str
    box: str
    points: int
    fits: bool
    legal: bool
    can_scratch: bool
    extra_bonus: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class Closed:
    """Why a box is out of reach this turn: a code for programs, a message for people."""

    code: str  # order | announced | unannounced | forced | no_scratch
    message: str


@dataclass(frozen=True)
class ColumnTotals:
    upper_sum: int
    bonus: int
    lower_sum: int
    extra_bonus: int

    @property
    def total(self) -> int:
        return self.upper_sum + self.bonus + self.lower_sum + self.extra_bonus


class Game:
    """A game in progress. The only way to change it is push(); the only way back, pop()."""

    def __init__(self, rules: Rules, players: Sequence[str]) -> None:
        names = list(players)
        rs = rules.ruleset
        if not rs.min_players <= len(names) <= rs.max_players:
            raise MalformedError(
                f"{rs.name} is played by {rs.min_players} to {rs.max_players} players, "
                f"not {len(names)}")
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise MalformedError(f"player name {name!r} must be a non-empty text")
        if len(set(names)) != len(names):
            raise MalformedError("two players have the same name")
        self.rules = rules
        empty = tuple(ColumnState(c, (None,) * len(rules.boxes)) for c in rules.columns)
        self._start = GameState(tuple(PlayerState(n, empty) for n in names), TurnState(0))
        self.state = self._start
        self.move_stack: list[Move] = []
        self._history: list[GameState] = []
        self._options_of: GameState | None = None
        self._options: tuple[BoxOption, ...] = ()

    @classmethod
    def new(
        cls,
        rules: str = "kniffel",
        players: Sequence[str] = ("Spieler 1",),
        variants: Sequence[str] = (),
        columns: Sequence[str] = ("free",),
    ) -> Game:
        return cls(Rules.make(rules, variants, columns), players)

    def __repr__(self) -> str:
        names = [p.name for p in self.state.players]
        return f"<Game {self.rules!r} players={names!r} moves={len(self.move_stack)}>"

    # ---- reading the state -------------------------------------------------------------

    @property
    def players(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.state.players)

    @property
    def current_player(self) -> str:
        return self.state.players[self.state.turn.player].name

    @property
    def throws(self) -> tuple[Throw, ...]:
        return self.state.turn.throws

    @property
    def finished(self) -> bool:
        return all(c.full for p in self.state.players for c in p.columns)

    def column_totals(self, column: ColumnState) -> ColumnTotals:
        rs = self.rules.ruleset
        n_upper = len(rs.upper)
        upper = sum(v or 0 for v in column.boxes[:n_upper])
        lower = sum(v or 0 for v in column.boxes[n_upper:])
        threshold = rs.upper_bonus_threshold
        bonus = 0
        if threshold is not None and upper - column.bonus_exempt >= threshold:
            bonus = rs.upper_bonus
        return ColumnTotals(upper, bonus, lower, column.extra_bonus)

    def total(self, player: PlayerState) -> int:
        return sum(self.column_totals(c).total for c in player.columns)

    def winners(self) -> list[str]:
        """The players with the highest total, once the game is finished."""
        if not self.finished:
            return []
        best = max(self.total(p) for p in self.state.players)
        return [p.name for p in self.state.players if self.total(p) == best]

    # ---- the rules of a turn -----------------------------------------------------------

    def options(self) -> tuple[BoxOption, ...]:
        """Every free box of the current player for the current throw, legal or not."""
        # States are immutable values, so the options of one state never change.
        if self._options_of is not self.state:
            self._options = self._compute_options()
            self._options_of = self.state
        return self._options

    def _compute_options(self) -> tuple[BoxOption, ...]:
        turn = self.state.turn
        if self.finished or not turn.throws:
            return ()
        final = turn.throws[-1]
        all_five = len(turn.throws) == 1 or final.all_five
        boxes = self.rules.boxes
        player = self.state.players[turn.player]
        rs = self.rules.ruleset

        # First pass: where may the throw be scored, and what does it earn there.
        rows: list[tuple[str, str, int | None, int, Closed | None]] = []
        for column in player.columns:
            view = ColumnView(dict(zip(boxes, column.boxes, strict=True)))
            free = [b for b in boxes if view.free(b)]
            order = self.rules.order(column.name)
            forced = rs.forced_box(view, final.dice) if order == "free" else None
            if forced is not None and forced not in free:
                forced = None
            for box in free:
                earned = self.rules.earn(view, box, final.dice, all_five)
                closed = self._closed(column.name, order, box, free, forced)
                rows.append((column.name, box, earned.points, earned.extra_bonus, closed))

        nothing_fits = not any(pts is not None and closed is None
                               for _, _, pts, _, closed in rows)
        scratch_general = rs.scratch_any or nothing_fits
        options = []
        for column_name, box, pts, extra, closed in rows:
            fits = pts is not None
            if turn.announce is not None:
                # Score the announced box, or scratch any box within reach.
                in_reach = closed is None or closed.code == "announced"
                legal = closed is None or (in_reach and not fits)
                can_scratch = in_reach and fits
            elif closed is None:
                legal = fits or scratch_general
                can_scratch = fits and rs.scratch_any
                if not legal:
                    closed = Closed("no_scratch", "does not fit; a box may be scratched "
                                    "only when the throw fits no free box")
            else:
                # Without an announcement the announce column can only be scratched.
                unannounced = closed.code == "unannounced"
                legal = unannounced and not fits and scratch_general
                can_scratch = unannounced and fits and scratch_general
            options.append(BoxOption(column_name, box, 0 if pts is None else pts, fits, legal,
                                     can_scratch, extra,
                                     None if legal or closed is None else closed.message))
        return tuple(options)

    def _closed(self, column: str, order: str, box: str, free: list[str],
                forced: str | None) -> Closed | None:
        """Why a free box cannot be scored this turn, or None if it can."""
        turn = self.state.turn
        if order == "down" and box != free[0]:
            return Closed("order", f"column {column} is filled top to bottom: next is {free[0]}")
        if order == "up" and box != free[-1]:
            return Closed("order", f"column {column} is filled bottom to top: next is {free[-1]}")
        if turn.announce is not None:
            if column == "announce" and box == turn.announce:
                return None
            return Closed("announced", f"announced {turn.announce}: score it or scratch a box")
        if order == "announce":
            return Closed("unannounced", "announce this box after the first throw to score it")
        if forced is not None and box != forced:
            return Closed("forced", f"a further Kniffel must go into {forced} while it is free")
        return None

    # ---- changing the state ------------------------------------------------------------

    def push(self, move: Move) -> None:
        """Apply a move, or raise and change nothing."""
        if isinstance(move, Throw):
            new = self._after_throw(move)
        elif isinstance(move, Announce):
            new = self._after_announce(move)
        elif isinstance(move, Entry):
            new = self._after_entry(move)
        else:
            raise MalformedError(f"not a move: {move!r}")
        self._history.append(self.state)
        self.move_stack.append(move)
        self.state = new

    def pop(self) -> Move:
        """Undo the last move and return it."""
        if not self.move_stack:
            raise IllegalMoveError("nothing to undo")
        self.state = self._history.pop()
        return self.move_stack.pop()

    def peek(self) -> Move | None:
        return self.move_stack[-1] if self.move_stack else None

    def throw(self, dice: Sequence[Face], held: Sequence[int] | None = None) -> Throw:
        move = Throw.of(dice, held)
        self.push(move)
        return move

    def announce(self, box: str) -> None:
        self.push(Announce(box))

    def enter(self, box: str, column: str | None = None, scratch: bool = False) -> BoxOption:
        option = self._resolve_entry(Entry(box, column, scratch))
        self.push(Entry(box, option.column, scratch))
        return option

    def _after_throw(self, move: Throw) -> GameState:
        if self.finished:
            raise IllegalMoveError("the game is over")
        turn = self.state.turn
        if len(turn.throws) >= MAX_THROWS:
            raise IllegalMoveError(f"a turn has at most {MAX_THROWS} throws")
        for face in move.dice:
            self.rules.ruleset.check_face(face)
        held = move.held
        if not turn.throws:
            if held:
                raise IllegalMoveError("the first throw is made with all five dice")
            held = ()
        elif held is not None:
            if len(held) == len(move.dice):
                raise IllegalMoveError("a throw must throw at least one die")
            previous = turn.throws[-1].dice
            for index in held:
                if move.dice[index] != previous[index]:
                    raise IllegalMoveError(
                        f"held die {index + 1} changed from {previous[index]} "
                        f"to {move.dice[index]}")
        stored = Throw(move.dice, held)
        return replace(self.state, turn=replace(turn, throws=turn.throws + (stored,)))

    def _after_announce(self, move: Announce) -> GameState:
        turn = self.state.turn
        if "announce" not in self.rules.columns:
            raise IllegalMoveError("this game has no announce column")
        if self.finished:
            raise IllegalMoveError("the game is over")
        if turn.announce is not None:
            raise IllegalMoveError(f"{turn.announce} is already announced")
        if len(turn.throws) != 1:
            raise IllegalMoveError("a box is announced right after the first throw")
        boxes = self.rules.boxes
        if move.box not in boxes:
            raise MalformedError(f"unknown box {move.box!r}")
        player = self.state.players[turn.player]
        column = next(c for c in player.columns if c.name == "announce")
        if column.boxes[boxes.index(move.box)] is not None:
            raise IllegalMoveError(f"{move.box} in column announce is already filled")
        return replace(self.state, turn=replace(turn, announce=move.box))

    def _resolve_entry(self, move: Entry) -> BoxOption:
        turn = self.state.turn
        if self.finished:
            raise IllegalMoveError("the game is over")
        if move.box not in self.rules.boxes:
            raise MalformedError(
                f"unknown box {move.box!r} (boxes: {', '.join(self.rules.boxes)})")
        if move.column is not None and move.column not in self.rules.columns:
            raise MalformedError(
                f"unknown column {move.column!r} (columns: {', '.join(self.rules.columns)})")
        if not turn.throws:
            raise IllegalMoveError("throw the dice before entering a box")
        candidates = [o for o in self.options() if o.box == move.box
                      and (move.column is None or o.column == move.column)]
        if not candidates:
            where = f" in column {move.column}" if move.column else ""
            raise IllegalMoveError(f"{move.box}{where} is already filled")
        if move.column is None and len(candidates) > 1:
            allowed = [o for o in candidates if (o.can_scratch if move.scratch else o.legal)]
            if len(allowed) != 1:
                names = ", ".join(o.column for o in (allowed or candidates))
                raise IllegalMoveError(f"name the column for {move.box} (one of: {names})")
            candidates = allowed
        option = candidates[0]
        if move.scratch:
            if not option.can_scratch:
                if not option.fits and option.legal:
                    return option
                raise IllegalMoveError(
                    f"{move.box} may not be scratched now"
                    + (f": {option.reason}" if option.reason else
                       " (this ruleset scratches only when the throw fits no free box)"))
        elif not option.legal:
            raise IllegalMoveError(f"{move.box} is not allowed now: {option.reason}")
        return option

    def _after_entry(self, move: Entry) -> GameState:
        option = self._resolve_entry(move)
        points = 0 if move.scratch else option.points
        turn = self.state.turn
        boxes = self.rules.boxes
        player = self.state.players[turn.player]
        final = turn.throws[-1]
        exempt = 0
        if points:
            column_state = next(c for c in player.columns if c.name == option.column)
            view = ColumnView(dict(zip(boxes, column_state.boxes, strict=True)))
            all_five = len(turn.throws) == 1 or final.all_five
            exempt = self.rules.earn(view, move.box, final.dice, all_five).bonus_exempt
        columns = tuple(
            replace(
                c,
                boxes=tuple(points if b == move.box else v
                            for b, v in zip(boxes, c.boxes, strict=True)),
                extra_bonus=c.extra_bonus + option.extra_bonus,
                bonus_exempt=c.bonus_exempt + exempt,
            ) if c.name == option.column else c
            for c in player.columns
        )
        players = tuple(
            replace(p, columns=columns) if i == turn.player else p
            for i, p in enumerate(self.state.players)
        )
        next_player = (turn.player + 1) % len(players)
        return GameState(players, TurnState(next_player), self.state.entries + 1)
