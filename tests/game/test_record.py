"""kniffel-record/1: replay, every record error with its turn, and `kniffel replay`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from game import RecordError, loads, replay, to_json, to_record
from web.cli import main

EXAMPLE: dict[str, Any] = {
    "format": "kniffel-record/1", "rules": "kniffel", "variants": ["scharf"],
    "columns": ["down", "up", "announce", "free"],
    "players": ["Anna", "Ben"],
    "turns": [
        {"player": "Anna", "throws": [[2, 3, 4, 1, 1],
                                      {"dice": [2, 3, 4, 5, 6], "held": [0, 1, 2]}],
         "box": "large_straight", "column": "free"},
        {"player": "Ben", "throws": [[6, 6, 6, 6, 6]], "box": "chance", "scratch": False,
         "announce": None, "column": "up"},
    ],
}


def record(turns: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"format": "kniffel-record/1", "rules": "kniffel", "players": ["Anna", "Ben"],
            "turns": turns, **top}


def test_example_record_replays() -> None:
    game = replay(EXAMPLE)
    sheet = to_json(game)
    anna, ben = sheet["players"]
    assert anna["columns"][3]["boxes"]["large_straight"] == 40  # held dice: not scharf
    assert ben["columns"][1]["boxes"]["chance"] == 30
    assert (anna["total"], ben["total"], sheet["finished"], sheet["winners"]) == (40, 30,
                                                                                  False, [])


def test_the_readme_example_replays_as_the_readme_says() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Game records", 1)[1]
    block = section.split("```json", 1)[1].split("```", 1)[0]
    anna, ben = to_json(replay(json.loads(block)))["players"]
    assert (anna["total"], ben["total"]) == (40, 100)  # the sentence below the example


def test_round_trip_keeps_every_move() -> None:
    game = replay(EXAMPLE)
    again = replay(to_record(game))
    assert again.state == game.state and again.move_stack == game.move_stack


def test_last_turn_may_be_unfinished() -> None:
    game = replay(record([{"player": "Anna", "throws": [[1, 2, 3, 4, 5]]}]))
    assert len(game.throws) == 1
    assert replay(to_record(game)).state == game.state


A = "Anna"
B = "Ben"
T1 = {"player": A, "throws": [[1, 2, 3, 4, 5]], "box": "large_straight"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (record([], rules="yatzy"), "unknown ruleset 'yatzy'"),
        (record([], variants=["spicy"]), "unknown variant 'spicy'"),
        (record([], format="kniffel-record/2"), "format must be"),
        (record([], players=[f"P{i}" for i in range(9)]), "1 to 8 players, not 9"),
        (record([], players=["Anna", "Anna"]), "same name"),
        (record([], rules="kids", players=list("ABCDEFG")), "1 to 6 players, not 7"),
        (record([], extra=1), "unknown field 'extra'"),
        ([1, 2], "a record is a JSON object"),
    ],
)
def test_record_errors_before_any_turn(data: Any, message: str) -> None:
    with pytest.raises(RecordError, match=message) as info:
        replay(data)
    assert info.value.turn is None


@pytest.mark.parametrize(
    ("turns", "turn", "message"),
    [
        ([{**T1, "box": "sevens"}], 1, "unknown box 'sevens'"),
        ([{**T1, "throws": [[1, 2, 3, 4, 7]]}], 1, "die value 7"),
        ([{**T1, "throws": [["duck", 2, 3, 4, 5]]}], 1, "die value 'duck'"),
        ([{**T1, "throws": [[1, 2, 3, 4]]}], 1, "5 dice, not 4"),
        ([{**T1, "throws": [[1, 2, 3, 4, 5]] * 4}], 1, "4 throws: a turn has at most 3"),
        ([T1, {"player": B, "throws": [[6, 6, 1, 2, 3], {"dice": [5, 6, 1, 1, 1],
                                                         "held": [0, 1]}],
               "box": "chance"}], 2, "held die 1 changed from 6 to 5"),
        ([T1, {**T1, "player": B}, {**T1, "throws": [[2, 3, 4, 5, 6]]}], 3,
         "large_straight is already filled"),
        ([T1, T1], 2, "it is Ben's turn, not 'Anna''s"),
        ([T1, {**T1, "player": B, "box": "full_house"}], 2, "full_house is not allowed now"),
        ([{**T1, "scratch": True}], 1, "may not be scratched"),
        ([{**T1, "scratch": "yes"}], 1, "scratch must be true or false"),
        ([{"player": A, "throws": [[1, 2, 3, 4, 5]]}, T1], 1, "box is missing"),
        ([{**T1, "throws": "12345"}], 1, "throws must be a non-empty list"),
        ([{**T1, "throws": [{"dice": [1, 2, 3, 4, 5], "held": [7]}]}], 1,
         "throw 1: held index 7"),
        ([{**T1, "announce": "chance"}], 1, "no announce column"),
        ([{**T1, "when": "now"}], 1, "unknown field 'when'"),
    ],
)
def test_record_errors_name_the_turn(turns: list[Any], turn: int, message: str) -> None:
    with pytest.raises(RecordError, match=message) as info:
        replay(record(turns))
    assert info.value.turn == turn
    assert str(info.value).startswith(f"turn {turn}: ")


def test_too_many_turns() -> None:
    turns = []
    game_dice = [1, 2, 3, 4, 5]
    data = record([], players=["Solo"])
    game = replay(data)
    for _ in range(13):
        game.throw(game_dice)
        option = next(o for o in game.options() if o.legal)
        game.enter(option.box)
    turns = to_record(game)["turns"]
    turns.append({"player": "Solo", "throws": [game_dice], "box": "chance"})
    with pytest.raises(RecordError, match="turn 14: the game is already over"):
        replay(record(turns, players=["Solo"]))


def test_bad_json() -> None:
    with pytest.raises(RecordError, match="not valid JSON"):
        loads("{\"format\": ")


def test_replay_cli_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "game.json"
    path.write_text(json.dumps(EXAMPLE))
    assert main(["replay", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Große Straße" in text and "Endsumme" in text and "Anna (frei)" in text
    assert main(["replay", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rules"] == "kniffel" and out["variants"] == ["scharf"]
    assert [p["total"] for p in out["players"]] == [40, 30]
    column = out["players"][0]["columns"][0]
    assert set(column) == {"name", "boxes", "upper_sum", "bonus", "lower_sum",
                           "extra_bonus", "total"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON: nested too deeply"),
        (json.dumps(record([{**T1, "throws": [[7, 1, 1, 1, 1]]}])), "turn 1: die value 7"),
    ],
)
def test_replay_cli_errors_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = subprocess.run([sys.executable, "-m", "web.cli", "replay", str(path)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def test_replay_cli_missing_file() -> None:
    result = subprocess.run([sys.executable, "-m", "web.cli", "replay", "/nonexistent.json"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == "kniffel replay: /nonexistent.json: no such file"
