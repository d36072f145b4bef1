"""The rules engine: Kniffel editions, variants, the Kniffel-Block and game records.

Knows nothing of cameras or HTTP. Typical use::

    game = Game.new("kniffel", players=["Anna", "Ben"])
    game.throw([2, 3, 4, 5, 6])
    [o for o in game.options() if o.legal]
    game.enter("large_straight")
    game.pop()  # undo
"""

from game.board import BoxOption, ColumnTotals, Game, GameState
from game.core import ANIMALS, PIPS, Announce, Entry, Face, Move, Throw
from game.errors import IllegalMoveError, KniffelError, MalformedError
from game.record import RecordError, dumps, loads, replay, to_record
from game.rules import RULESETS, VARIANTS, Rules, Ruleset, ruleset
from game.sheet import label, to_json, to_text

__all__ = [
    "ANIMALS", "PIPS", "RULESETS", "VARIANTS", "Announce", "BoxOption", "ColumnTotals",
    "Entry", "Face", "Game", "GameState", "IllegalMoveError", "KniffelError",
    "MalformedError", "Move", "RecordError", "Rules", "Ruleset", "Throw", "dumps", "label",
    "loads", "replay", "ruleset", "to_json", "to_record", "to_text",
]
