"""kniffel.db damaged on the card (a Pi switched off at the wall while it wrote): the table
sets the file aside, keeping every byte, and starts with a new one instead of not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from web.store import Store, open_store


def played(path: Path, games: int = 40) -> None:
    """A store at `path` with `games` games of a few dozen events each: many pages."""
    store = Store(path)
    for _ in range(games):
        store.create_game({"rules": "kniffel", "players": ["A", "B"]},
                          events=[("throw", {"dice": [1, 2, 3, 4, 5], "note": "x" * 200}, "p1")
                                  for _ in range(30)])
    store.close()


def test_a_file_that_is_no_database_is_set_aside_and_a_new_one_started(tmp_path: Path) -> None:
    path = tmp_path / "kniffel.db"
    path.write_bytes(b"garbage where the games were")
    store, note = open_store(path)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("kniffel.db.damaged-")]
    assert len(kept) == 1 and kept[0].read_bytes() == b"garbage where the games were"
    assert note == (f"the saved games could not be read (file is not a database): the file "
                    f"is kept as {kept[0]} (sqlite3 can recover most of it); this table "
                    "starts a new one")
    game = store.create_game({"rules": "kniffel", "players": ["A"]})
    assert store.current_game() == game


def test_damaged_pages_inside_are_found_at_start(tmp_path: Path) -> None:
    """The header intact, pages inside overwritten: SQLite's quick check finds it when the
    table starts, not a query in the middle of a game."""
    path = tmp_path / "kniffel.db"
    played(path)
    data = bytearray(path.read_bytes())
    assert len(data) > 20 * 4096
    data[8 * 4096:12 * 4096] = bytes(range(256)) * 64  # four pages of nonsense
    path.write_bytes(bytes(data))
    store, note = open_store(path)
    assert note is not None and note.startswith("the saved games could not be read (")
    [kept] = [p for p in tmp_path.iterdir() if p.name.startswith("kniffel.db.damaged-")]
    assert kept.read_bytes() == bytes(data)
    assert store.games() == []


def test_a_sound_file_is_opened_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "kniffel.db"
    played(path, games=3)
    store, note = open_store(path)
    assert note is None and len(store.games()) == 3
    assert [p.name for p in tmp_path.iterdir() if "damaged" in p.name] == []


def test_a_file_that_cannot_be_opened_is_not_set_aside(tmp_path: Path) -> None:
    """Not damaged but unopenable (here a folder in its place): setting it aside would not
    help, and the caller says why in one line."""
    path = tmp_path / "kniffel.db"
    path.mkdir()
    with pytest.raises(sqlite3.OperationalError):
        open_store(path)
    assert path.is_dir() and [p.name for p in tmp_path.iterdir()] == ["kniffel.db"]
