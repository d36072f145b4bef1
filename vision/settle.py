"""When have the dice come to rest? Motion on the camera's small (lores) stream.

The table is read once per throw: motion starts (a hand, the cup, rolling dice), motion
stops and stays stopped for `settle_seconds` → one `settled` event. A small local change
after that with no big motion (a die nudged, a straggler tipping over) is a `nudged`
event: re-read and update the throw instead of adding one. Sustained motion (a hand over
the table) or a big thing resting in view gives no event at all.

Two comparisons per frame, both on blurred gray images inside the watched area:
against the previous frame (is anything moving now?) and against the reference, the last
still picture (did anything change since the last read?). Sensor noise is below the pixel
threshold after the blur; slow light changes are removed by subtracting the median
difference and by letting the reference follow the picture while it is still. Pure
numpy/OpenCV and deterministic: the caller passes the timestamps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np

Point = tuple[float, float]

#: Event kinds, in the order they happen.
MOVING, SETTLED, NUDGED, QUIET = "moving", "settled", "nudged", "quiet"


@dataclass(frozen=True)
class SettleConfig:
    #: Seconds the view must stay still before a throw is read (TableConfig.settle_seconds).
    settle_seconds: float = 0.6
    #: Gray-level change (after the blur) that counts a pixel as changed.
    pixel_threshold: int = 14
    #: Changed pixels between two frames (share of the watched area) that mean motion.
    motion_share: float = 0.0008
    #: A change since the last read up to this share of the watched area, made without big
    #: motion, is a nudge (one die moved); more is a new throw.
    nudge_share: float = 0.02
    #: Per-frame motion above this share means hands, the cup or a throw: never a nudge.
    big_share: float = 0.03
    #: A single changed blob above this share is not dice (a hand, an arm, the cup resting
    #: in view): wait for it to leave ...
    blocked_share: float = 0.08
    #: ... but not for ever: after this long still, read anyway (the reading will ask).
    blocked_seconds: float = 4.0
    #: How fast the reference follows the still picture (slow light changes), per frame.
    follow: float = 0.05
    #: Gaussian blur (pixels) that pushes sensor noise below the threshold.
    blur: int = 5


def motion_picture(frame: np.ndarray, blur: int) -> np.ndarray:
    """A frame as motion is looked for in it: grey and blurred (`blur` pixels), so that
    sensor noise stays under the pixel threshold; float32."""
    gray = frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    k = blur | 1
    return cv2.GaussianBlur(gray, (k, k), 0).astype(np.float32)


def changed_pixels(a: np.ndarray, b: np.ndarray, threshold: float,
                   mask: np.ndarray | None = None) -> np.ndarray:
    """uint8 mask of the pixels of two motion pictures that differ by more than `threshold`,
    after removing a global light change (within `mask` where one is given)."""
    diff = a - b
    sample = diff[::4, ::4] if mask is None else diff[mask > 0][::7]
    if sample.size:
        diff -= float(np.median(sample))
    changed: np.ndarray = (np.abs(diff) > threshold).astype(np.uint8)
    if mask is not None:
        changed &= mask > 0
    return changed


@dataclass(frozen=True)
class SettleEvent:
    """`kind` happened at `time`; `changed`: share of the watched area that differs from the
    previous reference; `box`: where (x0, y0, x1, y1 in lores pixels), None when nowhere."""

    kind: str
    time: float
    changed: float = 0.0
    box: tuple[int, int, int, int] | None = None


def area_mask(shape: tuple[int, int], polygons: Sequence[Sequence[Point]],
              scale: tuple[float, float] = (1.0, 1.0)) -> np.ndarray | None:
    """uint8 mask (255 inside) of the union of `polygons` scaled by (sx, sy) to an image of
    `shape` (h, w); None when no polygon is given (the whole view)."""
    polys = [p for p in polygons if len(p) >= 3]
    if not polys:
        return None
    mask = np.zeros(shape, np.uint8)
    sx, sy = scale
    for poly in polys:
        pts = np.array([[x * sx, y * sy] for x, y in poly], np.float64)
        cv2.fillPoly(mask, [np.round(pts * 16).astype(np.int32)], 255, cv2.LINE_8, 4)
    # a margin: a die on the edge of the area still counts
    return cv2.dilate(mask, np.ones((5, 5), np.uint8))


class SettleDetector:
    """Feed lores frames with their timestamps to `update`; it returns a SettleEvent or
    None. States: "idle" (still, nothing to read), "active" (something moves), "blocked"
    (something big rests in view)."""

    def __init__(self, config: SettleConfig | None = None, mask: np.ndarray | None = None
                 ) -> None:
        self.config = config or SettleConfig()
        self.mask = mask
        self.state = "idle"
        #: Share of the watched area that moved in the last frame (for the page / logs).
        self.motion = 0.0
        self._prev: np.ndarray | None = None
        self._ref: np.ndarray | None = None  # float32: the still picture of the last read
        self._has_read = False
        self._last_motion = 0.0
        self._peak = 0.0
        self._union: np.ndarray | None = None
        self._blocked_since = 0.0
        self._area = 1

    @classmethod
    def for_table(cls, settle_seconds: float, lores_size: tuple[int, int],
                  main_size: tuple[int, int], areas: Sequence[Sequence[Point]] = (),
                  config: SettleConfig | None = None) -> SettleDetector:
        """A detector watching `areas` (polygons in main-stream pixels, e.g. the throw and
        keep areas; none = the whole view) on a lores stream of `lores_size`."""
        base = config or SettleConfig()
        cfg = replace(base, settle_seconds=settle_seconds)
        lw, lh = lores_size
        mw, mh = main_size
        mask = area_mask((lh, lw), areas, (lw / mw, lh / mh))
        return cls(cfg, mask)

    @property
    def moving(self) -> bool:
        return self.state == "active"

    def reset(self) -> None:
        """Forget everything (the camera was reopened): the next still picture becomes the
        reference without a read."""
        self.state = "idle"
        self.motion = 0.0
        self._prev = self._ref = self._union = None
        self._has_read = False

    # ---- helpers ----------------------------------------------------------------------

    def _prepare(self, frame: np.ndarray) -> np.ndarray:
        return motion_picture(frame, self.config.blur)

    def _changed(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return changed_pixels(a, b, self.config.pixel_threshold, self.mask)

    def _regions(self, changed: np.ndarray) -> tuple[int, int, tuple[int, int, int, int] | None]:
        """(changed pixels, largest blob, bounding box) after removing specks."""
        clean = cv2.morphologyEx(changed, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
        n, _, stats, _ = cv2.connectedComponentsWithStats(clean, connectivity=8)
        if n <= 1:
            return 0, 0, None
        areas = stats[1:, cv2.CC_STAT_AREA]
        x0 = int(stats[1:, cv2.CC_STAT_LEFT].min())
        y0 = int(stats[1:, cv2.CC_STAT_TOP].min())
        x1 = int((stats[1:, cv2.CC_STAT_LEFT] + stats[1:, cv2.CC_STAT_WIDTH]).max())
        y1 = int((stats[1:, cv2.CC_STAT_TOP] + stats[1:, cv2.CC_STAT_HEIGHT]).max())
        return int(areas.sum()), int(areas.max()), (x0, y0, x1, y1)

    # ---- the state machine --------------------------------------------------------------

    def update(self, frame: np.ndarray, t: float) -> SettleEvent | None:
        cfg = self.config
        cur = self._prepare(frame)
        if self.mask is not None and self.mask.shape != cur.shape:
            self.mask = cv2.resize(self.mask, (cur.shape[1], cur.shape[0]),
                                   interpolation=cv2.INTER_NEAREST)
        self._area = max(1, int(np.count_nonzero(self.mask)) if self.mask is not None
                         else cur.size)
        prev, self._prev = self._prev, cur
        if prev is None or prev.shape != cur.shape:
            self._ref = cur.copy()
            self._last_motion = t
            self.state = "idle"
            return None
        step = self._changed(cur, prev)
        self.motion = int(cv2.countNonZero(step)) / self._area
        if self.state == "idle" and self.motion <= cfg.motion_share:
            # a change too slow or small to see between two frames still counts once it
            # stands out against the reference (before the reference could absorb it)
            assert self._ref is not None
            since = self._changed(cur, self._ref)
            if cv2.countNonZero(since) / self._area > cfg.motion_share:
                step, self.motion = since, cv2.countNonZero(since) / self._area
        if self.motion > cfg.motion_share:
            self._last_motion = t
            if self.state != "active":
                self.state = "active"
                self._peak = 0.0
                self._union = step.copy()
                event = SettleEvent(MOVING, t, self.motion)
            else:
                assert self._union is not None
                self._union |= step
                event = None
            self._peak = max(self._peak, self.motion)
            return event

        if self.state == "idle":
            assert self._ref is not None
            # still: let the reference follow slow light changes
            cv2.accumulateWeighted(cur, self._ref, cfg.follow)
            return None
        if t - self._last_motion < cfg.settle_seconds:
            return None

        # still long enough after motion: what changed since the last read?
        assert self._ref is not None
        total, biggest, box = self._regions(self._changed(cur, self._ref))
        changed = total / self._area
        if biggest / self._area > cfg.blocked_share:
            if self.state != "blocked":
                self.state = "blocked"
                self._blocked_since = t
            if t - self._blocked_since < cfg.blocked_seconds:
                return None
        kind = QUIET
        if total > 0:
            union = int(cv2.countNonZero(self._union)) if self._union is not None else 0
            small = (self._peak <= cfg.big_share and changed <= cfg.nudge_share
                     and union / self._area <= 2 * cfg.nudge_share)
            kind = NUDGED if (small and self._has_read) else SETTLED
        if kind != QUIET:
            self._has_read = True
        self.state = "idle"
        self._ref = cur.copy()
        self._union = None
        return SettleEvent(kind, t, changed, box)
