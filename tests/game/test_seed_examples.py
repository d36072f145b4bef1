"""Every worked example of the rule books in ../shared/seeds, played in its own edition.

One test per example, named after what it shows; each cites its seed. Seeds:
000 older edition (ruleset `kniffel-classic`), 001 Schmidt International
(`kniffel-international`), 002 current edition (`kniffel`, with the Meisterschaftsregel
`kniffel-championship`), 003 house rules and variants (`kniffel-house`), 004 Kniffel Kids
(`kids`). Where a book shows the dice only as a picture (lost in the text of the seed) the
dice are the ones the points and the surrounding sentences fix; the test says so.
"""

from __future__ import annotations

import pytest

from game import Game
from tests.game.helpers import fill, points

# ---- the examples printed under each box of the block (000, 001, 002, 003) ---------------

# (seed, ruleset, box, dice, points). 001 and 002 show the dice of some examples only as
# pictures: 002 prints the same values as 000 (22, 17, 25, 30, 40, 50), so 000's dice are used.
BLOCK_EXAMPLES = [
    ("000", "kniffel-classic", "three_of_a_kind", [6, 6, 6, 3, 1], 22),
    ("000", "kniffel-classic", "four_of_a_kind", [3, 3, 3, 3, 5], 17),
    ("000", "kniffel-classic", "full_house", [4, 4, 4, 3, 3], 25),
    ("000", "kniffel-classic", "full_house", [4, 4, 4, 1, 1], 25),  # "drei Vieren, zwei Einsen"
    ("000", "kniffel-classic", "small_straight", [1, 2, 3, 4, 3], 30),
    ("000", "kniffel-classic", "small_straight", [1, 2, 3, 4, 2], 30),  # "z.B. 1, 2, 3, 4, 2"
    ("000", "kniffel-classic", "large_straight", [2, 3, 4, 5, 6], 40),
    ("000", "kniffel-classic", "kniffel", [5, 5, 5, 5, 5], 50),
    ("001", "kniffel-international", "twos", [2, 2, 2, 1, 5], 6),  # picture: three twos
    ("001", "kniffel-international", "twos", [2, 2, 1, 5, 6], 4),  # picture: two twos
    ("001", "kniffel-international", "fours", [4, 4, 4, 4, 1], 16),  # more than printed
    ("001", "kniffel-international", "three_of_a_kind", [6, 6, 6, 3, 1], 22),
    ("001", "kniffel-international", "four_of_a_kind", [3, 3, 3, 3, 5], 17),
    ("001", "kniffel-international", "full_house", [4, 4, 4, 3, 3], 25),
    ("001", "kniffel-international", "small_straight", [1, 2, 3, 4, 3], 30),
    ("001", "kniffel-international", "large_straight", [2, 3, 4, 5, 6], 40),
    ("001", "kniffel-international", "kniffel", [5, 5, 5, 5, 5], 50),
    ("002", "kniffel", "small_straight", [1, 2, 3, 4, 3], 30),  # "z.B. 1, 2, 3, 4, 3"
    ("002", "kniffel", "full_house", [4, 4, 4, 1, 1], 25),  # "drei Vieren und zwei Einsen"
    ("002", "kniffel", "four_of_a_kind", [3, 3, 3, 3, 5], 17),
    ("002", "kniffel", "three_of_a_kind", [6, 6, 6, 3, 1], 22),
    ("002", "kniffel", "large_straight", [2, 3, 4, 5, 6], 40),  # "z.B. 2, 3, 4, 5, 6"
    ("002", "kniffel", "kniffel", [5, 5, 5, 5, 5], 50),
    ("002", "kniffel-championship", "three_of_a_kind", [6, 6, 6, 3, 1], 22),
    ("002", "kniffel-championship", "full_house", [4, 4, 4, 1, 1], 25),
    ("003", "kniffel-house", "small_straight", [1, 2, 3, 4, 6], 30),  # "1-2-3-4 ..."
    ("003", "kniffel-house", "small_straight", [2, 3, 4, 5, 2], 30),  # "2-3-4-5 ..."
    ("003", "kniffel-house", "small_straight", [3, 4, 5, 6, 1], 30),  # "3-4-5-6 und ein
    ("003", "kniffel-house", "large_straight", [1, 2, 3, 4, 5], 40),  # beliebiger anderer"
    ("003", "kniffel-house", "large_straight", [2, 3, 4, 5, 6], 40),
    ("003", "kniffel-house", "full_house", [2, 2, 2, 6, 6], 25),
]


