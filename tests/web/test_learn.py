"""A taught set learns the table it is played at from the dice people check (web.learn):
the real table service and camera link, with a reader of stand-in networks whose dice
are told apart by colour."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.vision.test_reader_logic import (
    ColourEmbedder,
    FixedDetector,
    cand,
    patch,
    quality,
)
from tests.web.conftest import Table
from vision.classifier import FaceScores
from vision.reader import Reader
from vision.reading import DieReading, Reading
from vision.teach import DiceSet, load_dice_set
from vision.watch import ObservedThrow, encode_jpeg, placeholder
from web.config import Config, TableConfig
from web.learn import CHECKED_PER_FACE, checked_dice, worth_learning
from web.serve import CameraLink
from web.service import MoveInfo, Scored

PLACES = [cand(80 + 120 * k, 240, 60) for k in range(5)]
HOME = {1: (0, 0, 200), 2: (0, 200, 0)}  # how ones and twos looked where they were taught
CLUB = {1: (0, 110, 200), 2: (0, 200, 110)}  # ... and look under the club's lamp


class Uncounting:
    """A stand-in classifier that takes every crop for a die but cannot count its pips, as
    for an unusual pip set: the set's photos read it (vision.reader.checked_by_pip_reading),
    and it learns tables all the same."""

    def classify(self, crops: list[np.ndarray], turned: Any = None) -> FaceScores:
        value = np.zeros((len(crops), 12))
        value[:, :6] = 1 / 6
        return FaceScores(value, np.array([quality()] * len(crops)))


class Watcher:
    """TableWatcher's interface; the test hands its throws to `on_throw` itself."""

    def __init__(self, camera: Any, reader: Any, table: Any,
                 on_throw: Callable[[Any], None], **_: Any) -> None:
        self.reader, self.on_throw = reader, on_throw

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def new_turn(self) -> None: ...

    def use(self, reader: Any = None, table: Any = None) -> None:
        if reader is not None:
            self.reader = reader


def frame(values: list[int], colours: dict[int, tuple[int, int, int]]) -> np.ndarray:
    picture = np.full((480, 640, 3), 90, np.uint8)
    for find, value in zip(PLACES, values, strict=True):
        x, y = int(find.x), int(find.y)
        picture[y - 30:y + 30, x - 30:x + 30] = colours[value]
    return picture


@dataclass
class Club:
    table: Table
    link: CameraLink
    watcher: Watcher

    def throw(self, values: list[int], colours: dict[int, tuple[int, int, int]] = CLUB
              ) -> Reading:
        """The camera sees `values` thrown; the players accept or correct every die the
        table asks about and enter the throw in a box."""
        picture = frame(values, colours)
        reading = self.link.reader.read(picture)
        self.watcher.on_throw(ObservedThrow(list(reading.values), [], reading,
                                            encode_jpeg(picture), False, []))
        phone = self.table.phone()
        state = phone.state()
        if state["pending"] is not None:
            for i, value in enumerate(values):
                if state["pending"]["dice"][i] != value or state["pending"]["flags"][i]:
                    phone.ok("corrections", index=i, value=value)
            if phone.state()["pending"] is not None:
                phone.ok("accept")
        box = phone.state()["suggested"]["box"]
        phone.ok("entries", box=box)
        return reading


@pytest.fixture
def club(table: Table) -> Club:
    home = DiceSet("holz", list(HOME), np.stack([patch(c) for c in HOME.values()])
                   ).embedded_with(ColourEmbedder())
    home.save(table.folder)
    reader = Reader(FixedDetector(PLACES), Uncounting(), home, embedder=ColourEmbedder())
    link = CameraLink(table.service, Config(), reader, open_camera=lambda config: object(),
                      watcher_class=Watcher, state_dir=table.folder)
    link.start()
    link._thread.join(5)
    assert link.watcher is not None
    return Club(table, link, link.watcher)  # type: ignore[arg-type]


