"""TableService: the one place where throws, phone taps and button presses become moves.

Every change goes the same way: validate the request, apply it to the in-memory game through
the rules engine (game.Game push/pop — there is no other scoring path), append it to the
event log (web/store.py) in a committed transaction, and only then answer and publish the new
state to the Server-Sent-Events subscribers. On start the current game is rebuilt by replaying
its log through the very same `TableState.apply`, so what a phone saw before a crash is what
it sees after.
"""

from __future__ import annotations

import ast
import contextlib
import json
import queue
import random
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from game import (
    IllegalMoveError,
    KniffelError,
    RecordError,
    replay,
    to_json,
    to_record,
)
from game.board import Game
from game.core import Announce, Entry, Face, Throw
from game.rules import RULESETS, VARIANTS, Rules
from vision.reading import count_problem, counted, die_problem, looks_like, teach_again
from web.store import Event, GameRow, StaleVersionError, Store

DICE = 5
MAX_THROWS = 3
#: Games other than the one on the table kept rebuilt for the next look (`_replayed`).
REPLAYED_KEPT = 8
#: Kinds a phone (or the API) may post to a game; each has its own payload check below.
CHANGE_KINDS = ("throw", "correct", "accept", "dismiss", "announce", "enter", "undo", "players")
COLUMN_KINDS = ("down", "up", "announce", "free")


