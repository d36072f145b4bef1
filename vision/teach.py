"""Teach the reader a new dice set from a few photos ("put every die duck-up").

Real dice never look exactly like the ones we trained on. The face embedder
(vision/embedder.py) was trained to tell about 1200 faces apart, so a new set is learnt
without training: the dice of each photo are found (a find unlike the other dice of its
value is left out) and stored as patches, cut in several rotations and sizes, as they are
and foreshortened, and embedded; reading then takes the value whose stored embeddings are
nearest (cosine), with the classifier's mix of the built-in faces as a second opinion
(SIGNATURE_WEIGHT), and keeps a find the set recognises even where the classifier, which
knows only the built-in faces, sees no die. Seconds on a Pi. The patches are kept with the
set: after a model update the set is embedded again from them, so a taught set outlives the
model it was taught with.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import NamedTuple, Protocol

import cv2
import numpy as np

from vision.classifier import QUALITY, FaceScores
from vision.detector import Candidate
from vision.embedder import Embedder
from vision.files import write_durably
from vision.judge import Judge
from vision.preprocess import CROP_SCALE, CROP_SIZE, crop_die
from vision.reading import ANIMALS, PIP_VALUES, DieValue

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
RESERVED = ("auto", "pips", "animals")
#: Rotations of every taught crop: a die lands any way round.
ROTATIONS = tuple(range(0, 360, 30))
#: Sizes of every taught crop, relative to the found die: the detector's size varies.
SCALES = (0.92, 1.08)
#: Every taught die is also stored foreshortened — squashed to these shares along one
#: axis, which the rotations turn every way — as it would look from a camera tilted about
#: 30° and 45° further: on other tables the view is what differs most. On `make eval`'s
#: taught sets (seeds 700001–6) other tables read 69.25 / 67.76 / 84.77 / 89.18 / 84.95 /
#: 94.63 → 69.01 / 71.73 / 88.45 / 88.40 / 85.46 / 95.12 %, the teaching tables the same or
#: better (set C 93.27 → 94.71 %), silent errors 26 → 23; on the tuning seeds 710001–6 other
#: tables +1 point on average, silent errors 10 → 5. Three times the crops to embed:
#: teaching 15 dice (`make bench`) 1.2 instead of 0.8 s on the 2-core development machine;
#: cut at one size only (48 views, not 72) the other tables gained 0.8 instead of 1.3
#: points.
FORESHORTEN = (0.85, 0.7)
#: A stored patch spans this many die sizes at PATCH_PIXELS: one die is CROP_SIZE pixels
#: in it, with room for every rotation and scale of the crop.
PATCH_SPAN = 1.625
PATCH_PIXELS = round(CROP_SIZE * PATCH_SPAN)
PATCH_DIE_PIXELS = PATCH_PIXELS / (PATCH_SPAN * CROP_SCALE)  # a die's size in a patch
#: Sharpness of the similarity → probability softmax, and: a die less similar than FAMILIAR
#: to every taught crop does not look like the taught photos (other light, a steep view, a
#: die of another set), so its confidence is capped at that similarity and the table asks.
#: Both chosen for the shipped embedder on unseen-art sets of seeds 710001–710003 (not the
#: 7000xx sets `make eval` reports), tested on the table of the teaching photos (1348 dice)
#: and on other tables (1302): of 0.03–0.08 × 0.8–0.9, the pair that asks least at the
#: teaching table with about 0.2 % silent errors there (3 of 1348, 587 asked) and fewer on
#: other tables than the classifier's old embedding (8 against its 22). Sharper (0.03) asks
#: less than half as often there but errs silently 11 times; softer (0.08) never errs but asks
#: about four dice in five.
#: Whitened (models/whiten_embedder.py), right reads lie further from the other faces: the
#: teaching tables ask less with the same pair (seeds 710001–3: 796 → 617 dice), and the
#: pair is kept (a FAMILIAR matched to the whitened scale, 0.8–0.86, would ask less still).
TEMPERATURE = 0.05
FAMILIAR = 0.9
#: The classifier knows only the built-in faces and may take a die with other art for no
#: die at all (on the teaching table of one unseen set, one face in six was dropped so). A
#: find at least this similar to a taught die is kept as a die (vision.reader), still as
#: unsure as the classifier is. Chosen on seeds 710001–710006 (three unseen-art and three
#: pip sets, other tables and the teaching table: 118 dice the classifier dropped): 0.96
#: with a detector score of at least 0.4 keeps 26 of them and 9 finds that are no die
#: (0.93: 35 and 30; 0.9: 41 and 43). That was the unwhitened embedder's scale; whitened
#: (models/whiten_embedder.py) the same finds lie lower: 0.96 there is 0.938 for the
#: unseen animal sets, 0.89–0.91 for the pip sets (quantiles of every find's similarity,
#: seeds 710001–6, session script `recalib`), and 0.93 warns of unfamiliar dice as often as
#: 0.96 did (teaching tables 3 of 600 frames, as before).
RECOGNISED = 0.93
#: A teaching photo may hold a find that is no die of its value (the tablecloth, a pencil,
#: a die seen from the side): it is left out if its median similarity to the other dice of
#: its value is more than this below the most typical die's (vision.teach.odd_ones_out).
#: On the teaching photos of seeds 710001–710012 (24 sets) the finds more than 0.6 below
#: were a tablecloth, a pencil and three dice showing other pips; 0.3–0.6 below were dice
#: in poor light or at the edge, which are worth teaching.
ODD_GAP = 0.6
#: A face's similarity to a die: the mean of its NEAREST most similar taught crops (1, 6,
#: 12 and 24 were no better on the seeds above).
NEAREST = 3
#: The classifier knows only the built-in faces. Where it takes every find in the photos
#: of a value for no die (art it never saw: on the bear photo of the unseen set of seed
#: 700002 the shipped classifier dropped three bears of five, a retrained one all five, and
#: teaching refused the set), the finds at least this sure to the detector are taught
#: instead (odd_ones_out still leaves out one unlike the others) — the score at which the
#: reader keeps a find a taught set recognises (Judge.keep_recognised_score). Not in
#: every photo: beside the dice the classifier keeps, such finds taught bits of tablecloth
#: and trays as dice (seeds 710001–6: 44 more extra finds on one table).
SURE_FIND = 0.4
#: The dice of one set in one photo are about one size (on the validation scenes 800001–2
#: the largest die of a frame is at most 1.6 times the smallest with the camera within 30°
#: of vertical, 2.1 times in 99 frames of 100 at 30–60°): a find more than this factor larger or
#: smaller than the photo's surest die (detector score × the classifier's belief that it is
#: a die) is something else — on the real Train photo of the fours, two laptop keys of a
#: quarter of a die's size, which were taught as fours beside the two dice.
ODD_SIZE = 2.0
#: In a pip set the classifier counts (DiceSet.counted), a taught die it counts as another
#: value with at least this probability is left out: a die the user did not turn.
MISCOUNTED = 0.9
#: Where at least this share of the taught dice lie nearer another face than their own
#: (DiceSet.look_alike), the photos do not tell the faces apart, and the user is told
#: (teaching_doubts). On the teaching tables of 20 sets (tuning seeds 710001–6, 710007–10
#: in both kinds, and `make eval`'s 700001–6) the two at 0.16 and 0.17 read 45 and 81 % of
#: their further dice right; of the 18 under 0.1 (at most 2 dice nearer another face),
#: 17 read 96–100 %, one 85 % (large dice the detector missed, which no look at the taught
#: faces can tell).
LOOK_ALIKE = 0.1
#: A taught art set's die is read by its embeddings, and the classifier, which knows only
#: the built-in faces, still reads it as some mix of them: each taught face gets such a mix
#: of its own (its signature, `DiceSet.signatures`), and how alike a die's mix is to each
#: face's (`signature_similarities`: 0–1) is added to the embeddings' evidence with this
#: weight, where the embeddings' similarities have 1 / TEMPERATURE (20): a second opinion,
#: weaker than the first. On the teaching photos' own tables the classifier's mix alone
#: names 52–88 % of the dice of nine unseen animal sets (seeds 710001–3, 710007–12), the
#: embeddings 68–100 %, and where the two agree a die the embeddings read less surely is
#: mostly right. There, with weight 4, the table asked about 2444 of 4043 dice read, not
#: 2745, and read 3399 of 3705 readable dice right, not 3378, with 2 silent errors as
#: before; on other tables than the teaching photos' 3364 instead of 3436, 2981 right
#: instead of 2994, silent errors 3 → 2. Replayed on the logged readings, 5 asked a little
#: less and 6 began to err silently more. `make eval`'s farm sets: models/README.md, "The
#: classifier's mix as a second opinion on a taught set". A pip set the classifier counts is
#: read by its count instead (vision.reader.checked_by_pip_reading); one it cannot count
#: is read with the opinion too: on the four teachings of the tuning pip sets (710004–6,
#: 8, 10, 12) it could not count, 1286 of 1491 readable dice right instead of 1282, 1075
#: asked instead of 1149, the same 6 silent errors.
#: 0: embeddings alone.
SIGNATURE_WEIGHT = 4.0


class DiceSetError(ValueError):
    """A dice set that cannot be taught or loaded; the message says why in one line."""


@dataclass
class DiceSet:
    name: str
    patch_values: list[DieValue]  # the value of each taught die
    patches: np.ndarray  # N x PATCH_PIXELS x PATCH_PIXELS x 3 (BGR), the taught dice
    counted: bool = False  # a pip set whose teaching photos the classifier counted right
    embedder: str = ""  # version of the embedder that made `embeddings`
    labels: list[DieValue] = field(default_factory=list)  # one per stored embedding
    embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    #: Per taught die: learnt at a table from the throws people checked (`learn`), not
    #: from photos (empty: none was; `played` reads it).
    from_play: list[bool] = field(default_factory=list)

    @property
    def faces(self) -> list[DieValue]:
        return list(dict.fromkeys(self.patch_values))

    @property
    def pips(self) -> bool:
        """A pip set (faces 1 to 6): the reader checks it against the classifier's count."""
        return bool(self.patch_values) and all(v in PIP_VALUES for v in self.patch_values)

    def embedded_with(self, embedder: Embedder) -> DiceSet:
        """This set with its patches embedded by `embedder` (itself if they already are)."""
        version = embedding_version(embedder)
        if self.embedder == version and len(self.embeddings):
            return self
        crops = [crop_die(view, PATCH_PIXELS / 2, PATCH_PIXELS / 2, PATCH_DIE_PIXELS * s,
                          angle=a)
                 for patch in self.patches
                 for view in (patch, *(foreshortened(patch, k) for k in FORESHORTEN))
                 for a in ROTATIONS for s in SCALES]
        labels = [v for v in self.patch_values for _ in range(CROPS_PER_DIE)]
        return replace(self, embedder=version, labels=labels,
                       embeddings=embedder.embed(crops).astype(np.float32))

    @property
    def crops_per_die(self) -> int:
        """How many stored embeddings (views × rotations × sizes of its crop) each taught
        die has."""
        return len(self.labels) // max(len(self.patch_values), 1)

    def keeping(self, indices: Sequence[int]) -> DiceSet:
        """This set with only the taught dice at `indices` (and their embeddings)."""
        per_die = self.crops_per_die
        rows = [i * per_die + j for i in indices for j in range(per_die)]
        played = self.played
        return replace(self, patch_values=[self.patch_values[i] for i in indices],
                       patches=self.patches[list(indices)],
                       labels=[self.labels[r] for r in rows], embeddings=self.embeddings[rows],
                       from_play=[played[i] for i in indices])

    @property
    def played(self) -> list[bool]:
        """Per taught die: was it learnt at a table (`from_play`)?"""
        return self.from_play or [False] * len(self.patch_values)

    def forgetting_play(self) -> DiceSet:
        """This set without the dice it learnt at tables: as its photos taught it."""
        played = self.played
        if not any(played):
            raise DiceSetError(f"dice set {self.name!r} has learnt nothing at a table")
        return self.keeping([i for i, learnt in enumerate(played) if not learnt])

    def values(self, embeddings: np.ndarray, opinion: np.ndarray | None = None
               ) -> tuple[list[DieValue], np.ndarray, np.ndarray]:
        """Nearest taught face of each embedding, with a probability from the similarities
        (capped for a die unlike anything taught: FAMILIAR), and whether the set recognises
        it as one of its dice (RECOGNISED). `opinion` (M x faces): a second opinion's
        log-evidence for each face, added to the similarities' (SIGNATURE_WEIGHT)."""
        if len(embeddings) == 0:
            return [], np.zeros(0), np.zeros(0, bool)
        if not len(self.embeddings):
            raise DiceSetError(f"dice set {self.name!r} is not embedded yet")
        faces = self.faces
        sims = embeddings @ self.embeddings.T  # M x N
        per_face = self.face_similarities(sims)
        z = (per_face - per_face.max(axis=1, keepdims=True)) / TEMPERATURE
        if opinion is not None:
            z = z + opinion - opinion.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        best = p.argmax(axis=1)
        nearest = sims.max(axis=1)
        prob = p[np.arange(len(best)), best]
        prob = np.where(nearest < FAMILIAR, np.minimum(prob, nearest), prob)
        return [faces[int(i)] for i in best], prob, nearest >= RECOGNISED

    def signatures(self, classify: Callable[[list[np.ndarray]], FaceScores]) -> np.ndarray:
        """Each face's signature (faces x the classifier's FACES): the mean of the value
        probabilities `classify` reads in its taught dice, each cut from its patch as the
        reader cuts a die (SIGNATURE_WEIGHT)."""
        centre = PATCH_PIXELS / 2
        crops = [crop_die(patch, centre, centre, PATCH_DIE_PIXELS) for patch in self.patches]
        value = classify(crops).value
        faces = self.faces
        labels = np.array([faces.index(v) for v in self.patch_values])
        return np.stack([value[labels == k].mean(axis=0) for k in range(len(faces))])

    def face_similarities(self, sims: np.ndarray) -> np.ndarray:
        """Each row's similarity to each of `faces` (M x faces): the mean of its NEAREST
        most similar taught crops of that face, from `sims`, its similarities to the stored
        embeddings (M x N; a stored crop set to -inf has no say)."""
        return np.stack([np.sort(sims[:, columns], axis=1)[:, -NEAREST:].mean(axis=1)
                         for columns in self._face_columns], axis=1)

    @cached_property
    def _face_columns(self) -> list[np.ndarray]:
        """The stored embeddings of each of `faces`, found once: every read needs them (a
        set is changed only by `replace`, which makes a new one)."""
        face_of = {face: k for k, face in enumerate(self.faces)}
        labels = np.array([face_of[lab] for lab in self.labels], np.intp)
        return [np.flatnonzero(labels == k) for k in range(len(face_of))]

    def recognised_share(self, dice: DiceSet) -> float:
        """The share of `dice` (another set's taught dice, embedded alike) this set
        recognises as its own (RECOGNISED), each by its crop as the reader cuts it (the
        first stored: as it is, unturned)."""
        if not len(dice.patch_values):
            return 1.0
        return float(np.mean(self.values(dice.embeddings[::dice.crops_per_die])[2]))

    def look_alike(self) -> list[tuple[DieValue, DieValue]]:
        """The taught dice that lie nearer another face than their own, as (own face,
        that face): each die read as the reader reads, by its stored crops, among the
        other dice's (leave one out; a face taught from a single die cannot be judged)."""
        return [(self.patch_values[i], face) for i, face in self._nearer_other_faces]

    @cached_property
    def _nearer_other_faces(self) -> list[tuple[int, DieValue]]:
        """(index, nearest face) of each taught die nearer another face than its own
        (look_alike), found once: `learn` asks twice."""
        if not len(self.embeddings):
            raise DiceSetError(f"dice set {self.name!r} is not embedded yet")
        die_of = np.repeat(np.arange(len(self.patch_values)), self.crops_per_die)
        sims = self.embeddings @ self.embeddings.T
        sims[die_of[:, None] == die_of[None, :]] = -np.inf  # each die's own views
        per_die = self.face_similarities(sims).reshape(len(self.patch_values),
                                                       self.crops_per_die, -1).mean(axis=1)
        faces = self.faces
        nearest = [faces[int(k)] for k in per_die.argmax(axis=1)]
        return [(i, face) for i, (value, face)
                in enumerate(zip(self.patch_values, nearest, strict=True))
                if face != value and self.patch_values.count(value) > 1]

    def adding(self, addition: DiceSet) -> DiceSet:
        """This set taught further with `addition`, the same dice photographed elsewhere
        (other light, camera or table): both teachings are kept, so the set reads its dice
        where either was taught. `addition` shows every face of this set (it may add
        faces): a few faces learnt in new light pull dice of the other faces to them. And
        teaching must not doubt its photos (teaching_doubts): added, doubted photos made
        sets that read well elsewhere worse (models/README.md, "A set taught in a second
        place"). Both sets are embedded alike."""
        missing = [face for face in self.faces if face not in addition.faces]
        if missing:
            raise DiceSetError(f"to add to dice set {self.name!r}, give a photo of every "
                               f"face it has (missing: {', '.join(map(str, missing))})")
        check_one_kind(self.faces + addition.faces)
        if self.embedder != addition.embedder:
            raise DiceSetError(f"dice set {self.name!r} and its addition are embedded "
                               "differently; embed both with one embedder")
        # Dice learnt at a table (`learn`) were checked by the players: only whether they
        # tell the faces apart counts, not whether the classifier counts them.
        doubts = (look_alike_doubts(addition) if addition.played and all(addition.played)
                  else teaching_doubts(addition))
        if doubts:
            raise DiceSetError(f"these photos were not added to dice set {self.name!r}, "
                               f"which is as it was: {' '.join(doubts)}")
        return replace(self, patch_values=self.patch_values + addition.patch_values,
                       patches=np.concatenate([self.patches, addition.patches]),
                       counted=self.counted and addition.counted,
                       labels=self.labels + addition.labels,
                       embeddings=np.concatenate([self.embeddings, addition.embeddings]),
                       from_play=self.played + addition.played)

    def save(self, state_dir: Path) -> Path:
        """Store the set in `state_dir`, whole or not at all (vision.files)."""
        path = state_dir / "dice-sets" / f"{self.name}.npz"
        write_durably(path, lambda f: np.savez_compressed(
            f, patches=self.patches.astype(np.uint8),
            patch_values=np.array(json.dumps(self.patch_values)),
            counted=np.array(self.counted), embedder=np.array(self.embedder),
            embeddings=self.embeddings.astype(np.float32),
            labels=np.array(json.dumps(self.labels)), from_play=np.array(self.played, bool)))
        return path