@pytest.mark.parametrize(("seed", "rules", "box", "dice", "expected"), BLOCK_EXAMPLES)
def test_block_example_scores_in_its_own_edition(seed: str, rules: str, box: str,
                                                 dice: list[int], expected: int) -> None:
    game = Game.new(rules)
    assert points(game, dice)[box] == expected
    game.throw(dice)
    game.enter(box)
    assert game.total(game.state.players[0]) == expected


@pytest.mark.parametrize(("seed", "rules", "name"), [("000", "kniffel-classic", "Dora"),
                                                     ("002", "kniffel", "Melanie")])
def test_three_fives_and_two_threes_have_four_possibilities(seed: str, rules: str,
                                                            name: str) -> None:
    # 000 (Dora) and 002 (Melanie): 15 in fives, 6 in threes, 21 in three of a kind,
    # 25 in full house (chance also takes the throw; the books list the four "Möglichkeiten"
    # that are combinations).
    legal = points(Game.new(rules, players=[name]), [5, 5, 5, 3, 3])
    assert {b: p for b, p in legal.items() if b != "chance"} == {
        "fives": 15, "threes": 6, "three_of_a_kind": 21, "full_house": 25}


@pytest.mark.parametrize(("seed", "rules"), [("000", "kniffel-classic"),
                                             ("001", "kniffel-international"),
                                             ("002", "kniffel"),
                                             ("003", "kniffel-house")])
@pytest.mark.parametrize(("ones", "upper_sum", "bonus"), [([1, 1, 1, 2, 3], 63, 35),
                                                         ([1, 1, 2, 2, 3], 62, 0)])
def test_upper_bonus_of_35_at_63_in_every_edition(seed: str, rules: str, ones: list[int],
                                                  upper_sum: int, bonus: int) -> None:
    # 000/002 "Bonus ... mindestens 63 Punkte im gesamten oberen Teil", 001 "Prämie von 35
    # Punkten ... 63 oder mehr Punkte auf beliebige Weise im oberen Teil", 003 "Sammeln".
    game = Game.new(rules)
    fill(game, {"ones": ones, "twos": [2, 2, 2, 1, 3], "threes": [3, 3, 3, 1, 2],
                "fours": [4, 4, 4, 1, 2], "fives": [5, 5, 5, 1, 2], "sixes": [6, 6, 6, 1, 2]})
    totals = game.column_totals(game.state.players[0].columns[0])
    assert (totals.upper_sum, totals.bonus, totals.total) == (upper_sum, bonus,
                                                              upper_sum + bonus)


# ---- 000: the older edition (kniffel-classic) ---------------------------------------------


def test_000_nothing_fits_scratches_any_box() -> None:
    # 000: "Erfüllt der Wurf keine der Bedingungen für die Kästchen, wird ein beliebiges
    # Kästchen gestrichen (= eine Null wird eingetragen)."
    game = Game.new("kniffel-classic")
    fill(game, {"chance": [6, 6, 5, 5, 4], "twos": [2, 2, 1, 1, 1], "fours": [4, 4, 1, 1, 1],
                "fives": [5, 5, 1, 1, 1], "sixes": [6, 6, 1, 1, 1], "threes": [3, 3, 1, 1, 1]})
    game.throw([2, 2, 3, 4, 6])  # free: ones and the lower part but chance; fits none
    legal = {o.box for o in game.options() if o.legal}
    assert legal == {"ones", "three_of_a_kind", "four_of_a_kind", "full_house",
                     "small_straight", "large_straight", "kniffel"}
    game.enter("ones")
    assert game.state.players[0].columns[0].boxes[0] == 0


def test_000_joker_kniffel_earns_40_as_large_straight_without_bonus() -> None:
    # 000 "Kniffel als Joker": kniffel box and the Kniffel's upper box filled -> any lower
    # box, "z.B. 40 Punkte für eine große Straße"; the 50 extra points are only for the
    # upper box.
    game = Game.new("kniffel-classic")
    fill(game, {"kniffel": [6, 6, 6, 6, 6], "sixes": [6, 6, 6, 1, 2]})
    game.throw([6, 6, 6, 6, 6])
    legal = {o.box: o.points for o in game.options() if o.legal}
    assert legal == {"three_of_a_kind": 30, "four_of_a_kind": 30, "full_house": 25,
                     "small_straight": 30, "large_straight": 40, "chance": 30}
    game.enter("large_straight")
    col = game.state.players[0].columns[0]
    assert col.boxes[10] == 40 and col.extra_bonus == 0


