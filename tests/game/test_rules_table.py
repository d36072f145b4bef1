"""Issue 2's rules, row by row: the ruleset ids, each cell of the rulesets table, Kniffel Kids
and every variant. Cells that test_scoring.py already shows are not repeated here; the
docstring of each test names the cell it shows."""

from __future__ import annotations

import pytest

from game import RULESETS, Game, IllegalMoveError, MalformedError, ruleset
from tests.game.helpers import fill, points

KNIFFEL_BOXES = ("ones", "twos", "threes", "fours", "fives", "sixes", "three_of_a_kind",
                 "four_of_a_kind", "full_house", "small_straight", "large_straight",
                 "kniffel", "chance")
KIDS_BOXES = ("duck", "lion", "mouse", "cat", "dog", "elephant", "three_of_a_kind",
              "two_pairs", "full_house", "all_different", "kniffel")
KNIFFEL_RULESETS = ["kniffel", "kniffel-championship", "kniffel-classic",
                    "kniffel-international", "kniffel-house"]

# ---- the ids and the block ----------------------------------------------------------------


def test_ruleset_ids_and_their_seeds() -> None:
    """The ids are part of the public interface; each names the seed it comes from."""
    assert {name: ruleset(name).source for name in RULESETS} == {
        "kniffel": "002", "kniffel-championship": "002", "kniffel-classic": "000",
        "kniffel-international": "001", "kniffel-house": "003", "kids": "004"}
    with pytest.raises(MalformedError, match="unknown ruleset 'yahtzee'"):
        ruleset("yahtzee")


@pytest.mark.parametrize("name", KNIFFEL_RULESETS)
def test_kniffel_boxes_in_block_order(name: str) -> None:
    """Boxes of the Kniffel editions in block order; upper bonus 35 at >= 63; 1-8 players."""
    rs = ruleset(name)
    assert rs.boxes == KNIFFEL_BOXES
    assert (rs.upper_bonus_threshold, rs.upper_bonus) == (63, 35)
    assert (rs.min_players, rs.max_players) == (1, 8)
    with pytest.raises(MalformedError, match="1 to 8 players, not 9"):
        Game.new(name, players=[f"P{i}" for i in range(9)])


def test_kids_boxes_faces_and_players() -> None:
    """kids: 11 boxes in this order, dice values are the animal names, 1-6 players."""
    rs = ruleset("kids")
    assert rs.boxes == KIDS_BOXES
    assert rs.faces == ("duck", "lion", "mouse", "cat", "dog", "elephant")
    Game.new("kids", players=["Solo"])
    Game.new("kids", players=[f"P{i}" for i in range(6)])
    with pytest.raises(MalformedError, match="1 to 6 players, not 0"):
        Game.new("kids", players=[])


@pytest.mark.parametrize("name", KNIFFEL_RULESETS)
def test_scores_as_in_the_books_sum_sum_25_30_40_50_sum(name: str) -> None:
    """Scores: three/four of a kind the sum, full house 25, small 30, large 40, Kniffel 50,
    chance the sum; four of a kind also counts as three of a kind, a large straight as a
    small one; a full house needs two of *another* number."""
    game = Game.new(name)
    assert points(game, [2, 2, 2, 2, 6])["three_of_a_kind"] == 14
    assert points(game, [2, 2, 2, 2, 6])["four_of_a_kind"] == 14
    assert points(game, [1, 2, 3, 4, 5])["small_straight"] == 30
    assert points(game, [1, 2, 3, 4, 5])["large_straight"] == 40
    assert points(game, [3, 3, 6, 6, 6])["full_house"] == 25
    assert points(game, [1, 1, 1, 1, 1])["kniffel"] == 50
    assert points(game, [1, 1, 2, 5, 6])["chance"] == 15
    assert "full_house" not in points(game, [3, 3, 3, 3, 6])


# ---- kniffel (002) -------------------------------------------------------------------------