#: Stored embeddings per taught die: as it is and foreshortened, each in every rotation
#: and size.
CROPS_PER_DIE = (1 + len(FORESHORTEN)) * len(ROTATIONS) * len(SCALES)


def signature_similarities(value_probs: np.ndarray, signatures: np.ndarray) -> np.ndarray:
    """How alike each row of the classifier's `value_probs` (M x its faces) is to each
    face's signature (`DiceSet.signatures`): their Bhattacharyya coefficient, 1 for the
    same mix, 0 for mixes with no face in common (M x faces)."""
    alike: np.ndarray = np.sqrt(np.clip(value_probs, 0.0, None)) @ np.sqrt(
        np.clip(signatures, 0.0, None)).T
    return alike


def foreshortened(patch: np.ndarray, share: float) -> np.ndarray:
    """The patch squashed to `share` of its height about its centre (the die as seen from
    a camera tilted further towards or away from it)."""
    h, w = patch.shape[:2]
    m = np.array([[1, 0, 0], [0, share, (1 - share) * h / 2]], np.float32)
    return cv2.warpAffine(patch, m, (w, h), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REPLICATE)


def embedding_version(embedder: Embedder) -> str:
    """What made a set's stored embeddings: the embedder and the views of each taught die
    (a set stored otherwise is embedded again from its patches)."""
    return f"{embedder.version} foreshortened {','.join(map(str, FORESHORTEN))}"


