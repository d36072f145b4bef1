"""A taught dice set learns the table it is played at from the dice people check there.

A set taught at home reads its dice worse at a club: other light, another camera. Every
throw entered in a box was checked by the players (they correct a misread die before they
choose), so its dice are labelled by the people at the table. Once they have checked enough
dice of every face, the table had to ask about or correct many of them, and many look
unlike the set's own dice, those dice are added to the set (vision.teach.learn,
DiceSet.adding: the same rules as `kniffel teach --add`), the set is saved and the camera
reads with it. Once per start of the table: a set does not grow with every evening at the
table where it reads surely.

On `make eval`'s unseen animal sets (models/README.md, "A set learns the table it is
played at"), a set taught at one table and played at a second learnt after 12–17 throws
and read the second table 95.6 / 88.2 / 98.1 → 100 / 99.6 / 100 %, as well as when six
photos taken there were added.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vision.reading import FLAGS, DieValue
from vision.teach import Checked, DiceSet, DiceSetError, learn, load_dice_set
from vision.watch import ObservedThrow
from web.service import DICE, Scored

log = logging.getLogger("kniffel.learn")

#: Checked dice of every face of the set before it learns (tuning seeds: with 3, 5 or 8
#: the sets learnt after 6–15, 9–17 or 13–23 throws and read the same within a die or two).
CHECKED_PER_FACE = 5
#: The set learns only where the table needed people: at least this share of the checked
#: dice was asked about or corrected. Where the set reads surely there is nothing to learn
#: (tuning seeds, session script `learnplay`: 5 and 14 % of the checked dice at two
#: second tables it read 100 %; 57–100 % at those it learnt).
UNSURE_SHARE = 0.25
#: ... and at least this share of the checked dice look unlike the set's dice
#: (DiceSet.recognised_share): a set played where it was taught asks about dice it knows
#: (of like faces), and learning them there made it ask more, not less (`make eval`'s
#: animal sets on their teaching tables: 159 / 315 / 194 → 185 / 318 / 215 asked, right
#: +1 / 0 / +1 of some 420 dice). Tuning seeds: 5–45 % unrecognised on five teaching
#: tables, 33–100 % on five second tables.
UNFAMILIAR_SHARE = 0.25
#: A set holding this many dice learns no more: each learning adds about 50 dice (some
#: 3 MB), which a set must embed anew after a model update (about 9 s here for 200 dice
#: with the embedder in 8-bit integers, 20 s in float32; several times that on a Pi).
#: Teaching it anew starts it afresh.
MAX_DICE = 200
#: Dice flagged so are not taught: they do not show their top face alone, or whole.
NOT_TAUGHT = ("tilted", "stacked", "cut")
assert set(NOT_TAUGHT) <= set(FLAGS)


#: A checked die: where it lay in the frame, the value entered for it, and whether the
#: table asked about it or it was corrected.
CheckedDie = tuple[float, float, DieValue, bool]


def worth_learning(dice_set: DiceSet, learnt: DiceSet) -> bool:
    """Whether the set should keep the dice it `learnt` here: enough of them look unlike
    its own dice (UNFAMILIAR_SHARE)."""
    return 1.0 - dice_set.recognised_share(learnt) >= UNFAMILIAR_SHARE


def learnt_here(reader: Any, dice_set: DiceSet, throws: Iterable[Checked]) -> DiceSet | None:
    """`dice_set` with the dice checked in `throws` added (vision.teach.learn, as `reader`,
    the table's reader of the set, finds them), or None where it should not keep them
    (worth_learning). Raises DiceSetError where the dice cannot be taught
    (vision.teach.learn, DiceSet.adding). `make eval` learns by it too."""
    addition = learn(reader, dice_set.name, throws)
    return dice_set.adding(addition) if worth_learning(dice_set, addition) else None


@dataclass
class CheckedDice:
    """The dice people checked at the table so far (each throw's frame and its dice), and
    whether they are enough to learn from: CHECKED_PER_FACE of every face, UNSURE_SHARE of
    them asked about or corrected. `make eval` plays its games by the same rule."""

    #: Each throw's frame (as the table keeps it: the camera's JPEG) and its dice.
    throws: list[tuple[Any, list[tuple[float, float, DieValue]]]] = field(
        default_factory=list)
    faces: Counter[DieValue] = field(default_factory=Counter)
    unsure: int = 0

    def add(self, frame: Any, dice: Sequence[CheckedDie]) -> None:
        self.throws.append((frame, [(x, y, value) for x, y, value, _ in dice]))
        self.faces.update(value for _, _, value, _ in dice)
        self.unsure += sum(unsure for *_, unsure in dice)

    def enough(self, faces: Sequence[DieValue]) -> bool:
        return all(self.faces[face] >= CHECKED_PER_FACE for face in faces) \
            and self.unsure >= UNSURE_SHARE * sum(self.faces.values())


class TableLearner:
    """Collects the dice people check at the table, and teaches them to the set being read
    (`reader()`'s taught set) once: `observed` gets every throw the camera reads,
    `scored` every throw entered in a box, `new_turn` each new turn, `reset` a new reader
    (the set taught anew, or another set). `on_learnt(reader)` gets a reader of the set
    that learnt; `say(code, text)` tells the table."""

    def __init__(self, state_dir: Path, reader: Callable[[], Any],
                 on_learnt: Callable[[Any], None], say: Callable[[str, str], None]) -> None:
        self.state_dir = state_dir
        self.reader = reader
        self.on_learnt = on_learnt
        self.say = say
        self._lock = threading.RLock()  # on_learnt resets it (CameraLink.use)
        self._last: ObservedThrow | None = None
        self._checked = CheckedDice()
        self._generation = 0
        self._done = False
        self.thread: threading.Thread | None = None

    def reset(self) -> None:
        """Another reader reads the table: what was checked for the last one is dropped
        (a set learns at most once per start all the same)."""
        with self._lock:
            self._generation += 1
            self._last = None
            self._checked = CheckedDice()

    # Once it has learnt (or begun to), the learner is done for this start: it answers
    # without its lock, which the learning holds while it saves the set, so neither the
    # camera loop nor a phone's change waits for that.

    def observed(self, throw: ObservedThrow) -> None:
        if self._done:
            return
        with self._lock:
            self._last = throw

    def new_turn(self) -> None:
        if self._done:
            return
        with self._lock:
            self._last = None

    def scored(self, scored: Scored) -> None:
        """A throw entered in a box: where it is the camera's last reading of the turn,
        its dice as entered join the checked dice."""
        if self._done:
            return
        reader = self.reader()
        dice_set = getattr(reader, "dice_set", None)
        if not isinstance(dice_set, DiceSet) or len(dice_set.patch_values) >= MAX_DICE:
            return
        with self._lock:
            throw = self._last
            if self._done or throw is None \
                    or scored.info.source != "camera":
                return
            checked = checked_dice(throw, scored)
            if checked is None:
                return
            self._checked.add(throw.frame_jpeg, checked)
            if not self._checked.enough(dice_set.faces):
                return
            self._done = True
            work = (list(self._checked.throws), self._generation)
        self.thread = threading.Thread(target=self._learn, args=(reader, dice_set, *work),
                                       name="learn-table", daemon=True)
        self.thread.start()

    def _learn(self, reader: Any, dice_set: DiceSet,
               checked: list[tuple[bytes, list[tuple[float, float, DieValue]]]],
               generation: int) -> None:
        throws = (Checked(frame, dice) for jpeg, dice in checked  # one frame at a time
                  if (frame := cv2.imdecode(np.frombuffer(jpeg, np.uint8),
                                            cv2.IMREAD_COLOR)) is not None)
        count = sum(len(dice) for _, dice in checked)
        try:
            learnt = learnt_here(reader, dice_set, throws)
            if learnt is None:
                log.info("dice set %r knows how its dice look here: nothing learnt from %d "
                         "checked dice", dice_set.name, count)
                return
        except Exception as exc:  # the game goes on whatever learning meets
            log.info("dice set %r did not learn from %d checked dice: %s", dice_set.name,
                     count, exc)
            if not isinstance(exc, DiceSetError):
                return
            self.say("learn_refused", f"dice set {dice_set.name!r} could not learn from "
                     f"the {count} dice checked here: they are too hard to tell apart in "
                     "this light (more light helps)")
            return
        with self._lock:
            if generation != self._generation or not self._unchanged_on_disk(dice_set):
                return  # taught anew (or another set chosen) meanwhile: that one stands
            try:
                learnt.save(self.state_dir)
            except OSError as exc:
                log.warning("dice set %r learnt this table but cannot be saved: %s",
                            dice_set.name, exc)
                return
            self.on_learnt(reader.reading(learnt))
        log.info("dice set %r learnt this table from %d checked dice", dice_set.name, count)
        self.say("learnt_here", f"dice set {dice_set.name!r} learnt from the {count} dice "
                 "checked here how they look at this table")

    def _unchanged_on_disk(self, dice_set: DiceSet) -> bool:
        """Whether the set saved under its name is still the one that learnt."""
        with contextlib.suppress(DiceSetError):
            saved = load_dice_set(self.state_dir, dice_set.name)
            return saved.patch_values == dice_set.patch_values \
                and np.array_equal(saved.patches, dice_set.patches)
        return False


def checked_dice(throw: ObservedThrow, scored: Scored) -> list[CheckedDie] | None:
    """The dice of the camera's reading `throw` that people checked in `scored`: where each
    lay, the value entered for it, and whether the table asked about it or it was
    corrected. None where the reading is not the throw entered (more dice seen than
    played, or a value that differs though nobody corrected it)."""
    dice = throw.reading.dice
    if len(dice) > DICE or len(scored.dice) != DICE:
        return None
    out = []
    for i, (die, value) in enumerate(zip(dice, scored.dice, strict=False)):
        corrected = i in scored.info.corrected
        if not corrected and die.value != value:
            return None
        if die.value is None and die.confidence == 0.0 and not any(die.box):
            continue  # a die the camera did not see (a placeholder)
        if die.flag in NOT_TAUGHT:
            continue
        unsure = corrected or die.asked
        out.append((die.x, die.y, value, unsure))
    return out