def test_kniffel_an_upper_box_fits_when_one_die_shows_its_number() -> None:
    """kniffel: scratching only when the throw fits no free box -- an upper box fits when
    >= 1 die shows its number (here: ones and sixes free; a single 1 makes ones fit)."""
    game = Game.new("kniffel")
    fill(game, {"twos": [2, 2, 1, 1, 1], "threes": [3, 3, 1, 1, 1], "fours": [4, 4, 1, 1, 1],
                "fives": [5, 5, 1, 1, 1], "three_of_a_kind": [1, 1, 1, 2, 3],
                "four_of_a_kind": [1, 1, 1, 1, 3], "full_house": [1, 1, 1, 2, 2],
                "small_straight": [1, 2, 3, 4, 1], "large_straight": [1, 2, 3, 4, 5],
                "kniffel": [1, 1, 1, 1, 1], "chance": [1, 1, 2, 2, 3]})
    assert {(o.box, o.points) for o in _options(game, [1, 2, 3, 4, 5]) if o.legal} == {
        ("ones", 1)}
    # No 1 and no 6: nothing fits, so either may be scratched.
    assert {(o.box, o.points) for o in _options(game, [2, 3, 4, 5, 5]) if o.legal} == {
        ("ones", 0), ("sixes", 0)}


def test_kniffel_chance_always_fits_so_nothing_is_scratched_while_it_is_free() -> None:
    """kniffel: chance always fits."""
    game = Game.new("kniffel")
    fill(game, {"ones": [1, 2, 3, 4, 6], "twos": [2, 1, 3, 4, 6]})
    options = _options(game, [3, 3, 4, 5, 5])
    assert next(o for o in options if o.box == "chance").legal
    assert not any(o.legal for o in options if o.box in ("full_house", "kniffel"))


# ---- kniffel-championship (002) ------------------------------------------------------------


def test_championship_no_extra_bonus_after_a_scratched_kniffel_box() -> None:
    """kniffel-championship: +50 only when the kniffel box holds 50."""
    game = Game.new("kniffel-championship")
    game.throw([6, 6, 6, 6, 6])
    game.enter("kniffel", scratch=True)
    game.throw([4, 4, 4, 4, 4])
    options = game.options()
    assert all(o.extra_bonus == 0 for o in options)
    assert {o.box: o.points for o in options if o.fits} == {
        "fours": 20, "three_of_a_kind": 20, "four_of_a_kind": 20, "chance": 20}
    game.enter("fours")
    assert game.state.players[0].columns[0].extra_bonus == 0


# ---- kniffel-classic (000) and kniffel-international (001) -------------------------------


def test_classic_upper_box_forced_after_a_scratched_kniffel_box_without_bonus() -> None:
    """kniffel-classic: kniffel box filled (here 0) and the upper box free -> it must go
    there; the +50 only when the kniffel box holds 50."""
    game = Game.new("kniffel-classic")
    fill(game, {"chance": [1, 2, 4, 5, 6], "ones": [1, 2, 4, 5, 6], "twos": [1, 2, 4, 5, 6],
                "fours": [1, 2, 4, 5, 6], "fives": [1, 2, 4, 5, 6], "sixes": [1, 2, 4, 5, 6],
                "small_straight": [1, 2, 3, 4, 6]})
    game.throw([1, 2, 4, 5, 6])  # fits none of the free lower boxes nor threes
    game.enter("kniffel")
    game.throw([3, 3, 3, 3, 3])
    assert {o.box: o.points for o in game.options() if o.legal} == {"threes": 15}
    game.enter("threes")
    assert game.state.players[0].columns[0].extra_bonus == 0


