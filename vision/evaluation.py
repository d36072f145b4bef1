"""The metrics every dice reader is judged by.

Matching: a predicted die matches a labelled die if its (x, y) lies inside the label's box or
within `MATCH_RADIUS` die sizes of the label's centre (die size = sqrt(w * h) of the label
box).  Matching is one-to-one by position only (never by value, so a wrong value cannot steal
a neighbour's label), solved optimally (Hungarian, numpy only): most matches, then least total
distance.

Per data set (`EvalResult`):

* found / missed: labelled dice with / without a matching prediction; extra: unmatched
  predictions.
* accuracy: labelled dice read with the right value / all labelled dice (missed = wrong).
* images_all_right: images where every labelled die is read right and nothing extra is read.
* asked: predictions the table would ask the player about (`DieReading.asked`: flagged,
  or without a value).  silent errors: wrong predictions (wrong value, or extra)
  that are NOT asked about — unflagged, with a value.  These are
  the errors that reach the Kniffel sheet unnoticed; reported as a count and as % of labelled
  dice.  caught errors: wrong predictions that were asked about.
* silent, count right: the silent errors in images where the reader saw as many dice as
  there are.  The table knows how many dice are thrown (five) and asks whenever the count
  is off, so at a table only these reach the sheet; an extra die (a side face read as a
  die) is nearly always caught there by the count.
* a label flagged by the data set (tilted, stacked, cut, ...) still counts as labelled; a
  prediction on it is judged by value like any other.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from vision.reading import (
    DiceReader,
    DieLabel,
    DieReading,
    DieValue,
    Reading,
    SceneLabel,
    dice_of_the_throw,
)

MATCH_RADIUS = 0.6  # in die sizes, around the label centre


# ---------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------


def die_size(label: DieLabel) -> float:
    x0, y0, x1, y1 = label.box
    return math.sqrt(max(x1 - x0, 1e-6) * max(y1 - y0, 1e-6))


def can_match(pred: DieReading, label: DieLabel, radius: float = MATCH_RADIUS) -> bool:
    x0, y0, x1, y1 = label.box
    if x0 <= pred.x <= x1 and y0 <= pred.y <= y1:
        return True
    return math.dist((pred.x, pred.y), label.center) <= radius * die_size(label)


def hungarian(cost: np.ndarray) -> list[tuple[int, int]]:
    """Minimum-cost assignment for a rows <= cols cost matrix; (row, col) pairs, all rows.

    Classic O(n^2 m) potentials version (Kuhn-Munkres), enough for a handful of dice.
    """
    n, m = cost.shape
    if n > m:
        return [(r, c) for c, r in hungarian(cost.T)]
    inf = float("inf")
    u = np.zeros(n + 1)
    v = np.zeros(m + 1)
    p = np.zeros(m + 1, dtype=int)  # p[j]: row (1-based) assigned to column j
    way = np.zeros(m + 1, dtype=int)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(m + 1, inf)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta, j1 = inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    return sorted((int(p[j]) - 1, j - 1) for j in range(1, m + 1) if p[j])


def match(preds: Iterable[DieReading], labels: Iterable[DieLabel],
          radius: float = MATCH_RADIUS) -> list[tuple[int, int]]:
    """One-to-one (prediction index, label index) pairs: most matches, then least distance."""
    preds, labels = list(preds), list(labels)
    if not preds or not labels:
        return []
    big = 1e6  # cost of a forbidden pair: larger than any sum of real distances
    cost = np.full((len(preds), len(labels)), big)
    for i, p in enumerate(preds):
        for j, lab in enumerate(labels):
            if can_match(p, lab, radius):
                cost[i, j] = math.dist((p.x, p.y), lab.center) / die_size(lab)
    return [(i, j) for i, j in hungarian(cost) if cost[i, j] < big]


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------


@dataclass
class ImageScore:
    """How one reading compares with one scene label."""

    image: str
    labelled: int
    found: int = 0
    correct: int = 0
    wrong_value: int = 0
    extra: int = 0
    asked: int = 0
    silent_errors: int = 0
    #: silent errors of an image whose count of dice is right (the table's count check
    #: passes, after it leaves out asked finds beside as many trusted dice: dice_of_the_throw)
    silent_count_right: int = 0
    #: the table takes the picture's throw without asking (dice_of_the_throw leaves as many
    #: dice as lie there, none asked about) ...
    taken: bool = False
    #: ... and a die of it is wrong (a silent error)
    taken_wrong: bool = False
    caught_errors: int = 0
    labelled_flagged: int = 0
    #: unflagged labels read right (the readable dice)
    readable_correct: int = 0
    #: flagged labels (hard dice) that were read right, asked about or not found
    hard_handled: int = 0
    confidences: list[float] = field(default_factory=list)
    #: (label value, predicted value) of matched dice; predicted None = read as unknown
    pairs: list[tuple[DieValue, DieValue | None]] = field(default_factory=list)
    #: (legibility, read right) of each readable die whose label carries its legibility
    legible_right: list[tuple[float, bool]] = field(default_factory=list)

    @property
    def missed(self) -> int:
        return self.labelled - self.found

    @property
    def readable(self) -> int:
        return self.labelled - self.labelled_flagged

    @property
    def all_right(self) -> bool:
        """Every readable die right, every hard die right or asked about, nothing extra."""
        return (self.readable_correct == self.readable
                and self.hard_handled == self.labelled_flagged and self.extra == 0)


def score_image(reading: Reading, label: SceneLabel,
                radius: float = MATCH_RADIUS) -> ImageScore:
    preds = list(reading.dice)
    pairs = match(preds, label.dice, radius)
    s = ImageScore(image=label.image, labelled=len(label.dice), found=len(pairs),
                   labelled_flagged=sum(d.flag is not None for d in label.dice))
    matched = {i for i, _ in pairs}
    found_labels = {j for _, j in pairs}
    # A hard die that was not found is caught at the table by the count of dice.
    s.hard_handled = sum(1 for j, d in enumerate(label.dice)
                         if d.flag is not None and j not in found_labels)
    right_labels: set[int] = set()
    for i, j in pairs:
        p, lab = preds[i], label.dice[j]
        s.pairs.append((lab.value, p.value))
        wrong = p.value is None or p.value != lab.value
        if wrong:
            s.wrong_value += 1
        else:
            s.correct += 1
            right_labels.add(j)
        if lab.flag is None:
            s.readable_correct += not wrong
        else:
            s.hard_handled += (not wrong) or p.asked
        _count_ask(s, p, wrong)
    s.legible_right = [(d.legibility, j in right_labels) for j, d in enumerate(label.dice)
                       if d.flag is None and d.legibility is not None]
    for i, p in enumerate(preds):
        if i not in matched:
            s.extra += 1
            _count_ask(s, p, True)
    s.confidences = [float(p.confidence) for p in preds]
    throw = dice_of_the_throw(preds, len(label.dice))
    if len(throw) == len(label.dice):
        s.silent_count_right = s.silent_errors
        s.taken = not any(p.asked for p in throw)
        s.taken_wrong = s.taken and s.silent_errors > 0
    return s


def _count_ask(s: ImageScore, p: DieReading, wrong: bool) -> None:
    asked = p.asked
    s.asked += asked
    if wrong and asked:
        s.caught_errors += 1
    elif wrong:
        s.silent_errors += 1


@dataclass
class EvalResult:
    """Numbers of one reader on one data set."""

    images: int = 0
    labelled: int = 0
    found: int = 0
    missed: int = 0
    extra: int = 0
    correct: int = 0
    wrong_value: int = 0
    images_all_right: int = 0
    predictions: int = 0
    asked: int = 0
    silent_errors: int = 0
    silent_count_right: int = 0
    images_taken: int = 0
    images_taken_wrong: int = 0
    caught_errors: int = 0
    labelled_flagged: int = 0
    readable_correct: int = 0
    hard_handled: int = 0
    confidence_sum: float = 0.0
    frame_seconds: list[float] = field(default_factory=list)
    #: (label value, predicted value) -> count, over matched dice
    confusion: dict[tuple[DieValue, DieValue | None], int] = field(default_factory=dict)
    per_image: list[ImageScore] = field(default_factory=list)

    def add(self, s: ImageScore, seconds: float | None = None) -> None:
        self.images += 1
        self.labelled += s.labelled
        self.found += s.found
        self.missed += s.missed
        self.extra += s.extra
        self.correct += s.correct
        self.wrong_value += s.wrong_value
        self.images_all_right += s.all_right
        self.predictions += len(s.confidences)
        self.asked += s.asked
        self.silent_errors += s.silent_errors
        self.silent_count_right += s.silent_count_right
        self.images_taken += s.taken
        self.images_taken_wrong += s.taken_wrong
        self.caught_errors += s.caught_errors
        self.labelled_flagged += s.labelled_flagged
        self.readable_correct += s.readable_correct
        self.hard_handled += s.hard_handled
        self.confidence_sum += sum(s.confidences)
        for pair in s.pairs:
            self.confusion[pair] = self.confusion.get(pair, 0) + 1
        if seconds is not None:
            self.frame_seconds.append(seconds)
        self.per_image.append(s)

    @property
    def accuracy(self) -> float:
        """Labelled dice read right / labelled dice (a missed die counts as wrong)."""
        return self.correct / self.labelled if self.labelled else float("nan")

    @property
    def readable(self) -> int:
        return self.labelled - self.labelled_flagged

    @property
    def readable_accuracy(self) -> float:
        """Unflagged labelled dice read right / unflagged labelled dice (missed = wrong):
        the per-die accuracy on dice that a person can read from the picture."""
        return self.readable_correct / self.readable if self.readable else float("nan")

    @property
    def hard_rate(self) -> float:
        """Flagged labelled dice (cut, tilted, stacked, mostly hidden) read right or asked."""
        return self.hard_handled / self.labelled_flagged if self.labelled_flagged \
            else float("nan")

    @property
    def recall(self) -> float:
        return self.found / self.labelled if self.labelled else float("nan")

    @property
    def all_right_rate(self) -> float:
        return self.images_all_right / self.images if self.images else float("nan")

    @property
    def silent_rate(self) -> float:
        """Silent errors as a share of labelled dice."""
        return self.silent_errors / self.labelled if self.labelled else float("nan")

    @property
    def silent_interval(self) -> tuple[float, float]:
        """A 95 % interval for the silent error rate (Wilson score): the sets hold a few
        thousand dice and their silent errors are single digits, so 3 of 1311 (0.23 %) is
        as well 0.08 % as 0.67 %."""
        return wilson_interval(self.silent_errors, self.labelled)

    @property
    def silent_count_right_rate(self) -> float:
        """Silent errors that the table's count of dice would not catch, per labelled die."""
        return self.silent_count_right / self.labelled if self.labelled else float("nan")

    @property
    def taken_rate(self) -> float:
        """Pictures whose throw the table takes without asking, per picture."""
        return self.images_taken / self.images if self.images else float("nan")

    @property
    def mean_confidence(self) -> float:
        return self.confidence_sum / self.predictions if self.predictions else float("nan")

    @property
    def ms_per_frame(self) -> float:
        return 1000 * float(np.mean(self.frame_seconds)) if self.frame_seconds else float("nan")

    @property
    def ms_per_frame_p95(self) -> float:
        if not self.frame_seconds:
            return float("nan")
        return 1000 * float(np.percentile(self.frame_seconds, 95))

    def summary(self) -> dict[str, float | int]:
        return {
            "images": self.images, "labelled": self.labelled, "found": self.found,
            "missed": self.missed, "extra": self.extra, "correct": self.correct,
            "wrong_value": self.wrong_value, "accuracy": self.accuracy,
            "readable": self.readable, "readable_accuracy": self.readable_accuracy,
            "hard": self.labelled_flagged, "hard_handled": self.hard_handled,
            "images_all_right": self.images_all_right, "all_right_rate": self.all_right_rate,
            "asked": self.asked, "silent_errors": self.silent_errors,
            "silent_rate": self.silent_rate, "silent_rate_low": self.silent_interval[0],
            "silent_rate_high": self.silent_interval[1],
            "silent_count_right": self.silent_count_right,
            "silent_count_right_rate": self.silent_count_right_rate,
            "images_taken": self.images_taken, "taken_rate": self.taken_rate,
            "images_taken_wrong": self.images_taken_wrong,
            "caught_errors": self.caught_errors,
            "mean_confidence": self.mean_confidence, "ms_per_frame": self.ms_per_frame,
            "ms_per_frame_p95": self.ms_per_frame_p95,
        }