class ServiceError(Exception):
    """A refused request: HTTP status, a code for the page, one line for people."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, code: str | None = None,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.state = state


class BadRequest(ServiceError):
    status, code = 400, "bad_request"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    """The change was based on an old version; `state` is the fresh one."""

    status, code = 409, "conflict"


class Illegal(ServiceError):
    """Well-formed, but the rules (or the table) do not allow it now."""

    status, code = 422, "not_allowed"


def engine_error(exc: KniffelError) -> ServiceError:
    if isinstance(exc, IllegalMoveError):
        return Illegal(str(exc))
    return BadRequest(str(exc))


@dataclass(frozen=True)
class Actor:
    """Who made a change: a phone (id, name) or a part of the table."""

    id: str
    name: str


CAMERA = Actor("camera", "camera")
BUTTON = Actor("button", "button")
DEMO = Actor("demo", "demo")


# ---- payload checks (shared by the API and the camera) ---------------------------------


def _fields(payload: Any, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise BadRequest("the request body must be a JSON object")
    unknown = set(payload) - set(required) - set(optional)
    if unknown:
        raise BadRequest(f"unknown field {sorted(unknown)[0]!r}")
    for name in required:
        if name not in payload:
            raise BadRequest(f"field {name!r} is missing")
    return payload


def _face(value: Any, what: str) -> Face:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadRequest(f"{what} must be a die value (1-6 or an animal name), not {value!r}")
    return value


def _index(value: Any, what: str = "index") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < DICE:
        raise BadRequest(f"{what} must be a die position from 0 to 4, not {value!r}")
    return value


def _dice(value: Any) -> list[Face]:
    if not isinstance(value, list) or len(value) != DICE:
        raise BadRequest("dice must be a list of five die values")
    return [_face(v, f"die {i + 1}") for i, v in enumerate(value)]


def _held(value: Any) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadRequest("held must be a list of die positions (0-4) or null")
    return [_index(v, "a held index") for v in value]


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{what} must be a non-empty text")
    if len(value.strip()) > 24:
        raise BadRequest(f"{what} is longer than 24 characters")
    return value.strip()


def check_setup(body: Any) -> dict[str, Any]:
    """A new game's players, ruleset, variants and columns, checked by the engine."""
    body = _fields(body, ["players"], ["rules", "variants", "columns", "replaces"])
    players = body["players"]
    if not isinstance(players, list):
        raise BadRequest("players must be a list of names")
    names = [_name(p, "a player name") for p in players]
    rules = body.get("rules", "kniffel")
    variants = body.get("variants", [])
    columns = body.get("columns", ["free"])
    if not isinstance(rules, str):
        raise BadRequest("rules must name a ruleset")
    for key, value in (("variants", variants), ("columns", columns)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadRequest(f"{key} must be a list of names")
    try:
        made = Rules.make(rules, variants, columns)
        Game(made, names)
    except KniffelError as exc:
        raise BadRequest(str(exc)) from None
    return {"rules": made.ruleset.name, "variants": list(made.variants),
            "columns": list(made.columns), "players": names}


# ---- the replayable state of one game --------------------------------------------------


def foreign_problem(index: int, value: Face, title: str) -> str:
    """Why a throw needs a person where die `index` (from 0) was read as `value`, a face
    the dice of the game `title` do not have (animals in a pip game, or the reverse)."""
    return f"die {index + 1} shows {value!r}, which is not a face of {title} dice"


_FOREIGN_PROBLEM = re.compile(r"die (\d+) shows ('[a-z]+'|\d+), which is not a face of .+ dice")


def shows_foreign(problem: str) -> tuple[int, Face] | None:
    """The die (from 1) and face that `problem` says (foreign_problem), else None."""
    found = _FOREIGN_PROBLEM.fullmatch(problem)
    return None if found is None else (int(found[1]), ast.literal_eval(found[2]))


@dataclass
class Pending:
    """A throw the camera saw but could not trust: the page asks instead of guessing."""

    dice: list[Face | None]
    flags: list[str | None]
    confidence: list[float | None]
    problems: list[str]
    held: list[int] | None
    #: A re-read of the turn's last throw (a die was nudged): accepting it updates that
    #: throw instead of adding one.
    replaces: bool = False

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Pending:
        """The pending throw a "pending" event of the log records."""
        return cls(list(payload["dice"]), list(payload["flags"]), list(payload["confidence"]),
                   list(payload["problems"]), payload.get("held"),
                   bool(payload.get("replaces")))

    def to_json(self) -> dict[str, Any]:
        return {"dice": self.dice, "flags": self.flags, "confidence": self.confidence,
                "problems": self.shown_problems(), "held": self.held,
                "complete": self.complete, "replaces": self.replaces,
                "teach_here": bool(teach_again(self.problems)), "count": self.count(),
                "foreign": self.foreign(), "other_kind": self.other_kind()}

    def other_kind(self) -> str | None:
        """"animals" or "pips" where the dice look like that kind, not the game's
        (vision.reading.looks_like)."""
        return next((kind for p in self.problems if (kind := looks_like(p))), None)

    def count(self) -> dict[str, int] | None:
        """The dice seen and expected where their count is off (count_problem)."""
        for problem in self.problems:
            if (found := counted(problem)) is not None:
                return {"seen": found[0], "expected": found[1]}
        return None

    def foreign(self) -> list[dict[str, Any]]:
        """The dice read as a face the game's dice do not have (foreign_problem)."""
        return [{"die": found[0], "shows": found[1]} for problem in self.problems
                if (found := shows_foreign(problem)) is not None]

    def shown_problems(self) -> list[str]:
        """The problems a page shows as they are: not those it words itself, in its
        language — a die's flag or that it was not read (`flags`, `dice`), the count of
        dice (`count`), a face not of the game (`foreign`), the taught set's warning
        (`teach_here`), dice of the other kind (`other_kind`)."""
        repeated = {die_problem(i, flag or "unreadable")
                    for i, (value, flag) in enumerate(zip(self.dice, self.flags, strict=False))
                    if flag or value is None}
        return [p for p in self.problems if p not in repeated and not teach_again([p])
                and counted(p) is None and shows_foreign(p) is None and not looks_like(p)]

    @property
    def complete(self) -> bool:
        return all(v is not None for v in self.dice)


@dataclass
class MoveInfo:
    """What the log knows about a move beyond the engine: where the dice came from."""

    actor: str
    source: str = "phone"
    confidence: list[float | None] | None = None
    flags: list[str | None] | None = None
    corrected: list[int] = field(default_factory=list)
    points: int | None = None
    player: str = ""


@dataclass(frozen=True)
class Scored:
    """A throw entered in a box: its dice as entered (after any correction, so checked by
    the players) and where they came from."""

    dice: tuple[Face, ...]
    info: MoveInfo


class TableState:
    """One game as its event log makes it: engine game + pending throw + move details.

    `apply` is used both live and on replay, so a rebuilt game is the same game.
    """

    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup
        self.game = Game.new(setup["rules"], setup["players"], setup.get("variants", []),
                             setup.get("columns", ["free"]))
        self.info: list[MoveInfo] = []
        self.pending: Pending | None = None
        self.version = 0

    # Each branch either changes nothing and raises, or completes; the service rebuilds
    # from the log after any error anyway, so a half-applied change can never survive.
    def apply(self, kind: str, payload: dict[str, Any], actor: str) -> None:
        game = self.game
        if kind == "throw":
            self._push_throw(payload["dice"], payload.get("held"), MoveInfo(
                actor, payload.get("source", "phone"), payload.get("confidence"),
                payload.get("flags")))
        elif kind == "reread":
            self._drop_camera_throw()
            self._push_throw(payload["dice"], payload.get("held"), MoveInfo(
                actor, "camera", payload.get("confidence"), payload.get("flags")))
        elif kind == "pending":
            self.pending = Pending.from_payload(payload)
        elif kind == "dismiss":
            if self.pending is None:
                raise Illegal("there is no throw waiting to be checked")
            self.pending = None
        elif kind == "correct":
            self._correct(_index(payload["index"]), _face(payload["value"], "value"), actor)
        elif kind == "accept":
            self._accept(actor)
        elif kind == "announce":
            game.push(Announce(payload["box"]))
            self.info.append(MoveInfo(actor, player=game.current_player))
        elif kind == "enter":
            player = game.current_player
            option = game.enter(payload["box"], payload.get("column"),
                                bool(payload.get("scratch", False)))
            index = game.players.index(player)
            column = next(c for c in game.state.players[index].columns
                          if c.name == option.column)
            points = column.boxes[game.rules.boxes.index(option.box)]
            self.info.append(MoveInfo(actor, points=points, player=player))
        elif kind == "undo":
            game.pop()
            self.info.pop()
        elif kind == "players":
            self._players(payload["players"], payload.get("order"))
        else:
            raise BadRequest(f"unknown change {kind!r}")
        self.version += 1

    def _push_throw(self, dice: list[Face], held: list[int] | None, info: MoveInfo) -> None:
        game = self.game
        if game.finished:
            raise Illegal("the game is over: start a new game or a rematch")
        if len(game.throws) >= MAX_THROWS:
            raise Illegal(f"{game.current_player} has thrown three times: choose a box",
                          code="fourth_throw")
        if not game.throws:
            held = []  # the first throw of a turn is always made with all five dice
        info.player = game.current_player
        game.push(Throw.of(dice, held))
        self.info.append(info)
        self.pending = None

    def _correct(self, index: int, value: Face, actor: str) -> None:
        game = self.game
        game.rules.ruleset.check_face(value)
        if self.pending is not None:
            self.pending.dice[index] = value
            self.pending.flags[index] = None
            self.pending.confidence[index] = None
            if self.pending.complete and not any(self.pending.flags):
                self._accept(actor)
            return
        last = game.peek()
        if not isinstance(last, Throw):
            raise Illegal("there is no throw to correct in this turn")
        dice = list(last.dice)
        dice[index] = value
        held = None if last.held is None else [i for i in last.held if i != index]
        info = self.info[-1]
        game.pop()
        try:
            game.push(Throw.of(dice, held))
        except KniffelError:
            game.push(last)
            raise
        confidence: list[float | None] = list(info.confidence or [None] * DICE)
        flags: list[str | None] = list(info.flags or [None] * DICE)
        confidence[index] = None
        flags[index] = None
        self.info[-1] = MoveInfo(info.actor, info.source, confidence, flags,
                                 sorted(set(info.corrected) | {index}), player=info.player)

    def _drop_camera_throw(self) -> None:
        """Take back the turn's last throw before its re-read goes in."""
        last = self.game.peek()
        if not isinstance(last, Throw) or self.info[-1].source != "camera":
            raise Illegal("the last move is not a throw the camera read")
        self.game.pop()
        self.info.pop()

    def _accept(self, actor: str) -> None:
        pending = self.pending
        if pending is None:
            raise Illegal("there is no throw waiting to be checked")
        missing = [i + 1 for i, v in enumerate(pending.dice) if v is None]
        if missing:
            raise Illegal(f"die {missing[0]} is not known yet: tap it and pick its value",
                          code="die_missing")
        if pending.replaces:
            self._drop_camera_throw()
        self._push_throw(list(pending.dice), pending.held,  # type: ignore[arg-type]
                         MoveInfo(actor, "camera", pending.confidence, pending.flags,
                                  [i for i, c in enumerate(pending.confidence) if c is None]))

    def _players(self, names: Any, order: Any) -> None:
        game = self.game
        if not isinstance(names, list) or len(names) != len(game.players):
            raise BadRequest(f"players must list all {len(game.players)} players")
        names = [_name(n, "a player name") for n in names]
        if order is None:
            order = list(range(len(names)))
        if (not isinstance(order, list) or sorted(o for o in order if isinstance(o, int)
                                                  and not isinstance(o, bool))
                != list(range(len(names)))):
            raise BadRequest("order must list every old position (0, 1, ...) once")
        if order != sorted(order) and (game.state.entries or len(game.move_stack)):
            raise Illegal("the order of players can only change before the first throw")
        fresh = Game(game.rules, names)
        for move in game.move_stack:
            fresh.push(move)
        self.game = fresh
        self.setup = {**self.setup, "players": names}

    # ---- what the page shows -----------------------------------------------------------

    def last_throw(self) -> dict[str, Any] | None:
        turn = self.game.throws
        if not turn:
            return None
        for move, info in zip(reversed(self.game.move_stack), reversed(self.info),
                              strict=True):
            if isinstance(move, Throw):
                return {"source": info.source, "confidence": info.confidence,
                        "flags": info.flags, "corrected": info.corrected}
        return None

    def suggested(self) -> dict[str, Any] | None:
        """The best legal box for the button: most points (the engine's), chance last."""
        legal = [o for o in self.game.options() if o.legal]
        if not legal:
            return None
        order = {b: i for i, b in enumerate(self.game.rules.boxes)}
        best = max(o.points + o.extra_bonus for o in legal)
        if best > 0:
            top = [o for o in legal if o.points + o.extra_bonus == best]
            top.sort(key=lambda o: (o.box == "chance", order[o.box]))
        else:  # every choice is a 0: give up the box that is least likely to be missed
            spare = ("ones", "twos", "kniffel", "threes", "four_of_a_kind", "large_straight")
            top = sorted(legal, key=lambda o: (spare.index(o.box) if o.box in spare else 99,
                                               order[o.box]))
        o = top[0]
        return {"box": o.box, "column": o.column, "points": o.points,
                "extra_bonus": o.extra_bonus}

    def last_move(self) -> dict[str, Any] | None:
        """The move an undo would take back, described for the button."""
        move = self.game.peek()
        if move is None:
            return None
        info = self.info[-1]
        out: dict[str, Any] = {"player": info.player, "actor": info.actor}
        if isinstance(move, Throw):
            number = len(self.game.throws)
            out.update(kind="throw", dice=list(move.dice), number=number)
        elif isinstance(move, Announce):
            out.update(kind="announce", box=move.box)
        elif isinstance(move, Entry):
            out.update(kind="enter", box=move.box, column=move.column, points=info.points,
                       scratch=move.scratch)
        return out

    def sheet(self) -> dict[str, Any]:
        rs = self.game.rules.ruleset
        return {"title": rs.title, "upper": list(rs.upper), "lower": list(rs.lower),
                "faces": list(rs.faces), "bonus": rs.upper_bonus_threshold is not None,
                "bonus_threshold": rs.upper_bonus_threshold, "bonus_points": rs.upper_bonus,
                "kids": rs.name == "kids"}


def replay_events(setup: dict[str, Any], events: Sequence[Event]) -> TableState:
    table = TableState(setup)
    for event in events:
        table.apply(event.kind, event.payload, event.actor)
    return table


# ---- the service -----------------------------------------------------------------------


@dataclass
class CameraStatus:
    state: str = "off"  # ok | moving | paused (calibrating) | failed | off
    message: str = "no camera"


class TableService:
    """Owns the current game; every change goes through `change()` (or the camera entry
    points), under one lock, logged before it is acknowledged."""

    def __init__(self, store: Store, default_players: Sequence[str] = ("Spieler 1", "Spieler 2"),
                 default_rules: str = "kniffel") -> None:
        self.store = store
        self._lock = threading.RLock()
        self._subscribers: list[queue.Queue[str | None]] = []
        self.camera = CameraStatus()
        self.notes: list[str] = []  # why parts of the table are off (safe mode, no models)
        self.notice: dict[str, Any] | None = None
        self._notice_seq = 0
        #: Every state carries which publication it is (`seq`, counted per `boot` of the
        #: service): a page keeps the newer of two states, since an answer to its own change
        #: can arrive after a later state pushed to it (a camera failing just then).
        self._boot = f"{random.getrandbits(48):012x}"
        self._published = 0
        self.listeners: list[Callable[[TableService], None]] = []
        self.turn_listeners: list[Callable[[], None]] = []
        #: Told of each throw entered in a box (the dice people checked: web.learn).
        self.scored_listeners: list[Callable[[Scored], None]] = []
        #: The games last rebuilt for a look at them (detail, record, rematch), the newest
        #: REPLAYED_KEPT, with the length of their logs: a game rebuilt is about 0.1 MB,
        #: and a table that has played a thousand games must not hold them all.
        self._replayed_kept: OrderedDict[int, tuple[int, TableState]] = OrderedDict()
        #: What the history and the statistics need of every game (`GameSummary`, a few
        #: hundred bytes), with the length of the log it was made from; `_summing` guards it.
        self._summaries: dict[int, tuple[int, GameSummary]] = {}
        self._summing = threading.Lock()
        game_id = store.current_game()
        if game_id is None or store.game(game_id) is None:
            game_id = store.create_game({"rules": default_rules, "variants": [],
                                         "columns": ["free"], "players": list(default_players)})
        self.game_id = game_id
        self.table = self._load(game_id)
        self._turn_key = self._turn()

    # ---- loading -----------------------------------------------------------------------

    def _load(self, game_id: int) -> TableState:
        row = self.store.game(game_id)
        if row is None:
            raise NotFound(f"there is no game {game_id}")
        return replay_events(row.setup, self.store.events(game_id))

    def _replayed(self, game_id: int) -> TableState:
        """Any game, rebuilt from its log (kept while its log does not grow, the newest
        REPLAYED_KEPT)."""
        if game_id == self.game_id:
            return self.table
        row = self.store.game(game_id)
        if row is None:
            raise NotFound(f"there is no game {game_id}")
        kept = self._replayed_kept.get(game_id)
        if kept and kept[0] == row.events:
            self._replayed_kept.move_to_end(game_id)
            return kept[1]
        events = self.store.events(game_id)
        table = replay_events(row.setup, events)
        self._replayed_kept[game_id] = (len(events), table)
        self._replayed_kept.move_to_end(game_id)
        while len(self._replayed_kept) > REPLAYED_KEPT:
            self._replayed_kept.popitem(last=False)
        return table

    def sum_up_history(self) -> None:
        """Sums up every game for the history and the statistics (`_summaries_of`), so that
        their first look after a start does not wait for every game rebuilt: `kniffel
        serve` runs it in the background as it starts."""
        self._summaries_of(self.store.games())

    def _summaries_of(self, rows: list[GameRow]) -> tuple[int, dict[int, GameSummary]]:
        """The game on the table, and the summary of each game of `rows`. Games other than
        the one on the table are rebuilt from their logs where not summed up before, without
        holding the table's lock: a thousand games take seconds on a Pi, and the table plays
        on meanwhile (a game not on the table no longer changes; the length of its log tells
        if it did)."""
        with self._lock:  # the game on the table summed up only where it is asked for
            on_table = self.game_id
            current = (GameSummary.of(self.table) if any(row.id == on_table for row in rows)
                       else None)
        out: dict[int, GameSummary] = {}
        with self._summing:  # a second look waits for the first rather than rebuild too
            for row in rows:
                if current is not None and row.id == on_table:
                    out[row.id] = current
                    continue
                known = self._summaries.get(row.id)
                if known and known[0] == row.events:
                    out[row.id] = known[1]
                    continue
                events = self.store.events(row.id)
                out[row.id] = GameSummary.of(replay_events(row.setup, events))
                self._summaries[row.id] = (len(events), out[row.id])
        return on_table, out

    # ---- reading -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        with self._lock:
            return self._state()

    def _state(self) -> dict[str, Any]:
        t = self.table
        row = self.store.game(self.game_id)
        return {
            "game": {"id": self.game_id, "version": t.version, "setup": t.setup,
                     "created": row.created if row else None,
                     "rematch_of": row.rematch_of if row else None},
            "block": to_json(t.game),
            "sheet": t.sheet(),
            "pending": None if t.pending is None else t.pending.to_json(),
            "last_throw": t.last_throw(),
            "suggested": t.suggested(),
            "undo": t.last_move(),
            "camera": {"state": self.camera.state, "message": self.camera.message},
            "notes": list(self.notes),
            "notice": self.notice,
            "boot": self._boot,
            "seq": self._published,
        }

    def game_json(self, game_id: int) -> dict[str, Any]:
        """Exactly what `kniffel replay --json` prints for this game's record."""
        with self._lock:
            return to_json(self._replayed(game_id).game)

    def version_of(self, game_id: int) -> int:
        with self._lock:
            return self._replayed(game_id).version

    def record(self, game_id: int) -> dict[str, Any]:
        with self._lock:
            return to_record(self._replayed(game_id).game)

    # ---- changing ----------------------------------------------------------------------

    def change(self, game_id: int, version: Any, kind: str, body: Any, actor: Actor) -> dict[
            str, Any]:
        """A phone's (or the API's) change to the current game; returns the new state."""
        if kind not in CHANGE_KINDS:
            raise NotFound(f"unknown change {kind!r}")
        payload = self._check(kind, body)
        with self._lock:
            self._check_version(game_id, version)
            self._check_player(payload.pop("player", None))
            self._commit(kind, payload, actor)
            return self._state()

    def _check(self, kind: str, body: Any) -> dict[str, Any]:
        common = ["version"]
        if kind == "throw":
            b = _fields(body, ["dice", *common], ["held", "player"])
            return {"dice": _dice(b["dice"]), "held": _held(b.get("held")), "source": "phone",
                    "player": b.get("player")}
        if kind == "correct":
            b = _fields(body, ["index", "value", *common])
            return {"index": _index(b["index"]), "value": _face(b["value"], "value")}
        if kind in ("accept", "dismiss", "undo"):
            _fields(body, common)
            return {}
        if kind == "announce":
            b = _fields(body, ["box", *common])
            if not isinstance(b["box"], str):
                raise BadRequest("box must be a box name")
            return {"box": b["box"]}
        if kind == "enter":
            b = _fields(body, ["box", *common], ["column", "scratch", "player"])
            if not isinstance(b["box"], str):
                raise BadRequest("box must be a box name")
            column = b.get("column")
            if column is not None and not isinstance(column, str):
                raise BadRequest("column must be a column name or null")
            scratch = b.get("scratch", False)
            if not isinstance(scratch, bool):
                raise BadRequest("scratch must be true or false")
            return {"box": b["box"], "column": column, "scratch": scratch,
                    "player": b.get("player")}
        b = _fields(body, ["players", *common], ["order"])
        return {"players": b["players"], "order": b.get("order")}

    def _check_version(self, game_id: int, version: Any) -> None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise BadRequest("version (the version of the state this change is based on) "
                             "must be a whole number")
        if game_id != self.game_id:
            if self.store.game(game_id) is None:
                raise NotFound(f"there is no game {game_id}")
            raise Conflict(f"game {game_id} is not the one on the table any more "
                           f"(game {self.game_id} is)", state=self._state())
        if version != self.table.version:
            raise Conflict(f"someone else changed the game first (now version "
                           f"{self.table.version}, your change was based on {version})",
                           state=self._state())

    def _check_player(self, player: Any) -> None:
        if player is None:
            return
        if not isinstance(player, str):
            raise BadRequest("player must be a player's name")
        if self.table.game.finished:
            raise Illegal("the game is over")
        if player not in self.table.game.players:
            raise BadRequest(f"there is no player {player!r}")
        if player != self.table.game.current_player:
            raise Illegal(f"it is {self.table.game.current_player}'s turn, not {player}'s",
                          code="wrong_player")

    def _commit(self, kind: str, payload: dict[str, Any], actor: Actor) -> None:
        """Apply through the engine, write the log, then publish. Lock held."""
        t = self.table
        extra: dict[str, Any] = {}
        if kind == "undo":
            extra["undone"] = t.last_move()
        elif kind == "correct":
            last = t.game.peek()
            if t.pending is not None:
                extra["was"] = t.pending.dice[payload["index"]]
                extra["target"] = "pending"
            elif isinstance(last, Throw):
                extra["was"] = last.dice[payload["index"]]
                extra["target"] = "throw"
        extra["player"] = None if t.game.finished else t.game.current_player
        last_move = t.game.peek()
        scored = Scored(tuple(last_move.dice), t.info[-1]) \
            if kind == "enter" and isinstance(last_move, Throw) and t.info else None
        try:
            t.apply(kind, payload, actor.id)
        except KniffelError as exc:
            self.table = self._load(self.game_id)
            raise engine_error(exc) from None
        except ServiceError:
            self.table = self._load(self.game_id)
            raise
        try:
            self.store.append(self.game_id, t.version, kind, {**payload, **extra}, actor.id,
                              t.game.finished)
        except StaleVersionError:
            self.table = self._load(self.game_id)
            raise Conflict("someone else changed the game first", state=self._state()) from None
        except Exception:
            self.table = self._load(self.game_id)
            raise
        if scored is not None:
            for hook in list(self.scored_listeners):
                with contextlib.suppress(Exception):  # learning must not stop the game
                    hook(scored)
        self._publish()

    def create_game(self, body: Any, actor: Actor, rematch_of: int | None = None) -> dict[
            str, Any]:
        """A new game on the table. `replaces` in the body (optional): the game the phone
        saw on the table; when another phone has started one meanwhile, 409 and the fresh
        state instead of a second new game."""
        setup = check_setup(body)
        with self._lock:
            self._check_replaces(body.get("replaces"))
            self.game_id = self.store.create_game(setup, rematch_of)
            self.table = self._load(self.game_id)
            self.notice = None
            self._publish()
            return self._state()

    def rematch(self, game_id: int, actor: Actor, body: Any = None) -> dict[str, Any]:
        """The same players and rules again; `replaces` as for create_game."""
        with self._lock:
            old = self._replayed(game_id)
            setup = {**old.setup, "players": list(old.game.players),
                     **_fields(body or {}, [], ["replaces"])}
        return self.create_game(setup, actor, rematch_of=game_id)

    def _check_replaces(self, seen: Any) -> None:
        if seen is None:
            return
        if isinstance(seen, bool) or not isinstance(seen, int):
            raise BadRequest("replaces must be the number of the game on the table")
        if seen != self.game_id:
            raise Conflict(f"someone else started game {self.game_id} meanwhile",
                           state=self._state())

    def import_record(self, record: Any, actor: Actor) -> dict[str, Any]:
        """A kniffel-record/1 becomes a game; an unfinished one goes on at the table."""
        try:
            game = replay(record)
        except RecordError as exc:
            raise BadRequest(f"not a valid kniffel-record/1: {exc}") from None
        setup = {"rules": game.rules.ruleset.name, "variants": list(game.rules.variants),
                 "columns": list(game.rules.columns), "players": list(game.players)}
        events: list[tuple[str, dict[str, Any], str]] = []
        for move in game.move_stack:
            if isinstance(move, Throw):
                events.append(("throw", {"dice": list(move.dice), "held": None if move.held
                                         is None else list(move.held), "source": "import"},
                               actor.id))
            elif isinstance(move, Announce):
                events.append(("announce", {"box": move.box}, actor.id))
            elif isinstance(move, Entry):
                events.append(("enter", {"box": move.box, "column": move.column,
                                         "scratch": move.scratch}, actor.id))
        check = replay_events(setup, [Event(i, k, p, a, 0.0) for i, (k, p, a) in
                                      enumerate(events)])
        if to_record(check.game) != to_record(game):
            raise BadRequest("the record does not replay the same way")
        with self._lock:
            new_id = self.store.create_game(setup, events=events, make_current=not game.finished)
            if not game.finished:
                self.game_id = new_id
                self.table = self._load(new_id)
                self._publish()
            state = self._state()
            state["imported"] = new_id
            return state

    # ---- the camera --------------------------------------------------------------------

    def observe(self, values: Sequence[Face | None], held: Sequence[int] | None,
                confidence: Sequence[float | None], flags: Sequence[str | None],
                problems: Sequence[str], update: bool = False, actor: Actor = CAMERA) -> None:
        """A settled throw from the camera: pushed if it can be trusted, else asked about."""
        with self._lock:
            t = self.table
            if t.game.finished:
                self._say("game_over", "the game is over: start a new game or a rematch")
                return
            seen = len(values)
            values = list(values)
            confidence = list(confidence)
            flags = list(flags)
            problems = list(problems)
            if seen != DICE and not any(counted(p) for p in problems):
                problems.insert(0, count_problem(seen, DICE))
            values = (values + [None] * DICE)[:DICE]
            confidence = (confidence + [None] * DICE)[:DICE]
            flags = (flags + [None] * DICE)[:DICE]
            for i, v in enumerate(values):
                if v is not None and v not in t.game.rules.ruleset.faces:
                    problems.append(foreign_problem(i, v, t.game.rules.ruleset.title))
                    values[i] = None
            trusted = not problems and not any(flags) and all(v is not None for v in values)
            last = t.game.peek()
            # A nudged die re-read: it updates the throw the camera put in (or the one
            # still waiting to be checked), never adds one.
            replaces = update and (t.pending.replaces if t.pending is not None else True)
            if update and t.pending is None and not (
                    isinstance(last, Throw) and t.info[-1].source == "camera"
                    and not t.info[-1].corrected):
                return  # a re-read of a throw a person already changed: theirs wins
            if not trusted:
                if t.pending is None and not update and len(t.game.throws) >= MAX_THROWS:
                    self._refuse_fourth()
                    return
                payload = {"dice": values, "flags": flags, "confidence": confidence,
                           "problems": problems, "held": None if held is None else list(held)}
                if replaces:
                    payload["replaces"] = True
                self._commit_quietly("pending", payload, actor)
                return
            payload = {"dice": values, "held": None if held is None else list(held),
                       "source": "camera", "confidence": confidence, "flags": flags}
            if replaces:
                if t.pending is None and list(last.dice) == values:  # type: ignore[union-attr]
                    return
                kind = "reread"
            else:
                kind = "throw"
                if len(t.game.throws) >= MAX_THROWS:
                    self._refuse_fourth()
                    return
            if not self._commit_quietly(kind, payload, actor) and payload["held"]:
                # The watcher's idea of which dice stayed disagrees with the dice: unknown.
                self._commit_quietly(kind, {**payload, "held": None}, actor)

    def observe_throw(self, observed: Any) -> None:
        """`TableWatcher`'s on_throw: an ObservedThrow (vision/watch.py) into the game."""
        dice = list(getattr(observed.reading, "dice", ()))
        self.observe(list(observed.values), observed.held,
                     [float(d.confidence) for d in dice][:DICE] or [None] * len(observed.values),
                     [d.flag for d in dice][:DICE] or [None] * len(observed.values),
                     list(observed.problems), bool(observed.update))

    def _refuse_fourth(self) -> None:
        self._say("fourth_throw", f"{self.table.game.current_player} has thrown three times: "
                  "choose a box (a fourth throw does not count)")

    def _commit_quietly(self, kind: str, payload: dict[str, Any], actor: Actor) -> bool:
        try:
            self._commit(kind, payload, actor)
            return True
        except ServiceError as exc:
            self._say(exc.code, exc.message)
            return False

    def say(self, code: str, text: str) -> None:
        """Tell the table something (a notice the page shows for a few seconds; `code`
        names its translation)."""
        with self._lock:
            self._say(code, text)

    def _say(self, code: str, text: str) -> None:
        self._notice_seq += 1
        self.notice = {"id": self._notice_seq, "code": code, "text": text, "time": time.time()}
        self._publish()

    def set_camera_status(self, state: str, message: str) -> None:
        with self._lock:
            if (state, message) == (self.camera.state, self.camera.message):
                return
            self.camera = CameraStatus(state, message)
            self._publish()

    # ---- the table's button ------------------------------------------------------------

    def press(self) -> None:
        """Short press: enter the suggested box (the next player's turn begins)."""
        with self._lock:
            t = self.table
            if t.pending is not None:
                self._say("pending", "check the dice first: correct a die or throw again")
                return
            best = t.suggested()
            if best is None:
                return
            self._commit_quietly("enter", {"box": best["box"], "column": best["column"],
                                           "scratch": False}, BUTTON)

    def long_press(self) -> None:
        """Long press: undo the last move."""
        with self._lock:
            if self.table.game.peek() is not None:
                self._commit_quietly("undo", {}, BUTTON)

    # ---- publishing --------------------------------------------------------------------

    def subscribe(self) -> queue.Queue[str | None]:
        q: queue.Queue[str | None] = queue.Queue(maxsize=64)
        with self._lock:
            self._subscribers.append(q)
            q.put(json.dumps(self._state(), ensure_ascii=False))
        return q

    def unsubscribe(self, q: queue.Queue[str | None]) -> None:
        with self._lock:
            if q in self._subscribers:
                self._subscribers.remove(q)

    def close(self) -> None:
        """Ends every event stream (the server is going down)."""
        with self._lock:
            for q in self._subscribers:
                self._offer(q, None)
            self._subscribers.clear()

    @staticmethod
    def _offer(q: queue.Queue[str | None], item: str | None) -> None:
        try:
            q.put_nowait(item)
        except queue.Full:  # a stalled client: drop its oldest state, it only needs the last
            try:
                q.get_nowait()
                q.put_nowait(item)
            except (queue.Empty, queue.Full):
                pass

    def _publish(self) -> None:
        self._published += 1
        text = json.dumps(self._state(), ensure_ascii=False)
        for q in list(self._subscribers):
            self._offer(q, text)
        turn = self._turn()
        new_turn = turn != self._turn_key and turn[2] == 0
        self._turn_key = turn
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):  # a broken LED must not stop the game
                listener(self)
        if new_turn:
            for hook in list(self.turn_listeners):
                with contextlib.suppress(Exception):
                    hook()

    def _turn(self) -> tuple[int, int, int]:
        g = self.table.game
        return (self.game_id, g.state.entries, len(g.throws))

    @property
    def status(self) -> Literal["ready", "reading", "attention"]:
        """For the table's LED: ready | reading | attention. Attention: a throw to check, a
        fresh notice, a camera that failed or is paused for calibration, or a part that is
        off because of a problem the page explains (a broken config.toml, no dice reader, a
        GPIO pin)."""
        with self._lock:
            if self.table.pending is not None or (self.notice and
                                                   time.time() - self.notice["time"] < 5):
                return "attention"
            if self.camera.state in ("failed", "paused") or self.notes:
                return "attention"
            if self.camera.state == "moving":
                return "reading"
            return "ready"

    # ---- history -----------------------------------------------------------------------

    def games(self) -> list[dict[str, Any]]:
        rows = self.store.games()
        on_table, summaries = self._summaries_of(rows)
        return [{"id": row.id, "created": row.created, "finished": row.finished,
                 "rematch_of": row.rematch_of, "current": row.id == on_table,
                 "rules": row.setup["rules"], "variants": row.setup["variants"],
                 "columns": row.setup["columns"], "version": summaries[row.id].version,
                 "players": [{"name": p.name, "total": p.total}
                             for p in summaries[row.id].players],
                 "winners": list(summaries[row.id].winners)}
                for row in rows]

    def game_detail(self, game_id: int) -> dict[str, Any]:
        with self._lock:
            row = self.store.game(game_id)
            if row is None:
                raise NotFound(f"there is no game {game_id}")
            t = self._replayed(game_id)
            phones = self.store.phone_names()
            # A throw that waited to be checked also as the table showed it (Pending.to_json).
            log = [{"seq": e.seq, "kind": e.kind, "time": e.time, "actor": e.actor,
                    "by": phones.get(e.actor, e.actor), "payload": e.payload,
                    **({"pending": Pending.from_payload(e.payload).to_json()}
                       if e.kind == "pending" else {})}
                   for e in self.store.events(game_id)]
            return {"id": game_id, "created": row.created, "finished": row.finished,
                    "rematch_of": row.rematch_of, "current": game_id == self.game_id,
                    "version": t.version, "setup": t.setup, "block": to_json(t.game),
                    "sheet": t.sheet(), "log": log}

    def stats(self) -> list[dict[str, Any]]:
        """Per player over finished games: games, wins, average, bonus rate, Kniffels."""
        rows = [row for row in self.store.games() if row.finished is not None]
        _, summaries = self._summaries_of(rows)
        per: dict[str, dict[str, Any]] = {}
        for row in rows:
            summary = summaries[row.id]
            if not summary.finished:
                continue
            for p in summary.players:
                s = per.setdefault(p.name, {"name": p.name, "games": 0, "wins": 0,
                                            "points": 0, "bonus_columns": 0, "columns": 0,
                                            "kniffels": 0, "best": 0})
                s["games"] += 1
                s["wins"] += p.name in summary.winners
                s["points"] += p.total
                s["best"] = max(s["best"], p.total)
                s["columns"] += p.columns
                s["bonus_columns"] += p.bonus_columns
                s["kniffels"] += p.kniffels
        out = []
        for s in per.values():
            out.append({"name": s["name"], "games": s["games"], "wins": s["wins"],
                        "average": round(s["points"] / s["games"], 1), "best": s["best"],
                        "bonus_rate": (round(s["bonus_columns"] / s["columns"], 3)
                                       if s["columns"] else None),
                        "kniffels": s["kniffels"]})
        out.sort(key=lambda s: (-s["wins"], -s["average"], s["name"]))
        return out