def test_a_set_played_at_another_table_learns_it_from_the_dice_people_checked(
        club: Club) -> None:
    first = club.throw([1, 1, 2, 2, 1])
    assert all(d.flag == "unreadable" for d in first.dice)  # asked: unlike the photos
    throws = 1
    while club.link.learner.thread is None:  # type: ignore[union-attr]
        club.throw([2, 1, 2, 1, 2])
        throws += 1
    assert throws == 2 * CHECKED_PER_FACE // 5
    club.link.learner.thread.join(10)  # type: ignore[union-attr]
    saved = load_dice_set(club.table.folder, "holz")
    assert saved.patch_values == [1, 2] + [1, 1, 2, 2, 1] + [2, 1, 2, 1, 2]
    assert saved.played == [False] * 2 + [True] * 10  # what it learnt can be taken back
    assert club.link.reader.dice_set.patch_values == saved.patch_values  # type: ignore[attr-defined]
    assert club.watcher.reader is club.link.reader
    notice = club.table.service.state()["notice"]
    assert notice["code"] == "learnt_here"
    assert notice["text"] == ("dice set 'holz' learnt from the 10 dice checked here how "
                              "they look at this table")
    again = club.link.reader.read(frame([1, 2, 1, 2, 1], CLUB))
    assert again.values == [1, 2, 1, 2, 1] and not any(d.flag for d in again.dice)
    assert club.link.reader.read(frame([1, 2, 1, 2, 1], HOME)).values == [1, 2, 1, 2, 1]
    # Once per start: the set does not grow with every throw from now on.
    learnt = club.link.learner.thread  # type: ignore[union-attr]
    for _ in range(3):
        club.throw([1, 1, 2, 2, 1], {1: (150, 0, 200), 2: (150, 200, 0)})  # unsure again
    assert club.link.learner.thread is learnt  # type: ignore[union-attr]
    assert len(load_dice_set(club.table.folder, "holz").patch_values) == 12


def test_a_set_read_surely_at_the_table_does_not_learn(club: Club) -> None:
    for _ in range(4):
        club.throw([1, 1, 2, 2, 1], HOME)
    assert club.link.learner.thread is None  # type: ignore[union-attr]
    assert len(load_dice_set(club.table.folder, "holz").patch_values) == 2


def test_where_its_faces_are_not_told_apart_the_set_does_not_learn_and_stays_as_it_was(
        club: Club) -> None:
    before = (club.table.folder / "dice-sets" / "holz.npz").read_bytes()
    dim = {1: (60, 62, 62), 2: (60, 62, 62)}  # ones and twos look alike in this light
    while club.link.learner.thread is None:  # type: ignore[union-attr]
        club.throw([1, 2, 1, 2, 1], dim)
    club.link.learner.thread.join(10)  # type: ignore[union-attr]
    assert (club.table.folder / "dice-sets" / "holz.npz").read_bytes() == before
    assert club.link.reader.dice_set.patch_values == [1, 2]  # type: ignore[attr-defined]
    notice = club.table.service.state()["notice"]
    assert notice["code"] == "learn_refused"
    assert notice["text"] == ("dice set 'holz' could not learn from the 15 dice checked "
                              "here: they are too hard to tell apart in this light (more "
                              "light helps)")


def test_learning_is_off_where_the_config_says_so(club: Club) -> None:
    club.link.config = replace(club.link.config, table=TableConfig(learn=False))
    for _ in range(4):
        club.throw([1, 1, 2, 2, 1])
    assert club.link.learner.thread is None  # type: ignore[union-attr]