def test_000_joker_with_the_lower_part_full_strikes_an_upper_box() -> None:
    # 000: "Sind allerdings alle Kästchen im unteren Bereich besetzt, muss der Spieler im
    # oberen Bereich ein Feld streichen."
    game = Game.new("kniffel-classic")
    fill(game, {"kniffel": [6, 6, 6, 6, 6], "sixes": [6, 6, 6, 1, 2],
                "three_of_a_kind": [1, 1, 1, 2, 3], "four_of_a_kind": [1, 1, 1, 1, 3],
                "full_house": [1, 1, 1, 2, 2], "small_straight": [1, 2, 3, 4, 1],
                "large_straight": [1, 2, 3, 4, 5], "chance": [1, 1, 2, 2, 3]})
    game.throw([6, 6, 6, 6, 6])
    assert {o.box: o.points for o in game.options() if o.legal} == {
        "ones": 0, "twos": 0, "threes": 0, "fours": 0, "fives": 0}
    game.enter("threes")
    col = game.state.players[0].columns[0]
    assert col.boxes[2] == 0 and col.extra_bonus == 0


def test_000_kniffel_of_fives_for_50_extra_points_goes_into_fives_with_25() -> None:
    # 000 "Kniffel für 50 Zusatzpunkte": kniffel box filled, fives free -> "bei einem
    # 5er Kniffel: 25 Punkte" in fives, plus 50 on the back of the block.
    game = Game.new("kniffel-classic")
    fill(game, {"kniffel": [2, 2, 2, 2, 2]})
    game.throw([5, 5, 5, 5, 5])
    assert {o.box: o.points for o in game.options() if o.legal} == {"fives": 25}
    game.enter("fives")
    totals = game.column_totals(game.state.players[0].columns[0])
    assert (totals.upper_sum, totals.lower_sum, totals.extra_bonus, totals.total) == (
        25, 50, 50, 125)


def test_000_game_ends_with_the_last_box_of_the_last_player_most_points_wins() -> None:
    # 000 "Spielende": "Das Spiel endet, sobald das letzte Kästchen beim letzten Spieler
    # ausgefüllt ist. Nun werden alle Punkte (Boni nicht vergessen) zusammengerechnet. Der
    # Spieler mit den meisten Punkten ist der Sieger."
    game = Game.new("kniffel-classic", players=["Dora", "Udo"])
    dice = {"Dora": [6, 6, 6, 6, 6], "Udo": [1, 2, 3, 4, 6]}
    for _ in range(13 * 2):
        assert not game.finished
        game.throw(dice[game.current_player])
        best = max((o for o in game.options() if o.legal), key=lambda o: o.points)
        game.enter(best.box)
    assert game.finished
    dora, udo = game.state.players
    parts = game.column_totals(dora.columns[0])
    assert game.total(dora) == (parts.upper_sum + parts.bonus + parts.lower_sum
                                + parts.extra_bonus)
    assert game.total(dora) > game.total(udo)
    assert game.winners() == ["Dora"]


# ---- 001: Schmidt International (kniffel-international) -----------------------------------


def test_001_four_of_a_kind_goes_to_three_of_a_kind_or_threes_once_four_is_filled() -> None:
    # 001 Viererpasch: the throw (four threes and a five, 17) "kann auch im Kästchen für
    # Dreierpasch angeschrieben werden, wenn das Kästchen für Viererpasch bereits besetzt
    # ist ... auch im oberen Teil bei den Dreier-Augen mit der Punktzahl 12".
    game = Game.new("kniffel-international")
    fill(game, {"four_of_a_kind": [6, 6, 6, 6, 1]})
    legal = points(game, [3, 3, 3, 3, 5])
    assert legal["three_of_a_kind"] == 17 and legal["threes"] == 12
    assert legal["fives"] == 5 and legal["chance"] == 17 and "four_of_a_kind" not in legal


def test_001_full_house_goes_to_three_of_a_kind_18_or_fours_12() -> None:
    # 001 Full-House: 25 in full house, "aber auch im Kästchen für Dreierpasch mit der
    # Punktzahl 18 oder im oberen Teil unter den Vierer-Augen mit der Punktzahl 12 ...,
    # wenn das Kästchen Full-House bereits besetzt ist" -> three fours and two threes.
    game = Game.new("kniffel-international")
    assert points(game, [4, 4, 4, 3, 3])["full_house"] == 25
    fill(game, {"full_house": [2, 2, 2, 5, 5]})
    legal = points(game, [4, 4, 4, 3, 3])
    assert legal["three_of_a_kind"] == 18 and legal["fours"] == 12 and legal["threes"] == 6
    assert "full_house" not in legal