def check_name(name: str) -> str:
    if not NAME_PATTERN.match(name) or name in RESERVED:
        raise DiceSetError(f"dice set name {name!r}: use letters, digits, '-', '_' or '.' "
                           f"(not {', '.join(RESERVED)})")
    return name


#: How a saved set's file (.npz, a zip archive) begins.
NPZ_MAGIC = b"PK\x03\x04"
#: What numpy raises for a saved set's file that is damaged (cut short, overwritten).
DAMAGED_FILE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


def load_dice_set(state_dir: Path, name: str) -> DiceSet:
    check_name(name)
    path = state_dir / "dice-sets" / f"{name}.npz"
    if not path.is_file():
        known = sorted(p.stem for p in (state_dir / "dice-sets").glob("*.npz")) \
            if (state_dir / "dice-sets").is_dir() else []
        raise DiceSetError(f"no dice set {name!r} (taught: {', '.join(known) or 'none'})")
    try:
        with open(path, "rb") as f:  # else numpy takes it for a pickle it will not load
            if f.read(len(NPZ_MAGIC)) != NPZ_MAGIC:
                raise DiceSetError(f"dice set {name!r} is damaged (not a dice set file); "
                                   "teach it again")
        with np.load(path) as data:
            if "patches" not in data:
                raise DiceSetError(f"dice set {name!r} was taught by an older version that "
                                   f"kept no photos of the dice; teach it again")
            return DiceSet(name, json.loads(str(data["patch_values"])), data["patches"],
                           "counted" in data and bool(data["counted"]), str(data["embedder"]),
                           json.loads(str(data["labels"])), data["embeddings"],
                           _played(data))
    except DAMAGED_FILE as exc:
        if isinstance(exc, DiceSetError):
            raise
        raise DiceSetError(f"dice set {name!r} is damaged ({exc}); teach it again") from None


