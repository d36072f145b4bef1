"""Stage 1: find dice. Where is the centre of each die's top face, and how big is the die?

Detectors are plug-ins behind `Detector`; the default is our ONNX heatmap network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from vision.models import DETECTOR_PATH, ModelMissingError, body_path, metadata, open_session
from vision.preprocess import (
    DETECTOR_LONG_SIDE,
    DETECTOR_STRIDE,
    detector_image,
    detector_scale,
    detector_tensor,
)
from vision.reading import DICE_IN_A_THROW


@dataclass(frozen=True)
class Candidate:
    """A place that looks like a die: top-face centre, body box (frame pixels), score, and
    where its body lies from the top-face centre (in die sizes; None from a detector that
    does not say)."""

    x: float
    y: float
    box: tuple[float, float, float, float]
    score: float
    body: tuple[float, float] | None = None

    @property
    def size(self) -> float:
        return max(self.box[2] - self.box[0], self.box[3] - self.box[1])

    def holds(self, other: Candidate) -> bool:
        """Does the centre of `other` lie in this find's box?"""
        x0, y0, x1, y1 = self.box
        return x0 <= other.x <= x1 and y0 <= other.y <= y1

    def near(self, other: Candidate, share: float) -> bool:
        """Do the two centres lie closer than `share` of the smaller die's size? Two dice
        side by side are about one size apart."""
        return bool(np.hypot(self.x - other.x, self.y - other.y)
                    < share * min(self.size, other.size))


class Detector(Protocol):
    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]: ...


@dataclass(frozen=True)
class Search:
    """What a search of a frame found: `found`; and where a coarse search saw large dice
    holding pieces of them, the finds of a search at those dice's scale (`large`), and
    whether the detector takes `found` for nothing but pieces of them (`in_pieces`). Only
    the classifier can tell a die from a pip: the reader decides (`Reader.finds`). `weak`:
    the first search's peaks that scored under the threshold but at least WEAK_SCORE, for
    the reader to keep where the classifier (or a taught set) is sure they are dice.
    `lost`: where the frame was searched again larger around the first finds
    (`OnnxDetector._search_around`), the first finds that search did not find again
    (`lost_finds`), for the reader to weigh against its finds."""

    found: list[Candidate]
    large: list[Candidate] | None = None
    in_pieces: bool = False
    weak: list[Candidate] = field(default_factory=list)
    lost: list[Candidate] = field(default_factory=list)