@pytest.mark.parametrize("name", ["kniffel-classic", "kniffel-international"])
def test_older_editions_joker_after_a_scratched_kniffel_box_at_full_value_no_bonus(
        name: str) -> None:
    """classic/international: kniffel box *filled* (0 counts) and the upper box filled ->
    joker for any free lower box at full value, no extra bonus (that needs a 50)."""
    game = Game.new(name)
    fill(game, {"chance": [1, 2, 4, 5, 6], "ones": [1, 2, 4, 5, 6], "twos": [1, 2, 4, 5, 6],
                "fours": [1, 2, 4, 5, 6], "fives": [1, 2, 4, 5, 6], "sixes": [1, 2, 4, 5, 6],
                "small_straight": [1, 2, 3, 4, 6]})
    game.throw([1, 2, 4, 5, 6])  # fits none of the free boxes: the kniffel box takes a 0
    game.enter("kniffel")
    fill(game, {"threes": [3, 1, 2, 5, 6]})
    game.throw([3, 3, 3, 3, 3])
    fitting = {o.box: o.points for o in game.options() if o.legal and o.fits}
    assert fitting == {"three_of_a_kind": 15, "four_of_a_kind": 15, "full_house": 25,
                       "large_straight": 40}
    assert all(o.extra_bonus == 0 for o in game.options())


def test_classic_joker_lower_part_only_upper_boxes_other_than_its_own_do_not_fit() -> None:
    """kniffel-classic: the joker is for the *lower* part; while a lower box is free the
    other upper boxes are not open (scratching only when nothing fits)."""
    game = Game.new("kniffel-classic")
    fill(game, {"kniffel": [2, 2, 2, 2, 2], "twos": [2, 2, 1, 3, 4]})
    game.throw([2, 2, 2, 2, 2])
    legal = {o.box for o in game.options() if o.legal}
    assert legal == {"three_of_a_kind", "four_of_a_kind", "full_house", "small_straight",
                     "large_straight", "chance"}


def test_international_joker_may_also_scratch_an_upper_box() -> None:
    """kniffel-international: any box any time, also for a joker throw (docs/rules.md)."""
    game = Game.new("kniffel-international")
    fill(game, {"kniffel": [2, 2, 2, 2, 2], "twos": [2, 2, 1, 3, 4]})
    game.throw([2, 2, 2, 2, 2])
    game.enter("sixes")
    col = game.state.players[0].columns[0]
    assert col.boxes[5] == 0 and col.extra_bonus == 100


# ---- kniffel-house (003) -------------------------------------------------------------------


def test_house_further_kniffel_has_no_extra_bonus_line() -> None:
    """kniffel-house: the 100 goes into the box, not onto the back of the block."""
    game = Game.new("kniffel-house")
    fill(game, {"kniffel": [4, 4, 4, 4, 4], "chance": [4, 4, 4, 4, 4]})
    col = game.state.players[0].columns[0]
    assert col.boxes[12] == 100 and col.extra_bonus == 0
    assert game.total(game.state.players[0]) == 150


def test_house_kniffel_is_no_full_house_once_the_kniffel_box_holds_50() -> None:
    """kniffel-house: a Kniffel counts as a full house *whenever the kniffel box does not
    hold 50*; once it does, a further Kniffel is 100 there (not 25)."""
    game = Game.new("kniffel-house")
    fill(game, {"kniffel": [4, 4, 4, 4, 4]})
    assert points(game, [2, 2, 2, 2, 2])["full_house"] == 100


# ---- kids (004) ----------------------------------------------------------------------------


def test_kids_a_second_kniffel_has_no_special_rule() -> None:
    """kids: '--' in the further-Kniffel column: it scores as any throw, no bonus, no
    joker (it does not fit two pairs, three + two or five different)."""
    game = Game.new("kids")
    fill(game, {"kniffel": ["cat"] * 5})
    game.throw(["cat"] * 5)
    options = {o.box: o for o in game.options()}
    assert {b: o.points for b, o in options.items() if o.legal} == {
        "cat": 5, "three_of_a_kind": 2}
    assert all(o.extra_bonus == 0 for o in options.values())