def taught_sets(state_dir: Path) -> dict[str, list[DieValue]]:
    """The dice sets taught in `state_dir`, each with its faces (a damaged file is left
    out: loading it says why)."""
    return {name: list(dict.fromkeys(values)) for name, values, _ in _saved_sets(state_dir)}


def learnt_at_tables(state_dir: Path) -> dict[str, int]:
    """How many dice each set taught in `state_dir` learnt at tables (web.learn): the
    sets that learnt any, which DiceSet.forgetting_play can take back."""
    return {name: sum(played) for name, _, played in _saved_sets(state_dir) if any(played)}


def _saved_sets(state_dir: Path) -> Iterator[tuple[str, list[DieValue], list[bool]]]:
    """Each set saved in `state_dir`: its name, its dice's faces and which of them were
    learnt at a table, read without their patches."""
    for path in sorted((state_dir / "dice-sets").glob("*.npz")):
        if not NAME_PATTERN.match(path.stem):  # e.g. an older version's unfinished .NAME.tmp.npz
            continue
        try:
            with np.load(path) as data:
                values, played = json.loads(str(data["patch_values"])), _played(data)
        except DAMAGED_FILE:
            continue
        yield path.stem, values, played


def _played(data: Mapping[str, np.ndarray]) -> list[bool]:
    """A saved set's `from_play` (sets saved before 2026-11-27 have none: [])."""
    return [bool(b) for b in data["from_play"]] if "from_play" in data else []