def wilson_interval(events: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a rate `events / trials` (95 % for z = 1.96); unlike
    the normal approximation it stays within 0–1 and is not empty at 0 events."""
    if trials <= 0:
        return float("nan"), float("nan")
    p = events / trials
    scale = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / scale
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


def load_frame(image: np.ndarray | Path | str) -> np.ndarray:
    if isinstance(image, np.ndarray):
        return image
    frame = cv2.imread(str(image), cv2.IMREAD_COLOR)
    if frame is None:
        raise OSError(f"cannot read image {image}")
    return frame


def evaluate(reader: DiceReader,
             samples: Iterable[tuple[np.ndarray | Path, SceneLabel]],
             radius: float = MATCH_RADIUS) -> EvalResult:
    """Run `reader` on every sample and score it; only `reader.read` is timed."""
    return evaluate_by(reader, samples, lambda _label: "all", radius)["all"]


def evaluate_by(reader: DiceReader,
                samples: Iterable[tuple[np.ndarray | Path, SceneLabel]],
                group: Callable[[SceneLabel], str],
                radius: float = MATCH_RADIUS) -> dict[str, EvalResult]:
    """Like `evaluate`, reading every image once, with the results also split by
    `group(label)`: {"all": ..., group name: ..., ...}."""
    results = {"all": EvalResult()}
    for image, label in samples:
        frame = load_frame(image)
        t0 = time.perf_counter()
        reading = reader.read(frame)
        seconds = time.perf_counter() - t0
        score = score_image(reading, label, radius)
        for name in dict.fromkeys(("all", group(label))):
            results.setdefault(name, EvalResult()).add(score, seconds)
    return results


def by_legibility(result: EvalResult, edges: Sequence[float]) -> list[tuple[int, int]]:
    """(dice read right, readable dice) of `result` in each band of the labels' legibility
    from one of `edges` to the next, the last band open above; dice whose labels carry no
    legibility (real photos) are left out."""
    counts = [[0, 0] for _ in edges]
    for score in result.per_image:
        for legibility, right in score.legible_right:
            band = bisect.bisect_right(edges, legibility) - 1
            if band >= 0:
                counts[band][0] += right
                counts[band][1] += 1
    return [(right, dice) for right, dice in counts]


# ---------------------------------------------------------------------------
# Text table
# ---------------------------------------------------------------------------

_ROWS: tuple[tuple[str, str], ...] = (
    ("images", "{r.images}"),
    ("labelled dice", "{r.labelled}"),
    ("found", "{r.found}"),
    ("missed", "{r.missed}"),
    ("extra", "{r.extra}"),
    ("readable dice", "{r.readable}"),
    ("per-die accuracy", "{r.readable_accuracy:.2%}"),
    ("  (all dice, hard too)", "{r.accuracy:.2%}"),
    ("hard dice: right/asked", "{r.hard_handled}/{r.labelled_flagged}"),
    ("images all right", "{r.images_all_right} ({r.all_right_rate:.0%})"),
    ("mean confidence", "{r.mean_confidence:.2f}"),
    ("asked (flagged)", "{r.asked}"),
    ("caught errors", "{r.caught_errors}"),
    ("silent errors", "{r.silent_errors} ({r.silent_rate:.2%})"),
    ("  95 % interval", "{r.silent_interval[0]:.2%}–{r.silent_interval[1]:.2%}"),
    ("  of them, count right", "{r.silent_count_right} ({r.silent_count_right_rate:.2%})"),
    ("taken without asking", "{r.images_taken} ({r.taken_rate:.0%})"),
    ("  of them wrong", "{r.images_taken_wrong}"),
    ("ms/frame (p95)", "{r.ms_per_frame:.1f} ({r.ms_per_frame_p95:.1f})"),
)


def format_table(results: dict[str, EvalResult], legend: bool = True) -> str:
    """Metrics as rows, one column per result (name them e.g. "baseline | Real Valid").

    A " | " in a name splits the header over two lines (reader above data set). `legend`:
    end with what "silent" and "count right" mean (once per report is enough).
    """
    names = list(results)
    heads = [n.split(" | ", 1) if " | " in n else [n, ""] for n in names]
    cells = [[fmt.format(r=results[n]) for n in names] for _, fmt in _ROWS]
    label_w = max(len(lab) for lab, _ in _ROWS)
    widths = [max(len(h[0]), len(h[1]), *(len(row[k]) for row in cells))
              for k, h in enumerate(heads)]
    lines = []
    for part in (0, 1):
        if part == 1 and not any(h[1] for h in heads):
            continue
        lines.append(" " * label_w + "".join(f"  {h[part]:>{w}}"
                                             for h, w in zip(heads, widths, strict=True)))
    lines.append("-" * (label_w + sum(w + 2 for w in widths)))
    for (lab, _), row in zip(_ROWS, cells, strict=True):
        lines.append(f"{lab:<{label_w}}" + "".join(f"  {c:>{w}}"
                                                    for c, w in zip(row, widths, strict=True)))
    if not legend:
        return "\n".join(lines)
    lines.append("silent = wrong value or extra, not asked about (unflagged, with a value); "
                 "% of labelled dice")
    lines.append("count right = in images where as many dice were seen as lie there, or "
                 "trusted besides asked finds (the table asks whenever the count is off)")
    lines.append("taken without asking = images whose throw the table takes as read: as "
                 "many dice as lie there, none asked about; wrong: with a silent error")
    return "\n".join(lines)