def test_001_large_straight_goes_to_small_straight_once_large_is_filled() -> None:
    # 001 Große Straße: "Dieser Wurf kann auch in das Kästchen für Kleine Straße eingetragen
    # werden, wenn das für Große Straße vorgesehene bereits besetzt ist."
    game = Game.new("kniffel-international")
    fill(game, {"large_straight": [1, 2, 3, 4, 5]})
    assert points(game, [2, 3, 4, 5, 6])["small_straight"] == 30


def test_001_joker_kniffel_of_fives_in_every_lower_box() -> None:
    # 001 "Kniffel als Joker": kniffel box and the upper box filled -> "25 Punkte in
    # Dreierpasch, Viererpasch oder Chance ... 25 Punkte für Full-House, 30 ... Kleine
    # Straße und sogar 40 ... Große Straße" (the picture: a Kniffel of fives, 5 x 5 = 25).
    game = Game.new("kniffel-international")
    fill(game, {"kniffel": [5, 5, 5, 5, 5], "fives": [5, 5, 5, 1, 2]})
    game.throw([5, 5, 5, 5, 5])
    fitting = {o.box: o.points for o in game.options() if o.legal and o.fits}
    assert fitting == {"three_of_a_kind": 25, "four_of_a_kind": 25, "chance": 25,
                       "full_house": 25, "small_straight": 30, "large_straight": 40}


def test_001_joker_with_the_lower_part_full_writes_0_in_an_upper_box_of_choice() -> None:
    # 001: "Wenn alle Kästchen im unteren Teil schon besetzt sind, muß er eine Null in ein
    # Kästchen seiner Wahl im oberen Teil eintragen."
    game = Game.new("kniffel-international")
    fill(game, {"kniffel": [5, 5, 5, 5, 5], "fives": [5, 5, 5, 1, 2],
                "three_of_a_kind": [1, 1, 1, 2, 3], "four_of_a_kind": [1, 1, 1, 1, 3],
                "full_house": [1, 1, 1, 2, 2], "small_straight": [1, 2, 3, 4, 1],
                "large_straight": [1, 2, 3, 4, 6], "chance": [1, 1, 2, 2, 3]})
    game.throw([5, 5, 5, 5, 5])
    options = game.options()
    assert {o.box for o in options} == {"ones", "twos", "threes", "fours", "sixes"}
    assert all(o.legal and o.points == 0 for o in options)
    game.enter("sixes")
    col = game.state.players[0].columns[0]
    assert col.boxes[5] == 0 and col.extra_bonus == 100


def test_001_second_kniffel_earns_100_only_after_the_first_went_into_the_kniffel_box() -> None:
    # 001 "Weitere Kniffel-Würfe": +100 for a second Kniffel, "jedoch nur, wenn der erste
    # Kniffel-Wurf in das Kniffel-Kästchen eingetragen wurde"; the second goes into its
    # upper box.
    game = Game.new("kniffel-international")
    fill(game, {"kniffel": [3, 3, 3, 3, 3], "threes": [3, 3, 3, 3, 3]})
    assert game.state.players[0].columns[0].extra_bonus == 100
    other = Game.new("kniffel-international")
    fill(other, {"threes": [3, 3, 3, 3, 3], "kniffel": [3, 3, 3, 3, 3]})  # first in threes
    assert other.state.players[0].columns[0].extra_bonus == 0


# ---- 002: the current edition (kniffel) and the Meisterschaftsregel ----------------------


def test_002_nothing_fits_you_must_strike_any_box() -> None:
    # 002: "Erfüllt der Wurf keine der Bedingungen für die Kästchen, musst du in deiner
    # Spalte ein beliebiges Kästchen streichen (= eine 0 eintragen)." While a box fits,
    # none may be struck.
    game = Game.new("kniffel")
    game.throw([1, 2, 3, 5, 6])
    assert not any(o.can_scratch for o in game.options())
    assert {o.box for o in game.options() if o.legal} == {
        "ones", "twos", "threes", "fives", "sixes", "chance"}
    game.enter("chance")
    fill(game, {"ones": [1, 1, 1, 2, 2], "twos": [2, 2, 1, 1, 1], "threes": [3, 3, 1, 1, 1],
                "fours": [4, 4, 1, 1, 1], "fives": [5, 5, 1, 1, 1], "sixes": [6, 6, 1, 1, 1]})
    game.throw([1, 2, 3, 5, 6])
    assert all(o.legal and o.points == 0 for o in game.options())