@dataclass(frozen=True)
class PlayerSummary:
    """A player's part of a `GameSummary`: `columns` counts the columns that the bonus rate
    is over (none where the rules have no bonus), `bonus_columns` those that got it."""

    name: str
    total: int
    columns: int
    bonus_columns: int
    kniffels: int


@dataclass(frozen=True)
class GameSummary:
    """What the history and the statistics need of a game: a few hundred bytes, where the
    game rebuilt (`TableState`) is about 0.1 MB."""

    version: int
    finished: bool
    players: tuple[PlayerSummary, ...]
    winners: tuple[str, ...]

    @classmethod
    def of(cls, t: TableState) -> GameSummary:
        block = to_json(t.game)
        bonus = bool(t.sheet()["bonus"])
        kniffels = _kniffels(t)
        return cls(t.version, bool(t.game.finished), tuple(
            PlayerSummary(p["name"], p["total"], len(p["columns"]) if bonus else 0,
                          sum(1 for c in p["columns"] if c["bonus"] > 0) if bonus else 0,
                          kniffels.get(p["name"], 0))
            for p in block["players"]), tuple(block["winners"]))


def _kniffels(t: TableState) -> dict[str, int]:
    """Turns that ended with five alike, per player (Kniffels thrown and entered)."""
    counts: dict[str, int] = {}
    last: Throw | None = None
    for move, info in zip(t.game.move_stack, t.info, strict=True):
        if isinstance(move, Throw):
            last = move
        elif isinstance(move, Entry) and last is not None:
            if len(set(last.dice)) == 1:
                counts[info.player] = counts.get(info.player, 0) + 1
            last = None
    return counts