def parse_value(text: str) -> DieValue:
    """A face as a user names it ("4", "duck", "Duck"): one the game knows, pips 1 to 6 or
    an animal, else DiceSetError. (`teach` itself takes any names: make eval teaches
    art the game does not know under its own names.)"""
    value: DieValue = int(text) if text.strip().isdigit() else text.strip().lower()
    if value not in PIP_VALUES and value not in ANIMALS:
        raise DiceSetError(f"{value!r} is not a face of a die: 1 to 6, or "
                           f"{', '.join(ANIMALS)}")
    return value


def check_one_kind(values: Sequence[DieValue]) -> None:
    """A set's faces are all pips or all pictures: no die shows both."""
    if len({value in PIP_VALUES for value in values}) > 1:
        raise DiceSetError("a dice set has pips (1 to 6) or animals, not both")


def check_photos_differ(photos: Mapping[DieValue, Sequence[np.ndarray]]) -> None:
    """One photo given for two faces is a slip that would teach the set nonsense."""
    seen: dict[bytes, DieValue] = {}
    for value, frames in photos.items():
        for frame in frames:
            key = hashlib.sha1(np.ascontiguousarray(frame).tobytes()).digest()
            if seen.setdefault(key, value) != value:
                raise DiceSetError(f"the same photo is given for {seen[key]!r} and {value!r}: "
                                   "take one photo per face")