def test_002_second_kniffel_earns_50_and_the_maximum_of_any_free_box() -> None:
    # 002 "Zweiter, dritter usw. Kniffel": 50 extra points, and "bei einem beliebigen noch
    # freien Kästchen die entsprechende Höchstpunktzahl ... egal, mit welchem
    # Würfelergebnis der Kniffel erzielt wurde" -- a Kniffel of ones earns 30 in sixes.
    game = Game.new("kniffel")
    fill(game, {"kniffel": [1, 1, 1, 1, 1]})
    assert points(game, [1, 1, 1, 1, 1])["sixes"] == 30
    fill(game, {"sixes": [1, 1, 1, 1, 1], "full_house": [1, 1, 1, 1, 1]})  # third Kniffel
    col = game.state.players[0].columns[0]
    assert col.boxes[5] == 30 and col.boxes[8] == 25 and col.extra_bonus == 100


def test_002_championship_any_box_may_be_struck_although_the_throw_fits() -> None:
    # 002 Meisterschaftsregel: "Steht dein Wurfergebnis fest und es gefällt dir nicht,
    # darfst du auch ein beliebiges Kästchen in deiner Spalte streichen."
    game = Game.new("kniffel-championship")
    game.throw([2, 3, 4, 5, 6])
    assert all(o.legal or o.can_scratch for o in game.options())
    game.enter("large_straight", scratch=True)
    assert game.state.players[0].columns[0].boxes[10] == 0


def test_002_championship_kniffel_of_fours_only_in_fours_pasch_or_chance_with_20() -> None:
    # 002 Meisterschaftsregel "Beispiel: Die Zusatzeintragung eines Kniffels mit 4ern darf
    # ... bei den Vierern mit 20 Punkten ... beim Dreier- oder Viererpasch oder der Chance
    # mit jeweils 20 Punkten. Eine Eintragung beim Full-House oder den Straßen geht nicht."
    game = Game.new("kniffel-championship")
    fill(game, {"kniffel": [4, 4, 4, 4, 4]})
    game.throw([4, 4, 4, 4, 4])
    options = {o.box: o for o in game.options()}
    assert {b: o.points for b, o in options.items() if o.fits} == {
        "fours": 20, "three_of_a_kind": 20, "four_of_a_kind": 20, "chance": 20}
    for box in ("full_house", "small_straight", "large_straight"):
        assert not options[box].fits and options[box].points == 0
    game.enter("four_of_a_kind")
    col = game.state.players[0].columns[0]
    assert col.boxes[7] == 20 and col.extra_bonus == 50


def test_002_championship_further_kniffel_no_fitting_box_free_strike_a_box() -> None:
    # 002 Meisterschaftsregel: "Ist kein passendes Kästchen mehr frei, musst du dir ein
    # Kästchen deiner Wahl streichen." The 50 extra points are still written.
    game = Game.new("kniffel-championship")
    fill(game, {"kniffel": [4, 4, 4, 4, 4], "fours": [4, 4, 1, 2, 3],
                "three_of_a_kind": [1, 1, 1, 2, 3], "four_of_a_kind": [1, 1, 1, 1, 3],
                "chance": [1, 2, 3, 5, 6]})
    game.throw([4, 4, 4, 4, 4])
    assert not any(o.fits for o in game.options())
    assert all(o.legal and o.points == 0 for o in game.options())
    game.enter("large_straight")
    col = game.state.players[0].columns[0]
    assert col.boxes[10] == 0 and col.extra_bonus == 50


# ---- 003: house rules and variants (kniffel-house) ----------------------------------------


def test_003_entering_a_box_whose_condition_fails_strikes_it() -> None:
    # 003: "Wenn man ein Ergebnis in ein Feld einträgt, bei dem die Bedingung nicht erfüllt
    # ist (z. B. wenn beim Feld Dreierpasch nicht drei Würfel gleich sind), dann wird das
    # Feld gestrichen oder die Punktzahl 0 eingetragen."
    game = Game.new("kniffel-house")
    game.throw([1, 1, 2, 2, 5])
    option = next(o for o in game.options() if o.box == "three_of_a_kind")
    assert option.legal and not option.fits and option.points == 0
    game.enter("three_of_a_kind")
    assert game.state.players[0].columns[0].boxes[6] == 0


