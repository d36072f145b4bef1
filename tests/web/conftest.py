"""Fixtures: a table (service + app) on a real SQLite file in tmp_path, and phones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from web.app import create_app
from web.auth import PinGuard, TableSecret
from web.service import TableService
from web.store import Store

ORIGIN = {"Origin": "http://localhost"}


class Clock:
    """A hand-wound clock for the PIN guard."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Table:
    folder: Path
    store: Store
    service: TableService
    secret: TableSecret
    app: Flask
    clock: Clock

    def phone(self, name: str | None = "Anna", join: bool = True) -> Phone:
        phone = Phone(self, self.app.test_client())
        if join:
            body = {"pin": self.secret.pin}
            if name:
                body["name"] = name
            resp = phone.client.post("/api/session", json=body, headers=ORIGIN)
            assert resp.status_code == 200, resp.json
        return phone

    def reopen(self) -> Table:
        """The same state directory opened again, as after a restart."""
        self.store.close()
        return make_table(self.folder, self.clock)


@dataclass
class Phone:
    table: Table
    client: FlaskClient

    def state(self) -> dict[str, Any]:
        resp = self.client.get("/api/state")
        assert resp.status_code == 200
        return resp.json  # type: ignore[no-any-return]

    def post(self, change: str, version: Any = ..., game: int | None = None,
             **body: Any) -> Any:
        """POST a change based on the current version (or the one given)."""
        state = self.state()
        game = state["game"]["id"] if game is None else game
        body["version"] = state["game"]["version"] if version is ... else version
        return self.client.post(f"/api/games/{game}/{change}", json=body, headers=ORIGIN)

    def ok(self, change: str, **body: Any) -> dict[str, Any]:
        resp = self.post(change, **body)
        assert resp.status_code == 200, resp.json
        return resp.json  # type: ignore[no-any-return]


def make_table(folder: Path, clock: Clock | None = None) -> Table:
    clock = clock or Clock()
    store = Store(folder / "kniffel.db")
    service = TableService(store, default_players=("Anna", "Ben"))
    secret = TableSecret.load_or_create(folder)
    app = create_app(service, secret, guard=PinGuard(clock=clock), keepalive_seconds=0.2)
    app.testing = True
    return Table(folder, store, service, secret, app, clock)


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    t = make_table(tmp_path)
    yield t
    t.store.close()
