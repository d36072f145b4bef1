"""Scoring of every box and every edition's special rules, with the rule books' examples."""

from __future__ import annotations

import pytest

from game import Game, IllegalMoveError, MalformedError
from game.rules import pip_points
from tests.game.helpers import fill, points

# ---- the printed block (seeds 000, 001, 002) ---------------------------------------------


def test_dora_melanie_example_four_possibilities() -> None:
    # 000 (Dora) and 002 (Melanie): three fives and two threes.
    legal = points(Game.new("kniffel"), [5, 5, 5, 3, 3])
    assert legal["fives"] == 15
    assert legal["threes"] == 6
    assert legal["three_of_a_kind"] == 21
    assert legal["full_house"] == 25
    assert legal["chance"] == 21
    assert "four_of_a_kind" not in legal and "kniffel" not in legal


@pytest.mark.parametrize(
    ("box", "dice", "expected"),
    [
        ("three_of_a_kind", [6, 6, 6, 3, 1], 22),  # 000/001/002
        ("four_of_a_kind", [3, 3, 3, 3, 5], 17),
        ("full_house", [4, 4, 4, 3, 3], 25),
        ("small_straight", [1, 2, 3, 4, 3], 30),
        ("small_straight", [1, 2, 3, 4, 2], 30),
        ("large_straight", [2, 3, 4, 5, 6], 40),
        ("kniffel", [5, 5, 5, 5, 5], 50),
        ("twos", [2, 2, 2, 1, 5], 6),  # 001: three twos
        ("twos", [2, 2, 1, 5, 6], 4),  # 001: two twos
        ("fours", [4, 4, 4, 4, 1], 16),  # 001: more than printed on the card
        ("threes", [3, 3, 3, 3, 5], 12),  # 001: four of a kind in the upper part
        ("three_of_a_kind", [3, 3, 3, 3, 5], 17),  # 001: four of a kind as three
        ("three_of_a_kind", [4, 4, 4, 3, 3], 18),  # 001: full house as three of a kind
        ("fours", [4, 4, 4, 3, 3], 12),
        ("small_straight", [1, 2, 3, 4, 5], 30),  # large straight counts as small
        ("small_straight", [3, 4, 5, 6, 6], 30),
        ("chance", [1, 1, 2, 6, 6], 16),
    ],
)
def test_printed_block_examples(box: str, dice: list[int], expected: int) -> None:
    assert pip_points(box, dice) == expected


@pytest.mark.parametrize(
    ("box", "dice"),
    [
        ("full_house", [5, 5, 5, 5, 5]),  # two of *another* number
        ("full_house", [4, 4, 4, 4, 3]),
        ("small_straight", [1, 2, 3, 5, 6]),
        ("large_straight", [1, 2, 3, 4, 6]),
        ("three_of_a_kind", [1, 1, 2, 2, 3]),
        ("four_of_a_kind", [2, 2, 2, 3, 3]),
        ("kniffel", [6, 6, 6, 6, 5]),
        ("sixes", [1, 2, 3, 4, 5]),
    ],
)
def test_throws_that_do_not_fit(box: str, dice: list[int]) -> None:
    assert pip_points(box, dice) is None


def test_upper_bonus_at_63() -> None:
    game = Game.new("kniffel")
    fill(game, {"ones": [1, 1, 1, 2, 3], "twos": [2, 2, 2, 1, 3], "threes": [3, 3, 3, 1, 2],
                "fours": [4, 4, 4, 1, 2], "fives": [5, 5, 5, 1, 2], "sixes": [6, 6, 6, 1, 2]})
    totals = game.column_totals(game.state.players[0].columns[0])
    assert (totals.upper_sum, totals.bonus, totals.total) == (63, 35, 98)


def test_no_bonus_at_62() -> None:
    game = Game.new("kniffel")
    fill(game, {"ones": [1, 1, 2, 2, 3], "twos": [2, 2, 2, 1, 3], "threes": [3, 3, 3, 1, 2],
                "fours": [4, 4, 4, 1, 2], "fives": [5, 5, 5, 1, 2], "sixes": [6, 6, 6, 1, 2]})
    totals = game.column_totals(game.state.players[0].columns[0])
    assert (totals.upper_sum, totals.bonus) == (62, 0)


# ---- scratching -------------------------------------------------------------------------


