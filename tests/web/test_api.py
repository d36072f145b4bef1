"""The JSON API with Flask's test client on a real SQLite file: play, correct, undo,
conflicts, auth, CSRF, and every bad request a 4xx with one clear message and no change."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from game import loads, to_json
from tests.web.conftest import ORIGIN, Table, make_table
from web import serve
from web import service as service_module
from web.api import CHANGES
from web.openapi import spec
from web.service import REPLAYED_KEPT, replay_events


def events(table: Table) -> int:
    return len(table.store.events(table.service.game_id))


# ---- playing --------------------------------------------------------------------------


def test_a_turn_throw_correct_enter_next_player(table: Table) -> None:
    anna = table.phone("Anna")
    s = anna.ok("throws", dice=[2, 3, 4, 5, 5])
    assert s["block"]["turn"]["throws"] == [{"dice": [2, 3, 4, 5, 5], "held": []}]
    assert s["game"]["version"] == 1
    options = {o["box"]: o for o in s["block"]["turn"]["options"]}
    assert options["small_straight"]["points"] == 30 and options["small_straight"]["legal"]
    assert not options["full_house"]["legal"] and options["full_house"]["reason"]
    # Two taps: die 5 was really a 6.
    s = anna.ok("corrections", index=4, value=6)
    assert s["block"]["turn"]["throws"][-1]["dice"] == [2, 3, 4, 5, 6]
    assert s["last_throw"]["corrected"] == [4]
    assert s["suggested"]["box"] == "large_straight"
    s = anna.ok("entries", box="large_straight")
    assert s["block"]["players"][0]["columns"][0]["boxes"]["large_straight"] == 40
    assert s["block"]["turn"]["player"] == "Ben" and s["block"]["turn"]["throws"] == []
    assert s["undo"]["kind"] == "enter" and s["undo"]["points"] == 40


def test_second_and_third_throw_with_held_dice_and_a_fourth_is_refused(table: Table) -> None:
    phone = table.phone()
    phone.ok("throws", dice=[6, 6, 1, 2, 3])
    phone.ok("throws", dice=[6, 6, 6, 4, 5], held=[0, 1])
    s = phone.ok("throws", dice=[6, 6, 6, 6, 6], held=[0, 1, 2])
    assert len(s["block"]["turn"]["throws"]) == 3
    before = phone.state()
    resp = phone.post("throws", dice=[1, 1, 1, 1, 1])
    assert resp.status_code == 422
    assert resp.json["error"]["code"] == "fourth_throw"
    assert "three times" in resp.json["error"]["message"]
    assert phone.state() == before
    assert phone.ok("entries", box="kniffel")["block"]["players"][0]["total"] == 50


def test_held_die_that_changed_is_refused(table: Table) -> None:
    phone = table.phone()
    phone.ok("throws", dice=[6, 6, 1, 2, 3])
    resp = phone.post("throws", dice=[5, 6, 1, 2, 3], held=[0])
    assert resp.status_code == 422 and "held die 1 changed" in resp.json["error"]["message"]


def test_undo_goes_back_one_move_at_a_time(table: Table) -> None:
    phone = table.phone()
    phone.ok("throws", dice=[1, 1, 1, 2, 2])
    phone.ok("entries", box="full_house")
    phone.ok("throws", dice=[3, 3, 3, 3, 1])
    s = phone.ok("undo")
    assert s["block"]["turn"]["player"] == "Ben" and s["block"]["turn"]["throws"] == []
    assert s["undo"]["kind"] == "enter" and s["undo"]["box"] == "full_house"
    s = phone.ok("undo")
    assert s["block"]["turn"]["player"] == "Anna"
    assert s["block"]["players"][0]["columns"][0]["boxes"]["full_house"] is None
    s = phone.ok("undo")
    assert s["block"]["turn"]["throws"] == [] and s["undo"] is None
    resp = phone.post("undo")
    assert resp.status_code == 422 and resp.json["error"]["message"] == "nothing to undo"


def test_scratch_and_announce(table: Table) -> None:
    phone = table.phone()
    phone.ok("players", players=["Anna", "Ben"])
    s = phone.client.post("/api/games", json={"players": ["Anna"], "rules": "kniffel-championship",
                                              "columns": ["announce", "free"]}, headers=ORIGIN)
    assert s.status_code == 201
    phone.ok("throws", dice=[5, 5, 5, 2, 3])
    s = phone.ok("announce", box="fives")
    assert s["block"]["turn"]["announce"] == "fives"
    s = phone.ok("entries", box="fives", column="announce")
    assert s["block"]["players"][0]["columns"][0]["boxes"]["fives"] == 15
    phone.ok("throws", dice=[5, 5, 5, 2, 3])
    s = phone.ok("entries", box="chance", column="free", scratch=True)
    assert s["block"]["players"][0]["columns"][1]["boxes"]["chance"] == 0


def test_rename_and_reorder_players(table: Table) -> None:
    phone = table.phone()
    s = phone.ok("players", players=["Bea", "Anna"], order=[1, 0])
    assert [p["name"] for p in s["block"]["players"]] == ["Bea", "Anna"]
    phone.ok("throws", dice=[1, 2, 3, 4, 6])
    s = phone.ok("players", players=["Bea", "Anna-Lena"])
    assert s["block"]["turn"]["player"] == "Bea"
    assert s["block"]["players"][1]["name"] == "Anna-Lena"
    resp = phone.post("players", players=["Anna-Lena", "Bea"], order=[1, 0])
    assert resp.status_code == 422 and "before the first throw" in resp.json["error"]["message"]


def test_read_game_is_the_json_of_kniffel_replay(table: Table, tmp_path: Any,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    phone = table.phone()
    phone.ok("throws", dice=[2, 2, 2, 5, 5])
    phone.ok("entries", box="full_house")
    phone.ok("throws", dice=[4, 4, 1, 2, 3])
    game_id = phone.state()["game"]["id"]
    record = phone.client.get(f"/api/games/{game_id}/record").json
    path = tmp_path / "game.json"
    path.write_text(json.dumps(record))
    from web.cli import main

    assert main(["replay", str(path), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    resp = phone.client.get(f"/api/games/{game_id}")
    assert resp.json == printed
    assert resp.headers["ETag"] == f'"{game_id}-3"'


# ---- nothing lost ---------------------------------------------------------------------


def test_state_is_rebuilt_identically_after_a_restart(table: Table) -> None:
    phone = table.phone()
    phone.ok("throws", dice=[3, 3, 4, 4, 4])
    phone.ok("corrections", index=0, value=4)
    phone.ok("entries", box="fours")
    phone.ok("throws", dice=[1, 2, 3, 4, 5])
    phone.ok("undo")
    phone.ok("throws", dice=[6, 6, 6, 1, 1])
    table.service.observe([6, 6, 6, 1, None], None, [0.9] * 5, [None] * 5, ["die 5 unreadable"])
    before = phone.state()
    reopened = table.reopen()
    after = reopened.phone(join=False).state()
    for key in ("game", "block", "pending", "last_throw", "suggested", "undo"):
        assert after[key] == before[key], key
    reopened.store.close()


def test_two_phones_at_once_one_wins_the_other_gets_409_and_fresh_state(table: Table) -> None:
    anna, ben = table.phone("Anna"), table.phone("Ben")
    anna.ok("throws", dice=[1, 1, 1, 1, 2])
    version = anna.state()["game"]["version"]
    first = anna.post("entries", version=version, box="ones")
    second = ben.post("entries", version=version, box="chance")
    assert first.status_code == 200
    assert second.status_code == 409
    assert "someone else changed the game first" in second.json["error"]["message"]
    fresh = second.json["state"]
    assert fresh["game"]["version"] == version + 1
    assert fresh["block"]["players"][0]["columns"][0]["boxes"]["ones"] == 4
    assert fresh["block"]["players"][0]["columns"][0]["boxes"]["chance"] is None


def test_two_phones_starting_a_new_game_at_once_one_wins(table: Table) -> None:
    anna, ben = table.phone("Anna"), table.phone("Ben")
    seen = anna.state()["game"]["id"]
    first = anna.client.post("/api/games", json={"players": ["A", "B"], "replaces": seen},
                             headers=ORIGIN)
    second = ben.client.post("/api/games", json={"players": ["C"], "replaces": seen},
                             headers=ORIGIN)
    assert first.status_code == 201
    assert second.status_code == 409, second.json
    assert "someone else started game" in second.json["error"]["message"]
    assert second.json["state"]["game"]["id"] == first.json["game"]["id"]
    # a rematch is guarded the same way; without `replaces` (API clients) it just starts
    late = ben.client.post(f"/api/games/{seen}/rematch", json={"replaces": seen},
                           headers=ORIGIN)
    assert late.status_code == 409
    assert [p["name"] for p in anna.state()["block"]["players"]] == ["A", "B"]
    bad = ben.client.post("/api/games", json={"players": ["C"], "replaces": "x"},
                          headers=ORIGIN)
    assert bad.status_code == 400 and "replaces" in bad.json["error"]["message"]
    assert ben.client.post(f"/api/games/{seen}/rematch", headers=ORIGIN).status_code == 201


def test_concurrent_changes_from_threads_lose_nothing(table: Table) -> None:
    phones = [table.phone(f"P{i}") for i in range(6)]
    phones[0].ok("throws", dice=[1, 2, 3, 4, 5])
    version = phones[0].state()["game"]["version"]
    results: list[int] = []

    def tap(i: int) -> None:
        resp = phones[i].post("corrections", version=version, index=0, value=(i % 6) + 1)
        results.append(resp.status_code)

    threads = [threading.Thread(target=tap, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200] + [409] * 5
    assert events(table) == version + 1


# ---- who may change -------------------------------------------------------------------


MUTATIONS = [("post", "/api/games/{id}/" + c) for c in CHANGES] + [
    ("post", "/api/games"), ("post", "/api/games/import"), ("post", "/api/games/{id}/rematch"),
    ("post", "/api/session/name")]


@pytest.mark.parametrize(("method", "url"), MUTATIONS)
def test_every_change_needs_a_session(table: Table, method: str, url: str) -> None:
    stranger = table.phone(join=False)
    game = stranger.state()["game"]["id"]
    resp = getattr(stranger.client, method)(url.format(id=game), json={"version": 0},
                                            headers=ORIGIN)
    assert resp.status_code == 401
    assert resp.json["error"]["code"] == "not_joined"
    assert events(table) == 0


def test_reading_is_open(table: Table) -> None:
    stranger = table.phone(join=False)
    for url in ("/api/state", "/api/games", "/api/stats", "/api/rules", "/api/openapi.json",
                f"/api/games/{table.service.game_id}", "/", "/phone", "/history"):
        assert stranger.client.get(url).status_code == 200, url


def test_session_cookie_is_httponly_and_samesite_strict(table: Table) -> None:
    client = table.app.test_client()
    resp = client.post("/api/session", json={"pin": table.secret.pin}, headers=ORIGIN)
    cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/api/session").json["phone"]["name"] == "Phone 1"


def test_qr_token_joins(table: Table) -> None:
    client = table.app.test_client()
    bad = client.post("/api/session", json={"token": "x" * 32}, headers=ORIGIN)
    assert bad.status_code == 401 and bad.json["error"]["code"] == "bad_token"
    ok = client.post("/api/session", json={"token": table.secret.token, "name": "Opa"},
                     headers=ORIGIN)
    assert ok.status_code == 200 and ok.json["phone"]["name"] == "Opa"


def test_wrong_pins_are_slowed_down_per_client_and_for_everyone(table: Table) -> None:
    wrong = "0000" if table.secret.pin != "0000" else "1111"
    client = table.app.test_client()

    def try_pin(pin: str, addr: str = "192.168.1.50") -> Any:
        return client.post("/api/session", json={"pin": pin}, headers=ORIGIN,
                           environ_base={"REMOTE_ADDR": addr})

    assert try_pin(wrong).status_code == 401
    assert try_pin(wrong).status_code == 401
    assert try_pin(wrong).status_code == 401  # third miss: now a wait
    slow = try_pin(table.secret.pin)  # even the right PIN must wait
    assert slow.status_code == 429 and int(slow.headers["Retry-After"]) >= 1
    assert "try again in" in slow.json["error"]["message"]
    table.clock.now += 3
    assert try_pin(table.secret.pin).status_code == 200
    # Everyone together: a budget of failures per window, whatever the address.
    for i in range(10):
        try_pin(wrong, f"10.0.0.{i}")
    assert try_pin(table.secret.pin, "10.0.1.1").status_code == 429
    table.clock.now += 301
    assert try_pin(table.secret.pin, "10.0.1.1").status_code == 200
    # The QR token is never slowed down.
    for i in range(10):
        try_pin(wrong, f"10.0.2.{i}")
    assert client.post("/api/session", json={"token": table.secret.token},
                       headers=ORIGIN).status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Referer": "http://evil.example/page"},
    {},
    {"Origin": "http://localhost", "Sec-Fetch-Site": "cross-site"},
    {"Origin": "https://localhost"},
])
def test_cross_site_changes_are_refused_even_with_a_session(table: Table,
                                                            headers: dict[str, str]) -> None:
    phone = table.phone()
    resp = phone.client.post(f"/api/games/{table.service.game_id}/throws",
                             json={"version": 0, "dice": [1, 2, 3, 4, 5]}, headers=headers)
    assert resp.status_code == 403 and resp.json["error"]["code"] == "cross_site"
    assert events(table) == 0
    login = phone.client.post("/api/session", json={"pin": table.secret.pin}, headers=headers)
    assert login.status_code == 403


def test_same_origin_referer_is_enough(table: Table) -> None:
    phone = table.phone()
    resp = phone.client.post(f"/api/games/{table.service.game_id}/throws",
                             json={"version": 0, "dice": [1, 2, 3, 4, 5]},
                             headers={"Referer": "http://localhost/phone"})
    assert resp.status_code == 200


def test_join_code_only_for_the_tables_screen_and_joined_phones(table: Table) -> None:
    lan = {"REMOTE_ADDR": "192.168.1.77"}
    stranger = table.app.test_client()
    assert stranger.get("/api/join", environ_base=lan).status_code == 401
    local = stranger.get("/api/join")  # loopback: the Pi's own screen
    assert local.status_code == 200 and local.json["pin"] == table.secret.pin
    assert local.json["url"].endswith("/phone#t=" + table.secret.token)
    assert local.json["qr_svg"].startswith("<svg")
    phone = table.phone()
    assert phone.client.get("/api/join", environ_base=lan).status_code == 200


def test_pages_send_security_headers(table: Table) -> None:
    resp = table.app.test_client().get("/")
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in resp.headers["Content-Security-Policy"]


# ---- bad requests ---------------------------------------------------------------------


BAD = [
    ("throws", {"dice": [1, 2, 3, 4, 7]}, 400, "not a face"),
    ("throws", {"dice": [1, 2, 3, 4, 0]}, 400, "not a face"),
    ("throws", {"dice": [1, 2, 3, 4, 3.0]}, 400, "die 5"),
    ("throws", {"dice": [1, 2, 3, 4, True]}, 400, "die 5"),
    ("throws", {"dice": [1, 2, 3, 4]}, 400, "five die values"),
    ("throws", {"dice": "12345"}, 400, "five die values"),
    ("throws", {"dice": [1, 2, 3, 4, "duck"]}, 400, "not a face"),
    ("throws", {"dice": [1, 2, 3, 4, 5], "held": [5]}, 400, "held index"),
    ("throws", {"dice": [1, 2, 3, 4, 5], "player": "Ben"}, 422, "Anna's turn"),
    ("throws", {"dice": [1, 2, 3, 4, 5], "player": "Zoe"}, 400, "no player"),
    ("throws", {"dice": [1, 2, 3, 4, 5], "extra": 1}, 400, "unknown field"),
    ("throws", {"dice": [1, 2, 3, 4, 5], "version": "0"}, 400, "version"),
    ("throws", {"dice": [1, 2, 3, 4, 5], "version": None}, 400, "version"),
    ("entries", {"box": "sevens"}, 400, "unknown box"),
    ("entries", {"box": "chance"}, 422, "throw the dice"),
    ("entries", {"box": 3}, 400, "box name"),
    ("entries", {"box": "chance", "column": "sideways"}, 400, "unknown column"),
    ("entries", {"box": "chance", "scratch": "yes"}, 400, "scratch"),
    ("corrections", {"index": 0, "value": 3}, 422, "no throw"),
    ("corrections", {"index": 5, "value": 3}, 400, "die position"),
    ("corrections", {"index": 0}, 400, "missing"),
    ("announce", {"box": "chance"}, 422, "no announce column"),
    ("accept", {}, 422, "no throw waiting"),
    ("dismiss", {}, 422, "no throw waiting"),
    ("undo", {}, 422, "nothing to undo"),
    ("players", {"players": ["Anna", "Anna"]}, 400, "same name"),
    ("players", {"players": ["Anna"]}, 400, "all 2 players"),
    ("players", {"players": ["Anna", ""]}, 400, "non-empty"),
    ("players", {"players": ["Anna", "Ben"], "order": [0, 0]}, 400, "order"),
]


@pytest.mark.parametrize(("change", "body", "status", "words"), BAD)
def test_bad_changes_get_4xx_with_one_clear_message_and_change_nothing(
        table: Table, change: str, body: dict[str, Any], status: int, words: str) -> None:
    phone = table.phone()
    before = phone.state()
    resp = phone.post(change, **body)
    assert resp.status_code == status, resp.json
    message = resp.json["error"]["message"]
    assert words in message and "\n" not in message and "Traceback" not in message
    assert phone.state() == before
    assert events(table) == 0


@pytest.mark.parametrize(("url", "data", "content_type", "status"), [
    ("/api/games/{id}/throws", "{bad json", "application/json", 400),
    ("/api/games/{id}/throws", "[1, 2]", "application/json", 400),
    ("/api/games/{id}/throws", "dice=1", "application/x-www-form-urlencoded", 415),
    ("/api/games/{id}/throws", '{"version": 0}', "text/plain", 415),
    ("/api/games/{id}/flip", '{"version": 0}', "application/json", 404),
    ("/api/games/999/throws", '{"version": 0, "dice": [1,2,3,4,5]}', "application/json", 404),
    ("/api/games", '{"players": []}', "application/json", 400),
    ("/api/games", '{"players": ["A","B","C","D","E","F","G","H","I"]}', "application/json", 400),
    ("/api/games", '{"players": ["A"], "rules": "poker"}', "application/json", 400),
    ("/api/games", '{"players": ["A"], "rules": "kids", "variants": ["scharf"]}',
     "application/json", 400),
    ("/api/games/import", '{"format": "kniffel-record/2"}', "application/json", 400),
    ("/api/games/import", '{"format": "kniffel-record/1", "rules": "kniffel", "players": ["A"],'
     ' "turns": [{"player": "A", "throws": [[1,2,3,4,9]], "box": "chance"}]}',
     "application/json", 400),
    ("/api/games/999/rematch", "{}", "application/json", 404),
    ("/api/session/name", '{"name": ""}', "application/json", 400),
    # half a character (a lone surrogate) escaped in JSON: no text, and SQLite cannot store it
    ("/api/session/name", '{"name": "W\\udcfcrfel"}', "application/json", 400),
    ("/api/games", '{"players": ["A\\ud83d"]}', "application/json", 400),
    ("/api/games/import", "[" * 100_000 + "]" * 100_000, "application/json", 400),
])
def test_malformed_requests(table: Table, url: str, data: str, content_type: str,
                            status: int) -> None:
    phone = table.phone()
    before = phone.state()
    resp = phone.client.post(url.format(id=table.service.game_id), data=data,
                             headers={**ORIGIN, "Content-Type": content_type})
    assert resp.status_code == status, resp.json
    assert resp.json["error"]["message"]
    assert phone.state() == before
    assert len(table.store.games()) == 1


def test_unknown_addresses_and_methods_are_json(table: Table) -> None:
    client = table.app.test_client()
    assert client.get("/api/nothing").json["error"]["code"] == "not_found"
    resp = client.delete(f"/api/games/{table.service.game_id}", headers=ORIGIN)
    assert resp.status_code == 405 and resp.json["error"]["message"]
    assert client.get("/api/games/999").status_code == 404


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=st.sampled_from(sorted(CHANGES)),
       body=st.dictionaries(st.sampled_from(["dice", "held", "box", "column", "scratch", "index",
                                             "value", "players", "order", "player", "version"]),
                            st.recursive(st.none() | st.booleans() | st.integers(-3, 9)
                                         | st.floats(allow_nan=False) | st.text(max_size=8),
                                         lambda c: st.lists(c, max_size=6), max_leaves=8)))
def test_never_a_500(table: Table, change: str, body: dict[str, Any]) -> None:
    joined = table.phone()
    resp = joined.client.post(f"/api/games/{table.service.game_id}/{change}", json=body,
                              headers=ORIGIN)
    assert resp.status_code < 500, resp.json


# ---- games, history, statistics -------------------------------------------------------


def play_out(phone: Any, dice: list[int]) -> None:
    """Finish the current game: each turn one throw into the first legal box."""
    while True:
        s = phone.state()
        if s["block"]["finished"]:
            return
        s = phone.ok("throws", dice=dice)
        phone.ok("entries", box=s["suggested"]["box"], column=s["suggested"]["column"])


def test_new_game_history_rematch_stats_and_log(table: Table) -> None:
    phone = table.phone("Opas Handy")
    resp = phone.client.post("/api/games", json={"players": ["Oma", "Opa"], "rules": "kniffel"},
                             headers=ORIGIN)
    assert resp.status_code == 201
    game_id = resp.json["game"]["id"]
    phone.ok("throws", dice=[6, 6, 6, 6, 5])
    phone.ok("corrections", index=4, value=6)
    phone.ok("entries", box="kniffel")
    phone.ok("undo")
    phone.ok("entries", box="kniffel")
    play_out(phone, [6, 6, 6, 6, 6])
    done = phone.state()
    assert done["block"]["finished"] and done["block"]["turn"] is None
    games = phone.client.get("/api/games").json["games"]
    assert [g["id"] for g in games] == [game_id, 1]
    assert games[0]["finished"] and games[0]["winners"]
    log = phone.client.get(f"/api/games/{game_id}/detail").json["log"]
    correction = next(e for e in log if e["kind"] == "correct")
    assert correction["by"] == "Opas Handy" and correction["payload"]["was"] == 5
    undo = next(e for e in log if e["kind"] == "undo")
    assert undo["by"] == "Opas Handy" and undo["payload"]["undone"]["box"] == "kniffel"
    stats = {s["name"]: s for s in phone.client.get("/api/stats").json["players"]}
    assert stats["Oma"]["games"] == 1 and stats["Oma"]["kniffels"] == 13
    assert stats["Oma"]["bonus_rate"] == 1.0
    assert stats["Oma"]["wins"] + stats["Opa"]["wins"] >= 1
    resp = phone.client.post(f"/api/games/{game_id}/rematch", json={}, headers=ORIGIN)
    assert resp.status_code == 201
    assert resp.json["game"]["setup"]["players"] == ["Oma", "Opa"]
    assert resp.json["game"]["rematch_of"] == game_id
    # A change aimed at the finished game now gets a conflict naming the current one.
    old = phone.post("undo", game=game_id, version=0)
    assert old.status_code == 409 and "not the one on the table" in old.json["error"]["message"]


def played_games(table: Table, count: int) -> Any:
    """`count` finished games, one after the other (rematches), and a phone."""
    phone = table.phone()
    for k in range(count):
        if k:
            resp = phone.client.post(f"/api/games/{table.service.game_id}/rematch", json={},
                                     headers=ORIGIN)
            assert resp.status_code == 201
        play_out(phone, [k % 6 + 1] * 4 + [(k + 1) % 6 + 1])
    return phone


def test_a_look_at_many_old_games_keeps_only_the_last_few_rebuilt(table: Table) -> None:
    """A game rebuilt is about 0.1 MB: a table of a thousand games must not hold them all."""
    phone = played_games(table, REPLAYED_KEPT + 3)
    games = phone.client.get("/api/games").json["games"]
    for game in games:
        detail = phone.client.get(f"/api/games/{game['id']}/detail").json
        assert detail["version"] == game["version"] and detail["block"]["finished"]
    assert len(table.service._replayed_kept) == REPLAYED_KEPT


def test_the_history_rebuilds_each_old_game_once_while_the_table_plays_on(
        table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    phone = played_games(table, 3)
    games = phone.client.get("/api/games").json["games"]
    rebuilt: list[int] = []
    started, release = threading.Event(), threading.Event()

    def slowly(setup: dict[str, Any], events: Any) -> Any:
        rebuilt.append(len(events))
        started.set()
        assert release.wait(10)
        return replay_events(setup, events)

    fresh = make_table(table.folder, table.clock)  # a restart: nothing summed up yet
    monkeypatch.setattr(service_module, "replay_events", slowly)
    history: list[Any] = []
    worker = threading.Thread(target=lambda: history.append(fresh.service.games()))
    worker.start()
    assert started.wait(10)
    # the history is rebuilding an old game: a change at the table is not kept waiting
    fresh.phone().ok("undo")
    release.set()
    worker.join(10)
    assert [g["id"] for g in history[0]] == [g["id"] for g in games]
    stats, games_now = fresh.service.stats(), fresh.service.games()
    assert len(rebuilt) == 2  # the two games not on the table, once each
    monkeypatch.undo()
    again = make_table(table.folder, table.clock)  # each game rebuilt anew
    assert (stats, games_now) == (again.service.stats(), again.service.games())
    assert stats and all(p["games"] == 2 for p in stats)  # the last game's last box undone


def test_the_history_summed_up_at_the_start_answers_its_first_look_at_once(
        table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    played_games(table, 3)
    fresh = make_table(table.folder, table.clock)
    serve.sum_up_history(fresh.service)  # as `kniffel serve` does in the background
    rebuilt: list[int] = []
    monkeypatch.setattr(service_module, "replay_events",
                        lambda *args: rebuilt.append(1))
    assert len(fresh.service.games()) == 3 and fresh.service.stats()
    assert not rebuilt


def test_a_history_that_cannot_be_summed_up_at_the_start_keeps_the_table_going(
        table: Table, caplog: pytest.LogCaptureFixture) -> None:
    played_games(table, 2)
    fresh = make_table(table.folder, table.clock)
    fresh.store.close()  # the table stopping meanwhile
    with caplog.at_level(logging.INFO, logger="kniffel.serve"):
        serve.sum_up_history(fresh.service)
    assert "history not summed up in advance" in caplog.text


def test_export_and_import_round_trip(table: Table) -> None:
    phone = table.phone()
    phone.ok("throws", dice=[1, 2, 3, 4, 5])
    phone.ok("entries", box="large_straight")
    phone.ok("throws", dice=[2, 2, 3, 3, 3])
    record = phone.client.get(f"/api/games/{table.service.game_id}/record?download=1")
    assert "attachment" in record.headers["Content-Disposition"]
    resp = phone.client.post("/api/games/import", json=record.json, headers=ORIGIN)
    assert resp.status_code == 201
    new_id = resp.json["imported"]
    assert resp.json["game"]["id"] == new_id  # unfinished: it goes on at the table
    assert phone.client.get(f"/api/games/{new_id}").json == to_json(loads(record.data.decode()))
    assert phone.ok("entries", box="full_house")["block"]["players"][1]["total"] == 25


def test_rename_this_phone(table: Table) -> None:
    phone = table.phone("x")
    resp = phone.client.post("/api/session/name", json={"name": "Küchenhandy"}, headers=ORIGIN)
    assert resp.json["phone"]["name"] == "Küchenhandy"
    phone.ok("throws", dice=[1, 2, 3, 4, 5])
    log = phone.client.get(f"/api/games/{table.service.game_id}/detail").json["log"]
    assert log[0]["by"] == "Küchenhandy"


# ---- live updates and the camera preview ----------------------------------------------


def pushed_after(client: Any, change: Callable[[], object]) -> tuple[float, dict[str, Any]]:
    """Opens /api/events, makes `change` and returns how many seconds later the next state
    arrived on the stream, and that state."""
    resp = client.get("/api/events", buffered=False)
    assert resp.mimetype == "text/event-stream"
    stream = iter(resp.response)
    assert next(stream).startswith(b"retry:")
    first = next(stream).decode()  # the state now
    assert first.startswith("event: state\ndata: ")
    received: list[tuple[float, dict[str, Any]]] = []

    def read() -> None:
        for chunk in stream:
            text = chunk.decode()
            if text.startswith("event: state"):
                received.append((time.monotonic(), json.loads(text.split("data: ", 1)[1])))
                return

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.05)
    sent = time.monotonic()
    change()
    reader.join(timeout=5)
    resp.close()
    assert received, "nothing was pushed"
    return received[0][0] - sent, received[0][1]


def test_event_stream_pushes_every_change_quickly(table: Table) -> None:
    phone = table.phone()
    seconds, state = pushed_after(phone.client, lambda: phone.ok("throws", dice=[1, 1, 2, 2, 3]))
    assert state["game"]["version"] == 1
    assert seconds < 0.1


def test_camera_preview_needs_a_session_and_streams_jpegs(tmp_path: Any) -> None:
    t = make_table(tmp_path)
    frame = b"\xff\xd8fake-jpeg\xff\xd9"
    from web.app import create_app

    app = create_app(t.service, t.secret, camera_jpeg=lambda: frame, mjpeg_seconds=0.3)
    client = app.test_client()
    assert client.get("/api/camera.mjpeg").status_code == 401
    client.post("/api/session", json={"pin": t.secret.pin}, headers=ORIGIN)
    resp = client.get("/api/camera.mjpeg")
    assert resp.status_code == 200 and resp.mimetype == "multipart/x-mixed-replace"
    assert frame in resp.data and b"--frame" in resp.data
    no_camera = t.app.test_client()
    no_camera.post("/api/session", json={"pin": t.secret.pin}, headers=ORIGIN)
    assert no_camera.get("/api/camera.mjpeg").status_code == 503
    t.store.close()


# ---- the API description --------------------------------------------------------------


def test_every_api_route_is_documented_and_nothing_else(table: Table) -> None:
    routes: set[tuple[str, str]] = set()
    for rule in table.app.url_map.iter_rules():
        if not rule.rule.startswith("/api"):
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            if "{change}" in path:
                routes |= {(path.replace("{change}", c), method.lower()) for c in CHANGES}
            else:
                routes.add((path, method.lower()))
    doc = spec()
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert routes == documented
    assert doc["openapi"].startswith("3.1")
    served = table.app.test_client().get("/api/openapi.json").json
    assert served == json.loads(json.dumps(doc))
