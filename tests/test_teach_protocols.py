"""`make eval`'s taught sets (models/evaluate.py): where the teaching photos and the further
scenes are taken, in each of its protocols."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))

from evaluate import (  # noqa: E402
    GAME_THROWS,
    TWO_TABLE_TESTS,
    checked_by_players,
    teaching_scenes,
    two_table_scenes,
)

from vision.reading import DieLabel, DieReading, Reading, SceneLabel  # noqa: E402
from vision.synth.model import ART_SETS  # noqa: E402


def where(scene: Any) -> tuple[str, str, str]:
    """What makes a table: the camera, the table's surface and the light."""
    return repr(scene.camera), repr(scene.table), repr(scene.lighting)


def test_each_photo_on_its_own_table_read_on_other_tables() -> None:
    photos, tests = teaching_scenes(700001, scenes=4)
    assert list(photos) == list(ART_SETS["farm"])
    assert len({where(s) for s in photos.values()}) == 6
    assert not {where(s) for s in tests} & {where(s) for s in photos.values()}


def test_all_photos_on_one_table_read_on_other_tables() -> None:
    photos, tests = teaching_scenes(700004, scenes=4, kind="pips", one_teaching_table=True)
    assert list(photos) == [1, 2, 3, 4, 5, 6]
    (teaching_table,) = {where(s) for s in photos.values()}
    assert len({where(s) for s in tests}) == 4 and teaching_table not in {
        where(s) for s in tests}


def test_read_on_the_teaching_table() -> None:
    photos, tests = teaching_scenes(700002, scenes=4, same_table=True)
    (teaching_table,) = {where(s) for s in photos.values()}
    assert {where(s) for s in tests} == {teaching_table}


def test_every_die_is_of_the_one_set_and_a_photo_shows_its_face() -> None:
    photos, tests = teaching_scenes(700003, scenes=4, one_teaching_table=True)
    styles = {repr(d.style) for s in [*photos.values(), *tests] for d in s.dice}
    assert len(styles) == 1
    for face, scene in photos.items():
        assert {d.value for d in scene.dice} == {face}
        assert all(d.tilt_deg == 0 and d.z_mm == 0 for d in scene.dice)  # lying flat


def test_taught_at_two_tables_read_on_each_and_elsewhere() -> None:
    photos, tests, game = two_table_scenes(700005, kind="pips")
    first, second = ({where(s) for s in faces.values()} for faces in photos)
    assert len(first) == len(second) == 1 and first != second
    assert [(name, len(scenes)) for name, scenes in tests.items()] == list(TWO_TABLE_TESTS)
    assert {where(s) for s in tests["first table"]} == first
    assert {where(s) for s in tests["second table"]} == second
    assert len(game) == GAME_THROWS and {where(s) for s in game} == second
    assert {repr(s) for s in game}.isdisjoint(repr(s) for s in tests["second table"])
    elsewhere = {where(s) for s in tests["other tables"]}
    assert len(elsewhere) == 100 and not elsewhere & (first | second)
    styles = {repr(d.style) for s in [*photos[0].values(), *photos[1].values(),
                                      *tests["other tables"]] for d in s.dice}
    assert len(styles) == 1
    assert all({d.value for d in scene.dice} == {face}
               for faces in photos for face, scene in faces.items())


def test_a_game_throw_is_checked_as_players_enter_it() -> None:
    """`make eval`'s game at the second table: each die found takes its true value (a find
    that is no die, the value of a die missed), unsure where the table asked or was wrong;
    a leaning die is not taught; more finds than dice are not entered at all."""
    label = SceneLabel("throw.png", 640, 480, (
        DieLabel(1, (80, 80, 120, 120), (100, 100)), DieLabel(2, (280, 80, 320, 120), (300, 100)),
        DieLabel(3, (480, 80, 520, 120), (500, 100)), DieLabel(4, (80, 280, 120, 320), (100, 300))))

    def die(value: int, x: float, y: float, flag: str | None = None,
            confidence: float = 0.98) -> DieReading:
        return DieReading(value, confidence, x, y, (int(x) - 20, int(y) - 20, int(x) + 20,
                                                    int(y) + 20), flag)

    reading = Reading((die(1, 101, 99), die(5, 300, 100), die(6, 400, 400),
                       die(4, 100, 300, "tilted")))
    assert checked_by_players(reading, label) == [(101, 99, 1, False), (300, 100, 2, True),
                                                  (400, 400, 3, True)]
    unsure = Reading((die(1, 101, 99, "unreadable", confidence=0.6),))
    assert checked_by_players(unsure, label) == [(101, 99, 1, True)]
    assert checked_by_players(Reading(tuple(die(1, 100, 100) for _ in range(5))),
                              label) is None