def test_kniffel_scratches_only_when_nothing_fits() -> None:
    game = Game.new("kniffel")
    game.throw([1, 2, 3, 5, 6])
    option = {o.box: o for o in game.options()}
    assert option["full_house"].legal is False
    assert "scratched only" in (option["full_house"].reason or "")
    with pytest.raises(IllegalMoveError, match="not allowed"):
        game.enter("full_house")
    with pytest.raises(IllegalMoveError, match="may not be scratched"):
        game.enter("chance", scratch=True)


def test_kniffel_scratch_any_box_when_the_throw_fits_none() -> None:
    game = Game.new("kniffel")
    fill(game, {"chance": [6, 6, 5, 5, 4], "ones": [1, 1, 1, 2, 2], "fours": [4, 4, 4, 1, 1],
                "fives": [5, 5, 5, 1, 1], "sixes": [6, 6, 6, 1, 1], "threes": [3, 3, 1, 1, 1],
                "twos": [2, 2, 3, 3, 3]})
    # Free now: the lower part except chance. 2,2,3,4,6 fits none of them.
    game.throw([2, 2, 3, 4, 6])
    legal = {o.box: o.points for o in game.options() if o.legal}
    assert legal == {"three_of_a_kind": 0, "four_of_a_kind": 0, "full_house": 0,
                     "small_straight": 0, "large_straight": 0, "kniffel": 0}
    game.enter("kniffel")
    assert game.state.players[0].columns[0].boxes[11] == 0


@pytest.mark.parametrize("name", ["kniffel-championship", "kniffel-international",
                                  "kniffel-house"])
def test_scratch_any_box_any_time(name: str) -> None:
    game = Game.new(name)
    game.throw([6, 6, 6, 6, 5])
    option = {o.box: o for o in game.options()}
    assert option["large_straight"].legal and option["large_straight"].points == 0
    assert option["sixes"].can_scratch
    game.enter("sixes", scratch=True)
    assert game.state.players[0].columns[0].boxes[5] == 0


def test_kids_scratch_only_when_nothing_fits() -> None:
    game = Game.new("kids")
    game.throw(["duck", "lion", "mouse", "cat", "cat"])
    legal = {o.box for o in game.options() if o.legal}
    assert legal == {"duck", "lion", "mouse", "cat"}


# ---- a further Kniffel ------------------------------------------------------------------

FULL_LOWER_BUT_CHANCE = {"three_of_a_kind": [6, 6, 6, 1, 2], "four_of_a_kind": [5, 5, 5, 5, 1],
                         "full_house": [2, 2, 3, 3, 3], "small_straight": [1, 2, 3, 4, 6],
                         "large_straight": [2, 3, 4, 5, 6]}


def test_kniffel_edition_second_kniffel_is_a_joker_at_box_maximum_plus_50() -> None:
    game = Game.new("kniffel")
    fill(game, {"kniffel": [2, 2, 2, 2, 2]})
    legal = points(game, [2, 2, 2, 2, 2])
    assert legal == {"ones": 5, "twos": 10, "threes": 15, "fours": 20, "fives": 25,
                     "sixes": 30, "three_of_a_kind": 30, "four_of_a_kind": 30,
                     "full_house": 25, "small_straight": 30, "large_straight": 40,
                     "chance": 30}
    game.throw([2, 2, 2, 2, 2])
    game.enter("large_straight")
    totals = game.column_totals(game.state.players[0].columns[0])
    assert (totals.lower_sum, totals.extra_bonus, totals.total) == (90, 50, 140)


def test_kniffel_edition_no_joker_after_a_scratched_kniffel_box() -> None:
    game = Game.new("kniffel")
    fill(game, {"ones": [1, 1, 1, 2, 3], "twos": [2, 2, 1, 3, 4], "threes": [3, 3, 1, 2, 4],
                "fours": [4, 4, 1, 2, 3], "fives": [5, 5, 1, 2, 3], "sixes": [6, 6, 1, 2, 3],
                "chance": [6, 6, 5, 5, 4], "small_straight": [1, 2, 3, 4, 6],
                "three_of_a_kind": [1, 1, 1, 5, 6], "four_of_a_kind": [2, 2, 2, 2, 5]})
    game.throw([1, 1, 2, 3, 5])  # fits none of full house, large straight, kniffel
    game.enter("kniffel")
    assert points(game, [4, 4, 4, 4, 4]) == {}  # no joker: full house, straight don't fit
    game.throw([4, 4, 4, 4, 4])
    game.enter("full_house")
    col = game.state.players[0].columns[0]
    assert col.boxes[8] == 0 and col.extra_bonus == 0


