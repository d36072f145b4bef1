"""The table's memory: one SQLite file with every game and an append-only event log.

The log is the source of truth. A game's state is rebuilt by replaying its events through
the rules engine (web/service.py); nothing derived is stored. Every append is committed with
`synchronous=FULL` before the caller acknowledges the change, so a power cut or SIGKILL at
any moment loses nothing that a phone was told had happened. The primary key (game, seq)
is a second line of defence for optimistic concurrency: two writers can never both append
event number n.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    setup TEXT NOT NULL,          -- {"rules", "variants", "columns", "players"} at creation
    created REAL NOT NULL,
    finished REAL,                -- time the last box was filled; NULL while open
    rematch_of INTEGER REFERENCES games(id)
);
CREATE TABLE IF NOT EXISTS events (
    game_id INTEGER NOT NULL REFERENCES games(id),
    seq INTEGER NOT NULL,         -- 1, 2, ...: the game's version after this event
    kind TEXT NOT NULL,           -- throw | correct | reread | pending | dismiss | announce
                                  -- | enter | undo | players
    payload TEXT NOT NULL,
    actor TEXT NOT NULL,          -- phone id, or camera | button | demo | import
    time REAL NOT NULL,
    PRIMARY KEY (game_id, seq)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS phones (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY,
    phone_id TEXT NOT NULL REFERENCES phones(id),
    created REAL NOT NULL
);
"""


#: SQLite's largest integer: a larger game number cannot even be looked up.
SQLITE_MAX_INTEGER = 2**63 - 1


class StaleVersionError(Exception):
    """Another writer appended first: the caller's version is no longer the latest."""


@dataclass(frozen=True)
class Event:
    seq: int
    kind: str
    payload: dict[str, Any]
    actor: str
    time: float


@dataclass(frozen=True)
class GameRow:
    id: int
    setup: dict[str, Any]
    created: float
    finished: float | None
    rematch_of: int | None
    events: int


class Store:
    """Thread-safe access to kniffel.db (one connection, one lock: the Pi has one table)."""

    def __init__(self, path: Path) -> None:
        """Raises sqlite3.DatabaseError where the file is damaged (not a database, or one
        whose pages SQLite's quick check finds wrong), sqlite3.OperationalError where it
        cannot be opened (locked by another process, no permission)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None,
                                   timeout=10)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit is on the disk before we answer, WAL or not.
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            (check,) = self._db.execute("PRAGMA quick_check").fetchone()
            if check != "ok":
                raise sqlite3.DatabaseError(f"damaged: {check}")
            self._db.executescript(SCHEMA)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # ---- games and their events --------------------------------------------------------

    def create_game(self, setup: dict[str, Any], rematch_of: int | None = None,
                    events: Sequence[tuple[str, dict[str, Any], str]] = (),
                    make_current: bool = True) -> int:
        """A new game (with optional initial events, e.g. an import) in one transaction."""
        now = time.time()
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO games (setup, created, rematch_of) VALUES (?, ?, ?)",
                (json.dumps(setup, ensure_ascii=False), now, rematch_of))
            game_id = int(cur.lastrowid or 0)
            for seq, (kind, payload, actor) in enumerate(events, start=1):
                db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                           (game_id, seq, kind, json.dumps(payload, ensure_ascii=False),
                            actor, now))
            if make_current:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('current_game', ?)",
                           (str(game_id),))
        return game_id

    def append(self, game_id: int, seq: int, kind: str, payload: dict[str, Any], actor: str,
               finished: bool) -> Event:
        """Append event number `seq`; StaleVersionError if that number is taken."""
        now = time.time()
        try:
            with self._tx() as db:
                (last,) = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE game_id=?",
                                     (game_id,)).fetchone()
                if last != seq - 1:
                    raise StaleVersionError(f"event {seq} of game {game_id} exists")
                db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                           (game_id, seq, kind, json.dumps(payload, ensure_ascii=False),
                            actor, now))
                db.execute("UPDATE games SET finished=? WHERE id=?",
                           (now if finished else None, game_id))
        except sqlite3.IntegrityError:
            raise StaleVersionError(f"event {seq} of game {game_id} exists") from None
        return Event(seq, kind, payload, actor, now)

    def events(self, game_id: int) -> list[Event]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, kind, payload, actor, time FROM events WHERE game_id=? "
                "ORDER BY seq", (game_id,)).fetchall()
        return [Event(s, k, json.loads(p), a, t) for s, k, p, a, t in rows]

    def game(self, game_id: int) -> GameRow | None:
        if not 0 < game_id <= SQLITE_MAX_INTEGER:  # a number from a URL: no such game
            return None
        rows = self._games("WHERE g.id=?", (game_id,))
        return rows[0] if rows else None

    def games(self) -> list[GameRow]:
        """All games, newest first."""
        return self._games("", ())

    def _games(self, where: str, args: tuple[Any, ...]) -> list[GameRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT g.id, g.setup, g.created, g.finished, g.rematch_of, "
                "(SELECT COUNT(*) FROM events e WHERE e.game_id=g.id) "
                f"FROM games g {where} ORDER BY g.id DESC", args).fetchall()
        return [GameRow(i, json.loads(s), c, f, r, n) for i, s, c, f, r, n in rows]

    def current_game(self) -> int | None:
        value = self.get_meta("current_game")
        return int(value) if value else None

    # ---- small settings ----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # ---- phones and their sessions -----------------------------------------------------

    def add_phone(self, phone_id: str, name: str, token_hash: str) -> None:
        now = time.time()
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO phones VALUES (?, ?, ?)", (phone_id, name, now))
            db.execute("INSERT INTO sessions VALUES (?, ?, ?)", (token_hash, phone_id, now))

    def rename_phone(self, phone_id: str, name: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE phones SET name=? WHERE id=?", (name, phone_id))

    def phone_of_session(self, token_hash: str) -> tuple[str, str] | None:
        """(phone id, phone name) of a session, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT p.id, p.name FROM sessions s JOIN phones p ON p.id = s.phone_id "
                "WHERE s.token_hash=?", (token_hash,)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def phone_names(self) -> dict[str, str]:
        with self._lock:
            rows = self._db.execute("SELECT id, name FROM phones").fetchall()
        return {str(i): str(n) for i, n in rows}

    def count_phones(self) -> int:
        with self._lock:
            (n,) = self._db.execute("SELECT COUNT(*) FROM phones").fetchone()
        return int(n)


def open_store(path: Path) -> tuple[Store, str | None]:
    """The table's store at `path`, and a note where the file there was damaged (a card
    written to as the power went): it is set aside beside it — kept, never deleted, for
    its games to be recovered (`sqlite3 FILE .recover`) — and the table starts with a new
    one, rather than not at all. A file that cannot be opened for another reason (locked,
    no permission) raises sqlite3.OperationalError: setting it aside would not help."""
    try:
        return Store(path), None
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as exc:
        aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = path.with_name(path.name + suffix)
            if part.exists():
                part.rename(aside.with_name(aside.name + suffix))
        note = (f"the saved games could not be read ({exc}): the file is kept as "
                f"{aside} (sqlite3 can recover most of it); this table starts a new one")
        return Store(path), note
