"""Turning frames into model inputs. Training (models/) and reading (vision/) both use
exactly these functions, so what the models learned is what they are shown."""

from __future__ import annotations

import math
from collections.abc import Iterable

import cv2
import numpy as np

#: The detector sees frames scaled so that their longer side is this many pixels.
DETECTOR_LONG_SIDE = 384
#: The detector's output grid is this many input pixels per cell.
DETECTOR_STRIDE = 4
#: Side of the square die crop the classifier reads.
CROP_SIZE = 64
#: A crop spans this many times the die's body size, centred on its top face.
CROP_SCALE = 1.0
#: The centre refiner's crop spans this many found sizes around a find.
REFINE_SPAN = 2.0


def detector_scale(width: int, height: int, long_side: int = DETECTOR_LONG_SIDE) -> float:
    return long_side / max(width, height)


def detector_image(frame_bgr: np.ndarray, long_side: int = DETECTOR_LONG_SIDE
                   ) -> tuple[np.ndarray, float]:
    """The frame resized (keeping the aspect) to `long_side`, and the scale from frame
    pixels to its pixels. The detector learnt from pictures shrunk so (models/train.py): a
    faster resize, though a quarter of a grey level off, changes what it finds
    (models/README.md, "The networks see pictures shrunk by area")."""
    h, w = frame_bgr.shape[:2]
    scale = detector_scale(w, h, long_side)
    nw, nh = max(32, round(w * scale)), max(32, round(h * scale))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(frame_bgr, (nw, nh), interpolation=interp), scale


def detector_tensor(image_bgr: np.ndarray) -> np.ndarray:
    """A `detector_image` padded to a multiple of 32, as the network's NCHW input."""
    h, w = image_bgr.shape[:2]
    ph, pw = -h % 32, -w % 32
    if ph or pw:
        image_bgr = cv2.copyMakeBorder(image_bgr, 0, ph, 0, pw, cv2.BORDER_REPLICATE)
    return to_tensor(image_bgr)


#: Each grey level as the networks read it, `level / 255 - 0.5` in float32.
_LEVELS = (np.arange(256, dtype=np.float32) * np.float32(1.0 / 255.0)
           - np.float32(0.5)).reshape(1, 256)


def to_tensor(image_bgr: np.ndarray) -> np.ndarray:
    """BGR uint8 HxWx3 → RGB float32 1x3xHxW in [-0.5, 0.5]. Each channel's levels looked
    up straight into its plane: converting, scaling, shifting and reordering the pixels in
    turn took four times as long (4 ms for a 1024 × 768 part the detector searches
    closer; numpy's `take` twice as long)."""
    blue, green, red = cv2.split(image_bgr)
    rgb = np.empty((1, 3, *image_bgr.shape[:2]), np.float32)
    for plane, channel in zip(rgb[0], (red, green, blue), strict=True):
        cv2.LUT(channel, _LEVELS, dst=plane)
    return rgb


#: A classifier trained on upright crops (`train.py classifier --upright`) reads dice whose
#: body lies at least this far (in die sizes) from the centre of their top face cut upright:
#: turned so that the body lies below the top face in the crop. Below it the detector's
#: body offset points too uncertainly, and such dice are read in quarter turns.
UPRIGHT_MIN = 0.12


def upright_angle(body: tuple[float, float] | None) -> float | None:
    """The `crop_die` angle that turns a die seen at an angle upright — its body (offset
    from the top-face centre to the centre of the visible body) straight down in the crop,
    so the top face is the upper one of the faces the crop shows; None where the die is
    seen from (nearly) straight above (offset below UPRIGHT_MIN) and any turn will do."""
    if body is None or math.hypot(body[0], body[1]) < UPRIGHT_MIN:
        return None
    return math.degrees(math.atan2(body[1], body[0])) - 90.0


def crop_die(frame_bgr: np.ndarray, cx: float, cy: float, size: float,
             out: int = CROP_SIZE, angle: float = 0.0) -> np.ndarray:
    """A square crop of side `size * CROP_SCALE` centred on (cx, cy), resized to `out`.

    Pixels outside the frame repeat the border, so a die at the edge still gives a crop.
    Each crop pixel is sampled bilinearly, also where the crop shrinks the picture
    (warpAffine has no area interpolation: asked for it, it samples bilinearly): a large
    die keeps the picture's noise in its crop, as every network learnt from. Crops shrunk
    by area instead, with a classifier trained on them, read no more dice right
    (models/README.md, "Crops shrunk by area").
    """
    side = max(4.0, size * CROP_SCALE)
    k = out / side
    m = cv2.getRotationMatrix2D((cx, cy), angle, k)
    m[0, 2] += out / 2 - cx
    m[1, 2] += out / 2 - cy
    return cv2.warpAffine(frame_bgr, m, (out, out), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REPLICATE)