@pytest.mark.parametrize(("name", "bonus"), [("kniffel-classic", 50),
                                             ("kniffel-international", 100)])
def test_older_editions_force_the_upper_box_first(name: str, bonus: int) -> None:
    game = Game.new(name)
    fill(game, {"kniffel": [5, 5, 5, 5, 5]})
    game.throw([5, 5, 5, 5, 5])
    legal = {o.box: o.points for o in game.options() if o.legal}
    assert legal == {"fives": 25}
    with pytest.raises(IllegalMoveError, match="must go into fives"):
        game.enter("chance")
    game.enter("fives")
    assert game.state.players[0].columns[0].extra_bonus == bonus


@pytest.mark.parametrize(("name", "bonus"), [("kniffel-classic", 0),
                                             ("kniffel-international", 100)])
def test_older_editions_joker_in_the_lower_part(name: str, bonus: int) -> None:
    # 001: Kniffel of fives with kniffel and fives filled: 25 in three/four of a kind or
    # chance, 25 full house, 30 small, 40 large straight. 000 gives no bonus for a joker.
    game = Game.new(name)
    fill(game, {"kniffel": [5, 5, 5, 5, 5], "fives": [5, 5, 1, 2, 3]})
    legal = points(game, [5, 5, 5, 5, 5])
    game.throw([5, 5, 5, 5, 5])
    assert legal == {"three_of_a_kind": 25, "four_of_a_kind": 25, "full_house": 25,
                     "small_straight": 30, "large_straight": 40, "chance": 25}
    game.enter("large_straight")
    col = game.state.players[0].columns[0]
    assert col.boxes[10] == 40 and col.extra_bonus == bonus


@pytest.mark.parametrize("name", ["kniffel-classic", "kniffel-international"])
def test_older_editions_joker_with_lower_part_full_scratches_upper(name: str) -> None:
    game = Game.new(name)
    fill(game, {"kniffel": [5, 5, 5, 5, 5], "fives": [5, 5, 1, 2, 3],
                "chance": [1, 1, 1, 1, 2], **FULL_LOWER_BUT_CHANCE})
    game.throw([5, 5, 5, 5, 5])
    legal = {o.box: o.points for o in game.options() if o.legal}
    assert legal == {"ones": 0, "twos": 0, "threes": 0, "fours": 0, "sixes": 0}


def test_classic_kniffel_box_is_scratched_only_when_nothing_fits() -> None:
    game = Game.new("kniffel-classic")
    game.throw([1, 2, 3, 5, 6])
    with pytest.raises(IllegalMoveError, match="scratched only"):
        game.enter("kniffel")


def test_international_upper_box_forced_after_a_scratched_kniffel_box_without_bonus() -> None:
    game = Game.new("kniffel-international")
    game.throw([1, 2, 3, 5, 6])
    game.enter("kniffel")  # does not fit: scratched (any box, any time)
    game.throw([3, 3, 3, 3, 3])
    assert {o.box for o in game.options() if o.legal} == {"threes"}
    game.enter("threes")
    assert game.state.players[0].columns[0].extra_bonus == 0


def test_house_further_kniffel_is_100_and_does_not_count_to_the_bonus() -> None:
    game = Game.new("kniffel-house")
    fill(game, {"kniffel": [4, 4, 4, 4, 4]})
    legal = points(game, [4, 4, 4, 4, 4])
    assert legal["fours"] == 120 and legal["ones"] == 100
    assert legal["full_house"] == 100 and legal["chance"] == 100
    game.throw([4, 4, 4, 4, 4])
    game.enter("fours")
    fill(game, {"ones": [1, 1, 1, 1, 1]})  # another Kniffel: 5 + 100 in ones
    col = game.state.players[0].columns[0]
    assert col.boxes[:6] == (105, None, None, 120, None, None)
    totals = game.column_totals(col)
    assert totals.upper_sum == 225 and totals.bonus == 0  # 25 without the hundreds


def test_house_kniffel_counts_as_full_house_while_kniffel_box_holds_no_kniffel() -> None:
    game = Game.new("kniffel-house")
    assert points(game, [6, 6, 6, 6, 6])["full_house"] == 25
    game.throw([1, 2, 3, 5, 6])
    game.enter("kniffel")  # scratched
    assert points(game, [6, 6, 6, 6, 6])["full_house"] == 25
    assert pip_points("full_house", [6, 6, 6, 6, 6]) is None  # not in other editions


# ---- variants ---------------------------------------------------------------------------