def test_kids_two_pairs_need_two_different_animals() -> None:
    """kids: two pairs = two different animals at least twice each (four alike is not)."""
    game = Game.new("kids")
    assert "two_pairs" not in points(game, ["dog"] * 4 + ["cat"])
    assert points(game, ["dog", "dog", "cat", "cat", "cat"])["two_pairs"] == 3


def test_kids_scratches_only_when_nothing_fits() -> None:
    """kids: scratching 'as kniffel' -- never while a box fits, no scratch=True."""
    game = Game.new("kids")
    game.throw(["duck", "duck", "lion", "mouse", "cat"])
    with pytest.raises(IllegalMoveError, match="scratched only"):
        game.enter("kniffel")
    with pytest.raises(IllegalMoveError, match="may not be scratched"):
        game.enter("duck", scratch=True)


# ---- variants ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KNIFFEL_RULESETS)
def test_every_variant_combines_with_every_kniffel_ruleset(name: str) -> None:
    """Variants and columns combine with the Kniffel rulesets (not with kids)."""
    game = Game.new(name, variants=["scharf", "strict-order"],
                    columns=["down", "up", "announce", "free"])
    assert game.rules.variants == ("scharf", "strict-order")
    game.throw([1, 1, 1, 1, 1])
    legal = {(o.column, o.box): o.points for o in game.options() if o.legal and o.fits}
    assert legal[("down", "ones")] == 5
    assert legal[("free", "ones")] == 5  # strict-order: free behaves like down
    assert ("free", "kniffel") not in legal
    game.enter("ones", column="free")
    for columns in (["down"], ["announce"]):
        with pytest.raises(MalformedError, match="without variants or columns"):
            Game.new("kids", columns=columns)


@pytest.mark.parametrize(("box", "dice", "normal"), [
    ("three_of_a_kind", [5, 5, 5, 1, 2], 18),
    ("four_of_a_kind", [5, 5, 5, 5, 2], 22),
    ("full_house", [5, 5, 5, 2, 2], 25),
    ("small_straight", [1, 2, 3, 4, 6], 30),
    ("large_straight", [2, 3, 4, 5, 6], 40),
    ("kniffel", [4, 4, 4, 4, 4], 50),
])
@pytest.mark.parametrize("name", KNIFFEL_RULESETS)
def test_scharf_doubles_each_lower_combination_in_every_ruleset(
        name: str, box: str, dice: list[int], normal: int) -> None:
    """scharf: three/four of a kind, full house, straights and Kniffel score double."""
    assert points(Game.new(name, variants=["scharf"]), dice)[box] == 2 * normal
    assert points(Game.new(name), dice)[box] == normal


@pytest.mark.parametrize("name", KNIFFEL_RULESETS)
def test_scharf_never_doubles_chance_or_the_upper_part(name: str) -> None:
    """scharf: only the lower combinations; chance and the upper boxes are not doubled."""
    legal = points(Game.new(name, variants=["scharf"]), [6, 6, 6, 6, 5])
    assert (legal["sixes"], legal["fives"], legal["chance"]) == (24, 5, 29)


def test_scharf_a_plain_list_after_the_first_throw_is_not_all_five() -> None:
    """scharf: the first throw always is all five; a later throw only with held = []."""
    game = Game.new("kniffel", variants=["scharf"])
    game.throw([1, 1, 1, 2, 3])
    game.throw([1, 1, 1, 1, 1])
    assert {o.box: o.points for o in game.options()}["kniffel"] == 50
    game.pop()
    game.throw([1, 1, 1, 1, 1], held=[])
    assert {o.box: o.points for o in game.options()}["kniffel"] == 100


def test_scharf_joker_box_value_doubled_extra_bonus_not() -> None:
    """scharf with kniffel: the joker's box maximum is doubled in a lower box; the +50 is
    not a box and stays 50 (docs/rules.md)."""
    game = Game.new("kniffel", variants=["scharf"])
    fill(game, {"kniffel": [3, 3, 3, 3, 3]})
    game.throw([3, 3, 3, 3, 3])
    options = {o.box: o for o in game.options()}
    assert options["large_straight"].points == 80 and options["chance"].points == 30
    assert options["threes"].points == 15 and options["large_straight"].extra_bonus == 50


