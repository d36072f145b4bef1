"""Two kinds of error, as in python-chess: input that is not a game at all, and moves
that are well-formed but against the rules. Both are ValueErrors with a one-line message."""

from __future__ import annotations


class KniffelError(ValueError):
    """Base of every error the engine raises on bad input."""


class MalformedError(KniffelError):
    """The input is not well-formed: wrong type, unknown name, a die of 7, bad JSON."""


class IllegalMoveError(KniffelError):
    """The input is well-formed, but the rules do not allow it now."""