def test_003_further_kniffel_100_below_and_dice_plus_100_above_not_for_the_bonus() -> None:
    # 003: a further Kniffel "in ein beliebiges freies Feld unter Andere Spiele ... mit 100
    # Punkten, unter Sammeln mit 100 + den zu zählenden Würfeln - wobei die 100 Punkte aber
    # bei der Berechnung des Bonus nicht mitgezählt werden."
    game = Game.new("kniffel-house")
    fill(game, {"kniffel": [6, 6, 6, 6, 6]})
    legal = points(game, [6, 6, 6, 6, 6])
    assert legal["sixes"] == 130 and legal["ones"] == 100
    assert all(legal[b] == 100 for b in ("three_of_a_kind", "four_of_a_kind", "full_house",
                                         "small_straight", "large_straight", "chance"))
    fill(game, {"sixes": [6, 6, 6, 6, 6], "ones": [1, 1, 1, 2, 3], "twos": [2, 2, 2, 1, 3],
                "threes": [3, 3, 3, 1, 2], "fours": [4, 4, 4, 1, 2], "fives": [5, 5, 1, 1, 2]})
    totals = game.column_totals(game.state.players[0].columns[0])
    # Without the 100: 3 + 6 + 9 + 12 + 10 + 30 = 70 >= 63 -> bonus.
    assert (totals.upper_sum, totals.bonus, totals.extra_bonus) == (170, 35, 0)


def test_003_kniffel_as_full_house_when_the_kniffel_box_was_struck() -> None:
    # 003: "Wenn man keinen Kniffel unter Kniffel eingetragen hat (z. B. Kniffel
    # gestrichen), kann man einen Kniffel auch als Full-House (25 Punkte) verwenden."
    game = Game.new("kniffel-house")
    game.throw([1, 2, 3, 4, 6])
    game.enter("kniffel")  # struck
    game.throw([3, 3, 3, 3, 3])
    game.enter("full_house")
    assert game.state.players[0].columns[0].boxes[8] == 25


def test_003_large_straight_as_small_straight_counts_only_30() -> None:
    # 003: "Eine Große Straße kann man auch als Kleine Straße verwenden und zählt dort auch
    # nur 30 Punkte."
    game = Game.new("kniffel-house")
    game.throw([1, 2, 3, 4, 5])
    game.enter("small_straight")
    assert game.state.players[0].columns[0].boxes[9] == 30


def test_003_scharf_kniffel_in_the_first_throw_is_100_instead_of_50() -> None:
    # 003 Scharf: "im ersten Wurf gleich einen Kniffel scharf mit dann 100 anstatt 50".
    game = Game.new("kniffel-house", variants=["scharf"])
    game.throw([2, 2, 2, 2, 2])
    game.enter("kniffel")
    assert game.state.players[0].columns[0].boxes[11] == 100


def test_003_scharf_all_dice_back_in_the_cup_for_the_third_throw() -> None:
    # 003 Scharf: "oder ob man erst zwei Würfe lang nichts Brauchbares bekommt, und dann im
    # dritten alle Würfel wieder in Becher tut, um im letzten etwas Scharfes zu erhalten".
    game = Game.new("kniffel-house", variants=["scharf"])
    game.throw([1, 1, 3, 5, 6])
    game.throw([1, 1, 2, 4, 6], held=[0, 1])
    game.throw([4, 4, 4, 2, 2], held=[])
    legal = {o.box: o.points for o in game.options() if o.legal and o.fits}
    assert legal["full_house"] == 50 and legal["three_of_a_kind"] == 32
    assert legal["fours"] == 12 and legal["chance"] == 16  # never doubled


def test_003_scharf_lost_once_a_single_die_stays_out_of_the_cup() -> None:
    # 003 Scharf: "Sobald man aber mindestens einen Würfel von einem Würfelresultat nicht
    # wieder in den Becher zurück tut, gilt der Wurf nicht mehr als scharf."
    game = Game.new("kniffel-house", variants=["scharf"])
    game.throw([2, 3, 4, 5, 1])
    game.throw([2, 3, 4, 5, 6], held=[0, 1, 2, 3])
    assert {o.box: o.points for o in game.options()}["large_straight"] == 40