def test_scharf_doubles_lower_combinations_thrown_with_all_five() -> None:
    game = Game.new("kniffel", variants=["scharf"])
    legal = points(game, [2, 3, 4, 5, 6])  # first throw: always all five
    assert legal["large_straight"] == 80 and legal["small_straight"] == 60
    assert legal["chance"] == 20 and legal["sixes"] == 6  # not doubled
    game.throw([2, 3, 4, 1, 1])
    game.throw([2, 3, 4, 5, 6], held=[0, 1, 2])
    assert {o.box: o.points for o in game.options()}["large_straight"] == 40
    game.pop()
    game.throw([2, 3, 4, 5, 6], held=[])  # all five back in the cup
    assert {o.box: o.points for o in game.options()}["large_straight"] == 80
    game.pop()
    game.throw([2, 3, 4, 5, 6])  # unknown held dice: not scharf
    assert {o.box: o.points for o in game.options()}["large_straight"] == 40


def test_scharf_kniffel_is_100() -> None:
    game = Game.new("kniffel", variants=["scharf"])
    assert points(game, [3, 3, 3, 3, 3])["kniffel"] == 100
    assert points(game, [3, 3, 3, 3, 3])["four_of_a_kind"] == 30


def test_strict_order_fills_top_to_bottom() -> None:
    game = Game.new("kniffel", variants=["strict-order"])
    game.throw([6, 6, 6, 6, 6])
    option = {o.box: o for o in game.options()}
    assert [b for b, o in option.items() if o.legal] == ["ones"]
    assert option["ones"].points == 0
    assert "top to bottom" in (option["kniffel"].reason or "")
    game.enter("ones")  # a Kniffel before the kniffel box counts only for that box


def test_strict_order_kniffel_in_chance_after_the_kniffel_box() -> None:
    game = Game.new("kniffel-house", variants=["strict-order"])
    boxes = game.rules.boxes
    for box in boxes[:-2]:
        game.throw([1, 2, 3, 4, 6])
        game.enter(box)
    game.throw([2, 2, 2, 2, 2])
    game.enter("kniffel")
    game.throw([5, 5, 5, 5, 5])
    assert {o.box: o.points for o in game.options() if o.legal} == {"chance": 100}


def test_columns_down_up_free() -> None:
    game = Game.new("kniffel", columns=["down", "up", "free"])
    game.throw([1, 1, 2, 3, 4])
    legal = {(o.column, o.box): o.points for o in game.options() if o.legal}
    assert ("down", "ones") in legal and ("up", "chance") in legal
    assert ("down", "twos") not in legal and ("up", "kniffel") not in legal
    assert ("free", "small_straight") in legal
    with pytest.raises(IllegalMoveError, match="name the column"):
        game.enter("chance")
    game.enter("chance", column="up")
    assert game.state.players[0].columns[1].boxes[-1] == 11


def test_announce_column() -> None:
    game = Game.new("kniffel", columns=["announce", "free"])
    game.throw([6, 6, 6, 1, 2])
    # Without an announcement the announce column cannot be scored.
    assert not any(o.legal and o.column == "announce" for o in game.options())
    game.announce("kniffel")
    game.throw([6, 6, 6, 6, 2], held=[0, 1, 2])
    game.throw([6, 6, 6, 6, 5], held=[0, 1, 2, 3])
    legal = {(o.column, o.box): o.points for o in game.options() if o.legal}
    # Score the announced box (0: it does not fit) or scratch any box of any column.
    assert legal[("announce", "kniffel")] == 0
    assert ("free", "sixes") not in legal  # fits, so only a scratch is possible there
    assert {o.box for o in game.options() if o.can_scratch and o.column == "free"} >= {
        "sixes", "chance", "four_of_a_kind"}
    game.enter("sixes", column="free", scratch=True)
    assert game.state.players[0].columns[1].boxes[5] == 0


def test_announce_only_right_after_the_first_throw() -> None:
    game = Game.new("kniffel", columns=["announce", "free"])
    with pytest.raises(IllegalMoveError, match="right after the first throw"):
        game.announce("chance")
    game.throw([1, 2, 3, 4, 5])
    game.throw([1, 2, 3, 4, 6], held=[0, 1, 2, 3])
    with pytest.raises(IllegalMoveError, match="right after the first throw"):
        game.announce("chance")
    with pytest.raises(IllegalMoveError, match="no announce column"):
        Game.new("kniffel").announce("chance")