#: A search keeps at most this many finds, the surest: a table holds five dice, a few
#: more at most, while a cloth printed with dots the networks take for dice gave hundreds
#: of finds, each to be read, and 0.3–2 s a frame instead of 0.04 (models/README.md,
#: "Patterned table cloths").
MAX_FINDS = 30
#: The first search also reports peaks this strong under its threshold (`Search.weak`).
WEAK_SCORE = 0.2
#: Dice smaller than this (in detector-input pixels) are looked at again, larger.
SMALL_DIE = 30.0
#: ... at a scale that makes them about this big (16 / 26 until 2026-11-26: dice leaning
#: on others in a small, dim view went unfound at 19–23 px; models/README.md, "The larger
#: second detector pass"),
TARGET_DIE = 30.0
#: ... but never with a longer side than this, nor than the frame's own (rounded up to a
#: multiple of 32): enlarging a frame beyond its pixels adds none. An 800 × 600 frame of
#: dice 14–29 px across was enlarged to 1024 px; searched at 800 instead, the validation
#: scenes 800001–4, the test sets and the real photos (also under their 13 changes) read
#: the same dice right with as many silent errors, 300 rendered frames of five dice at
#: 800 × 600 two dice more and 300 of small dice as many, and `make bench`'s small dice
#: took about 7 % less time; 200 frames of dice 11–23 px at 640 × 480, searched at 640
#: instead of 1024, a die fewer right and 16 more of 734 asked (models/README.md, "The
#: search closer never enlarges a frame beyond its own pixels").
MAX_LONG_SIDE = 1024
#: ... and only the part of the frame within this many die sizes of the first finds (the
#: network sees that far around a die: with 2, finds near the dice differed from those of
#: a search of the whole frame; with 4 the validation scenes read the same). 6 since the
#: deeper detector (2026-11-30): its first search finds fewer of the smallest dice, and
#: of 900 dice in 180 frames of 1640 × 1232 with dice of 30–50 px, one lay beyond 4 die
#: sizes of the first finds and was lost; none with 6, for about 6 ms more a frame there
#: (the detector's median 22 → 28 ms).
AROUND = 6.0
#: A first find counts as found again by that search where one of its finds lies within
#: this share of its size of its centre, ...
REFOUND_NEAR = 0.5
#: ... at least this share of its size (two touching dice found as one are found again as
#: two, each about half its size: both lose the first find, for the reader to weigh).
REFOUND_SIZE = 0.6
#: Where a frame's searches find fewer dice than expected (`search`: a throw's five,
#: vision.reading.DICE_IN_A_THROW, unless the reader is told otherwise) and are unsure of
#: one of their finds (it scores under FEW_SURE; or they found none), the picture is a
#: hard one, and the whole frame is searched once more at FEW_LONG_SIDE: its finds that
#: are new and of the size of the others (within FEW_SIZE of their median; any size where
#: there were none) are added (`OnnxDetector._search_for_more`). The first search had
#: scored such dice low: small dice on printed cloths, dark and noisy pictures, large dice
#: seen close. On the validation scenes 800001–4 and the test sets (14 618 readable dice,
#: five expected), 17 more dice were read right, for 43 more finds that are no die; 449 of
#: the 3600 frames were searched again. Searching every frame with fewer than five finds
#: read 25 more dice right, but that is most frames of the real photos (56 of 86, each
#: with 3 dice on average), at 19 ms more each on the development machine, where the first
#: search takes 6; with FEW_SURE 11 of them. Searched at 512 it found fewer dice, at 768 or
#: 1024 about as many with more finds that are no die; searching every frame found 13 more
#: dice (none in the validation scenes) for five times the finds that are no die; without
#: FEW_SIZE there were twice as many such finds (models/README.md, "Fewer than five dice
#: found").
FEW_SURE = 0.6
FEW_LONG_SIDE = 640
FEW_SIZE = 2.0
#: So is a frame where fewer dice than expected are found, all surely, but small: their
#: median size at the first search's scale under FEW_SMALL pixels. The search at
#: FEW_LONG_SIDE sees such dice larger, and finds more of them far from the first finds,
#: where the larger search around those does not look. On the validation scenes 800001–4
#: and the test sets, 8 more dice right and none fewer, 4 more finds that are no die, 176
#: more of the 3600 frames searched (with 26: the same dice, 7 more finds that are no
#: die). The real photos' dice are 40 detector pixels and more, so they are not searched
#: more; `make bench`'s frames of small dice take 3–4 ms more (models/README.md, "Small
#: dice searched for more").
FEW_SMALL = 20.0
#: Dice larger than nearly all the network was trained on (a photo taken close to a few
#: dice; training dice are 7–98 detector pixels, median 25) are found in pieces: pips and
#: faces as dice. So every frame is also searched coarsely, at these long sides in turn
#: (cheaply, from the first search's input; the second where a die fills most of the
#: picture), ...
COARSE_LONG_SIDES = (128, 96)
#: ... and where the finds there that the network is sure of (a cup or a hand at the edge
#: it is not) ...
LARGE_SCORE = 0.5
#: ... are this large (median, as a share of the frame's longer side: 72 px of 384, more
#: than nearly all training dice; real dice seen from a table's height are 0.12–0.16) and
#: hold pieces of the first search's finds ...
LARGE_DIE = 0.19
#: ... (inside, smaller than this share of them: pips and faces 0.05–0.55, dice seen whole
#: 0.65 and more), ...
PIECE = 0.6
#: ... the frame is searched again at the scale that makes them about this big (detector
#: pixels), ...
TARGET_LARGE_DIE = 36.0
#: ... but never with a shorter long side than this.
MIN_LONG_SIDE = 64
#: Where most first finds are such pieces and none is as sure as this, nor as the large
#: die it lies in (dice lying in a tray that the coarse search takes for one large die are:
#: 0.65 and more, more than the tray), the detector takes them for pieces (`in_pieces`);
#: the reader lets the new finds stand where the classifier agrees, else weighs both
#: (`vision.reader.Reader.finds`).
PIECE_SCORE = 0.7


#: The detector's outputs its body head reads (models/nets.py BodyHead: the stride-4
#: features and the stride-16 context), beside its own "out".
BODY_INPUTS = ("features", "context")
#: A detector and its body head carry the same value under this key in their metadata: the
#: head reads only the features of the detector it was trained on.
BODY_ID = "body_id"