def test_a_set_that_learnt_much_learns_no_more(club: Club, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    monkeypatch.setattr("web.learn.MAX_DICE", 2)  # as many as the set holds
    for _ in range(4):
        club.throw([1, 1, 2, 2, 1])
    assert club.link.learner.thread is None  # type: ignore[union-attr]


def test_a_set_taught_anew_meanwhile_is_not_overwritten(club: Club) -> None:
    """The Calibrate page may teach the set anew while it learns: the new teaching stands."""
    club.throw([1, 1, 2, 2, 1])
    anew = DiceSet("holz", [1, 2, 3], np.stack([patch(c) for c in (*HOME.values(),
                                                                   (200, 0, 0))])
                   ).embedded_with(ColourEmbedder())
    anew.save(club.table.folder)
    club.throw([2, 1, 2, 1, 2])
    club.link.learner.thread.join(10)  # type: ignore[union-attr]
    assert load_dice_set(club.table.folder, "holz").patch_values == [1, 2, 3]
    assert club.link.reader.dice_set.patch_values == [1, 2]  # type: ignore[attr-defined]


def die(value: int | None, flag: str | None = None, confidence: float = 0.97) -> DieReading:
    return DieReading(value, confidence, 100.0, 100.0, (80, 80, 120, 120), flag)


def scored(dice: list[int], corrected: list[int] = ()) -> Scored:  # type: ignore[assignment]
    return Scored(tuple(dice), MoveInfo("camera", "camera", corrected=list(corrected)))


def throw(*dice: DieReading) -> ObservedThrow:
    return ObservedThrow([d.value for d in dice], [], Reading(dice), b"", False, [])


def test_the_checked_dice_of_a_throw() -> None:
    """Each die the camera read, with the value entered for it and whether the table was
    unsure of it; not the dice it did not see or that lean, and nothing where the throw
    entered is not the one read."""
    read = throw(die(1), die(2, "unreadable", 0.6), die(3, "unreadable"), die(4, "tilted"),
                 die(5))
    assert [(v, u) for *_, v, u in checked_dice(read, scored([1, 2, 3, 4, 6], [4])) or []] \
        == [(1, False), (2, True), (3, True), (6, True)]
    assert checked_dice(read, scored([1, 2, 3, 4, 6])) is None  # a 5 nobody corrected
    unseen = throw(die(1), die(2), die(3), die(4), placeholder())
    assert [v for *_, v, _ in checked_dice(unseen, scored([1, 2, 3, 4, 4], [4])) or []] \
        == [1, 2, 3, 4]
    six = throw(*(die(1) for _ in range(6)))
    assert checked_dice(six, scored([1, 1, 1, 1, 1])) is None


def test_what_a_set_learnt_at_tables_can_be_forgotten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`kniffel teach --dice-set NAME --forget-learnt` keeps what the photos taught."""
    from web.cli import main

    monkeypatch.setenv("KNIFFEL_STATE_DIR", str(tmp_path))
    colours = [*HOME.values(), *CLUB.values()]
    DiceSet("holz", [1, 2, 1, 2], np.stack([patch(c) for c in colours]),
            from_play=[False, False, True, True]).embedded_with(ColourEmbedder()).save(tmp_path)
    assert load_dice_set(tmp_path, "holz").played == [False, False, True, True]
    assert main(["teach", "--dice-set", "holz", "--forget-learnt"]) == 0
    assert capsys.readouterr().out == ("dice set 'holz' forgot the 2 dice it learnt at "
                                       "tables; it keeps the 2 its photos taught\n")
    kept = load_dice_set(tmp_path, "holz")
    assert kept.patch_values == [1, 2] and kept.played == [False, False]
    assert np.array_equal(kept.patches, np.stack([patch(c) for c in HOME.values()]))
    before = (tmp_path / "dice-sets" / "holz.npz").read_bytes()
    for argv, error in (
            (["--forget-learnt"], "dice set 'holz' has learnt nothing at a table"),
            (["--forget-learnt", "1=one.jpg"], "--forget-learnt takes no photos"),
            ([], "give a photo of each face: VALUE=PHOTO")):
        assert main(["teach", "--dice-set", "holz", *argv]) == 1
        assert capsys.readouterr().err.startswith(f"kniffel teach: {error}")
    assert (tmp_path / "dice-sets" / "holz.npz").read_bytes() == before


def test_a_set_keeps_what_it_learnt_only_where_its_dice_look_unlike_its_own(
        club: Club, monkeypatch: pytest.MonkeyPatch) -> None:
    """Played where it was taught, a set asks about dice it knows (faces alike): learning
    them there would not help (web.learn.UNFAMILIAR_SHARE)."""
    def taught(colours: list[tuple[int, int, int]]) -> DiceSet:
        return DiceSet("holz", [1, 2] * (len(colours) // 2),
                       np.stack([patch(c) for c in colours])).embedded_with(ColourEmbedder())

    home = taught(list(HOME.values()))
    assert home.recognised_share(taught([(0, 0, 190), (0, 190, 0)] * 3)) == 1.0
    assert home.recognised_share(taught([*HOME.values(), *CLUB.values()])) == 0.5
    assert not worth_learning(home, taught([(0, 0, 190), (0, 190, 0)]))
    assert worth_learning(home, taught(list(CLUB.values())))
    # The table's learner asks the same: here it is told every die looks familiar.
    before = (club.table.folder / "dice-sets" / "holz.npz").read_bytes()
    monkeypatch.setattr("web.learn.UNFAMILIAR_SHARE", 1.01)
    while club.link.learner.thread is None:  # type: ignore[union-attr]
        club.throw([1, 1, 2, 2, 1])
    club.link.learner.thread.join(10)  # type: ignore[union-attr]
    assert (club.table.folder / "dice-sets" / "holz.npz").read_bytes() == before
    assert club.link.reader.dice_set.patch_values == [1, 2]  # type: ignore[attr-defined]
    assert club.table.service.state()["notice"] is None