def test_003_strict_order_kniffel_in_three_of_a_kind_counts_30_with_sixes() -> None:
    # 003 strenges Kniffel: "Wenn man einen Kniffel in einem Dreierpasch bekommt, zählt man
    # auch nur als Dreierpasch (z. B. mit Sechsen 30 Punkte)."
    game = Game.new("kniffel-house", variants=["strict-order"])
    for box in game.rules.ruleset.upper:
        game.throw([1, 2, 3, 4, 6])
        game.enter(box)
    game.throw([6, 6, 6, 6, 6])
    assert {o.box: o.points for o in game.options() if o.legal} == {"three_of_a_kind": 30}
    game.enter("three_of_a_kind")
    col = game.state.players[0].columns[0]
    assert col.boxes[6] == 30 and col.extra_bonus == 0


def test_003_strict_order_kniffel_in_full_house_counts_as_full_house() -> None:
    # 003 strenges Kniffel: "Ein Kniffel in Full-House zählt als Full-House."
    game = Game.new("kniffel-house", variants=["strict-order"])
    for box in game.rules.boxes[:8]:
        game.throw([1, 2, 3, 4, 6])
        game.enter(box)
    game.throw([2, 2, 2, 2, 2])
    assert {o.box: o.points for o in game.options() if o.legal} == {"full_house": 25}


def test_003_strict_order_only_a_kniffel_in_chance_counts_100_after_a_kniffel() -> None:
    # 003 strenges Kniffel: "nur ein Kniffel in Chance kann 100 zählen, wenn man vorher
    # einen Kniffel hatte."
    game = Game.new("kniffel-house", variants=["strict-order"])
    for box in game.rules.boxes[:-2]:
        game.throw([1, 2, 3, 4, 6])
        game.enter(box)
    game.throw([5, 5, 5, 5, 5])
    game.enter("kniffel")
    game.throw([5, 5, 5, 5, 5])
    assert {o.box: o.points for o in game.options() if o.legal} == {"chance": 100}
    game.enter("chance")
    assert game.finished
    # Without a Kniffel in the kniffel box, a Kniffel in chance is just the sum.
    other = Game.new("kniffel-house", variants=["strict-order"])
    for box in other.rules.boxes[:-1]:
        other.throw([1, 2, 3, 4, 6])
        other.enter(box)
    other.throw([5, 5, 5, 5, 5])
    assert {o.box: o.points for o in other.options() if o.legal} == {"chance": 25}


def test_003_four_columns_announced_box_or_strike_any_box_in_any_column() -> None:
    # 003 vier Spalten: "Wenn man ein Feld für die 3. Spalte ansagt und das Ergebnis nach
    # dem dritten Versuch nicht zufriedenstellend ist, muss man entweder den Wurf eintragen
    # oder ein Feld seiner Wahl in einer der vier Spalten streichen." (Fields within reach:
    # the next box of down and up, any free box of announce and free.)
    game = Game.new("kniffel-house", columns=["down", "up", "announce", "free"])
    game.throw([6, 6, 1, 2, 3])
    game.announce("sixes")
    game.throw([6, 6, 4, 4, 5], held=[0, 1])
    game.throw([6, 6, 4, 4, 1], held=[0, 1, 2, 3])
    options = game.options()
    reach = {(o.column, o.box) for o in options if o.legal or o.can_scratch}
    assert {(c, b) for c, b in reach if c in ("down", "up")} == {("down", "ones"),
                                                                ("up", "chance")}
    assert {b for c, b in reach if c == "announce"} == set(game.rules.boxes)
    assert {b for c, b in reach if c == "free"} == set(game.rules.boxes)
    scored = {(o.column, o.box): o.points for o in options if o.legal and o.fits}
    assert scored == {("announce", "sixes"): 12}  # the only box that takes the throw
    game.enter("chance", column="free", scratch=True)
    assert game.state.players[0].columns[3].boxes[-1] == 0


def test_003_four_columns_strike_when_nothing_usable_without_announcing() -> None:
    # 003: "Streichen muss man auch, wenn der Wurf ohne Ansage nichts Verwertbares enthält."
    # Under the current edition's scratching rule: down wants ones, the throw has none, and
    # the announce column takes nothing unannounced -> a box is struck.
    game = Game.new("kniffel", columns=["down", "announce"])
    game.throw([2, 3, 4, 6, 6])
    options = game.options()
    assert not any(o.legal and o.fits for o in options)
    assert {(o.column, o.box) for o in options if o.legal and o.column == "down"} == {
        ("down", "ones")}
    assert all(o.legal or o.can_scratch for o in options if o.column == "announce")
    game.enter("sixes", column="announce", scratch=True)
    assert game.state.players[0].columns[1].boxes[5] == 0