class Teacher(Protocol):
    """What teaching needs of a reader (vision.reader.Reader, or the table's view of the
    camera's reader): the photo turned as it is read (and a point of it), its finds with
    what the classifier reads in them, its judge (which finds are side faces or cut by the
    frame), and its embedder."""

    @property
    def embedder(self) -> Embedder: ...

    def upright(self, frame_bgr: np.ndarray) -> np.ndarray: ...

    def upright_point(self, x: float, y: float, width: int, height: int
                      ) -> tuple[float, float]: ...

    def finds(self, frame_bgr: np.ndarray, weigh: bool = True
              ) -> tuple[list[Candidate], list[np.ndarray], FaceScores]: ...

    @property
    def judge(self) -> Judge: ...


def teach(reader: Teacher, name: str, photos: Mapping[DieValue, Sequence[np.ndarray]]
          ) -> tuple[DiceSet, dict[DieValue, int]]:
    """Learn a set from photos in which every die shows the given value, as `reader` finds
    and reads them. Returns the set and how many dice were taught per value.
    """
    check_name(name)
    if len(photos) < 2:
        raise DiceSetError("teach at least two values (e.g. duck=duck.jpg lion=lion.jpg)")
    check_one_kind(list(photos))
    check_photos_differ(photos)
    values: list[DieValue] = []
    patches: list[np.ndarray] = []
    looks: list[Look] = []  # what the classifier reads in each taught die
    no_die = QUALITY.index("no_die")
    # The classifier knows how pips look, not a new set's pictures: only for a pip set can
    # it weigh the finds of a photo taken close (Reader.finds).
    weigh = all(value in PIP_VALUES for value in photos)
    for value, photos_of_value in photos.items():
        frames = [reader.upright(photo) for photo in photos_of_value]  # as they are read
        looked = [_looked_at(reader, frame, weigh) for frame in frames]
        # The user says every die there shows `value`: if the classifier sees no die in
        # any of them, the detector's sure finds are taught (SURE_FIND).
        chosen = [[d for d in dice if d.quality[no_die] < 0.5] for dice in looked]
        if not any(chosen):
            chosen = [[d for d in dice if d.find.score >= SURE_FIND] for dice in looked]
        if not any(chosen):
            raise DiceSetError(f"no die found in the photos for {value!r}")
        for frame, dice in zip(frames, chosen, strict=True):
            # Where a photo has dice lying flat, seen from their top and whole, only those
            # are taught.
            flat = [d for d, lies_flat in zip(dice, flat_ones(reader, dice, frame),
                                              strict=True) if lies_flat]
            dice = sized_alike(flat or dice)
            looks.extend(dice)
            patches.extend(patch_of(frame, d.find) for d in dice)
            values.extend([value] * len(dice))
    taught = taught_from(reader, name, values, patches, looks)
    return taught, dict(Counter(taught.patch_values))


