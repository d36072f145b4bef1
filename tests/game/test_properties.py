"""Property tests: random legal games of every ruleset, variant and column set.

Each game is played to the end by a random player that only chooses legal moves. Checked
after every move: nothing crashes, every total is the sum of its parts, pop() restores the
exact previous state, and the record replays to the same game.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from game import RULESETS, Game, replay, to_json, to_record
from game.core import Throw

KNIFFEL_RULESETS = sorted(n for n in RULESETS if n != "kids")


def random_game(game: Game, rng: random.Random, check_undo_every: int = 1) -> Game:
    faces = game.rules.ruleset.faces
    if rng.random() < 0.3:
        # Dice heavy on one face make Kniffels, jokers and bonuses common.
        faces = faces[:2] * 4 + faces
    step = 0
    while not game.finished:
        throws = rng.randint(1, 3)
        dice = [rng.choice(faces) for _ in range(5)]
        game.throw(dice)
        if "announce" in game.rules.columns and rng.random() < 0.5:
            free = [o.box for o in game.options() if o.column == "announce"]
            if free:
                game.announce(rng.choice(free))
        for _ in range(throws - 1):
            held = sorted(rng.sample(range(5), rng.randint(0, 4)))
            dice = [dice[i] if i in held else rng.choice(faces) for i in range(5)]
            game.push(Throw.of(dice, held if rng.random() < 0.8 else None))
        options = game.options()
        legal = [o for o in options if o.legal]
        scratchable = [o for o in options if o.can_scratch]
        assert legal or scratchable, f"no legal move in {game!r}: {options}"
        before = game.state
        if scratchable and (not legal or rng.random() < 0.1):
            option = rng.choice(scratchable)
            game.enter(option.box, option.column, scratch=True)
            assert _box(game, before, option.column, option.box) == 0
        else:
            option = rng.choice(legal)
            game.enter(option.box, option.column)
            assert _box(game, before, option.column, option.box) == option.points
        step += 1
        if step % check_undo_every == 0:
            after = game.state
            move = game.pop()
            assert game.state == before
            game.push(move)
            assert game.state == after
        check_sums(game)
    return game


def _box(game: Game, before: object, column: str, box: str) -> int | None:
    player = game.state.players[(game.state.turn.player - 1) % len(game.players)]
    col = next(c for c in player.columns if c.name == column)
    return col.boxes[game.rules.boxes.index(box)]


def check_sums(game: Game) -> None:
    sheet = to_json(game)
    n_upper = len(game.rules.ruleset.upper)
    for player in sheet["players"]:
        assert player["total"] == sum(c["total"] for c in player["columns"])
        for column in player["columns"]:
            values = [v or 0 for v in column["boxes"].values()]
            assert column["upper_sum"] == sum(values[:n_upper])
            assert column["lower_sum"] == sum(values[n_upper:])
            assert column["bonus"] in (0, 35)
            assert column["total"] == (column["upper_sum"] + column["bonus"]
                                       + column["lower_sum"] + column["extra_bonus"])
            assert all(v >= 0 for v in values)
    if game.finished:
        best = max(p["total"] for p in sheet["players"])
        assert sheet["winners"] == [p["name"] for p in sheet["players"] if p["total"] == best]


def finish_and_unwind(game: Game, seed: int) -> None:
    start = game.state
    random_game(game, random.Random(seed))
    assert game.finished
    assert len([m for m in game.move_stack if type(m).__name__ == "Entry"]) == (
        len(game.players) * len(game.rules.columns) * len(game.rules.boxes))
    assert replay(to_record(game)).state == game.state
    while game.move_stack:
        game.pop()
    assert game.state == start


@pytest.mark.parametrize("name", sorted(RULESETS))
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 3), scharf=st.booleans())
def test_two_thousand_random_games_per_ruleset(name: str, seed: int, players: int,
                                             scharf: bool) -> None:
    variants = ["scharf"] if scharf and name != "kids" else []
    game = Game.new(name, [f"P{i}" for i in range(players)], variants=variants)
    finish_and_unwind(game, seed)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(KNIFFEL_RULESETS), seed=st.integers(0, 2**32 - 1),
       variants=st.sets(st.sampled_from(["scharf", "strict-order"])),
       columns=st.lists(st.sampled_from(["down", "up", "announce", "free"]), min_size=1,
                        max_size=4, unique=True))
def test_random_games_with_variants_and_columns(name: str, seed: int, variants: set[str],
                                                columns: list[str]) -> None:
    game = Game.new(name, ["A", "B"], variants=sorted(variants), columns=columns)
    finish_and_unwind(game, seed)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(RULESETS)), seed=st.integers(0, 2**32 - 1))
def test_undo_all_the_way_from_any_point(name: str, seed: int) -> None:
    rng = random.Random(seed)
    game = Game.new(name, ["A", "B"])
    random_game(game, rng, check_undo_every=10**9)
    states = []
    replayed = Game.new(name, ["A", "B"])
    for move in game.move_stack:
        states.append(replayed.state)
        replayed.push(move)
    for expected in reversed(states):
        game.pop()
        assert game.state == expected