class BodyOffsets:
    """The detector's body head (models/nets.py BodyAtCells) at chosen cells of its
    stride-4 grid: where each find's body lies from its top-face centre, in die sizes. Over
    the whole grid, as part of the detector, it took a third of each search's time; the
    reader needs it at the finds only (models/README.md, "The body head at the finds
    only")."""

    def __init__(self, path: Path, threads: int, body_id: str | None) -> None:
        self.session = open_session(path, threads)
        if body_id is None or metadata(self.session).get(BODY_ID) != body_id:
            raise ModelMissingError(f"model {path} was not made with the detector beside it: "
                                    "run `make models`")

    def at(self, features: np.ndarray, context: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """The offsets (K × 2) at `cells` (K × 2: row, column) of the grid of `features`
        (1 × C × H × W), whose `context` is 1 × C' × H/4 × W/4."""
        _, _, h, w = features.shape
        rows = cells[:, :1] + np.arange(-2, 3)  # K × 5
        cols = cells[:, 1:] + np.arange(-2, 3)
        row_in, col_in = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
        rows, cols = np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)
        patch = features[0][:, rows[:, :, None], cols[:, None, :]]  # C × K × 5 × 5
        patch *= row_in[:, :, None] & col_in[:, None, :]
        inside = row_in[:, 1:4, None] & col_in[:, None, 1:4]
        near = bilinear_at(context[0], rows[:, 1:4], cols[:, 1:4], h // context.shape[2])
        offsets: np.ndarray = self.session.run(["body"], {
            "features": np.ascontiguousarray(patch.transpose(1, 0, 2, 3)),
            "context": np.ascontiguousarray(near.transpose(1, 0, 2, 3)),
            "inside": inside[:, None].astype(np.float32)})[0]
        return offsets


def bilinear_at(grid: np.ndarray, rows: np.ndarray, cols: np.ndarray, factor: int
                ) -> np.ndarray:
    """`grid` (C × h × w) resized `factor` times larger bilinearly, with half-pixel
    centres (ONNX's Resize as PyTorch's `interpolate` exports it), at `rows` (K × m) and
    `cols` (K × n) of the larger: C × K × m × n."""

    def taps(at: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        source = np.maximum((at + 0.5) / factor - 0.5, 0.0)
        low = np.minimum(source.astype(np.int64), size - 1)
        return low, np.minimum(low + 1, size - 1), (source - low).astype(np.float32)

    def at(ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
        picked: np.ndarray = grid[:, ys[:, :, None], xs[:, None, :]]
        return picked

    y0, y1, fy = taps(rows, grid.shape[1])
    x0, x1, fx = taps(cols, grid.shape[2])
    fy, fx = fy[:, :, None], fx[:, None, :]
    top = at(y0, x0) * (1 - fx) + at(y0, x1) * fx
    bottom = at(y1, x0) * (1 - fx) + at(y1, x1) * fx
    near: np.ndarray = top * (1 - fy) + bottom * fy
    return near


class OnnxDetector:
    """CenterNet-style: peaks of a heatmap on a stride-4 grid, with offset and body size.

    A frame is first searched at DETECTOR_LONG_SIDE. Where its dice come out small (a wide
    view, a high-resolution camera), two touching dice can merge into one peak, so the frame
    is searched once more, around the first finds (AROUND), at a scale that makes the dice
    about TARGET_DIE pixels — sizes the network was trained on (its training scales dice by
    0.7–1.4); the first finds it does not find again are kept aside for the reader
    (`Search.lost`): the median that sets the scale may be a patterned cloth's dots, and a
    die among them comes out too large there. Where they come out larger than it was
    trained on (a photo taken close to the dice), it finds their pips and faces as dice; a
    coarse search (COARSE_LONG_SIDES) sees such dice whole, and the frame is searched again
    at a scale that makes them about TARGET_LARGE_DIE pixels: the reader weighs those finds
    against the first, which the detector takes for pieces where they are weak and that
    search finds a large die as surely as LARGE_SCORE (`search`). Where all this finds
    fewer dice than expected and is unsure of one of them (FEW_SURE) or they are small
    (FEW_SMALL), the whole frame is searched once more, larger.
    """

    def __init__(self, path: Path = DETECTOR_PATH, threshold: float = 0.3,
                 threads: int = 1) -> None:
        self.session = open_session(path, threads)
        self.threshold = threshold
        #: A detector without the outputs its body head reads (made before the head,
        #: `models/train.py body`, tuned since, or with the head inside it as before
        #: 2026-12-02) is read without body offsets.
        self.body: BodyOffsets | None = None
        self.outputs = ["out"]
        if set(BODY_INPUTS) <= {o.name for o in self.session.get_outputs()}:
            self.body = BodyOffsets(body_path(path), threads,
                                    metadata(self.session).get(BODY_ID))
            self.outputs += BODY_INPUTS

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        """The finds (where the detector alone takes them for pieces of large dice, those
        dice; without the classifier it cannot weigh the two otherwise)."""
        search = self.search(frame_bgr)
        return search.large if search.in_pieces and search.large else search.found

    def search(self, frame_bgr: np.ndarray, expected: int = DICE_IN_A_THROW) -> Search:
        """The finds; and where the coarse search sees large dice holding pieces of them,
        the finds of a search at the scale of those dice to weigh them against. Where
        fewer than the `expected` dice are found, one of them unsure (FEW_SURE) or all of
        them small (FEW_SMALL), the finds of a search for more are added; where the first
        search found none, small dice it finds are looked at again larger (`_closer`), as
        the first search's are."""
        search = self._searched(frame_bgr)
        if len(search.found) >= expected or (search.in_pieces and search.large):
            return search
        found = search.found
        if (found and min(c.score for c in found) >= FEW_SURE
                and first_scale_size(frame_bgr, found) >= FEW_SMALL):
            return search
        more = self._search_for_more(frame_bgr, found)
        if not found and more:
            # the first search found no die to look at again larger: its finds are those
            around = self._closer(frame_bgr, more, FEW_LONG_SIDE)
            if around is not None:
                return replace(search, found=around,
                               lost=search.lost + lost_finds(more, around))
        return replace(search, found=found + more)

    def _search_for_more(self, frame_bgr: np.ndarray, found: list[Candidate]
                         ) -> list[Candidate]:
        """The finds of a search of the whole frame at FEW_LONG_SIDE that lie away from
        every one of `found` (`suppress`'s overlap) and are of their size (FEW_SIZE)."""
        h, w = frame_bgr.shape[:2]
        image, scale = detector_image(frame_bgr, FEW_LONG_SIDE)
        more = [c for c in self._search(image, scale, w, h)
                if not any(c.near(f, SEPARATE) for f in found)]
        if not found:
            return more
        size = float(np.median([c.size for c in found]))
        return [c for c in more if size / FEW_SIZE <= c.size <= size * FEW_SIZE]

    def _searched(self, frame_bgr: np.ndarray) -> Search:
        """`search` before the search for more."""
        h, w = frame_bgr.shape[:2]
        image, scale = detector_image(frame_bgr, DETECTOR_LONG_SIDE)
        peaks = self._search(image, scale, w, h, min(WEAK_SCORE, self.threshold))
        found = [c for c in peaks if c.score >= self.threshold]
        weak = [c for c in peaks if c.score < self.threshold]
        large = self._large_dice(image, scale, found, w, h)
        if large is not None:
            smaller, factor = detector_image(image, large.long_side)
            finds = self._search(smaller, scale * factor, w, h)
            # The large dice must be found again, surely, at their own scale: a tray, a box
            # lid or a mat seen from far can look like one large die to the coarse search,
            # its dice like pieces of it, and then the dice would be lost.
            confirmed = any(c.score >= LARGE_SCORE for c in finds)
            return Search(found, finds, large.found_in_pieces and confirmed, weak)
        around = self._closer(frame_bgr, found, DETECTOR_LONG_SIDE) if found else None
        if around is not None:
            return Search(around, weak=weak, lost=lost_finds(found, around))
        return Search(found, weak=weak)

    def _closer(self, frame_bgr: np.ndarray, found: list[Candidate], searched_at: int
                ) -> list[Candidate] | None:
        """Where `found` (by a search at the long side `searched_at`) are small dice
        (SMALL_DIE at the first search's scale), the finds of a search around them at the
        scale that makes them TARGET_DIE, within MAX_LONG_SIDE and the frame's own size
        (`_search_around`), if that is larger; else None."""
        size = first_scale_size(frame_bgr, found)
        if size >= SMALL_DIE:
            return None
        own = -(-max(frame_bgr.shape[:2]) // 32) * 32
        long_side = min(MAX_LONG_SIDE, own,
                        32 * round(DETECTOR_LONG_SIDE * TARGET_DIE / size / 32))
        if long_side <= searched_at:
            return None
        return self._search_around(frame_bgr, found, long_side)

    def _search_around(self, frame_bgr: np.ndarray, found: list[Candidate], long_side: int
                       ) -> list[Candidate]:
        """The finds of a search of the frame at `long_side`, only of the part within AROUND
        die sizes of the first `found`: the rest of the frame held no find at all, and
        searching it larger costs most of the time. The part is cut from the whole frame
        resized, at multiples of the network's largest stride, so that it reads its pixels
        as in a search of the whole frame."""
        image, scale = detector_image(frame_bgr, long_side)
        margin = AROUND * float(np.median([c.size for c in found]))
        xs, ys = [c.x for c in found], [c.y for c in found]
        x0, x1 = snapped((min(xs) - margin) * scale, (max(xs) + margin) * scale, image.shape[1])
        y0, y1 = snapped((min(ys) - margin) * scale, (max(ys) + margin) * scale, image.shape[0])
        part_w, part_h = (x1 - x0) / scale, (y1 - y0) / scale
        finds = self._search(image[y0:y1, x0:x1], scale, round(part_w), round(part_h))
        # a die the cut passes through is seen in part: only finds well inside an inner edge
        inner = 0.5 * margin / AROUND
        ox, oy = x0 / scale, y0 / scale
        return [replace(c, x=c.x + ox, y=c.y + oy,
                        box=(c.box[0] + ox, c.box[1] + oy, c.box[2] + ox, c.box[3] + oy))
                for c in finds
                if (x0 == 0 or c.x >= inner) and (y0 == 0 or c.y >= inner)
                and (x1 == image.shape[1] or c.x <= part_w - inner)
                and (y1 == image.shape[0] or c.y <= part_h - inner)]

    def _large_dice(self, image: np.ndarray, scale: float, found: list[Candidate],
                    width: int, height: int) -> LargeDice | None:
        """The coarse searches of `image` (the frame scaled by `scale`), and what they say
        (`large_dice`)."""
        for side in COARSE_LONG_SIDES:
            coarse, factor = detector_image(image, side)
            large = large_dice(found, self._search(coarse, scale * factor, width, height),
                               max(width, height))
            if large is not None:
                return large
        return None

    def _search(self, image: np.ndarray, scale: float, width: int, height: int,
                threshold: float | None = None) -> list[Candidate]:
        """The finds in `image` (a frame of `width` × `height` scaled by `scale`) that
        score at least `threshold` (the detector's own unless given)."""
        outputs = self.session.run(self.outputs, {"image": detector_tensor(image)})
        body = self.body
        return decode(outputs[0][0], scale, self.threshold if threshold is None else threshold,
                      width, height, None if body is None else
                      lambda cells: body.at(outputs[1], outputs[2], cells))


def snapped(low: float, high: float, limit: int, step: int = 32) -> tuple[int, int]:
    """[`low`, `high`) widened to multiples of `step` (the network's largest stride), within
    [0, `limit`]."""
    return max(0, int(low) // step * step), min(limit, -(-int(np.ceil(high)) // step) * step)


@dataclass(frozen=True)
class LargeDice:
    """What the coarse search says: search again at `long_side`; `found_in_pieces`: the
    first finds are all but surely pieces of the large dice."""

    long_side: int
    found_in_pieces: bool


def large_dice(found: list[Candidate], coarse: list[Candidate], frame_long_side: float
               ) -> LargeDice | None:
    """Where the coarse search's sure finds (`coarse`) are large dice (LARGE_DIE of the
    frame's `frame_long_side`) and hold pieces of the first search's finds (`found`), or
    the first search found nothing (a die so large that not even its pips look like dice
    to it): the long side at which they are about TARGET_LARGE_DIE detector pixels, and
    whether most first finds are weak pieces (PIECE_SCORE; so where there are none);
    else None."""
    sure = [c for c in coarse if c.score >= LARGE_SCORE]
    if not sure:
        return None
    share = float(np.median([c.size for c in sure])) / frame_long_side
    if share < LARGE_DIE:
        return None
    long_side = max(MIN_LONG_SIDE, 32 * round(TARGET_LARGE_DIE / share / 32))
    if not found:
        return LargeDice(long_side, True)
    pieces = [(c, die) for die in sure for c in found if is_piece(c, die)]
    if not pieces:
        return None
    in_pieces = len({id(c) for c, _ in pieces}) >= len(found) / 2 and not any(
        c.score >= min(PIECE_SCORE, die.score) for c, die in pieces)
    return LargeDice(long_side, in_pieces)


def first_scale_size(frame_bgr: np.ndarray, finds: list[Candidate]) -> float:
    """The median size of `finds` (frame pixels) in pixels of the first search's input
    (DETECTOR_LONG_SIDE), where SMALL_DIE and FEW_SMALL are measured."""
    h, w = frame_bgr.shape[:2]
    return float(np.median([c.size for c in finds])) * detector_scale(w, h)


def lost_finds(first: list[Candidate], again: list[Candidate]) -> list[Candidate]:
    """The `first` finds that a search at a larger scale (`again`) did not find again: no
    find of it near their centre (REFOUND_NEAR) at least REFOUND_SIZE their size. The
    larger search is made for small dice; a large die among small finds (a patterned cloth's
    dots, which set the scale) can come out too large for it, or fall under MAX_FINDS."""
    return [c for c in first
            if not any(np.hypot(c.x - d.x, c.y - d.y) < REFOUND_NEAR * c.size
                       and d.size >= REFOUND_SIZE * c.size for d in again)]


def is_piece(find: Candidate, die: Candidate) -> bool:
    """Does `find` lie inside `die`'s box, smaller than PIECE of it?"""
    return die.holds(find) and find.size < PIECE * die.size


def decode(out: np.ndarray, scale: float, threshold: float, width: int, height: int,
           body_at: Callable[[np.ndarray], np.ndarray] | None = None) -> list[Candidate]:
    """Candidates from the detector's output grid (5 x H x W), with their body offsets
    where it has a body head (`body_at`: the offsets at K cells of the grid, K x 2)."""
    heat = out[0]
    peaks = (heat >= threshold) & (heat >= cv2.dilate(heat, np.ones((3, 3), np.uint8)))
    found = []
    cell_of: dict[int, tuple[int, int]] = {}
    for iy, ix in zip(*np.nonzero(peaks), strict=True):
        cx = (ix + float(out[1, iy, ix])) * DETECTOR_STRIDE / scale
        cy = (iy + float(out[2, iy, ix])) * DETECTOR_STRIDE / scale
        if not (0 <= cx < width and 0 <= cy < height):
            continue  # padding area
        bw = float(np.exp(np.clip(out[3, iy, ix], 0, 8))) / scale
        bh = float(np.exp(np.clip(out[4, iy, ix], 0, 8))) / scale
        find = Candidate(cx, cy, (cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2),
                         float(heat[iy, ix]))
        cell_of[id(find)] = (int(iy), int(ix))
        found.append(find)
    kept = suppress(found)[:MAX_FINDS]
    if body_at is None or not kept:
        return kept
    offsets = body_at(np.array([cell_of[id(c)] for c in kept]))
    return [replace(c, body=(float(dx), float(dy))) for c, (dx, dy) in zip(kept, offsets,
                                                                           strict=True)]


#: Peaks closer than this share of a die size are one die's (`suppress`). Two dice that
#: overlap in a picture taken at an angle (one half hidden behind or leaning on the other)
#: often lie 0.4–0.5 die sizes apart: from 0.45 down to 0.4, 13 more of the validation scenes'
#: 4899 readable dice and 11 more of the test sets' 9719 were read right (most of them asked
#: about, `stacked`), with 14 and 35 more extra finds, as many silent errors
#: (models/README.md, "Dice overlapping in the picture").
SEPARATE = 0.4


def suppress(candidates: list[Candidate], overlap: float = SEPARATE) -> list[Candidate]:
    """Keep the best of peaks that lie closer together than `overlap` of a die size:
    two dice that touch have centres about one size apart, one die never has two."""
    kept: list[Candidate] = []
    for cand in sorted(candidates, key=lambda c: -c.score):
        if not any(cand.near(k, overlap) for k in kept):
            kept.append(cand)
    return kept