class Checked(NamedTuple):
    """A throw people checked at the table (they entered it in a box, after any
    correction): its frame as the camera took it, and where each of its dice lay (frame
    pixels, as the reader gave them) with the value entered for it."""

    frame: np.ndarray
    dice: Sequence[tuple[float, float, DieValue]]


def learn(reader: Teacher, name: str, throws: Iterable[Checked]) -> DiceSet:
    """The dice people checked while playing at a table, as a set to add to the one
    read there (DiceSet.adding): a set taught elsewhere learns this table's light and
    camera from the game, without new photos. Each die is taught from the find it was read
    from (the nearest, within half a die of where it lay), as teaching does — only dice
    lying flat, whole and seen from the top, and not one unlike the others of its value,
    nor one that lies nearer another face than its own (entered wrong). Raises
    DiceSetError where no checked die is found again, or where teaching would doubt the
    dice (teaching_doubts: this light does not tell the faces apart). `throws` is gone
    through once, a frame at a time (a table keeps its throws as JPEGs)."""
    check_name(name)
    values: list[DieValue] = []
    patches: list[np.ndarray] = []
    looks: list[Look] = []
    for frame_as_taken, dice in throws:
        if not dice:
            continue
        height, width = frame_as_taken.shape[:2]
        frame = reader.upright(frame_as_taken)
        seen = _looked_at(reader, frame, weigh=all(v in PIP_VALUES for _, _, v in dice))
        flat = flat_ones(reader, seen, frame)
        for x, y, value in dice:
            x, y = reader.upright_point(x, y, width, height)
            near = [(math.hypot(d.find.x - x, d.find.y - y), k) for k, d in enumerate(seen)]
            if not near:
                continue
            distance, k = min(near)
            d = seen[k]
            if distance > d.find.size / 2 or not flat[k]:
                continue
            looks.append(d)
            patches.append(patch_of(frame, d.find))
            values.append(value)
    if not values:
        raise DiceSetError(f"none of the checked dice was found again to teach dice set "
                           f"{name!r}")
    learnt = taught_from(reader, name, values, patches, looks)
    # Only whether its dice tell the faces apart: the players checked every value, so a
    # count the classifier reads otherwise is no slip of theirs (and a set whose pips it
    # cannot count must still learn).
    doubts = look_alike_doubts(learnt)
    if doubts:
        raise DiceSetError(f"the checked dice do not tell the faces of dice set {name!r} "
                           f"apart: {' '.join(doubts)}")
    # A die entered as another face than it shows (a misread nobody corrected) lies among
    # the dice of the face it shows, and would draw those to the wrong face: left out.
    mistaken = {i for i, _ in learnt._nearer_other_faces}
    kept = learnt.keeping([i for i in range(len(learnt.patch_values)) if i not in mistaken])
    return replace(kept, from_play=[True] * len(kept.patch_values))


def flat_ones(reader: Teacher, dice: Sequence[Look], frame: np.ndarray) -> list[bool]:
    """Per find of `frame`: does it lie flat, seen from its top and whole? A die leaning on
    or lying on another shows two faces, a die's side face found as a die shows another
    value, and the frame's edge cuts a die's face: none of them is taught as it looks."""
    tilted, stacked = (QUALITY.index(k) for k in ("tilted", "stacked"))
    height, width = frame.shape[:2]
    side = reader.judge.side_faces([d.find for d in dice], width, height)
    return [d.quality[tilted] <= 0.5 and d.quality[stacked] <= 0.5 and not away
            and not reader.judge.cut_by_edge(d.find, width, height)
            for d, away in zip(dice, side, strict=True)]


def patch_of(frame: np.ndarray, find: Candidate) -> np.ndarray:
    """The patch a taught die is stored as: its find and room around it (PATCH_SPAN)."""
    return crop_die(frame, find.x, find.y, find.size * PATCH_SPAN, out=PATCH_PIXELS)