def test_strict_order_kniffel_rule_of_the_ruleset_applies_to_chance_after_the_kniffel_box(
) -> None:
    """strict-order with kniffel: after the kniffel box only chance is left; a further
    Kniffel is the joker there (30 + 50)."""
    game = Game.new("kniffel", variants=["strict-order"])
    for box in game.rules.boxes[:-2]:
        game.throw([1, 2, 3, 4, 6])
        game.enter(box)
    game.throw([2, 2, 2, 2, 2])
    game.enter("kniffel")
    game.throw([1, 1, 1, 1, 1])
    assert [(o.box, o.points, o.extra_bonus) for o in game.options() if o.legal] == [
        ("chance", 30, 50)]


@pytest.mark.parametrize("name", ["kniffel-classic", "kniffel-international"])
def test_strict_order_beats_the_forced_upper_box(name: str) -> None:
    """strict-order: a Kniffel thrown before the kniffel box counts only for the box being
    filled -- no forced upper box, no bonus."""
    game = Game.new(name, variants=["strict-order"])
    game.throw([4, 4, 4, 4, 4])
    assert [(o.box, o.points) for o in game.options() if o.legal] == [("ones", 0)]
    game.enter("ones")
    assert game.state.players[0].columns[0].extra_bonus == 0


def test_up_column_fills_bottom_to_top() -> None:
    """columns: up -- chance first, then kniffel, ... ones last."""
    game = Game.new("kniffel", columns=["up"])
    for box in reversed(game.rules.boxes):
        game.throw([1, 2, 3, 4, 6])
        assert [o.box for o in game.options() if o.legal] == [box]
        game.enter(box)
    assert game.finished


def test_down_column_fills_top_to_bottom() -> None:
    """columns: down -- ones first, ... chance last."""
    game = Game.new("kniffel-championship", columns=["down"])
    for box in game.rules.boxes:
        game.throw([1, 2, 3, 4, 6])
        assert [o.box for o in game.options() if o.legal] == [box]
        if box != "chance":
            with pytest.raises(IllegalMoveError, match="top to bottom: next is " + box):
                game.enter("chance")
        game.enter(box)


def test_announce_column_only_scored_after_announcing_that_box() -> None:
    """columns: announce -- the target box is announced after the first throw; only that
    box of the announce column scores, and a filled box cannot be announced."""
    game = Game.new("kniffel", columns=["announce"])
    game.throw([3, 3, 3, 2, 2])
    game.announce("full_house")
    with pytest.raises(IllegalMoveError, match="already announced"):
        game.announce("chance")
    assert [(o.box, o.points) for o in game.options() if o.legal and o.fits] == [
        ("full_house", 25)]
    game.enter("full_house")
    game.throw([3, 3, 3, 2, 2])
    with pytest.raises(IllegalMoveError, match="already filled"):
        game.announce("full_house")


def test_the_game_ends_when_every_column_is_full_total_is_the_sum_of_the_columns() -> None:
    """columns: the game ends when every column is full; the total is the sum of the
    columns, each with its own bonus."""
    game = Game.new("kniffel-championship", players=["Solo"], columns=["down", "up", "free"])
    for box in game.rules.boxes:
        for column in ("down", "free"):
            upper = game.rules.ruleset.upper
            game.throw([upper.index(box) + 1] * 4 + [2] if box in upper else [1, 2, 3, 4, 6])
            game.enter(box, column=column)
    assert not game.finished
    for box in reversed(game.rules.boxes):
        assert not game.finished
        game.throw([1, 2, 3, 4, 6])
        game.enter(box, column="up")
    assert game.finished
    player = game.state.players[0]
    totals = [game.column_totals(c) for c in player.columns]
    assert [t.bonus for t in totals] == [35, 0, 35]
    assert game.total(player) == sum(t.total for t in totals)
    assert game.winners() == ["Solo"]