def test_003_game_over_when_the_sheet_is_full_totals_of_all_parts() -> None:
    # 003: "Ist der Spielzettel voll, so ist das Spiel beendet und die Punkte vom Sammeln und
    # den anderen Spielen und eventuell der Bonus werden zusammengezählt."
    game = Game.new("kniffel-house", players=["Solo"])
    for box in game.rules.boxes:
        assert not game.finished
        game.throw([6, 6, 6, 6, 6] if box in ("sixes", "kniffel") else [1, 2, 3, 4, 5])
        game.enter(box)
    assert game.finished and game.winners() == ["Solo"]
    totals = game.column_totals(game.state.players[0].columns[0])
    assert totals.total == totals.upper_sum + totals.bonus + totals.lower_sum
    assert game.total(game.state.players[0]) == totals.total


# ---- 004: Kniffel Kids (kids) -------------------------------------------------------------

# 004 shows every example as a picture; the dice are those the sentence describes.
KIDS_EXAMPLES = [
    # "3 Punkte in der Zeile Ente" (three ducks)
    ("duck", ["duck", "duck", "duck", "lion", "cat"], 3),
    ("three_of_a_kind", ["dog", "dog", "dog", "mouse", "cat"], 2),  # Drilling
    ("two_pairs", ["lion", "lion", "cat", "cat", "duck"], 3),  # Zwei Paare
    ("full_house", ["elephant", "elephant", "elephant", "mouse", "mouse"], 4),  # Drilling+Paar
    ("all_different", ["duck", "lion", "mouse", "cat", "dog"], 5),  # Fünf verschiedene Tiere
    ("kniffel", ["mouse"] * 5, 10),  # Tier-Kniffel
]


@pytest.mark.parametrize(("box", "dice", "expected"), KIDS_EXAMPLES)
def test_004_animal_combination_example(box: str, dice: list[str], expected: int) -> None:
    game = Game.new("kids", players=["Mia", "Leo"])
    assert points(game, dice)[box] == expected
    game.throw(dice)
    game.enter(box)
    assert game.total(game.state.players[0]) == expected


def test_004_same_holds_for_lion_mouse_cat_dog_and_elephant() -> None:
    # 004: "Achtung: Gleiches gilt für die Zeilen Löwe, Maus, Katze, Hund und Elefant."
    game = Game.new("kids")
    for animal in ("lion", "mouse", "cat", "dog", "elephant"):
        assert points(game, [animal] * 3 + ["duck", "duck"])[animal] == 3


def test_004_nothing_fits_write_0_in_any_free_box() -> None:
    # 004: "Habt ihr eine Tierkombination gewürfelt die ihr in keins der Felder eintragen
    # könnt, müsst ihr dafür in einem beliebigen noch freien Feld 0 Punkte notieren."
    game = Game.new("kids")
    fill(game, {animal: [animal] * 5 for animal in game.rules.ruleset.upper})
    game.throw(["duck", "duck", "lion", "mouse", "cat"])  # one pair, nothing else
    options = game.options()
    assert not any(o.fits for o in options)
    assert {o.box for o in options if o.legal} == {
        "three_of_a_kind", "two_pairs", "full_house", "all_different", "kniffel"}
    game.enter("kniffel")
    assert game.state.players[0].columns[0].boxes[-1] == 0


def test_004_each_box_only_once_eleven_turns_end_the_game() -> None:
    # 004: "Ihr dürft im Laufe des Spiels in jedes Feld nur einmal etwas eintragen." and
    # "Das Spiel endet, sobald alle Spieler die elf Felder einer Spalte ausgefüllt haben,
    # also wenn jeder elfmal an der Reihe war."
    game = Game.new("kids", players=["Mia", "Leo"])
    turns = 0
    while not game.finished:
        game.throw(["duck", "lion", "mouse", "cat", "dog"])
        option = next(o for o in game.options() if o.legal)
        game.enter(option.box)
        turns += 1
    assert turns == 2 * 11
    assert game.total(game.state.players[0]) == game.total(game.state.players[1])
    assert game.winners() == ["Mia", "Leo"]
