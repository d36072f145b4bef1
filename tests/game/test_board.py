"""Turns, throws, held dice and undo."""

from __future__ import annotations

import pytest

from game import Announce, Entry, Game, IllegalMoveError, MalformedError, Throw


def test_turns_go_round_in_player_order() -> None:
    game = Game.new("kniffel", players=["Anna", "Ben"])
    assert game.current_player == "Anna"
    game.throw([1, 2, 3, 4, 5])
    game.enter("large_straight")
    assert game.current_player == "Ben"
    game.throw([1, 1, 1, 4, 5])
    game.enter("ones")
    assert game.current_player == "Anna"


def test_at_most_three_throws() -> None:
    game = Game.new("kniffel")
    for _ in range(3):
        game.throw([1, 2, 3, 4, 5])
    with pytest.raises(IllegalMoveError, match="at most 3 throws"):
        game.throw([1, 2, 3, 4, 5])


def test_held_dice_must_not_change() -> None:
    game = Game.new("kniffel")
    game.throw([6, 6, 2, 3, 4])
    with pytest.raises(IllegalMoveError, match="held die 2 changed from 6 to 5"):
        game.throw([6, 5, 1, 1, 1], held=[0, 1])
    game.throw([6, 6, 1, 1, 1], held=[0, 1])
    assert game.throws[-1].held == (0, 1)


def test_throw_shape_and_faces_are_checked() -> None:
    game = Game.new("kniffel")
    with pytest.raises(MalformedError, match="5 dice, not 4"):
        game.throw([1, 2, 3, 4])
    with pytest.raises(MalformedError, match="die value 7"):
        game.throw([1, 2, 3, 4, 7])
    with pytest.raises(MalformedError, match="die value 0"):
        game.throw([0, 2, 3, 4, 5])
    with pytest.raises(MalformedError, match="die value True"):
        game.throw([True, 2, 3, 4, 5])
    with pytest.raises(MalformedError, match="between 0 and 4"):
        game.throw([1, 2, 3, 4, 5], held=[5])
    with pytest.raises(IllegalMoveError, match="first throw"):
        game.throw([1, 2, 3, 4, 5], held=[0])
    game.throw([1, 2, 3, 4, 5])
    with pytest.raises(IllegalMoveError, match="at least one die"):
        game.throw([1, 2, 3, 4, 5], held=[0, 1, 2, 3, 4])
    assert len(game.move_stack) == 1


def test_enter_needs_a_throw_and_a_free_known_box() -> None:
    game = Game.new("kniffel")
    with pytest.raises(IllegalMoveError, match="throw the dice"):
        game.enter("chance")
    game.throw([1, 2, 3, 4, 5])
    with pytest.raises(MalformedError, match="unknown box 'sevens'"):
        game.enter("sevens")
    with pytest.raises(MalformedError, match="unknown column"):
        game.enter("chance", column="sideways")
    game.enter("chance")
    game.throw([1, 2, 3, 4, 5])
    with pytest.raises(IllegalMoveError, match="already filled"):
        game.enter("chance")


def test_failed_moves_change_nothing() -> None:
    game = Game.new("kniffel", players=["Anna", "Ben"])
    game.throw([1, 2, 3, 4, 5])
    before = (game.state, list(game.move_stack))
    for bad in (lambda: game.enter("full_house"), lambda: game.throw([9, 9, 9, 9, 9]),
                lambda: game.announce("chance"), lambda: game.enter("nope")):
        with pytest.raises((IllegalMoveError, MalformedError)):
            bad()
        assert (game.state, game.move_stack) == before


def test_pop_undoes_exactly() -> None:
    game = Game.new("kniffel", players=["Anna", "Ben"], columns=["announce", "free"])
    states = [game.state]
    for move in [Throw.of([2, 2, 2, 5, 6]), Announce("three_of_a_kind"),
                 Throw.of([2, 2, 2, 5, 5], held=[0, 1, 2, 3]),
                 Entry("three_of_a_kind", "announce")]:
        game.push(move)
        states.append(game.state)
    assert game.current_player == "Ben"
    for expected in reversed(states[:-1]):
        game.pop()
        assert game.state == expected
    with pytest.raises(IllegalMoveError, match="nothing to undo"):
        game.pop()


def test_game_ends_when_every_box_is_filled_and_names_the_winners() -> None:
    game = Game.new("kniffel", players=["Anna", "Ben"])
    for _ in range(13):
        for dice in ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]):
            game.throw(dice)
            option = next(o for o in game.options() if o.legal)
            game.enter(option.box)
    assert game.finished
    assert game.winners() == ["Anna", "Ben"]  # same throws, same choices: a tie
    with pytest.raises(IllegalMoveError, match="over"):
        game.throw([1, 2, 3, 4, 5])


def test_repr_can_be_pasted_back() -> None:
    from game import Announce as A  # noqa: F401
    for value in [Throw.of([1, 2, 3, 4, 5], held=[0]), Throw.of([6, 6, 6, 6, 6]),
                  Entry("chance", column="free", scratch=True), Announce("kniffel")]:
        assert eval(repr(value), {"Throw": Throw, "Entry": Entry, "Announce": Announce}) == value


def test_options_explain_every_closed_box() -> None:
    game = Game.new("kniffel", columns=["down", "up", "announce", "free"])
    game.throw([3, 3, 3, 4, 4])
    for option in game.options():
        assert option.legal or option.reason, option


def test_a_die_must_be_a_whole_number_or_an_animal_name() -> None:
    # 6.0 == 6 in Python, but a die shows 6; a float would also be written back into the
    # record and the block as 6.0.
    with pytest.raises(MalformedError, match="die value 6.0"):
        Game.new("kniffel").throw([6.0, 6, 6, 6, 6])
    with pytest.raises(MalformedError, match="die value 1.0"):
        Game.new("kniffel").throw([1.0, 2, 3, 4, 5])
    with pytest.raises(MalformedError, match="die value '6'"):
        Game.new("kniffel").throw(["6", 6, 6, 6, 6])
    with pytest.raises(MalformedError, match="die value 1"):
        Game.new("kids").throw([1, "duck", "duck", "duck", "duck"])