def test_announced_box_scores() -> None:
    game = Game.new("kniffel", columns=["announce", "free"])
    game.throw([2, 3, 4, 5, 1])
    game.announce("large_straight")
    game.enter("large_straight", column="announce")
    assert game.state.players[0].columns[0].boxes[10] == 40


def test_columns_each_have_their_own_bonus_and_total() -> None:
    game = Game.new("kniffel", columns=["down", "free"])
    for box in ["ones", "twos", "threes", "fours", "fives", "sixes"]:
        face = ["ones", "twos", "threes", "fours", "fives", "sixes"].index(box) + 1
        game.throw([face] * 4 + [1 if face != 1 else 2])
        game.enter(box, column="down")
    down = game.column_totals(game.state.players[0].columns[0])
    free = game.column_totals(game.state.players[0].columns[1])
    assert down.bonus == 35 and free.bonus == 0
    assert game.total(game.state.players[0]) == down.total + free.total


# ---- Kniffel Kids (seed 004) ------------------------------------------------------------


def test_kids_examples() -> None:
    game = Game.new("kids", players=["Mia", "Leo"])
    assert points(game, ["duck", "duck", "duck", "dog", "cat"])["duck"] == 3
    assert points(game, ["lion", "lion", "lion", "dog", "cat"])["three_of_a_kind"] == 2
    assert points(game, ["cat", "cat", "dog", "dog", "duck"])["two_pairs"] == 3
    full = points(game, ["mouse", "mouse", "mouse", "dog", "dog"])
    assert full["full_house"] == 4 and full["two_pairs"] == 3 and full["three_of_a_kind"] == 2
    assert points(game, ["duck", "lion", "mouse", "cat", "dog"])["all_different"] == 5
    five = points(game, ["elephant"] * 5)
    assert five["kniffel"] == 10 and five["elephant"] == 5 and "full_house" not in five
    assert "two_pairs" not in five
    assert "two_pairs" not in points(game, ["cat", "cat", "cat", "cat", "dog"])


def test_kids_block_has_eleven_boxes_and_no_bonus() -> None:
    game = Game.new("kids")
    assert len(game.rules.boxes) == 11
    throws = {"three_of_a_kind": ["cat"] * 3 + ["dog", "duck"],
              "two_pairs": ["cat", "cat", "dog", "dog", "duck"],
              "full_house": ["cat"] * 3 + ["dog"] * 2,
              "all_different": ["duck", "lion", "mouse", "cat", "dog"],
              "kniffel": ["lion"] * 5}
    for box in game.rules.boxes:
        game.throw(throws.get(box, [box] * 5))
        game.enter(box)
    totals = game.column_totals(game.state.players[0].columns[0])
    assert game.finished
    assert (totals.upper_sum, totals.bonus, totals.lower_sum) == (30, 0, 24)


def test_kids_faces_and_players() -> None:
    with pytest.raises(MalformedError, match="not a face"):
        Game.new("kids").throw([1, 2, 3, 4, 5])
    with pytest.raises(MalformedError, match="not a face"):
        Game.new("kniffel").throw(["duck", 2, 3, 4, 5])
    with pytest.raises(MalformedError, match="1 to 6 players"):
        Game.new("kids", players=[f"P{i}" for i in range(7)])
    Game.new("kniffel", players=[f"P{i}" for i in range(8)])
    with pytest.raises(MalformedError, match="without variants"):
        Game.new("kids", variants=["scharf"])


def test_strict_order_seed_003_examples() -> None:
    """003: "Wenn man einen Kniffel in einem Dreierpasch bekommt, zählt man auch nur als
    Dreierpasch (z. B. mit Sechsen 30 Punkte) ... Ein Kniffel in Full-House zählt als
    Full-House." (house rules, strict order)"""
    game = Game.new("kniffel-house", variants=["strict-order"])
    for box in game.rules.ruleset.upper:
        game.throw([1, 2, 3, 4, 6])
        game.enter(box)
    game.throw([6, 6, 6, 6, 6])
    assert {o.box: o.points for o in game.options() if o.legal} == {"three_of_a_kind": 30}
    game.enter("three_of_a_kind")
    game.throw([1, 2, 3, 4, 6])
    game.enter("four_of_a_kind")
    game.throw([2, 2, 2, 2, 2])
    assert {o.box: o.points for o in game.options() if o.legal} == {"full_house": 25}
    game.enter("full_house")
    col = game.state.players[0].columns[0]
    assert col.extra_bonus == 0 and col.boxes[6:9] == (30, 0, 25)