def _grey_box(frame_bgr: np.ndarray, box: tuple[float, float, float, float]
              ) -> np.ndarray | None:
    """The grey pixels of a die's body `box` (float32), or None for a box too small to tell
    anything from."""
    x0, y0, x1, y1 = (max(0, int(round(v))) for v in box)
    part = frame_bgr[y0:y1, x0:x1]
    if part.shape[0] * part.shape[1] < 64:
        return None
    return cv2.cvtColor(part, cv2.COLOR_BGR2GRAY).astype(np.float32)


def _contrast(grey: np.ndarray) -> float:
    """A die's contrast: 1st to 99th percentile of its grey."""
    return float(np.percentile(grey, 99) - np.percentile(grey, 1))


def edge_width(frame_bgr: np.ndarray, box: tuple[float, float, float, float]) -> float | None:
    """How blurred the picture is at a die (its body `box`): the spread of its sharpest
    edges in pixels, as the σ of a Gaussian blur would spread a step — the die's contrast
    over its steepest gradient (99.5th percentile). About 1 px in a sharp photo; None for
    a box too small to tell."""
    grey = _grey_box(frame_bgr, box)
    if grey is None:
        return None
    # Sobel 3×3 weighs the central difference by 8: per pixel, divide by it
    gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0, ksize=3) / 8.0
    gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1, ksize=3) / 8.0
    steepest = float(np.percentile(np.hypot(gx, gy), 99.5))
    return _contrast(grey) / max(steepest, 1e-3) / math.sqrt(2.0 * math.pi)


#: Immerkær's mask: the difference of two Laplacians, blind to a picture's smooth shading;
#: on white noise of σ it leaves noise of 6σ.
_NOISE_MASK = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)


def contrast_over_noise(frame_bgr: np.ndarray, box: tuple[float, float, float, float]
                        ) -> float | None:
    """How far a die (its body `box`) stands out of the sensor's noise: its contrast over
    the noise's σ. The σ is what Immerkær's mask leaves, its median magnitude, so that the
    die's edges and pips, a small share of its pixels, hardly count; noise that JPEG
    smoothed away is not counted. None for a box too small to tell, or without noise to
    measure (most of its pixels smooth to the grey level: a drawn picture)."""
    grey = _grey_box(frame_bgr, box)
    if grey is None:
        return None
    left = cv2.filter2D(grey, cv2.CV_32F, _NOISE_MASK)[1:-1, 1:-1]
    # the median magnitude of normal noise is 0.674 σ
    sigma = float(np.median(np.abs(left))) / 0.6745 / 6.0
    return _contrast(grey) / sigma if sigma > 0 else None


def crops_tensor(crops: list[np.ndarray]) -> np.ndarray:
    """Stack die crops into the classifier's NCHW float32 batch."""
    if not crops:
        return np.zeros((0, 3, CROP_SIZE, CROP_SIZE), np.float32)
    return np.concatenate([to_tensor(c) for c in crops], axis=0)


def checked_views(views: int) -> int:
    if views not in (1, 2, 4):
        raise ValueError(f"views must be 1, 2 or 4, not {views!r}")
    return views


def mirrored(crops: list[np.ndarray]) -> np.ndarray:
    """The crops' batch as it is and mirrored left to right (2 x len(crops) rows): a face
    and its mirror image are the same face, and an upright crop stays upright."""
    batch = crops_tensor(crops)
    return np.ascontiguousarray(np.concatenate([batch, batch[..., ::-1]]))


def quarter_turns(crops: list[np.ndarray], views: int) -> np.ndarray:
    """The crops' batch in `views` (1, 2 or 4) quarter turns, one turn after the other
    (views x len(crops) rows): a die lies any way round, so the crop networks read each
    crop in several turns and average."""
    return turned_by(crops_tensor(crops), range(0, 4, 4 // checked_views(views)))


def turned_by(batch: np.ndarray, quarters: Iterable[int]) -> np.ndarray:
    """A batch of crops (N x 3 x H x W) turned by each of `quarters` (quarter turns), one
    turn after the other."""
    return np.ascontiguousarray(np.concatenate([np.rot90(batch, k, axes=(2, 3))
                                                for k in quarters]))
