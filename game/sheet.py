"""The filled Kniffel-Block: as JSON for programs and as a printed table for people."""

from __future__ import annotations

from typing import Any

from game.board import BoxOption, Game

LABELS: dict[str, dict[str, str]] = {
    "de": {
        "ones": "Einser", "twos": "Zweier", "threes": "Dreier", "fours": "Vierer",
        "fives": "Fünfer", "sixes": "Sechser",
        "three_of_a_kind": "Dreierpasch", "four_of_a_kind": "Viererpasch",
        "full_house": "Full-House", "small_straight": "Kleine Straße",
        "large_straight": "Große Straße", "kniffel": "Kniffel", "chance": "Chance",
        "duck": "Ente", "lion": "Löwe", "mouse": "Maus", "cat": "Katze", "dog": "Hund",
        "elephant": "Elefant", "two_pairs": "Zwei Paare", "all_different": "Fünf verschiedene",
        "kids_three_of_a_kind": "Drilling", "kids_full_house": "Drilling + Paar",
        "kids_kniffel": "Tier-Kniffel",
        "upper_sum": "Gesamt oben", "bonus": "Bonus (ab 63: +35)",
        "upper_total": "Gesamt oberer Teil", "lower_sum": "Gesamt unterer Teil",
        "extra_bonus": "Kniffel-Zusatzpunkte", "total": "Endsumme", "column": "Spalte",
        "free": "frei", "down": "von oben", "up": "von unten", "announce": "Ansage",
    },
    "en": {
        "ones": "Ones", "twos": "Twos", "threes": "Threes", "fours": "Fours",
        "fives": "Fives", "sixes": "Sixes",
        "three_of_a_kind": "Three of a kind", "four_of_a_kind": "Four of a kind",
        "full_house": "Full house", "small_straight": "Small straight",
        "large_straight": "Large straight", "kniffel": "Kniffel", "chance": "Chance",
        "duck": "Duck", "lion": "Lion", "mouse": "Mouse", "cat": "Cat", "dog": "Dog",
        "elephant": "Elephant", "two_pairs": "Two pairs", "all_different": "Five different",
        "kids_three_of_a_kind": "Three alike", "kids_full_house": "Three + two",
        "kids_kniffel": "Animal Kniffel",
        "upper_sum": "Upper sum", "bonus": "Bonus (63 or more: +35)",
        "upper_total": "Upper total", "lower_sum": "Lower total",
        "extra_bonus": "Extra Kniffel bonus", "total": "Grand total", "column": "Column",
        "free": "free", "down": "down", "up": "up", "announce": "announce",
    },
}


def label(key: str, lang: str = "de", kids: bool = False) -> str:
    """The printed name of a box or a sum row."""
    table = LABELS.get(lang, LABELS["de"])
    if kids and f"kids_{key}" in table:
        return table[f"kids_{key}"]
    return table.get(key, key)


def option_json(option: BoxOption) -> dict[str, Any]:
    return {"column": option.column, "box": option.box, "points": option.points,
            "fits": option.fits, "legal": option.legal, "can_scratch": option.can_scratch,
            "extra_bonus": option.extra_bonus, "reason": option.reason}


def to_json(game: Game) -> dict[str, Any]:
    """The block as `kniffel replay --json` prints it (and the web API serves it)."""
    boxes = game.rules.boxes
    players = []
    for player in game.state.players:
        columns = []
        for column in player.columns:
            totals = game.column_totals(column)
            columns.append({
                "name": column.name,
                "boxes": dict(zip(boxes, column.boxes, strict=True)),
                "upper_sum": totals.upper_sum, "bonus": totals.bonus,
                "lower_sum": totals.lower_sum, "extra_bonus": totals.extra_bonus,
                "total": totals.total,
            })
        players.append({"name": player.name, "total": game.total(player), "columns": columns})
    turn = game.state.turn
    current: dict[str, Any] | None = None
    if not game.finished:
        current = {
            "player": game.current_player,
            "round": game.state.entries // len(game.players) + 1,
            "throws": [{"dice": list(t.dice), "held": None if t.held is None else list(t.held)}
                       for t in turn.throws],
            "announce": turn.announce,
            "options": [option_json(o) for o in game.options()],
        }
    return {
        "rules": game.rules.ruleset.name,
        "variants": list(game.rules.variants),
        "columns": list(game.rules.columns),
        "finished": game.finished,
        "winners": game.winners(),
        "players": players,
        "turn": current,
    }


def to_text(game: Game, lang: str = "de") -> str:
    """The block as printed: one row per box, one column per player and column."""
    rs = game.rules.ruleset
    kids = rs.name == "kids"
    heads: list[str] = []
    cols = []
    several = len(game.rules.columns) > 1
    for player in game.state.players:
        for column in player.columns:
            heads.append(f"{player.name} ({label(column.name, lang)})" if several
                         else player.name)
            cols.append((column, game.column_totals(column)))

    def cell(v: int | None) -> str:
        return "" if v is None else str(v)

    rows: list[tuple[str, list[str]]] = []
    for i, box in enumerate(rs.upper):
        rows.append((label(box, lang, kids), [cell(c.boxes[i]) for c, _ in cols]))
    if rs.upper_bonus_threshold is not None:
        rows.append((label("upper_sum", lang), [str(t.upper_sum) for _, t in cols]))
        rows.append((label("bonus", lang), [str(t.bonus) for _, t in cols]))
        rows.append((label("upper_total", lang),
                     [str(t.upper_sum + t.bonus) for _, t in cols]))
        rows.append(("-", []))
    for j, box in enumerate(rs.lower):
        i = len(rs.upper) + j
        rows.append((label(box, lang, kids), [cell(c.boxes[i]) for c, _ in cols]))
    if rs.upper_bonus_threshold is not None:
        rows.append((label("extra_bonus", lang), [str(t.extra_bonus) for _, t in cols]))
        rows.append((label("lower_sum", lang),
                     [str(t.lower_sum + t.extra_bonus) for _, t in cols]))
        rows.append((label("upper_total", lang),
                     [str(t.upper_sum + t.bonus) for _, t in cols]))
    rows.append(("-", []))
    rows.append((label("total", lang), [str(t.total) for _, t in cols]))

    first = max(len(name) for name, _ in rows)
    widths = [max(len(h), 4) for h in heads]
    header = " | ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True))
    lines = [" " * first + " | " + header]
    for name, values in rows:
        if name == "-":
            lines.append("-" * first + "-+-" + "-+-".join("-" * w for w in widths))
            continue
        lines.append(name.ljust(first) + " | " +
                     " | ".join(v.rjust(w) for v, w in zip(values, widths, strict=True)))
    title = rs.title + (f" + {', '.join(game.rules.variants)}" if game.rules.variants else "")
    status = ""
    if game.finished:
        win = "Sieger" if lang == "de" else "Winner"
        status = f"{win}: {', '.join(game.winners())}"
    elif game.state.entries or game.throws:
        status = (f"Am Zug: {game.current_player}" if lang == "de"
                  else f"To play: {game.current_player}")
    return "\n".join([title, *lines] + ([status] if status else [])) + "\n"