def _options(game: Game, dice: list[int]) -> tuple:  # type: ignore[type-arg]
    game.throw(dice)
    try:
        return game.options()
    finally:
        game.pop()


def test_docs_rules_md_lists_every_ruleset_and_variant_with_its_seed() -> None:
    """docs/rules.md: each ruleset and variant with its interpretation and seed."""
    from pathlib import Path

    from game import VARIANTS
    from game.rules import COLUMN_KINDS

    text = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text("utf-8")
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    for name in RULESETS:
        heading = next((h for h in headings if h.startswith(f"### `{name}` ")), None)
        assert heading is not None, name
        assert f"(seed {ruleset(name).source})" in heading
    for variant in VARIANTS:
        assert any(h.startswith(f"### `{variant}` (seed 003)") for h in headings), variant
    assert any(h.startswith("### Columns (seed 003") for h in headings)
    for kind in COLUMN_KINDS:
        assert f"`{kind}`" in text.split("### Columns", 1)[1], kind


@pytest.mark.parametrize(("name", "bonus"), [("kniffel-classic", 0),
                                             ("kniffel-international", 100)])
def test_older_editions_further_kniffel_announced_into_chance_scores_its_sum(
        name: str, bonus: int) -> None:
    """columns: announce with classic/international -- the forced upper box belongs to a
    free column; an announced box takes the Kniffel as what it is (chance: the sum).
    International's +100 comes with every further Kniffel, classic's +50 only in the upper
    box. (Before the fix in game/rules.py the announced chance scored 0 and lost the +100.)
    """
    game = Game.new(name, columns=["announce"])
    game.throw([5, 5, 5, 5, 5])
    game.announce("kniffel")
    game.enter("kniffel")
    game.throw([5, 5, 5, 5, 5])
    game.announce("chance")
    option = next(o for o in game.options() if o.box == "chance")
    assert (option.legal, option.fits, option.points, option.extra_bonus) == (
        True, True, 25, bonus)
    game.enter("chance")
    col = game.state.players[0].columns[0]
    assert col.boxes[12] == 25 and col.extra_bonus == bonus


@pytest.mark.parametrize(("name", "bonus"), [("kniffel-classic", 0),
                                             ("kniffel-international", 100)])
def test_older_editions_further_kniffel_in_an_up_column_counts_for_the_next_box(
        name: str, bonus: int) -> None:
    """columns: up -- ordering beats the forced upper box; the next box (large straight)
    takes the Kniffel as what it is (it does not fit: 0; no joker while fives is free), and
    international still writes its +100 (docs/rules.md: "whichever box it goes to")."""
    game = Game.new(name, columns=["up"])
    game.throw([1, 2, 3, 4, 6])
    game.enter("chance")
    game.throw([5, 5, 5, 5, 5])
    game.enter("kniffel")
    game.throw([5, 5, 5, 5, 5])
    assert [(o.box, o.points, o.extra_bonus) for o in game.options() if o.legal] == [
        ("large_straight", 0, bonus)]
    game.enter("large_straight")
    assert game.state.players[0].columns[0].extra_bonus == bonus


@pytest.mark.parametrize("name", ["kniffel-classic", "kniffel-international"])
def test_older_editions_forced_upper_box_still_closes_the_free_column(name: str) -> None:
    """In a free column the further Kniffel must still go into its free upper box."""
    game = Game.new(name, columns=["free"])
    fill(game, {"kniffel": [5, 5, 5, 5, 5]})
    game.throw([5, 5, 5, 5, 5])
    options = {o.box: o for o in game.options()}
    assert [b for b, o in options.items() if o.legal or o.can_scratch] == ["fives"]
    assert "must go into fives" in (options["chance"].reason or "")