def taught_from(reader: Teacher, name: str, values: list[DieValue],
                patches: list[np.ndarray], looks: list[Look]) -> DiceSet:
    """A set of the given dice (`patches`, each taught as its value, as the classifier
    looked at it), embedded, without the odd ones out, and counted if the classifier
    counts it."""
    taught = DiceSet(name, values, np.stack(patches)).embedded_with(reader.embedder)
    odd = odd_ones_out(taught)
    keep = [i for i in range(len(values)) if i not in odd]
    # A pip set is read by the classifier's count (vision.reader.checked_by_pip_reading)
    # only if, among the dice of every value, the count it read most often is that value
    # (a stray find may be read otherwise); a set it cannot count is read by its photos.
    counted = all(value in PIP_VALUES and Counter(
        looks[i].pips for i in keep if values[i] == value).most_common(1)[0][0] == value
        for value in dict.fromkeys(values))
    if counted:
        # The classifier counts this set: a die it counts otherwise, surely, was not turned
        # to the photo's value (a slip of the user's), and taught as it would be misread.
        keep = [i for i in keep
                if looks[i].pips == values[i] or looks[i].pips_sure < MISCOUNTED]
    return replace(taught.keeping(keep), counted=counted)


def teaching_doubts(taught: DiceSet) -> list[str]:
    """What the user should know of a newly taught set, one line each: faces its photos do
    not tell apart (LOOK_ALIKE), which the set would misread at the table; and, for a pip
    set, a photo whose dice the classifier counts as another face (not DiceSet.counted): a
    die not turned, or a photo too blurred or dark to count. Of 20 pip sets (seeds
    700004–6 and 710004–10, each taught on the table it is read on and for other tables),
    the 4 not counted read 45–90 % of further dice right, with 7 silent errors; the 16
    counted 88–100 %, with 9."""
    doubts = look_alike_doubts(taught)
    if taught.pips and not taught.counted:
        doubts.append("the dice of a photo count as another face than the one given: did "
                      "every die show it? If they did, take that photo again, sharper and in "
                      "more light")
    return doubts


def look_alike_doubts(taught: DiceSet) -> list[str]:
    """The line of teaching_doubts that says the set's dice do not tell its faces apart
    (LOOK_ALIKE), if they do not."""
    judged = sum(1 for value in taught.patch_values if taught.patch_values.count(value) > 1)
    alike = taught.look_alike() if judged else []
    if not alike or len(alike) < LOOK_ALIKE * judged:
        return []
    named = ", ".join(f"{own} like {other}" for (own, other), _ in Counter(alike).most_common(3))
    return [f"{len(alike)} of {judged} taught dice look more like another face than their "
            f"own ({named}): the photos do not tell the faces apart well; take them again "
            f"closer, sharper or in more light"]


class Look(NamedTuple):
    """A find of a teaching photo and what the classifier reads in it."""

    find: Candidate
    quality: np.ndarray  # probabilities in QUALITY order
    pips: int  # the pip count it reads, 1..6 ...
    pips_sure: float  # ... and its probability among the pip counts


def _looked_at(reader: Teacher, frame: np.ndarray, weigh: bool) -> list[Look]:
    """A teaching photo's finds (Reader.finds, `weigh`), each with the classifier's quality
    probabilities and the pip count it reads."""
    from vision.reader import most_likely

    candidates, _, check = reader.finds(frame, weigh)
    counts, sure = most_likely(check.value, slice(0, len(PIP_VALUES)))
    return [Look(c, q, int(n), float(p))
            for c, q, n, p in zip(candidates, check.quality, counts, sure, strict=True)]


def sized_alike(dice: list[Look]) -> list[Look]:
    """The finds of one teaching photo sized like its surest die (ODD_SIZE)."""
    if not dice:
        return dice
    no_die = QUALITY.index("no_die")
    surest = max(dice, key=lambda d: d.find.score * (1.0 - float(d.quality[no_die])))
    return [d for d in dice if 1.0 / ODD_SIZE <= d.find.size / surest.find.size <= ODD_SIZE]


def odd_ones_out(taught: DiceSet) -> set[int]:
    """The taught dice that look unlike the other dice taught as their value: a find on the
    tablecloth, a pencil, a die seen from the side. Each die's similarity to the others of
    its value is the median of its similarities to them; a die whose similarity is more
    than ODD_GAP below that of the most typical die of its value is odd (only where a value
    has at least three dice to compare)."""
    vectors = taught.embeddings.reshape(len(taught.patch_values), taught.crops_per_die,
                                        -1).mean(axis=1)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    odd: set[int] = set()
    for face in taught.faces:
        idx = [i for i, v in enumerate(taught.patch_values) if v == face]
        if len(idx) < 3:
            continue
        sims = vectors[idx] @ vectors[idx].T
        typical = np.array([np.median(np.delete(sims[k], k)) for k in range(len(idx))])
        odd.update(i for i, t in zip(idx, typical, strict=True)
                   if typical.max() - t > ODD_GAP)
    return odd
