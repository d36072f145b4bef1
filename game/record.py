"""`kniffel-record/1`: a whole game as JSON, played through the one engine.

Reading a record pushes every move onto a Game; any error names the turn (1-based).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from game.board import Game
from game.core import Announce, Entry, Move, Throw
from game.errors import IllegalMoveError, KniffelError, MalformedError
from game.rules import Rules

FORMAT = "kniffel-record/1"
_TOP_KEYS = {"format", "rules", "variants", "columns", "players", "turns"}
_TURN_KEYS = {"player", "throws", "box", "column", "scratch", "announce"}


class RecordError(KniffelError):
    """A record that cannot be replayed; the message names the turn where it failed."""

    def __init__(self, message: str, turn: int | None = None) -> None:
        self.turn = turn
        super().__init__(f"turn {turn}: {message}" if turn is not None else message)


def loads(text: str) -> Game:
    """Replay a record given as JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON: {exc.msg} (line {exc.lineno}, "
                          f"column {exc.colno})") from None
    except RecursionError:  # brackets nested thousands deep: no record
        raise RecordError("not valid JSON: nested too deeply") from None
    return replay(data)


def replay(data: Any) -> Game:
    """Replay a record given as parsed JSON."""
    if not isinstance(data, dict):
        raise RecordError("a record is a JSON object")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise RecordError(f"unknown field {sorted(unknown)[0]!r}")
    if data.get("format") != FORMAT:
        raise RecordError(f"format must be {FORMAT!r}, not {data.get('format')!r}")
    rules_name = data.get("rules")
    if not isinstance(rules_name, str):
        raise RecordError("rules must name a ruleset")
    variants = _text_list(data, "variants", [])
    columns = _text_list(data, "columns", ["free"])
    players = data.get("players")
    if not isinstance(players, list):
        raise RecordError("players must be a list of names")
    try:
        game = Game(Rules.make(rules_name, variants, columns), players)
    except KniffelError as exc:
        raise RecordError(str(exc)) from None
    turns = data.get("turns", [])
    if not isinstance(turns, list):
        raise RecordError("turns must be a list")
    for number, turn in enumerate(turns, start=1):
        try:
            _play_turn(game, turn, last=number == len(turns))
        except KniffelError as exc:
            raise RecordError(str(exc), number) from None
    return game


def _text_list(data: Mapping[str, Any], key: str, default: list[str]) -> list[str]:
    value = data.get(key, default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError(f"{key} must be a list of names")
    return value


def _play_turn(game: Game, turn: Any, last: bool) -> None:
    if not isinstance(turn, dict):
        raise MalformedError("a turn is a JSON object")
    unknown = set(turn) - _TURN_KEYS
    if unknown:
        raise MalformedError(f"unknown field {sorted(unknown)[0]!r}")
    if game.finished:
        raise IllegalMoveError("the game is already over")
    player = turn.get("player")
    if player != game.current_player:
        raise IllegalMoveError(f"it is {game.current_player}'s turn, not {player!r}'s")
    throws = turn.get("throws")
    if not isinstance(throws, list) or not throws:
        raise MalformedError("throws must be a non-empty list")
    if len(throws) > 3:
        raise IllegalMoveError(f"{len(throws)} throws: a turn has at most 3")
    announce = turn.get("announce")
    if announce is not None and not isinstance(announce, str):
        raise MalformedError("announce must be a box name or null")
    for index, raw in enumerate(throws):
        game.push(_throw(raw, index + 1))
        if index == 0 and announce is not None:
            game.push(Announce(announce))
    box = turn.get("box")
    if box is None:
        if not last:
            raise MalformedError("box is missing (only the last turn may be unfinished)")
        return
    column = turn.get("column")
    scratch = turn.get("scratch", False)
    if not isinstance(box, str):
        raise MalformedError("box must be a box name")
    if column is not None and not isinstance(column, str):
        raise MalformedError("column must be a column name")
    if not isinstance(scratch, bool):
        raise MalformedError("scratch must be true or false")
    game.enter(box, column, scratch)


def _throw(raw: Any, number: int) -> Throw:
    where = f"throw {number}"
    try:
        if isinstance(raw, list):
            return Throw.of(raw)
        if isinstance(raw, dict):
            if set(raw) - {"dice", "held"}:
                raise MalformedError(f"unknown field {sorted(set(raw) - {'dice', 'held'})[0]!r}")
            dice, held = raw.get("dice"), raw.get("held", [])
            if not isinstance(dice, list) or not isinstance(held, list):
                raise MalformedError("dice and held must be lists")
            return Throw.of(dice, held)
    except MalformedError as exc:
        raise MalformedError(f"{where}: {exc}") from None
    raise MalformedError(f"{where}: a throw is a list of five dice or {{dice, held}}")


def to_record(game: Game) -> dict[str, Any]:
    """The record of a game so far (the current turn, if begun, comes last without a box)."""
    rules = game.rules
    record: dict[str, Any] = {"format": FORMAT, "rules": rules.ruleset.name}
    if rules.variants:
        record["variants"] = list(rules.variants)
    if rules.columns != ("free",):
        record["columns"] = list(rules.columns)
    record["players"] = list(game.players)
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    player = 0
    for move in game.move_stack:
        if current is None:
            current = {"player": game.players[player], "throws": []}
            turns.append(current)
        _record_move(current, move, several_columns=len(rules.columns) > 1)
        if isinstance(move, Entry):
            current = None
            player = (player + 1) % len(game.players)
    record["turns"] = turns
    return record


def _record_move(turn: dict[str, Any], move: Move, several_columns: bool) -> None:
    if isinstance(move, Throw):
        first = not turn["throws"]
        if first or move.held is None:
            turn["throws"].append(list(move.dice))
        else:
            turn["throws"].append({"dice": list(move.dice), "held": list(move.held)})
    elif isinstance(move, Announce):
        turn["announce"] = move.box
    else:
        turn["box"] = move.box
        if move.column is not None and several_columns:
            turn["column"] = move.column
        if move.scratch:
            turn["scratch"] = True


def dumps(game: Game) -> str:
    return json.dumps(to_record(game), ensure_ascii=False)