# ---- the demo table --------------------------------------------------------------------


class DemoPlayer:
    """Plays the demo table (`--camera demo`). Behind the demo camera (`throw=False`) it only
    keeps the game going: after the third throw (or now and then sooner) it presses the
    table's button, and a throw left to check for a while is thrown again. Without a dice
    reader (`throw=True`) it also throws: simulated dice every few seconds, keeping the most
    common face. Anyone who joins can correct, choose or undo in between."""

    def __init__(self, service: TableService, period: float = 2.0, throw: bool = True,
                 seed: int | None = None) -> None:
        self.service = service
        self.period = period
        self.throw = throw
        self.random = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-player", daemon=True)
        self._idle = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        last_version = -1
        while not self._stop.wait(self.period):
            try:
                last_version = self.step(last_version)
            except Exception:  # the demo must never take the table down
                continue

    def step(self, last_version: int) -> int:
        s = self.service
        with s._lock:
            t = s.table
            if t.version != last_version:
                self._idle = 0  # someone (or we) just did something: wait a beat
                return t.version
            self._idle += 1
            g = t.game
            if g.finished:
                if self._idle >= 4:
                    s.rematch(s.game_id, DEMO)
                return t.version
            if t.pending is not None:
                if self._idle >= 4:
                    s._commit_quietly("dismiss", {}, DEMO)
                return t.version
            # behind a camera, the third throw is entered before the demo table throws again
            third_done = len(g.throws) >= MAX_THROWS and self._idle >= (2 if self.throw else 1)
            if third_done or (g.throws and self._idle >= 2 and self.random.random() < 0.3):
                s.press()
                return s.table.version
            if self.throw and len(g.throws) < MAX_THROWS:
                faces = list(g.rules.ruleset.faces)
                if not g.throws:
                    dice = [self.random.choice(faces) for _ in range(DICE)]
                    held: list[int] | None = []
                else:
                    prev = list(g.throws[-1].dice)
                    keep = max(set(prev), key=prev.count)
                    held = [i for i, v in enumerate(prev) if v == keep]
                    if len(held) == DICE:
                        s.press()
                        return s.table.version
                    dice = [v if i in held else self.random.choice(faces)
                            for i, v in enumerate(prev)]
                s._commit_quietly("throw", {"dice": dice, "held": held, "source": "demo"}, DEMO)
            return s.table.version


def known_rules() -> dict[str, Any]:
    """What the new-game form offers."""
    return {"rulesets": [{"id": name, "title": cls.title, "variants": cls.takes_variants,
                          "max_players": cls.max_players} for name, cls in RULESETS.items()],
            "variants": list(VARIANTS), "columns": list(COLUMN_KINDS)}
