"""The reader's own logic with stand-in networks: crops, heatmap decoding, the judge."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest

import vision.reader
from vision.classifier import FACES, PIP_VALUES, QUALITY, FaceScores
from vision.detector import (
    MAX_FINDS,
    MAX_LONG_SIDE,
    TARGET_DIE,
    Candidate,
    LargeDice,
    OnnxDetector,
    Search,
    decode,
    large_dice,
    suppress,
)
from vision.judge import Judge
from vision.preprocess import (
    DETECTOR_LONG_SIDE,
    DETECTOR_STRIDE,
    contrast_over_noise,
    crop_die,
    detector_image,
    detector_tensor,
    edge_width,
    upright_angle,
)
from vision.reader import Reader, Refiner, die_sureness, pooled, pooled_reads
from vision.reading import TRUST_CONFIDENCE, DieValue, looks_like
from vision.refiner import AGAIN, OnnxRefiner, moved
from vision.teach import (
    CROPS_PER_DIE,
    PATCH_PIXELS,
    SIGNATURE_WEIGHT,
    Checked,
    DiceSet,
    DiceSetError,
    check_name,
    embedding_version,
    foreshortened,
    learn,
    load_dice_set,
    parse_value,
    signature_similarities,
    taught_sets,
    teach,
    teaching_doubts,
)


@pytest.fixture(autouse=True)
def one_read_per_find(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in classifiers here answer by a crop's place in the batch or its middle,
    not its size: each find is read once (no reads at other sizes, `RESCALES`, `GROWS`),
    but in the tests of those reads, which turn them on again."""
    monkeypatch.setattr(vision.reader, "RESCALES", ())
    monkeypatch.setattr(vision.reader, "GROWS", ())


class FixedDetector:
    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        return self.candidates


class FixedClassifier:
    """Returns given value/quality probabilities, one row per crop; a crop beyond them
    (a taught set's dice, read for their signatures) reads as no face in particular."""

    def __init__(self, value: list[list[float]], quality: list[list[float]]) -> None:
        self.value = np.array(value, float).reshape(-1, len(FACES))
        self.quality = np.array(quality, float).reshape(-1, len(QUALITY))

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        n = len(crops)
        beyond = max(0, n - len(self.value))
        return FaceScores(
            np.concatenate([self.value[:n], np.full((beyond, len(FACES)), 1 / len(FACES))]),
            np.concatenate([self.quality[:n], np.tile(quality(), (beyond, 1))]))


class ColourEmbedder:
    """Embeds a crop by the mean colour of its centre: a stand-in embedder whose
    neighbours are easy to predict."""

    def __init__(self, version: str = "colour") -> None:
        self.version = version
        self.calls = 0

    def embed(self, crops: list[np.ndarray]) -> np.ndarray:
        self.calls += 1
        rows = np.array([c[24:40, 24:40].reshape(-1, 3).mean(axis=0) + 1.0 for c in crops])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def one_hot(face: object, p: float = 0.99) -> list[float]:
    row = [(1 - p) / (len(FACES) - 1)] * len(FACES)
    row[FACES.index(face)] = p
    return row


def quality(**probs: float) -> list[float]:
    row = [probs.get(q, 0.0) for q in QUALITY]
    row[0] = 1 - sum(row[1:])
    return row


def cand(x: float, y: float, size: float = 40, score: float = 0.9) -> Candidate:
    return Candidate(x, y, (x - size / 2, y - size / 2, x + size / 2, y + size / 2), score)


FRAME = np.full((480, 640, 3), 90, np.uint8)


def test_detector_input_keeps_aspect_and_pads_to_32() -> None:
    image, scale = detector_image(np.zeros((600, 800, 3), np.uint8))
    assert detector_tensor(image).shape == (1, 3, 288, 384) and scale == pytest.approx(0.48)
    image, _ = detector_image(np.zeros((540, 960, 3), np.uint8))
    x = detector_tensor(image)
    assert x.shape[2] % 32 == 0 and x.shape[3] == 384


def test_the_networks_read_each_level_as_they_learnt_it() -> None:
    """RGB in [-0.5, 0.5] as training makes it (models/train.py: / 255 - 0.5), channels
    first, from a part cut out of a larger picture too."""
    from vision.preprocess import to_tensor

    levels = np.arange(256, dtype=np.uint8)
    image = np.stack([levels, levels[::-1], np.roll(levels, 7)], axis=1).reshape(16, 16, 3)
    x = to_tensor(np.pad(image, ((2, 0), (3, 0), (0, 0)))[2:, 3:])
    assert x.dtype == np.float32 and x.shape == (1, 3, 16, 16) and x.flags.c_contiguous
    learnt = image[:, :, ::-1].astype(np.float32) / np.float32(255.0) - np.float32(0.5)
    assert np.allclose(x[0], learnt.transpose(2, 0, 1), atol=1e-7)
    assert x[0, 2, 0, 0] == np.float32(-0.5) and x.max() == np.float32(0.5)


def test_a_die_found_in_pieces_is_searched_again_smaller() -> None:
    """A photo close to a die (800 px wide): the coarse search sees it whole, 400 px; the
    first search found its pips (60 px) as dice."""
    die = cand(400, 300, size=400, score=0.8)
    pips = [cand(x, y, size=60, score=0.5) for x, y in ((300, 200), (400, 300), (500, 400))]
    # the die about 36 px there; the first finds all weak pieces of it
    assert large_dice(pips, [die], 800) == LargeDice(64, found_in_pieces=True)
    # a pip found as surely as a die, or as the large die: the reader weighs both
    sure = [*pips[:2], dataclasses.replace(pips[2], score=0.75)]
    assert large_dice(sure, [die], 800) == LargeDice(64, found_in_pieces=False)
    assert large_dice(sure, [dataclasses.replace(die, score=0.6)], 800) \
        == LargeDice(64, found_in_pieces=False)
    # most first finds lie elsewhere: the reader weighs both
    beside = [cand(x, 560, size=60, score=0.5) for x in (100, 700, 750)]
    assert large_dice([*pips[:1], *beside], [die], 800) == LargeDice(64, found_in_pieces=False)
    # the same die seen whole by the first search too (no pieces): nothing to do
    assert large_dice([cand(400, 300, size=380)], [die], 800) is None
    # nothing found first (a die so large that not even its pips look like dice): it is
    # searched for at its own scale, and what is found there stands (models/README.md,
    # "A die so large the first search finds nothing")
    assert large_dice([], [die], 800) == LargeDice(64, found_in_pieces=True)


@pytest.mark.parametrize(("found", "coarse"), [
    # dice of a usual size: the coarse search finds nothing large
    ([cand(x, 300, size=60, score=0.5) for x in (300, 400, 500)], [cand(400, 300, 80, 0.8)]),
    # a large find the network is unsure of (a cup at the edge)
    ([cand(x, 300, size=60, score=0.5) for x in (300, 400, 500)], [cand(400, 300, 400, 0.4)]),
    # no find lies in it: dice beside a large thing
    ([cand(x, 60, size=60, score=0.5) for x in (100, 300, 700)], [cand(400, 400, 300, 0.8)]),
    # nothing found first, and nothing large found surely
    ([], [cand(400, 300, 80, 0.8)]),
    ([], [cand(400, 300, 400, 0.4)]),
])
def test_large_finds_of_the_coarse_search_that_hold_no_pieces_change_nothing(
        found: list[Candidate], coarse: list[Candidate]) -> None:
    assert large_dice(found, coarse, 800) is None


class WithLarge(FixedDetector):
    """A detector that also offers finds at the scale of large dice (`in_pieces`: and
    takes the first finds for their pieces)."""

    def __init__(self, found: list[Candidate], large: list[Candidate],
                 in_pieces: bool = False) -> None:
        super().__init__(found)
        self.large = large
        self.in_pieces = in_pieces

    def search(self, frame_bgr: np.ndarray, expected: int = 5) -> Search:
        return Search(self.candidates, self.large, self.in_pieces)


class ShadeReader:
    """Reads a bright crop as a sure 5, a dark one as a guess."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        guess = [1 / len(FACES)] * len(FACES)
        return FaceScores(np.array([one_hot(5) if c.mean() > 128 else guess for c in crops]),
                          np.array([quality()] * len(crops)))


@pytest.mark.parametrize("in_pieces", [False, True])
def test_a_photo_close_to_a_die_is_read_at_its_scale_not_as_its_pips(in_pieces: bool) -> None:
    frame = np.full((600, 800, 3), 90, np.uint8)
    frame[100:500, 200:600] = 255  # the die
    pips = [(300, 200), (400, 300), (500, 400)]
    for x, y in pips:
        frame[y - 25:y + 25, x - 25:x + 25] = 0
    reader = Reader(WithLarge([cand(x, y, size=60, score=0.6) for x, y in pips],
                              [cand(400, 300, size=400, score=0.8)], in_pieces), ShadeReader())
    assert [(d.value, d.x) for d in reader.read(frame).dice] == [(5, 400)]


def test_dice_the_detector_takes_for_pieces_stay_where_they_read_surer_than_the_large_find(
        ) -> None:
    """A coarse search took the table between five small dice for one die filling the
    picture, and the detector took the dice for its pieces: the classifier reads the dice
    surely and the "die" not, so the dice stay (a taught set, which the classifier cannot
    weigh, keeps the detector's word)."""
    frame = np.full((960, 1280, 3), 90, np.uint8)  # the table: read as a guess
    places = [(430, 310), (470, 310), (580, 340), (530, 470), (430, 590)]
    for x, y in places:
        frame[y - 18:y + 18, x - 18:x + 18] = 255  # dice: each read as a sure 5
    small = [cand(x, y, size=36, score=0.6) for x, y in places]
    table = [cand(450, 550, size=900, score=0.7)]
    reader = Reader(WithLarge(small, table, in_pieces=True), ShadeReader())
    assert reader.finds(frame)[0] == small
    assert [(d.value, d.x, d.y) for d in reader.read(frame).dice] \
        == [(5, x, y) for x, y in sorted(places)]
    taught = DiceSet("zoo", ["duck", "lion"], np.stack([patch((0, 0, 0)), patch((255,) * 3)]))
    reader = Reader(WithLarge(small, table, in_pieces=True), ShadeReader(), dice_set=taught,
                    embedder=ColourEmbedder())
    assert reader.finds(frame)[0] == table


def test_dice_far_smaller_than_a_large_find_are_not_its_pieces() -> None:
    """A bright glare spot filling the picture, taken by the coarse search for one die:
    the small, dim-read dice inside it are dice seen from afar, not its pips (PIECE_SIZE)."""
    frame = np.full((960, 1280, 3), 255, np.uint8)  # glare: the large find reads a sure 5
    dice = [(600, 380), (640, 400), (620, 440)]
    for x, y in dice:
        frame[y - 15:y + 15, x - 15:x + 15] = 60  # dark: the classifier only guesses ...
    frame[385:415, 625:655] = 200  # ... but for one die, read as surely as the large find
    small = [cand(x, y, size=30, score=0.8) for x, y in dice]
    reader = Reader(WithLarge(small, [cand(640, 480, size=940, score=0.6)]), ShadeReader())
    assert reader.finds(frame)[0] == small
    # finds a tenth of the large one's size, read as unsurely, are its pips, as before
    frame[:] = 255
    pips = [(400, 300), (640, 480), (880, 660)]
    for x, y in pips:
        frame[y - 47:y + 47, x - 47:x + 47] = 60
    frame[433:527, 593:687] = 200
    reader = Reader(WithLarge([cand(x, y, size=94, score=0.8) for x, y in pips],
                              [cand(640, 480, size=940, score=0.6)]), ShadeReader())
    assert [c.size for c in reader.finds(frame)[0]] == [940]


def test_a_large_die_found_as_its_pip_is_read_at_its_scale_beside_the_other_dice() -> None:
    """A die with one large pip, larger than the others: the first search found its pip
    as a die. The other dice read surely, so the frame is not all pieces; the large find
    stands for the pip alone, and a sure die inside another large find stays."""
    frame = np.full((600, 800, 3), 90, np.uint8)
    small = [(150, 100), (300, 100), (450, 100)]
    for x, y in small:
        frame[y - 30:y + 30, x - 30:x + 30] = 255
    frame[300:500, 300:500] = 255  # the large die ...
    frame[365:435, 365:435] = 0  # ... and its pip
    first = [cand(x, y, size=60, score=0.8) for x, y in small] + [cand(400, 400, 80, 0.5)]
    large = [cand(400, 400, size=200, score=0.7), cand(150, 100, size=120, score=0.6)]
    reader = Reader(WithLarge(first, large), ShadeReader())
    dice = reader.read(frame).dice
    assert [(d.x, d.y) for d in dice] == [(150, 100), (300, 100), (400, 400), (450, 100)]
    assert all(d.value == 5 and d.flag is None for d in dice)
    # where the large find reads no surer than its pieces (a dark mat), nothing changes
    frame[300:500, 300:500] = 0
    reader = Reader(WithLarge(first, large), ShadeReader())
    assert (400, 400) in [(d.x, d.y) for d in reader.read(frame).dice]
    assert reader.finds(frame)[0] == first


class BrightnessReader:
    """Reads a crop as a 5, the surer the brighter it is."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        return FaceScores(np.array([one_hot(5, min(0.99, c.mean() / 255)) for c in crops]),
                          np.array([quality()] * len(crops)))


def test_a_clear_die_among_false_finds_is_not_given_up_for_a_large_find_holding_it() -> None:
    """A laptop's keys found beside one clear die lower the first finds' mean reading, and
    the coarse search took the laptop, desk and die for one die of the whole picture, read
    surer than that mean: the clear die stays."""
    frame = np.full((480, 640, 3), 90, np.uint8)
    frame[250:310, 370:430] = 255  # the die
    keys = [cand(x, 40, size=50, score=0.4) for x in (60, 140, 220, 300)]
    frame[15:65, 35:325] = 40  # the keys
    die = cand(400, 280, size=60, score=0.8)
    laptop = [cand(320, 240, size=600, score=0.5)]
    dice = Reader(WithLarge([die, *keys], laptop), BrightnessReader()).read(frame).dice
    assert [(d.value, d.x, d.y, d.flag) for d in dice if d.flag is None] == [(5, 400, 280, None)]
    assert max(d.box[2] - d.box[0] for d in dice) <= 60


class GlareReader:
    """Reads a crop with a dark middle (a pip) as a guess, a bright one (glare round a die)
    as a 1 read 0.92, a greyer one (the die) as a sure 3."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        def row(c: np.ndarray) -> list[float]:
            if c[c.shape[0] // 2, c.shape[1] // 2].mean() < 100:
                return [1 / len(FACES)] * len(FACES)
            return one_hot(1, 0.92) if c.mean() > 235 else one_hot(3, 0.98)
        return FaceScores(np.array([row(c) for c in crops]), np.array([quality()] * len(crops)))


def test_a_clear_die_in_a_glare_spot_is_not_given_up_for_the_spot_read_as_a_one() -> None:
    """A lamp's glare round a die, found by the coarse search as one large die whose pip
    is the die: the first finds (the die and two of its pips) read as dice no surer than
    PIECES_READ on the mean, the spot surer. The die reads clearly as another face than the
    spot, so it is no piece of the spot: it stays (a real photo's 3 was read as a 1)."""
    frame = np.full((480, 640, 3), 255, np.uint8)  # the glare
    frame[183:278, 253:348] = 200  # the die ...
    pips = [(280, 205), (325, 250)]
    for x, y in pips:
        frame[y - 8:y + 8, x - 8:x + 8] = 0  # ... and two of its pips
    die = cand(300, 230, size=95, score=0.7)
    first = [die] + [cand(x, y, size=22, score=0.3) for x, y in pips]
    spot = [cand(305, 225, size=393, score=0.7)]
    dice = Reader(WithLarge(first, spot), GlareReader()).read(frame).dice
    assert [(d.value, d.x, d.y) for d in dice if d.flag is None] == [(3, 300, 230)]
    # where the find reads as the same face as the large one, it is no clear die lost
    frame[183:278, 253:348] = 255
    for x, y in pips:
        frame[y - 8:y + 8, x - 8:x + 8] = 0
    reader = Reader(WithLarge(first, spot), GlareReader())
    assert [c.size for c in reader.finds(frame)[0]] == [393]


def test_a_taught_set_reads_the_first_finds() -> None:
    """The classifier's certainty says nothing about a taught set's art: no weighing."""
    frame = np.full((600, 800, 3), 90, np.uint8)
    frame[100:500, 200:600] = 255  # the die of the photo above, which is read whole there
    pips = [(300, 200), (400, 300), (500, 400)]
    for x, y in pips:
        frame[y - 25:y + 25, x - 25:x + 25] = 0
    taught = DiceSet("zoo", ["duck", "lion"], np.stack([patch((0, 0, 0)), patch((255,) * 3)]))
    reader = Reader(WithLarge([cand(x, y, size=60, score=0.6) for x, y in pips],
                              [cand(400, 300, size=400, score=0.8)]), ShadeReader(),
                    dice_set=taught, embedder=ColourEmbedder())
    assert [d.x for d in reader.read(frame).dice] == [300, 400, 500]


def test_dice_in_a_tray_taken_for_one_large_die_stay_dice() -> None:
    frame = np.full((600, 800, 3), 40, np.uint8)  # a dark tray
    places = [(300, 300), (400, 300), (500, 300)]
    for x, y in places:
        frame[y - 30:y + 30, x - 30:x + 30] = 255  # three dice
    reader = Reader(WithLarge([cand(x, y, size=60, score=0.8) for x, y in places],
                              [cand(400, 300, size=400, score=0.6)]), ShadeReader())
    assert [d.x for d in reader.read(frame).dice] == [300, 400, 500]


@pytest.mark.parametrize("sigma", [1.5, 3.0, 5.0])
def test_edge_width_is_the_blur_of_a_step(sigma: float) -> None:
    """A black and white step blurred by σ spreads over σ: what a defocused lens does."""
    frame = np.zeros((200, 200, 3), np.uint8)
    frame[:, 100:] = 255
    frame = cv2.GaussianBlur(frame, (0, 0), sigma)
    width = edge_width(frame, (50, 50, 150, 150))
    assert width is not None and abs(width - sigma) < 0.15 * sigma
    assert edge_width(frame, (50, 50, 55, 55)) is None  # too small to tell


@pytest.mark.parametrize("sigma", [2.0, 5.0, 10.0])
def test_contrast_over_noise_finds_the_noise_beside_a_dies_pips(sigma: float) -> None:
    """A white die with black pips under sensor noise of σ: its contrast over σ, the pips'
    edges hardly counted as noise; a die drawn without noise has none to measure."""
    frame = np.full((200, 200, 3), 200, np.uint8)
    for x, y in ((70, 70), (100, 100), (130, 130)):
        cv2.circle(frame, (x, y), 10, (30, 30, 30), -1)
    box = (40, 40, 160, 160)
    assert contrast_over_noise(frame, box) is None
    noise = np.random.default_rng(0).normal(0, sigma, frame.shape[:2])[..., None]
    noisy = np.clip(frame + noise, 0, 255).astype(np.uint8)
    grey = cv2.cvtColor(noisy[40:160, 40:160], cv2.COLOR_BGR2GRAY).astype(np.float32)
    contrast = float(np.percentile(grey, 99) - np.percentile(grey, 1))
    ratio = contrast_over_noise(noisy, box)
    assert ratio is not None and abs(contrast / ratio - sigma) < 0.15 * sigma
    assert contrast_over_noise(noisy, (40, 40, 45, 45)) is None  # too small to tell


def test_crop_is_centred_on_the_die() -> None:
    frame = np.zeros((200, 200, 3), np.uint8)
    frame[90:110, 130:150] = 255  # a bright square centred at (140, 100)
    crop = crop_die(frame, 140, 100, 20)
    ys, xs = np.nonzero(crop[:, :, 0] > 128)
    assert abs(xs.mean() - 31.5) < 1.5 and abs(ys.mean() - 31.5) < 1.5


@pytest.mark.parametrize("body", [(0.3, 0.0), (0.0, 0.3), (-0.3, 0.0), (0.0, -0.3),
                                  (0.2, -0.25)])
def test_a_die_seen_at_an_angle_is_cut_upright(body: tuple[float, float]) -> None:
    """Its body, wherever it lies in the frame, lies straight below the top face in the
    crop; a die seen from above is not turned."""
    frame = np.zeros((200, 200, 3), np.uint8)
    bx, by = 100 + 60 * body[0], 100 + 60 * body[1]
    frame[int(by) - 3:int(by) + 4, int(bx) - 3:int(bx) + 4] = 255  # the body's centre
    angle = upright_angle(body)
    assert angle is not None
    crop = crop_die(frame, 100, 100, 60, angle=angle)
    ys, xs = np.nonzero(crop[:, :, 0] > 128)
    assert abs(xs.mean() - 31.5) < 2 and ys.mean() - 31.5 > 15
    assert upright_angle((0.02, -0.03)) is None and upright_angle(None) is None


class UprightClassifier(FixedClassifier):
    """Trained on upright crops: keeps the crops and what it was told of them."""

    upright = True

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        self.crops, self.turned = crops, turned
        return super().classify(crops, turned)


def test_a_classifier_trained_upright_gets_dice_seen_at_an_angle_cut_upright() -> None:
    frame = np.zeros((200, 300, 3), np.uint8)
    frame[97:104, 127:134] = 255  # the first die's body lies to its right (x 130)
    angled = dataclasses.replace(cand(100, 100, size=60), body=(0.5, 0.0))
    flat = dataclasses.replace(cand(230, 100, size=60), body=(0.02, 0.01))
    classifier = UprightClassifier([[1.0] + [0.0] * 11] * 2, [[1.0, 0, 0, 0, 0]] * 2)
    Reader(FixedDetector([angled, flat]), classifier).read(frame)
    assert list(classifier.turned or []) == [True, False]
    ys, xs = np.nonzero(classifier.crops[0][:, :, 0] > 128)
    assert abs(xs.mean() - 31.5) < 2 and ys.mean() - 31.5 > 20  # below the top face


def test_crop_at_the_frame_edge_still_has_full_size() -> None:
    crop = crop_die(FRAME, 2, 2, 50)
    assert crop.shape == (64, 64, 3)


def test_decode_finds_peaks_and_sizes() -> None:
    out = np.zeros((5, 72, 96), np.float32)
    out[0, 20, 30] = 0.9
    out[1, 20, 30], out[2, 20, 30] = 0.5, 0.25
    out[3, 20, 30], out[4, 20, 30] = np.log(40), np.log(20)
    out[0, 50, 60] = 0.2  # below the threshold
    (found,) = decode(out, scale=0.5, threshold=0.3, width=800, height=600)
    assert found.x == pytest.approx((30.5) * DETECTOR_STRIDE / 0.5)
    assert found.y == pytest.approx((20.25) * DETECTOR_STRIDE / 0.5)
    assert found.box[2] - found.box[0] == pytest.approx(80)
    assert found.box[3] - found.box[1] == pytest.approx(40)


def test_a_search_keeps_only_its_surest_finds() -> None:
    """A cloth printed with dots can light up the whole heatmap: the finds read per frame
    stay bounded, and they are the surest."""
    out = np.zeros((5, 72, 96), np.float32)
    out[3:5] = np.log(8.0)
    scores = np.linspace(0.31, 0.99, 12 * 16).reshape(12, 16)
    out[0, 2::6, 2::6] = scores
    found = decode(out, scale=0.5, threshold=0.3, width=800, height=600)
    assert len(found) == MAX_FINDS
    assert min(c.score for c in found) == pytest.approx(np.sort(scores.ravel())[-MAX_FINDS])


def test_suppress_keeps_touching_dice_but_not_double_peaks() -> None:
    a, b = cand(100, 100, score=0.9), cand(140, 100, score=0.8)  # touching: 1 size apart
    dup = cand(108, 100, score=0.5)  # same die
    assert suppress([dup, b, a]) == [a, b]


def test_suppress_keeps_two_dice_that_overlap_in_the_picture() -> None:
    """A die half hidden behind another, seen at an angle: centres 0.42 sizes apart are
    two dice; 0.35 apart, one die's two peaks (its top face and a side face)."""
    front, behind = cand(100, 100, score=0.9), cand(100, 100 - 0.42 * 40, score=0.6)
    assert suppress([behind, front]) == [front, behind]
    assert suppress([cand(100, 100 - 0.35 * 40, score=0.6), front]) == [front]


def test_judge_values_confidence_and_order() -> None:
    reader = Reader(FixedDetector([cand(300, 200), cand(100, 200)]),
                    FixedClassifier([one_hot(5), one_hot(2)], [quality(), quality()]))
    reading = reader.read(FRAME)
    assert [d.value for d in reading.dice] == [2, 5]  # left to right
    assert all(d.flag is None and d.confidence > 0.98 for d in reading.dice)
    assert reading.warnings == ()


@pytest.mark.parametrize(("dice_set", "faces", "warned"), [
    ("pips", ["duck", "lion", "cat"], "animals"),  # Kniffel Kids dice in a Kniffel game
    ("animals", [2, 5, 6], "pips"),
    ("pips", [2, 5, 6], None),
    ("animals", ["duck", "lion", "cat"], None),
    ("auto", ["duck", "lion", "cat"], None),  # read as what they look like
    ("pips", ["duck"], None),  # one die says too little
])
def test_dice_of_the_other_kind_are_asked_about_and_warned_of(
        dice_set: str, faces: list[object], warned: str | None) -> None:
    reader = Reader(FixedDetector([cand(100 + 150 * i, 200) for i in range(len(faces))]),
                    FixedClassifier([one_hot(f) for f in faces], [quality()] * len(faces)),
                    dice_set)
    reading = reader.read(FRAME)
    said = [w for w in reading.warnings if looks_like(w)]
    assert [looks_like(w) for w in said] == ([] if warned is None else [warned])
    if warned == "animals":
        assert said == ["the 3 dice look like animal dice, not pip dice: read them as animal "
                        "dice (--dice-set animals; at the table, a Kniffel Kids game)"]
    if warned is not None:
        assert all(d.flag == "unreadable" for d in reading.dice)


class BrightestPixel:
    """Finds one 40 px die centred on the brightest pixel of the picture it is given, and
    remembers the pictures' shapes."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        self.shapes.append(frame_bgr.shape)
        y, x = np.unravel_index(int(np.argmax(frame_bgr[..., 0])), frame_bgr.shape[:2])
        return [cand(float(x), float(y), size=40)]


@pytest.mark.parametrize("turn", [1, 2, 3])
def test_a_turned_camera_is_read_upright_and_answered_in_its_own_pixels(turn: int) -> None:
    """camera.turn: the networks see the picture turned upright (quarters clockwise), the
    table gets the dice where they lie in the camera's picture (640×480 here)."""
    frame = FRAME.copy()
    frame[50, 100] = 255  # the die's centre: x 100, y 50
    detector = BrightestPixel()
    reader = Reader(detector, FixedClassifier([one_hot(4)], [quality()]), turn=turn)
    die = reader.read(frame).dice[0]
    assert detector.shapes == [(640, 480, 3) if turn % 2 else (480, 640, 3)]
    assert (die.value, die.flag, die.x, die.y) == (4, None, 100, 50)
    x0, y0, x1, y1 = die.box
    assert (x1 - x0, y1 - y0) == (40, 40)
    assert abs((x0 + x1) / 2 - 100.5) <= 0.5 and abs((y0 + y1) / 2 - 50.5) <= 0.5
    with pytest.raises(ValueError, match="turn 4: quarter turns"):
        Reader(detector, FixedClassifier([one_hot(4)], [quality()]), turn=4)


class PortraitDetector:
    """Finds five dice in a picture taller than wide, two in one wider than tall: a stand-in
    for the detector, which reads a turned camera's dice worse."""

    def detect(self, frame_bgr: np.ndarray) -> list[Candidate]:
        count = 5 if frame_bgr.shape[0] > frame_bgr.shape[1] else 2
        return [cand(60.0 + 80 * i, 100.0) for i in range(count)]


def test_the_reader_says_which_turn_reads_a_picture_clearly_better() -> None:
    five = FixedClassifier([one_hot(v) for v in (1, 2, 3, 4, 5)], [quality()] * 5)
    upright = Reader(PortraitDetector(), five)
    assert len(upright.read(FRAME).dice) == 2
    assert upright.better_turn(FRAME, upright.read(FRAME)) == 1  # 3 more dice trusted
    turned = upright.turned(1)
    assert turned.turn == 1 and turned.detector is upright.detector
    assert turned.better_turn(FRAME, turned.read(FRAME)) is None  # 2 quarters: landscape
    portrait = np.full((640, 480, 3), 90, np.uint8)
    assert upright.better_turn(portrait, upright.read(portrait)) is None


def test_kniffel_read_reads_a_photo_turned_where_it_reads_clearly_better(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without `--turn` the better turn's reading is taken and named; with one, the photo
    is read as told and the better turn only named."""
    from web import cli

    five = FixedClassifier([one_hot(v) for v in (1, 2, 3, 4, 5)], [quality()] * 5)
    monkeypatch.setattr(Reader, "for_dice_set", classmethod(
        lambda cls, name, folder, expected=None, threads=1, turn=0:
        Reader(PortraitDetector(), five, expected=expected, turn=turn)))
    photo = tmp_path / "side.png"
    cv2.imwrite(str(photo), FRAME)
    assert cli.main(["read", str(photo), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)[0]
    assert result["warnings"] == [
        "read turned 90°: the dice read better so (--turn 0 reads the photo as it is)"]
    assert cli.main(["read", str(photo), "--turn", "90", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["dice"] == result["dice"]  # its pixels
    assert len(result["dice"]) == 5
    assert cli.main(["read", str(photo), "--turn", "0", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)[0]
    assert len(result["dice"]) == 2
    assert result["warnings"][-1] == "the dice read better turned 90° (--turn 90)"
    assert cli.main(["read", str(photo), "--turn", "90"]) == 0
    assert capsys.readouterr().out == f"{photo}: 5 4 3 2 1\n"  # read down the photo


@pytest.mark.parametrize(
    ("candidate", "value", "qual", "flag"),
    [
        (cand(300, 200), one_hot(3), quality(tilted=0.8), "tilted"),
        (cand(300, 200), one_hot(3), quality(stacked=0.7), "stacked"),
        (cand(5, 200), one_hot(3), quality(), "cut"),
        (cand(300, 470), one_hot(3), quality(), "cut"),
        (cand(300, 200), one_hot(3, 0.4), quality(), "unreadable"),
        # below TRUST_CONFIDENCE the table asks: a third of such dice are misread
        (cand(300, 200), one_hot(3, 0.7), quality(), "unreadable"),  # 0.84 among pips
        (cand(300, 200), one_hot(3, 0.95), quality(), None),
    ],
)
def test_judge_flags(candidate: Candidate, value: list[float], qual: list[float],
                     flag: str | None) -> None:
    reader = Reader(FixedDetector([candidate]), FixedClassifier([value], [qual]))
    (die,) = reader.read(FRAME).dice
    assert die.flag == flag


def test_a_weak_find_overlapping_a_stronger_one_is_asked_about_and_so_is_the_stronger() -> None:
    # 0.5 sizes apart: one die on or against another, or one die's side found as a die —
    # and a steeply seen die's front face is often the surer find of the two
    finds = FixedDetector([cand(300, 200, score=0.9), cand(320, 200, score=0.4)])
    faces = FixedClassifier([one_hot(5), one_hot(2)], [quality(), quality()])
    strong, weak = Reader(finds, faces).read(FRAME).dice
    assert (strong.value, strong.flag) == (5, "stacked")
    assert (weak.value, weak.flag) == (2, "stacked")
    # what models/fit_judge.py fits the doubt on: only the weaker one asked about
    alone = Reader(finds, faces, judge=Judge(overlap_both=False))
    assert [d.flag for d in alone.read(FRAME).dice] == [None, "stacked"]


def test_one_die_found_twice_is_shown_once_and_still_asked_about() -> None:
    # a side face the refiner moved onto the top face: a second find 0.05 sizes away that
    # reads the same value
    finds = FixedDetector([cand(300, 200, score=0.9), cand(302, 200, score=0.4)])
    same = FixedClassifier([one_hot(5), one_hot(5, 0.6)], [quality(), quality()])
    (die,) = Reader(finds, same).read(FRAME).dice
    assert (die.value, die.x, die.flag) == (5, 300, "stacked")
    # read as two values, or further apart, or without the setting: both shown
    other = FixedClassifier([one_hot(5), one_hot(2)], [quality(), quality()])
    assert len(Reader(finds, other).read(FRAME).dice) == 2
    apart = FixedDetector([cand(300, 200, score=0.9), cand(310, 200, score=0.4)])
    assert len(Reader(apart, same).read(FRAME).dice) == 2
    # the distance is measured in the smaller find's size: 9 px is near for a 60 px find
    # but not for the 40 px one beside it
    larger = FixedDetector([cand(300, 200, score=0.9), cand(309, 200, size=60, score=0.4)])
    assert len(Reader(larger, same).read(FRAME).dice) == 2
    assert len(Reader(finds, same, judge=Judge(same_place=None)).read(FRAME).dice) == 2


@pytest.mark.parametrize(
    "second",
    [
        cand(340, 200, score=0.4),  # a die size apart: two dice side by side
        cand(320, 200, score=0.8),  # close, but both found with conviction
    ],
)
def test_dice_side_by_side_or_both_sure_are_not_flagged(second: Candidate) -> None:
    reader = Reader(FixedDetector([cand(300, 200, score=0.9), second]),
                    FixedClassifier([one_hot(5), one_hot(2)], [quality(), quality()]))
    assert [d.flag for d in reader.read(FRAME).dice] == [None, None]


def seen_from(vanishing: tuple[float, float], strength: float,
              places: list[tuple[float, float]]) -> list[Candidate]:
    """Finds whose bodies lie towards a vertical vanishing point, as a camera sees them:
    offset = strength · (v − position) / long side of FRAME."""
    return [dataclasses.replace(cand(x, y), body=(strength * (vanishing[0] - x) / 640,
                                                  strength * (vanishing[1] - y) / 640))
            for x, y in places]


PLACES = [(120, 150), (260, 300), (400, 180), (520, 330), (330, 420)]


def flags_of(candidates: list[Candidate], judge: Judge | None = None
             ) -> list[str | None]:
    reader = Reader(FixedDetector(candidates),
                    FixedClassifier([one_hot(4)] * len(candidates), [quality()] * 6),
                    judge=judge)
    by_place = {(d.x, d.y): d.flag for d in reader.read(FRAME).dice}
    return [by_place[(c.x, c.y)] for c in candidates]


@pytest.mark.parametrize(
    ("vanishing", "strength"),
    [((320, 2400), 0.08),  # a camera tilted towards the far side of the table
     ((-1500, 240), 0.1),  # ... towards the right
     ((320, 240), 0.5)])  # a wide lens straight above the middle: bodies point inwards
def test_a_side_face_found_as_a_die_is_asked_about(vanishing: tuple[float, float],
                                                   strength: float) -> None:
    finds = seen_from(vanishing, strength, PLACES)
    assert flags_of(finds) == [None] * 5  # every body lies the way of the view
    # a side face found as a die: the top face lies beyond it, its body points away
    side = dataclasses.replace(finds[3], body=(-finds[3].body[0], -finds[3].body[1]),
                               score=0.5)
    assert flags_of([*finds[:3], side, finds[4]]) == [None, None, None, "unreadable", None]
    # ... unless the detector is sure of it, in a view not steep enough to be sure of the
    # body offsets (bodies up to 0.18 die sizes; Judge.steep_view)
    shallow = seen_from(vanishing, strength * 0.6, PLACES)
    sure = dataclasses.replace(shallow[3], body=(-shallow[3].body[0], -shallow[3].body[1]),
                               score=0.9)
    assert flags_of([*shallow[:3], sure, shallow[4]]) == [None] * 5


def test_in_a_steep_crowded_view_a_find_whose_body_points_back_is_asked() -> None:
    """Dice crowded and seen steeply: as many side faces found as top faces, the
    perspective fit points nowhere, but the top faces' bodies still lead the way."""
    places = [(300, 200), (340, 205), (380, 200), (320, 240), (360, 245), (340, 280)]
    tops = [dataclasses.replace(cand(x, y), body=(0.0, 0.25)) for x, y in places[:3]]
    sides = [dataclasses.replace(cand(x, y, score=0.8), body=(0.01, -0.15))
             for x, y in places[3:]]
    assert flags_of([*tops, *sides]) == [None] * 3 + ["unreadable"] * 3
    # the same bodies a third as long: not steep enough to tell
    shallow = [dataclasses.replace(c, body=(c.body[0] / 3, c.body[1] / 3))
               for c in [*tops, *sides]]
    assert flags_of(shallow) == [None] * 6


def upright_view(growth: float, bodies: dict[int, tuple[float, float]]) -> list[Candidate]:
    """Finds over the picture whose dice grow down it by `growth` (log size per picture
    height: > 0 a camera upright, < 0 upside down); bodies right under the top faces but
    for those given."""
    return [dataclasses.replace(cand(x, y, size=40 * float(np.exp(growth * y / 480))),
                                body=bodies.get(k, (0.0, 0.05)))
            for k, (x, y) in enumerate(PLACES)]


def test_a_body_pointing_up_in_an_upright_view_is_a_side_face() -> None:
    """An upright camera sees each top face's body below it (Judge.body_up); side
    faces found as dice outnumbering the tops do not hide a find whose body points up."""
    up = (0.0, -0.12)
    assert flags_of(upright_view(0.3, {})) == [None] * 5
    # in the picture's upper half (PLACES[0] at y 150 of 480)
    assert flags_of(upright_view(0.3, {0: up})) == ["unreadable"] + [None] * 4
    # in its lower half (PLACES[3], y 330) only in a steep view, dice growing faster
    assert flags_of(upright_view(0.3, {3: up})) == [None] * 5
    assert flags_of(upright_view(0.8, {3: up})) == [None] * 3 + ["unreadable", None]
    # a camera upside down sees every body point up: nothing is flagged for it
    upside_down = upright_view(-0.8, {k: (0.0, -0.12) for k in range(5)})
    assert flags_of(upside_down) == [None] * 5
    # a body pointing up by less than 0.08 die sizes is no sign
    assert flags_of(upright_view(0.3, {0: (0.0, -0.05)})) == [None] * 5
    # ... and without the check nothing is flagged
    assert flags_of(upright_view(0.3, {0: up}), Judge(body_up=None)) == [None] * 5


def test_a_wide_lens_straight_above_is_not_a_steep_view() -> None:
    """Bodies of 0.2–0.5 die sizes pointing every way (towards the middle): no back."""
    assert flags_of(seen_from((320, 240), 1.2, PLACES)) == [None] * 5


def test_body_offsets_are_not_judged_from_above_or_from_too_few_dice() -> None:
    from_above = seen_from((320, 240), 0.05, PLACES)  # bodies right under the top faces
    flipped = dataclasses.replace(from_above[3], body=(-from_above[3].body[0],
                                                       -from_above[3].body[1]), score=0.5)
    assert flags_of([*from_above[:3], flipped, from_above[4]]) == [None] * 5
    tilted = seen_from((320, 2400), 0.05, PLACES[:3])
    side = dataclasses.replace(tilted[2], body=(-tilted[2].body[0], -tilted[2].body[1]),
                               score=0.5)
    # two others are too few to judge the body offsets by ...
    assert flags_of([*tilted[:2], side], Judge(body_up=None)) == [None] * 3
    # ... but dice of one size (flat, whatever rounding makes of their fit) show an upright
    # view, where a body pointing up in the picture's upper half is a side face (body_up)
    assert flags_of([*tilted[:2], side]) == [None, None, "unreadable"]
    steep = seen_from((320, 2400), 0.08, PLACES[:2])  # ... and one other, seen steeply
    assert flags_of([steep[0], dataclasses.replace(steep[1], body=(0.0, -0.2))]) == [None] * 2
    assert flags_of([cand(x, y) for x, y in PLACES]) == [None] * 5  # no body offsets
    # a die whose body lies right under its top face points nowhere, whatever the others
    finds = seen_from((320, 2400), 0.05, PLACES)
    under = dataclasses.replace(finds[3], body=(0.01, -0.02), score=0.5)
    assert flags_of([*finds[:3], under, finds[4]]) == [None] * 5
    # ... but seen steeply, where every top face's body lies well along the view, it is
    # not a top face
    finds = seen_from((320, 2400), 0.08, PLACES)
    assert flags_of([*finds[:3], under, finds[4]]) == [None] * 3 + ["unreadable", None]


def test_judge_drops_what_is_not_a_die_and_warns_on_count() -> None:
    reader = Reader(FixedDetector([cand(100, 100), cand(300, 100)]),
                    FixedClassifier([one_hot(4), one_hot(4)], [quality(), quality(no_die=0.9)]),
                    expected=5)
    reading = reader.read(FRAME)
    assert len(reading.dice) == 1
    assert reading.warnings == ("found 1 die, expected 5",)


def test_a_doubtful_find_far_smaller_than_the_trusted_dice_is_no_die() -> None:
    """A key of a keyboard or a plug's label beside the dice: asked about, and a third of
    their size. Dropped, where a doubtful find of about their size stays (and is asked
    about), and so does a small find the judge trusts."""
    finds = [cand(100, 100), cand(200, 100), cand(300, 100), cand(400, 300, size=12),
             cand(500, 300, size=30), cand(100, 400, size=14)]
    doubtful = one_hot(3, 0.5)
    classifier = FixedClassifier([one_hot(4)] * 3 + [doubtful, doubtful, one_hot(2)],
                                 [quality()] * 6)
    reading = Reader(FixedDetector(finds), classifier).read(FRAME)
    assert [(d.x, d.y, d.flag) for d in reading.dice] == [
        (100, 100, None), (100, 400, None), (200, 100, None), (300, 100, None),
        (500, 300, "unreadable")]
    kept = Reader(FixedDetector(finds), classifier, judge=Judge(small=None))
    assert len(kept.read(FRAME).dice) == 6


def test_auto_dice_set_decides_for_the_whole_frame() -> None:
    mostly_animal = [0.0] * 12
    mostly_animal[FACES.index("cat")] = 0.6
    mostly_animal[FACES.index(6)] = 0.4
    reader = Reader(FixedDetector([cand(100, 100), cand(300, 100)]),
                    FixedClassifier([one_hot("dog"), mostly_animal], [quality(), quality()]))
    assert [d.value for d in reader.read(FRAME).dice] == ["dog", "cat"]
    pips = Reader(FixedDetector([cand(100, 100)]),
                  FixedClassifier([mostly_animal], [quality()]), dice_set="pips")
    assert pips.read(FRAME).dice[0].value == 6


def test_finds_that_are_no_die_have_no_say_in_the_kind_of_dice() -> None:
    """A lone, clear pip die beside two plug labels that the classifier takes for no die
    but, if anything, for animals: the frame plays pips."""
    label_as_animal = [0.0] * 12
    label_as_animal[FACES.index("cat")] = 0.5
    label_as_animal[FACES.index("duck")] = 0.5
    reader = Reader(FixedDetector([cand(100, 100), cand(300, 100), cand(500, 100)]),
                    FixedClassifier([one_hot(2, 0.97), label_as_animal, label_as_animal],
                                    [quality(), quality(no_die=0.98), quality(no_die=0.9)]))
    assert [(d.value, d.flag) for d in reader.read(FRAME).dice] == [(2, None)]


def test_reader_refuses_a_broken_frame_and_an_unknown_set() -> None:
    reader = Reader(FixedDetector([]), FixedClassifier([], []))
    with pytest.raises(ValueError, match="not a colour image"):
        reader.read(np.zeros((10, 10), np.uint8))
    with pytest.raises(ValueError, match=r"too small to read \(20×8 pixels"):
        reader.read(np.zeros((8, 20, 3), np.uint8))
    with pytest.raises(ValueError, match="unknown dice set"):
        Reader(FixedDetector([]), FixedClassifier([], []), dice_set="dominoes")


def patch(bgr: tuple[int, int, int]) -> np.ndarray:
    return np.full((PATCH_PIXELS, PATCH_PIXELS, 3), bgr, np.uint8)


def test_taught_set_nearest_neighbour_and_storage(tmp_path: Path) -> None:
    colours = {"duck": (0, 0, 230), "lion": (230, 0, 0), "cat": (0, 230, 0)}
    taught = DiceSet("zoo", list(colours), np.stack([patch(c) for c in colours.values()]))
    embedder = ColourEmbedder()
    taught = taught.embedded_with(embedder)
    assert len(taught.labels) == len(taught.embeddings) == 3 * CROPS_PER_DIE
    query = embedder.embed([patch((220, 10, 5))[:64, :64], patch((10, 225, 0))[:64, :64]])
    values, probs, recognised = taught.values(query)
    assert values == ["lion", "cat"] and all(probs > 0.9) and all(recognised)
    taught.save(tmp_path)
    again = load_dice_set(tmp_path, "zoo")
    assert again.patch_values == list(colours) and again.embedder == embedding_version(embedder)
    assert again.labels == taught.labels and np.allclose(again.embeddings, taught.embeddings)
    assert again.embedded_with(embedder) is again  # same embedder: nothing to do
    with pytest.raises(DiceSetError, match="no dice set 'farm'"):
        load_dice_set(tmp_path, "farm")
    (tmp_path / "dice-sets" / "broken.npz").write_bytes(b"not a zip")
    with pytest.raises(DiceSetError) as info:  # not numpy's talk of pickles
        load_dice_set(tmp_path, "broken")
    assert str(info.value) == "dice set 'broken' is damaged (not a dice set file); teach it again"
    data = (tmp_path / "dice-sets" / "zoo.npz").read_bytes()
    (tmp_path / "dice-sets" / "half.npz").write_bytes(data[:len(data) // 2])
    with pytest.raises(DiceSetError, match=r"^dice set 'half' is damaged \(.+\); teach it"):
        load_dice_set(tmp_path, "half")
    (tmp_path / "dice-sets" / ".farm.tmp.npz").write_bytes(b"cut short")
    assert taught_sets(tmp_path) == {"zoo": list(colours)}  # damaged or unfinished: left out
    assert taught_sets(tmp_path / "nowhere") == {}
    for bad in ("pips", "../x", ""):
        with pytest.raises(DiceSetError):
            check_name(bad)


def test_teaching_says_when_its_photos_do_not_tell_the_faces_apart() -> None:
    """Each taught die is read among the others (its own views left out): where ducks and
    lions of the photos are shades of one colour, in turn, they would be misread."""
    def taught(ducks: list[tuple[int, int, int]], lions: list[tuple[int, int, int]]
               ) -> DiceSet:
        return DiceSet("zoo", ["duck"] * len(ducks) + ["lion"] * len(lions),
                       np.stack([patch(c) for c in ducks + lions])
                       ).embedded_with(ColourEmbedder())

    apart = taught([(0, 0, 200), (0, 10, 190), (5, 0, 210)], [(200, 0, 0), (190, 10, 0)])
    assert apart.look_alike() == [] and teaching_doubts(apart) == []
    shades = taught([(200, 0, 0), (160, 40, 0), (120, 80, 0)],
                    [(180, 20, 0), (140, 60, 0), (100, 100, 0)])
    assert len(shades.look_alike()) >= 2
    (doubt,) = teaching_doubts(shades)
    assert doubt.startswith(f"{len(shades.look_alike())} of 6 taught dice look more like "
                            "another face than their own (")
    assert "duck like lion" in doubt or "lion like duck" in doubt
    # A face taught from one die has no other to be read among: it is not judged.
    single = taught([(0, 0, 200)], [(200, 0, 0), (190, 10, 0)])
    assert single.look_alike() == [] and teaching_doubts(single) == []
    with pytest.raises(DiceSetError, match="not embedded yet"):
        DiceSet("zoo", ["duck", "duck"], np.stack([patch((0, 0, 200))] * 2)).look_alike()


def test_teaching_asks_whether_a_pip_photo_showed_its_face() -> None:
    """A pip set whose photos the classifier did not count as their faces (a die not
    turned, a photo too blurred to count) is doubted; one it counted, or a picture set it
    cannot count, is not."""
    def pips(counted: bool) -> DiceSet:
        return DiceSet("wood", [1, 1, 2, 2], np.stack([patch((0, 0, 200))] * 2
                                                       + [patch((200, 0, 0))] * 2),
                       counted=counted).embedded_with(ColourEmbedder())

    (doubt,) = teaching_doubts(pips(counted=False))
    assert doubt.startswith("the dice of a photo count as another face than the one given")
    assert teaching_doubts(pips(counted=True)) == []
    zoo = DiceSet("zoo", ["duck", "duck", "lion", "lion"], pips(True).patches
                  ).embedded_with(ColourEmbedder())
    assert teaching_doubts(zoo) == []


def test_a_set_taught_again_in_other_light_keeps_what_it_knew() -> None:
    """Under a lamp the lion looks orange, nearer the duck taught by daylight than the
    lion: taught there too (DiceSet.adding), the set reads its dice in both lights."""
    embedder = ColourEmbedder()

    def taught(colours: dict[DieValue, tuple[int, int, int]], counted: bool = False,
               by: ColourEmbedder = embedder) -> DiceSet:
        return DiceSet("zoo", list(colours), np.stack([patch(c) for c in colours.values()]),
                       counted=counted).embedded_with(by)

    day = taught({"duck": (0, 0, 200), "lion": (0, 200, 0)})
    lamp = taught({"duck": (0, 40, 220), "lion": (0, 150, 200)})
    seen = embedder.embed([patch(c) for c in ((0, 0, 200), (0, 200, 0), (0, 40, 220),
                                              (0, 150, 200))])
    assert day.values(seen)[0] == ["duck", "lion", "duck", "duck"]
    both = day.adding(lamp)
    assert both.values(seen)[0] == ["duck", "lion", "duck", "lion"]
    assert both.name == "zoo" and both.patch_values == ["duck", "lion", "duck", "lion"]
    assert len(both.labels) == len(both.embeddings) == 4 * CROPS_PER_DIE
    assert np.array_equal(both.patches[:2], day.patches)
    with_cat = day.adding(taught({"duck": (0, 0, 200), "lion": (0, 200, 0),
                                  "cat": (200, 0, 0)}))
    assert with_cat.faces == ["duck", "lion", "cat"]  # an addition may bring a face
    # A pip set is counted by the classifier only where every teaching was; photos whose
    # dice it counts otherwise are doubted (teaching_doubts), so not added at all.
    pips = {1: (0, 0, 200), 2: (0, 200, 0)}
    assert taught(pips, counted=False).adding(taught(pips, counted=True)).counted is False
    assert taught(pips, counted=True).adding(taught(pips, counted=True)).counted is True
    with pytest.raises(DiceSetError, match=r"^these photos were not added to dice set 'zoo', "
                                           r"which is as it was: the dice of a photo count as "
                                           r"another face"):
        taught(pips, counted=True).adding(taught(pips, counted=False))
    # Dice the players checked at a table (vision.teach.learn) are no user's slip: added.
    checked = dataclasses.replace(taught(pips, counted=False), from_play=[True, True])
    assert taught(pips, counted=True).adding(checked).played == [False] * 2 + [True] * 2
    with pytest.raises(DiceSetError, match=r"give a photo of every face it has "
                                           r"\(missing: lion\)"):
        day.adding(taught({"duck": (0, 0, 200), "cat": (200, 0, 0)}))
    with pytest.raises(DiceSetError, match="pips .* or animals, not both"):
        day.adding(taught({"duck": (0, 0, 200), "lion": (0, 200, 0), 3: (200, 0, 0)}))
    with pytest.raises(DiceSetError, match="embedded differently"):
        day.adding(taught({"duck": (0, 0, 200), "lion": (0, 200, 0)},
                          by=ColourEmbedder("other")))


def test_the_dice_people_checked_at_a_table_are_learnt_from_where_they_were_read() -> None:
    """Each checked die is taught from the find it was read from, as entered; a die that
    leans, or lies where nothing was found, is not."""
    finds = [cand(100, 100), cand(300, 100), cand(500, 100)]
    reader = Reader(FixedDetector(finds), FixedClassifier(
        [one_hot(1)] * 3, [quality(), quality(tilted=0.9), quality()]),
        embedder=ColourEmbedder())
    red, green = (0, 0, 200), (0, 200, 0)

    def frame(*colours: tuple[int, int, int]) -> np.ndarray:
        picture = np.full((480, 640, 3), 90, np.uint8)
        for find, colour in zip(finds, colours, strict=True):
            picture[80:120, int(find.x) - 20:int(find.x) + 20] = colour
        return picture

    learnt = learn(reader, "zoo", [
        Checked(frame(red, green, green), [(103, 98, "duck"), (300, 100, "lion"),
                                           (500, 130, "lion")]),  # leaning; too far
        Checked(frame(green, red, green), [(500, 100, "lion")])])
    assert learnt.name == "zoo" and learnt.patch_values == ["duck", "lion"]
    assert learnt.played == [True, True]  # learnt at a table: can be forgotten again
    assert np.allclose(learnt.patches[0][52, 52], red)
    assert np.allclose(learnt.patches[1][52, 52], green)
    assert len(learnt.embeddings) == 2 * CROPS_PER_DIE and not learnt.counted
    lenient = Reader(FixedDetector(finds), FixedClassifier([one_hot(1)] * 3, [quality()] * 3),
                     embedder=ColourEmbedder())
    with pytest.raises(DiceSetError, match="^none of the checked dice was found again"):
        learn(reader, "zoo", [Checked(frame(red, red, red), [(300, 300, "duck")])])
    # A camera turned a quarter: the reading's places are in its picture, the finds in the
    # picture turned upright (Reader.upright_point).
    # A die entered as another face than it shows (a misread nobody corrected) is left
    # out; where many are, the light does not tell the faces apart: nothing is learnt.
    # (Orange lions are like the red ducks, too like them to be odd ones out among lions.)
    orange = (0, 120, 200)
    ducks, lions = frame(red, red, red), frame(orange, orange, orange)
    row = [(100, 100), (300, 100), (500, 100)]
    entered = [*[Checked(ducks, [(x, y, "duck") for x, y in row])] * 2,
               *[Checked(lions, [(x, y, "lion") for x, y in row])] * 2,
               Checked(frame(red, orange, orange), [(100, 100, "lion")])]
    learnt = learn(lenient, "zoo", entered)
    assert learnt.patch_values == ["duck"] * 6 + ["lion"] * 6
    assert all(np.allclose(p[52, 52], orange) for p in learnt.patches[6:])
    with pytest.raises(DiceSetError, match="^the checked dice do not tell the faces of dice "
                                           "set 'zoo' apart: 3 of 15 taught dice look more "
                                           "like another face"):
        learn(lenient, "zoo", [*entered, *entered[4:] * 2])
    turned = Reader(FixedDetector([cand(100, 50)]), FixedClassifier([one_hot(1)], [quality()]),
                    embedder=ColourEmbedder(), turn=1)
    assert turned.upright_point(50, 379, 640, 480) == (100, 50)
    picture = np.full((480, 640, 3), 90, np.uint8)
    picture[359:400, 30:71] = red  # the die at (50, 379) of the camera's picture
    learnt = learn(turned, "zoo", [Checked(picture, [(50, 379, "duck")])])
    assert learnt.patch_values == ["duck"] and np.allclose(learnt.patches[0][52, 52], red)


def test_a_taught_die_is_also_stored_as_seen_from_a_steeper_camera() -> None:
    """Foreshortened about the patch centre: the top face keeps its width and centre."""
    face = np.zeros((PATCH_PIXELS, PATCH_PIXELS, 3), np.uint8)
    c = PATCH_PIXELS // 2
    face[c - 20:c + 20, c - 20:c + 20] = 255
    rows, cols = np.nonzero(foreshortened(face, 0.7)[..., 0] > 127)
    assert cols.min() == c - 20 and cols.max() == c + 19
    assert abs((rows.max() - rows.min() + 1) - 28) <= 1
    assert abs((rows.max() + rows.min()) / 2 - (c - 0.5)) <= 1


def test_a_taught_set_outlives_a_new_embedder(tmp_path: Path) -> None:
    """The set keeps its dice: a reader with another embedder embeds them again."""
    colours = {"frog": (40, 160, 40), "pig": (180, 160, 240)}
    DiceSet("farm", list(colours), np.stack([patch(c) for c in colours.values()])) \
        .embedded_with(ColourEmbedder("old")).save(tmp_path)
    new = ColourEmbedder("new")
    reader = Reader(FixedDetector([cand(100, 100)]), FixedClassifier([one_hot(1)], [quality()]),
                    dice_set=load_dice_set(tmp_path, "farm"), embedder=new)
    assert reader.dice_set.embedder == embedding_version(new)  # type: ignore[union-attr]
    frame = np.full((480, 640, 3), 90, np.uint8)
    frame[80:120, 80:120] = colours["pig"]
    (die,) = reader.read(frame).dice
    assert die.value == "pig" and die.confidence > 0.9


class GreenishClassifier:
    """Reads a crop's centre as a mix of the built-in faces by how green it is: green as a
    duck, not green as a cat; always a die lying flat."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        green = np.array([c[24:40, 24:40, 1].mean() / 255 for c in crops])
        value = np.zeros((len(crops), len(FACES)))
        value[:, FACES.index("duck")] = np.clip(5 * (green - 0.4), 0.01, 0.99)
        value[:, FACES.index("cat")] = 1 - value[:, FACES.index("duck")]
        return FaceScores(value, np.tile(quality(), (len(crops), 1)))


def test_signatures_are_each_faces_mean_mix_and_mixes_compare_from_0_to_1() -> None:
    taught = DiceSet("farm", ["frog", "pig", "frog"],
                     np.stack([patch((0, 255, 0)), patch((0, 0, 0)), patch((0, 120, 0))]))
    signatures = taught.signatures(GreenishClassifier().classify)
    duck, cat = FACES.index("duck"), FACES.index("cat")
    assert signatures.shape == (2, len(FACES))
    assert signatures[0, duck] == pytest.approx((0.99 + 5 * (120 / 255 - 0.4)) / 2, abs=0.01)
    assert signatures[1, cat] == pytest.approx(0.99)
    alike = signature_similarities(np.array([one_hot("duck", 1.0), one_hot(3, 1.0)]),
                                   np.array([one_hot("duck", 1.0), one_hot("cat", 1.0)]))
    assert np.allclose(alike, [[1.0, 0.0], [0.0, 0.0]])


def test_a_second_opinion_turns_a_close_call_and_a_flat_one_changes_nothing() -> None:
    colours = {"frog": (40, 160, 40), "pig": (180, 160, 240)}
    taught = DiceSet("farm", list(colours), np.stack([patch(c) for c in colours.values()])
                     ).embedded_with(ColourEmbedder())
    between = ColourEmbedder().embed([patch((105, 160, 135))[:64, :64]])
    values, probs, _ = taught.values(between)
    assert values == ["pig"] and 0.5 < probs[0] < 0.9  # a close call
    flat, flat_probs, _ = taught.values(between, np.array([[2.0, 2.0]]))
    assert flat == values and np.allclose(flat_probs, probs)
    agreeing, agreeing_probs, _ = taught.values(between, np.array([[0.0, 2.0]]))
    assert agreeing == ["pig"] and agreeing_probs[0] > 0.9
    turned, _, _ = taught.values(between, np.array([[4.0, 0.0]]))
    assert turned == ["frog"]


@pytest.mark.parametrize("weight", [0.0, SIGNATURE_WEIGHT])
def test_the_classifiers_mix_is_a_second_opinion_on_a_taught_art_set(
        monkeypatch: pytest.MonkeyPatch, weight: float) -> None:
    """A die the embeddings read as the frog but not surely is read surely where the
    classifier's mix of it is the frog's (green, as a duck) — and not where that opinion is
    turned off; a taught pip set the classifier counts is read by its count instead, one
    it cannot count with the opinion too."""
    monkeypatch.setattr(vision.reader, "SIGNATURE_WEIGHT", weight)
    colours = {"frog": (110, 190, 40), "pig": (150, 60, 200)}
    taught = DiceSet("farm", list(colours), np.stack([patch(c) for c in colours.values()]))
    reader = Reader(FixedDetector([cand(100, 100)]), GreenishClassifier(), dice_set=taught,
                    embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    frame[80:120, 80:120] = (130, 150, 100)  # nearer the frog than the pig, in other light
    (die,) = reader.read(frame).dice
    assert die.value == "frog"
    assert (die.confidence >= TRUST_CONFIDENCE) == (weight > 0)
    signatures = reader._signatures
    assert reader.turned(1)._signatures is signatures  # read once, not again for a turn
    pips = DiceSet("d6", [1, 2], np.stack([patch(c) for c in colours.values()]))
    assert reader.reading(dataclasses.replace(pips, counted=True))._signatures is None
    assert (reader.reading(pips)._signatures is None) == (weight == 0)


@pytest.mark.parametrize(("colour", "score", "kept"), [
    ((180, 160, 240), 0.7, True),  # the taught pig: a die, whatever the classifier says
    ((180, 160, 240), 0.3, False),  # ... but not a find the detector itself doubts
    ((250, 0, 0), 0.7, False),  # something blue: no die of the set
])
def test_a_die_the_taught_set_recognises_is_kept_though_the_classifier_sees_none(
        colour: tuple[int, int, int], score: float, kept: bool) -> None:
    """The classifier knows only the built-in faces: unknown art may look like no die to it."""
    colours = {"frog": (40, 160, 40), "pig": (180, 160, 240)}
    taught = DiceSet("farm", list(colours), np.stack([patch(c) for c in colours.values()]))
    reader = Reader(FixedDetector([cand(100, 100, score=score)]),
                    FixedClassifier([one_hot(1)], [quality(no_die=0.9)]),
                    dice_set=taught, embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    frame[80:120, 80:120] = colour
    dice = reader.read(frame).dice
    assert [d.value for d in dice] == (["pig"] if kept else [])
    assert all(d.flag == "unreadable" for d in dice)  # kept, but the table asks


@pytest.mark.parametrize(("colours", "warned"), [
    ([(40, 160, 40), (180, 160, 240), (40, 160, 40)], False),  # as in the teaching photos
    ([(110, 160, 10), (240, 120, 120), (110, 160, 10)], True),  # all in another light
    ([(110, 160, 10), (240, 120, 120), (40, 160, 40)], False),  # one die as taught
])
def test_a_frame_whose_dice_all_look_unlike_the_teaching_photos_is_warned_about(
        colours: list[tuple[int, int, int]], warned: bool) -> None:
    """Seen in other light, a taught set's dice are still read (the nearest face), but
    none is recognised as its own: the table would ask about most of them."""
    taught = DiceSet("farm", ["frog", "pig"],
                     np.stack([patch((40, 160, 40)), patch((180, 160, 240))]))
    xs = (100, 250, 400)
    reader = Reader(FixedDetector([cand(x, 100) for x in xs]),
                    FixedClassifier([one_hot(1)] * 3, [quality()] * 3),
                    dice_set=taught, embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    for x, colour in zip(xs, colours, strict=True):
        frame[80:120, x - 20:x + 20] = colour
    reading = reader.read(frame)
    assert [d.value for d in reading.dice] == ["frog", "pig", "frog"]
    assert [w for w in reading.warnings if "looks like" in w] == (
        ["none of the 3 dice looks like the teaching photos of dice set 'farm' (other light "
         "or camera?): if the table asks about most dice, teach the set here too, adding to "
         "what it knows"]
        if warned else [])


@pytest.mark.parametrize(("second", "taught"), [
    (quality(stacked=0.8), 1),  # one die lies on another: only the flat one is taught
    (quality(tilted=0.8), 1),
    (quality(), 2),
])
def test_teaching_uses_the_dice_that_lie_flat(second: list[float], taught: int) -> None:
    reader = Reader(FixedDetector([cand(100, 100), cand(300, 100)]),
                    FixedClassifier([one_hot(1)] * 2, [quality(), second]),
                    embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    dice_set, counts = teach(reader, "zoo", {"duck": [frame], "lion": [frame + 1]})
    assert counts == {"duck": taught, "lion": taught}
    assert dice_set.patch_values == ["duck"] * taught + ["lion"] * taught


def test_a_die_the_frame_cuts_is_taught_only_where_no_whole_die_is() -> None:
    reader = Reader(FixedDetector([cand(100, 100), cand(630, 100)]),
                    FixedClassifier([one_hot(1)] * 2, [quality()] * 2),
                    embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    dice_set, counts = teach(reader, "zoo", {"duck": [frame], "lion": [frame + 1]})
    assert counts == {"duck": 1, "lion": 1}
    assert [d.flag for d in reader.read(frame).dice] == [None, "cut"]
    at_the_edge = Reader(FixedDetector([cand(630, 100)]),
                         FixedClassifier([one_hot(1)], [quality()]), embedder=ColourEmbedder())
    _, counts = teach(at_the_edge, "zoo", {"duck": [frame], "lion": [frame + 1]})
    assert counts == {"duck": 1, "lion": 1}


def test_a_side_face_found_in_a_teaching_photo_is_not_taught() -> None:
    finds = seen_from((320, 2400), 0.08, PLACES)
    side = dataclasses.replace(finds[3], body=(-finds[3].body[0], -finds[3].body[1]),
                               score=0.5)
    reader = Reader(FixedDetector([*finds[:3], side, finds[4]]),
                    FixedClassifier([one_hot(1)] * 5, [quality()] * 5),
                    embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    _, counts = teach(reader, "zoo", {"duck": [frame], "lion": [frame + 1]})
    assert counts == {"duck": 4, "lion": 4}


def test_a_find_unlike_the_other_dice_of_its_photo_is_not_taught() -> None:
    """Every die of a teaching photo shows the same face: a find that looks like none of
    the others (here a patch of blue tablecloth among red dice) is left out."""
    spots = [cand(100, 100), cand(200, 100), cand(300, 100), cand(400, 100)]
    reader = Reader(FixedDetector(spots), FixedClassifier([one_hot(1)] * 4, [quality()] * 4),
                    embedder=ColourEmbedder())

    def photo(*colours: tuple[int, int, int]) -> np.ndarray:
        frame = np.full((480, 640, 3), 90, np.uint8)
        for spot, colour in zip(spots, colours, strict=True):
            frame[80:120, int(spot.x) - 20:int(spot.x) + 20] = colour
        return frame

    red, cloth, green = (0, 0, 230), (230, 40, 0), (0, 230, 0)
    dice_set, counts = teach(reader, "zoo", {"duck": [photo(red, red, cloth, red)],
                                             "lion": [photo(green, green, green, green)]})
    assert counts == {"duck": 3, "lion": 4}
    assert dice_set.patch_values == ["duck"] * 3 + ["lion"] * 4
    assert len(dice_set.embeddings) == len(dice_set.labels) == 7 * CROPS_PER_DIE
    assert all(np.allclose(p[52, 52], red) for p in dice_set.patches[:3])


def test_a_find_sized_unlike_the_dice_of_its_photo_is_not_taught() -> None:
    """The real photo of the fours also holds laptop keys a quarter of a die's size; they
    look alike, so only their size tells them from the dice. What is kept is sized like the
    photo's surest die, whichever size the photo shows dice at."""
    dice = [cand(100, 100, 80, score=0.8), cand(300, 100, 70, score=0.75)]
    keys = [cand(500, 40, 21, score=0.6), cand(560, 40, 21, score=0.4)]
    reader = Reader(FixedDetector([*dice, *keys]),
                    FixedClassifier([one_hot(4)] * 4, [quality()] * 2 + [quality(no_die=0.35)] * 2),
                    embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    dice_set, counts = teach(reader, "keys", {4: [frame], 5: [frame + 1]})
    assert counts == {4: 2, 5: 2}
    small = Reader(FixedDetector(keys), FixedClassifier([one_hot(4)] * 2, [quality()] * 2),
                   embedder=ColourEmbedder())
    _, counts = teach(small, "keys", {4: [frame], 5: [frame + 1]})
    assert counts == {4: 2, 5: 2}  # small dice are dice where nothing larger is surer


@pytest.mark.parametrize(("duck_quality", "score", "taught"), [
    ([quality(no_die=0.9)] * 2, 0.7, 2),  # art the classifier never saw: the sure finds
    ([quality(no_die=0.9)] * 2, 0.3, 0),  # ... not finds the detector itself doubts
    ([quality(no_die=0.9), quality()], 0.7, 1),  # one die it knows: only that one
])
def test_a_face_the_classifier_takes_for_no_die_is_taught_from_the_sure_finds(
        duck_quality: list[list[float]], score: float, taught: int) -> None:
    """The user says every die in the photo shows the face; the classifier knows only the
    built-in faces and may see no die in any of them."""
    finds = [cand(100, 100, score=score), cand(300, 100, score=score)]
    lion = FixedClassifier([one_hot(1)] * 2, [quality()] * 2)
    duck = FixedClassifier([one_hot(1)] * 2, duck_quality)

    class PerPhoto:
        def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                     ) -> FaceScores:
            return (duck if crops[0].mean() > 100 else lion).classify(crops, turned)

    reader = Reader(FixedDetector(finds), PerPhoto(), embedder=ColourEmbedder())
    duck_photo, lion_photo = (np.full((480, 640, 3), shade, np.uint8) for shade in (160, 60))
    if taught == 0:
        with pytest.raises(DiceSetError, match="no die found in the photos for 'duck'"):
            teach(reader, "zoo", {"duck": [duck_photo], "lion": [lion_photo]})
        return
    _, counts = teach(reader, "zoo", {"duck": [duck_photo], "lion": [lion_photo]})
    assert counts == {"duck": taught, "lion": 2}


@pytest.mark.parametrize(("text", "value"), [("4", 4), (" 6", 6), ("Duck", "duck"),
                                             ("elephant", "elephant")])
def test_a_face_is_named_as_a_user_writes_it(text: str, value: object) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize("text", ["7", "0", "dragon", ""])
def test_a_face_no_die_shows_is_refused(text: str) -> None:
    with pytest.raises(DiceSetError, match="is not a face of a die: 1 to 6, or duck"):
        parse_value(text)


def test_teaching_refuses_mixed_faces_and_one_photo_for_two_faces() -> None:
    reader = Reader(FixedDetector([cand(100, 100)]),
                    FixedClassifier([one_hot(1)], [quality()]), embedder=ColourEmbedder())
    photo, other = (np.full((480, 640, 3), shade, np.uint8) for shade in (160, 60))
    with pytest.raises(DiceSetError, match="pips .1 to 6. or animals, not both"):
        teach(reader, "zoo", {"duck": [photo], 2: [other]})
    with pytest.raises(DiceSetError, match="the same photo is given for 'duck' and 'lion'"):
        teach(reader, "zoo", {"duck": [photo], "lion": [other, photo.copy()]})


def test_a_photo_of_leaning_dice_only_is_still_taught() -> None:
    reader = Reader(FixedDetector([cand(100, 100)]),
                    FixedClassifier([one_hot(1)], [quality(tilted=0.9)]),
                    embedder=ColourEmbedder())
    frame = np.full((480, 640, 3), 90, np.uint8)
    _, counts = teach(reader, "zoo", {"duck": [frame], "lion": [frame + 1]})
    assert counts == {"duck": 1, "lion": 1}


def test_a_counted_pip_set_is_read_by_the_count_and_asked_where_its_photos_differ() -> None:
    """A pip set the classifier counts is read by the count, as sure as the classifier is;
    where the set's photos read another face, the count gives the value and the table asks
    (the surer the photos, the surer it asks)."""
    red, green, between = (0, 0, 230), (0, 230, 0), (0, 140, 160)  # between: nearer red
    taught = DiceSet("wood", [2, 3], np.stack([patch(red), patch(green)]), counted=True)
    frame = np.full((480, 640, 3), 30, np.uint8)
    for x, colour in ((100, red), (300, red), (500, between), (620, red)):
        frame[80:120, x - 20:x + 20] = colour
    unsure_two = np.zeros(12)
    unsure_two[:6] = 0.044
    unsure_two[1] = 0.78  # a 2, 78 % sure
    reader = Reader(FixedDetector([cand(100, 100), cand(300, 100), cand(500, 100),
                                   cand(620, 100)]),
                    FixedClassifier([one_hot(2), one_hot(5), one_hot(3), unsure_two],
                                    [quality()] * 4),
                    dice_set=taught, embedder=ColourEmbedder())
    agree, photos_sure, photos_unsure, count_unsure = reader.read(frame).dice
    assert agree.value == 2 and agree.confidence > 0.98 and agree.flag is None
    assert photos_sure.value == 5  # the count, asked: plainly a taught 2
    assert photos_sure.confidence < 0.05 and photos_sure.flag == "unreadable"
    assert photos_unsure.value == 3  # between the taught faces: the sure count, asked less
    assert 0.05 < photos_unsure.confidence < TRUST_CONFIDENCE
    assert photos_unsure.flag == "unreadable"
    # Where both read 2, the classifier's doubt stands, however sure the photos are.
    assert count_unsure.value == 2 and 0.7 < count_unsure.confidence < 0.85
    assert count_unsure.flag == "unreadable"


def test_a_pip_set_the_classifier_did_not_count_is_read_by_its_photos_unless_the_count_is_surer(
        ) -> None:
    """Photos too blurred to count, or pips the classifier cannot count: the photos read
    the set as they are, but a surer count gives the value, and the table asks; where the
    two agree, the surer stands."""
    red, green, between = (0, 0, 230), (0, 230, 0), (0, 140, 160)  # between: nearer red
    taught = DiceSet("wood", [2, 3], np.stack([patch(red), patch(green)]))
    assert taught.pips and not taught.counted
    frame = np.full((480, 640, 3), 30, np.uint8)
    for x, colour in ((100, red), (300, red), (500, between), (620, between)):
        frame[80:120, x - 20:x + 20] = colour
    unsure_five, unsure_two = np.zeros(12), np.zeros(12)
    unsure_five[:6] = unsure_two[:6] = 0.06
    unsure_five[4] = unsure_two[1] = 0.7  # 70 % sure
    reader = Reader(FixedDetector([cand(100, 100), cand(300, 100), cand(500, 100),
                                   cand(620, 100)]),
                    FixedClassifier([unsure_two, unsure_five, one_hot(3), unsure_two],
                                    [quality()] * 4),
                    dice_set=taught, embedder=ColourEmbedder())
    agree, photos_surer, count_surer, agree_unsure = reader.read(frame).dice
    assert agree.value == 2 and agree.confidence > 0.98 and agree.flag is None
    assert photos_surer.value == 2 and photos_surer.confidence > 0.98  # as if alone
    assert count_surer.value == 3 and count_surer.confidence < TRUST_CONFIDENCE
    assert count_surer.flag == "unreadable"
    assert agree_unsure.value == 2 and 0.7 <= agree_unsure.confidence < TRUST_CONFIDENCE
    assert not DiceSet("zoo", ["duck"], np.stack([patch(red)])).pips


class ShadeCounter:
    """Counts one pip on a dark crop and two on a bright one, with confidence."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        value = np.array([one_hot(1 if c.mean() < 128 else 2) for c in crops])
        return FaceScores(value, np.array([quality()] * len(crops)))


class GreyCounter:
    """Counts one pip on a dark die and two on a bright one, surely; a grey one is a guess
    at two."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        shades = [float(c[24:40, 24:40].mean()) for c in crops]
        value = np.array([one_hot(1) if s < 80 else one_hot(2) if s > 200 else one_hot(2, 0.6)
                          for s in shades])
        return FaceScores(value, np.array([quality()] * len(crops)))


@pytest.mark.parametrize(("slip", "taught_ones"), [
    (230, 2),  # counted as a 2, surely: a die the user did not turn, left out
    (150, 3),  # a guess at a 2: taught as the photo says
])
def test_a_die_a_counted_pip_set_counts_otherwise_surely_is_not_taught(
        slip: int, taught_ones: int) -> None:
    places = [cand(100, 100), cand(300, 100), cand(500, 100)]

    def photo(*shades: int) -> np.ndarray:
        frame = np.full((480, 640, 3), 90, np.uint8)
        for spot, shade in zip(places, shades, strict=True):
            frame[80:120, int(spot.x) - 20:int(spot.x) + 20] = shade
        return frame

    reader = Reader(FixedDetector(places), GreyCounter(), embedder=ColourEmbedder())
    dice_set, counts = teach(reader, "wood", {1: [photo(20, 20, slip)], 2: [photo(230, 230, 230)]})
    assert dice_set.counted
    assert counts == {1: taught_ones, 2: 3}


@pytest.mark.parametrize(("photos", "counted"), [
    ({1: 40, 2: 220}, True),  # the classifier counts the taught dice right: checked by it
    ({1: 220, 2: 40}, False),  # it counts them wrong: the set is read by its photos alone
    ({"duck": 40, "lion": 220}, False),  # not a pip set
])
def test_a_pip_set_is_checked_by_the_classifier_only_if_it_counts_the_taught_dice_right(
        photos: dict[object, int], counted: bool) -> None:
    reader = Reader(FixedDetector([cand(100, 100)]), ShadeCounter(), embedder=ColourEmbedder())
    frames = {v: [np.full((480, 640, 3), shade, np.uint8)] for v, shade in photos.items()}
    taught, _ = teach(reader, "wood", frames)
    assert taught.counted is counted


def test_a_set_taught_by_an_older_version_asks_to_be_taught_again(tmp_path: Path) -> None:
    (tmp_path / "dice-sets").mkdir()
    np.savez(tmp_path / "dice-sets" / "old.npz", embeddings=np.eye(2, dtype=np.float32),
             labels=np.array('["duck", "lion"]'))
    with pytest.raises(DiceSetError, match="older version .* teach it again"):
        load_dice_set(tmp_path, "old")


def test_a_die_unlike_anything_taught_is_asked_about() -> None:
    """Nearest is lion, but far from every taught crop: the value is given, the confidence
    is capped at the similarity (below the table's trust threshold), so the table asks."""
    lion, duck = np.eye(4)[0], np.eye(4)[1]
    taught = DiceSet("zoo", ["lion", "duck"], np.stack([patch((0, 0, 0))] * 2), embedder="v1",
                     labels=["lion", "duck"], embeddings=np.array([lion, duck], np.float32))
    odd = 0.6 * lion + 0.8 * np.eye(4)[2]  # similarity 0.6 to lion, 0 to duck
    values, probs, recognised = taught.values(np.array([lion, odd]))
    assert values == ["lion", "lion"]
    assert probs[0] > 0.99 and probs[1] == pytest.approx(0.6)
    assert probs[1] < TRUST_CONFIDENCE
    assert recognised.tolist() == [True, False]


class FakeSession:
    """Stands in for onnxruntime: finds the bright square of a frame, wherever the input
    shows it (the whole frame scaled, or a part of it), at its size in the input."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []

    def run(self, _: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        x = feed["image"]
        self.shapes.append(x.shape)
        gh, gw = x.shape[2] // DETECTOR_STRIDE, x.shape[3] // DETECTOR_STRIDE
        out = np.zeros((1, 5, gh, gw), np.float32)
        ys, xs = np.nonzero(x[0, 0] > 0.25)
        if len(xs):
            cx, cy = (xs.min() + xs.max() + 1) / 2, (ys.min() + ys.max() + 1) / 2
            gx, gy = int(cx // DETECTOR_STRIDE), int(cy // DETECTOR_STRIDE)
            out[0, 0, gy, gx] = 0.9
            out[0, 1, gy, gx] = cx / DETECTOR_STRIDE - gx
            out[0, 2, gy, gx] = cy / DETECTOR_STRIDE - gy
            out[0, 3:5, gy, gx] = np.log(xs.max() + 1 - xs.min())
        return [out]


def detector_on(session: object) -> OnnxDetector:
    """The ONNX detector's logic (threshold 0.3, no body head) on a stand-in `session`."""
    detector = OnnxDetector.__new__(OnnxDetector)
    detector.session = session  # type: ignore[assignment]
    detector.threshold = 0.3
    detector.body = None
    detector.outputs = ["out"]
    return detector


def square_at(x: int, y: int, size: int) -> np.ndarray:
    frame = np.zeros((1200, 1600, 3), np.uint8)
    frame[y - size // 2:y + size // 2, x - size // 2:x + size // 2] = 255
    return frame


# 1600-wide frames: the first search sees a die of 160 px at 38 detector pixels, one of
# 80 px at 19 (below SMALL_DIE: set C's dice in `make eval`, leaning on others, went unfound
# there until they were looked at again) and one of 30 px at 7.
@pytest.mark.parametrize(("die_px", "passes"), [(160, 1), (80, 2), (30, 2)])
def test_detector_looks_again_at_small_dice(die_px: int, passes: int) -> None:
    from vision.detector import AROUND

    detector = detector_on(FakeSession())
    (found,) = detector.detect(square_at(1200, 300, die_px))
    shapes = detector.session.shapes  # type: ignore[attr-defined]
    # beside the coarse searches for dice too large (128 and 96 px), which find none here
    assert shapes[1:3] == [(1, 3, 96, 128), (1, 3, 96, 96)]
    shapes = shapes[:1] + shapes[3:]
    if passes == 2:
        # one die is fewer than expected: sure of it, the detector searches the whole frame
        # for more only where it is small (FEW_SMALL), at FEW_LONG_SIDE, after the second look
        assert shapes.pop() == (1, 3, 480, 640)
    assert len(shapes) == passes
    if passes == 2:
        # the second look is at the scale that makes the die TARGET_DIE (at most
        # MAX_LONG_SIDE for the whole frame), and only around the die: AROUND of its sizes
        # each way, cut at multiples of 32
        first = die_px * 384 / 1600
        scale = min(MAX_LONG_SIDE, 32 * round(384 * TARGET_DIE / first / 32)) / 1600
        part = 2 * AROUND * die_px * scale
        assert 0.75 * part <= shapes[1][3] <= part + 64
        assert shapes[1][3] < 0.75 * 1600 * scale  # a part of the frame, not all of it
    assert (found.x, found.y) == (pytest.approx(1200, abs=2), pytest.approx(300, abs=2))
    assert found.size == pytest.approx(die_px, rel=0.1)


@pytest.mark.parametrize(("frame_w", "frame_h", "closer"), [
    (800, 600, 800),    # enlarged to MAX_LONG_SIDE it would gain no pixels: its own size
    (810, 600, 832),    # its own long side, rounded up to the network's stride of 32
    (1600, 1200, MAX_LONG_SIDE),  # shrunk: MAX_LONG_SIDE bounds it
])
def test_the_search_closer_never_enlarges_a_frame_beyond_its_own_pixels(
        monkeypatch: pytest.MonkeyPatch, frame_w: int, frame_h: int, closer: int) -> None:
    import vision.detector

    long_sides: list[int] = []
    real = vision.detector.detector_image

    def spied(frame: np.ndarray, long_side: int = DETECTOR_LONG_SIDE
              ) -> tuple[np.ndarray, float]:
        long_sides.append(long_side)
        return real(frame, long_side)

    monkeypatch.setattr(vision.detector, "detector_image", spied)
    # a die 7 detector pixels across at the first search: TARGET_DIE would want the frame
    # over 1500 px long
    die_px = round(7 * frame_w / DETECTOR_LONG_SIDE)
    frame = np.zeros((frame_h, frame_w, 3), np.uint8)
    frame[300 - die_px // 2:300 + die_px // 2, 400 - die_px // 2:400 + die_px // 2] = 255
    (found,) = detector_on(FakeSession()).detect(frame)
    # the first search, its coarse searches, the search closer, the search for more
    assert long_sides == [DETECTOR_LONG_SIDE, 128, 96, closer, 640]
    assert (found.x, found.y) == (pytest.approx(400, abs=2), pytest.approx(300, abs=2))


class FixedFindsSession:
    """Stands in for onnxruntime on a 1600 × 1200 frame: per input width, finds given in
    frame pixels as (x, y, size, score)."""

    def __init__(self, finds: dict[int, list[tuple[float, float, float, float]]]) -> None:
        self.finds = finds
        self.widths: list[int] = []

    def run(self, _: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        x = feed["image"]
        self.widths.append(x.shape[3])
        gh, gw = x.shape[2] // DETECTOR_STRIDE, x.shape[3] // DETECTOR_STRIDE
        out = np.zeros((1, 5, gh, gw), np.float32)
        scale = x.shape[3] / 1600
        for fx, fy, size, score in self.finds.get(x.shape[3], []):
            gx, gy = int(fx * scale / DETECTOR_STRIDE), int(fy * scale / DETECTOR_STRIDE)
            out[0, 0, gy, gx] = score
            out[0, 1, gy, gx] = fx * scale / DETECTOR_STRIDE - gx
            out[0, 2, gy, gx] = fy * scale / DETECTOR_STRIDE - gy
            out[0, 3:5, gy, gx] = np.log(size * scale)
        return [out]


def fixed_finds_detector(finds: dict[int, list[tuple[float, float, float, float]]]
                         ) -> OnnxDetector:
    return detector_on(FixedFindsSession(finds))


# Dice of 160 frame pixels, 38 at the first search's scale: not small (SMALL_DIE).
FOUR_DICE = [(300.0, 300.0, 160.0, 0.9), (600.0, 300.0, 160.0, 0.9),
             (900.0, 300.0, 160.0, 0.9), (1200.0, 300.0, 160.0, 0.9)]


def test_fewer_than_five_dice_found_one_unsure_are_searched_for_larger() -> None:
    # The first search finds four dice, one of them unsure, and scores the fifth under its
    # threshold; the search of the whole frame at FEW_LONG_SIDE finds it, the four again,
    # and a find three times their size (a cup at the edge): only the fifth die is added.
    four = [*FOUR_DICE[:3], (1200.0, 300.0, 160.0, 0.5)]
    fifth, cup = (750.0, 800.0, 170.0, 0.8), (1300.0, 900.0, 500.0, 0.9)
    detector = fixed_finds_detector({384: [*four, (750.0, 800.0, 170.0, 0.1)],
                                     640: [*four, fifth, cup]})
    found = detector.search(np.zeros((1200, 1600, 3), np.uint8)).found
    assert detector.session.widths[-1] == 640  # type: ignore[attr-defined]
    assert sorted((round(c.x), round(c.y)) for c in found) == [
        (300, 300), (600, 300), (750, 800), (900, 300), (1200, 300)]


@pytest.mark.parametrize("first", [FOUR_DICE, [*FOUR_DICE, (750.0, 800.0, 170.0, 0.5)]],
                         ids=["four sure", "five"])
def test_five_dice_or_sure_finds_are_not_searched_for_more(
        first: list[tuple[float, float, float, float]]) -> None:
    detector = fixed_finds_detector({384: first, 640: [*first, (1300.0, 900.0, 160.0, 0.9)]})
    assert len(detector.search(np.zeros((1200, 1600, 3), np.uint8)).found) == len(first)
    assert 640 not in detector.session.widths  # type: ignore[attr-defined]


@pytest.mark.parametrize(("die_px", "searched"), [(80.0, True), (90.0, False)])
def test_fewer_than_five_small_dice_are_searched_for_more_however_sure(
        die_px: float, searched: bool) -> None:
    # Four sure dice of 80 frame pixels are 19.2 at the first search's scale, under
    # FEW_SMALL; of 90, 21.6. Both are looked at again larger around the first finds (at
    # the scale that makes them TARGET_DIE: the whole frame's width here, AROUND die sizes
    # each way), which finds them again; only the search of the whole frame at
    # FEW_LONG_SIDE finds the fifth, far from them.
    four = [(x, 200.0, die_px, 0.9) for x in (300.0, 600.0, 900.0, 1200.0)]
    fifth = (800.0, 1100.0, die_px, 0.9)
    around = min(MAX_LONG_SIDE, 32 * round(384 * TARGET_DIE / (die_px * 384 / 1600) / 32))
    detector = fixed_finds_detector({384: four, around: four, 640: [*four, fifth]})
    found = detector.search(np.zeros((1200, 1600, 3), np.uint8)).found
    assert around in detector.session.widths  # type: ignore[attr-defined]
    assert (640 in detector.session.widths) is searched  # type: ignore[attr-defined]
    assert len(found) == (5 if searched else 4)


@pytest.mark.parametrize(("expected", "searched"), [(3, False), (4, True)])
def test_the_search_for_more_looks_for_the_dice_expected(expected: int, searched: bool
                                                         ) -> None:
    three = [*FOUR_DICE[:2], (1200.0, 300.0, 160.0, 0.5)]  # one of them unsure
    detector = fixed_finds_detector({384: three, 640: [*three, FOUR_DICE[2]]})
    found = detector.search(np.zeros((1200, 1600, 3), np.uint8), expected).found
    assert (640 in detector.session.widths) is searched  # type: ignore[attr-defined]
    assert len(found) == (4 if searched else 3)


class ExpectingDetector(FixedDetector):
    """Says how many dice the reader told its search to expect."""

    def __init__(self) -> None:
        super().__init__([])
        self.expected: list[int] = []

    def search(self, frame_bgr: np.ndarray, expected: int = 0) -> Search:
        self.expected.append(expected)
        return Search([])


@pytest.mark.parametrize(("told", "searched_for"), [(None, 5), (3, 3)])
def test_the_reader_tells_its_search_the_dice_it_expects(told: int | None, searched_for: int
                                                         ) -> None:
    detector = ExpectingDetector()
    Reader(detector, ShadeReader(), expected=told).read(np.zeros((600, 800, 3), np.uint8))
    assert detector.expected == [searched_for]


def test_a_frame_with_no_find_is_searched_for_dice_of_any_size() -> None:
    detector = fixed_finds_detector({640: [(800.0, 600.0, 300.0, 0.7)]})
    (found,) = detector.search(np.zeros((1200, 1600, 3), np.uint8)).found
    assert (round(found.x), round(found.y), round(found.size)) == (800, 600, 300)


def test_small_dice_found_only_by_the_search_for_more_are_looked_at_again_larger() -> None:
    # The first search finds nothing; the search for more finds two dice of 60 frame
    # pixels, 14.4 at the first search's scale (under SMALL_DIE), and they are looked at
    # again around them at the scale that makes them TARGET_DIE (AROUND die sizes each way:
    # the whole frame here), which finds a third die between them, too small at 640.
    two = [(300.0, 200.0, 60.0, 0.7), (1300.0, 1000.0, 60.0, 0.7)]
    closer = min(MAX_LONG_SIDE, 32 * round(384 * TARGET_DIE / (60 * 384 / 1600) / 32))
    assert closer > 640
    detector = fixed_finds_detector({640: two, closer: [*two, (800.0, 600.0, 60.0, 0.8)]})
    search = detector.search(np.zeros((1200, 1600, 3), np.uint8))
    assert detector.session.widths[-1] == closer  # type: ignore[attr-defined]
    assert sorted((round(c.x), round(c.y)) for c in search.found) == [
        (300, 200), (800, 600), (1300, 1000)]
    assert search.lost == []


@pytest.mark.parametrize(("confirm", "large_stand"), [(0.8, True), (0.4, False)])
def test_large_dice_stand_alone_only_where_their_own_scale_finds_them_surely(
        confirm: float, large_stand: bool) -> None:
    # On a 1600 × 1200 frame the first search (384 px wide) finds a die of 100 frame pixels,
    # the coarse search (128 wide) one large die of 700 around it — a tray seen from far,
    # or a die photographed close — and the search at the large die's scale (96 wide)
    # finds it with the score `confirm`.
    detector = fixed_finds_detector({384: [(800.0, 600.0, 100.0, 0.6)],
                                     128: [(800.0, 600.0, 700.0, 0.8)],
                                     96: [(800.0, 600.0, 700.0, confirm)]})
    frame = np.zeros((1200, 1600, 3), np.uint8)
    search = detector.search(frame)
    # the reader weighs both (Reader.finds); the detector alone takes the first find for a
    # piece of the large die only where its own scale confirms it: then the die stands
    assert [round(c.size, -1) for c in search.found] == [100]
    assert search.large is not None and [round(c.size, -1) for c in search.large] == [700]
    assert search.in_pieces == large_stand
    assert [round(c.size, -1) for c in detector.detect(frame)] == [700 if large_stand else 100]


class SmallSightSession:
    """Stands in for onnxruntime: finds every bright square of the input that is at most
    SIGHT input pixels wide, as a network trained on dice of a limited size does."""

    SIGHT = 80

    def run(self, _: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        x = feed["image"]
        gh, gw = x.shape[2] // DETECTOR_STRIDE, x.shape[3] // DETECTOR_STRIDE
        out = np.zeros((1, 5, gh, gw), np.float32)
        count, _, stats, centres = cv2.connectedComponentsWithStats(
            (x[0, 0] > 0.25).astype(np.uint8))
        for k in range(1, count):
            width = stats[k, cv2.CC_STAT_WIDTH]
            if width <= self.SIGHT:
                cx, cy = centres[k]
                gx, gy = int(cx // DETECTOR_STRIDE), int(cy // DETECTOR_STRIDE)
                out[0, 0, gy, gx] = 0.9
                out[0, 1, gy, gx] = cx / DETECTOR_STRIDE - gx
                out[0, 2, gy, gx] = cy / DETECTOR_STRIDE - gy
                out[0, 3:5, gy, gx] = np.log(width)
        return [out]


def test_a_large_die_among_small_finds_is_not_lost_by_the_larger_search() -> None:
    """A cloth printed with small dots sets the scale of the second, larger search
    (SMALL_DIE), at which a die among them comes out too large to be found (models/README,
    "A die lost by the larger search"): the detector says so (`Search.lost`) and the
    reader keeps the die where the classifier is sure of it."""
    frame = np.zeros((1200, 1600, 3), np.uint8)
    dots = [(200 + 150 * i, 200 + 120 * j) for i in range(4) for j in range(3)]
    for x, y in dots:
        frame[y - 12:y + 12, x - 12:x + 12] = 255
    frame[700:1000, 1000:1300] = 255  # the die: 72 px at the first search, 192 at 1024
    detector = detector_on(SmallSightSession())
    search = detector.search(frame)
    assert len(search.found) == len(dots) and all(
        any(np.hypot(c.x - x, c.y - y) < 3 for c in search.found) for x, y in dots)
    (lost,) = search.lost
    assert (lost.x, lost.y, lost.size) == (pytest.approx(1150, abs=3),
                                           pytest.approx(850, abs=3), pytest.approx(300, rel=0.05))
    dice = Reader(detector, ShadeReader()).read(frame).dice
    assert [(d.value, round(d.x, -1)) for d in dice if d.box[2] - d.box[0] > 200] == [(5, 1150)]


def test_finds_the_larger_search_did_not_find_again_are_lost() -> None:
    from vision.detector import lost_finds

    small, large, pair = cand(100, 100, size=20), cand(400, 100, size=120), \
        cand(700, 100, size=80)
    again = [cand(102, 101, size=22),  # the small find, found again
             cand(400, 100, size=30),  # a pip of the large die: not the die
             cand(680, 100, size=40), cand(720, 100, size=40)]  # the pair, as two dice
    assert lost_finds([small, large, pair], again) == [large, pair]
    assert lost_finds([small], []) == [small]


class Searching(FixedDetector):
    """A detector whose search says more than its finds: weak peaks under its threshold
    (`Search.weak`), or first finds its larger search did not find again (`Search.lost`)."""

    def __init__(self, search: Search) -> None:
        super().__init__(search.found)
        self.said = search

    def search(self, frame_bgr: np.ndarray, expected: int = 5) -> Search:
        return self.said


def test_a_lost_find_stands_in_place_of_its_pieces_or_alone_where_it_reads_surely() -> None:
    """A large die that the larger search found only in pieces stands where the classifier
    reads it surer than them; a lost find beside the dice stands only where the classifier
    is sure of it, and a pair of touching dice found as one stays two dice."""
    frame = np.full((600, 800, 3), 90, np.uint8)
    frame[100:300, 100:300] = 255  # a large die, its pips dark: found in pieces
    pips = [(150, 150), (250, 250)]
    for x, y in pips:
        frame[y - 20:y + 20, x - 20:x + 20] = 0
    frame[400:460, 500:560] = 255  # a clear die the larger search left out
    frame[400:440, 640:680] = 255  # two touching dice, found as two and as one
    frame[400:440, 680:720] = 255
    found = [cand(x, y, size=40) for x, y in pips] + [cand(660, 420), cand(700, 420)]
    lost = [cand(200, 200, size=200), cand(530, 430, size=60), cand(680, 420, size=80),
            cand(300, 500, size=60)]  # ... and one on the table, only guessed at
    reader = Reader(Searching(Search(found, lost=lost)), ShadeReader())
    assert [(d.value, d.x, d.y) for d in reader.read(frame).dice if d.value == 5] \
        == [(5, 200, 200), (5, 530, 430), (5, 660, 420), (5, 700, 420)]


class ShiftingRefiner:
    """Moves every find by a fixed share of its size to the right."""

    def __init__(self, dx: float) -> None:
        self.dx = dx

    def refine(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]:
        h, w = frame_bgr.shape[:2]
        return [moved(c, self.dx, 0.0, 0.0, w, h) for c in candidates]


def test_a_refined_find_moves_and_scales_within_what_the_refiner_was_trained_for() -> None:
    c = cand(100, 100, size=40)
    m = moved(c, 0.25, -0.5, float(np.log(1.5)), 640, 480)
    assert (m.x, m.y, m.size, m.score) == (110, 80, pytest.approx(60), c.score)
    assert (m.box[0] + m.box[2]) / 2 == pytest.approx(110)
    assert moved(c, 0.8, 0.0, 0.0, 640, 480) == c  # farther than it was trained to move
    assert moved(c, 0.0, 0.0, float(np.log(3.0)), 640, 480) == c  # a size it cannot tell
    edge = cand(10, 100, size=40)
    assert moved(edge, -0.5, 0.0, 0.0, 640, 480) == edge  # out of the frame


class SteadySession:
    """Stands for the refiner's network: every crop is `move` found sizes right of its top
    face, whatever it shows."""

    def __init__(self, move: float) -> None:
        self.move = move
        self.crops = 0

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        n = len(feeds["crops"])
        self.crops += n
        return [np.tile(np.array([[self.move, 0.0, 0.0]], np.float32), (n, 1))]


@pytest.mark.parametrize(("move", "steps"), [(0.3, 2), (AGAIN, 2), (0.04, 1), (0.0, 1)])
def test_a_find_the_refiner_moved_far_takes_a_second_step(move: float, steps: int) -> None:
    """Far from its top face a find is moved only part of the way: one moved at least AGAIN
    is looked at once more from where it was put."""
    refiner = OnnxRefiner.__new__(OnnxRefiner)
    refiner.session = SteadySession(move)
    frame = np.full((480, 640, 3), 90, np.uint8)
    near, far = cand(100, 100, size=40), cand(300, 100, size=40)
    refined = refiner.refine(frame, [near, far])
    assert [r.x for r in refined] == [pytest.approx(c.x + steps * move * 40) for c in (near, far)]
    assert refiner.session.crops == 2 * steps


def pip_row(value: int, p: float) -> list[float]:
    row = [(1 - p) / 5 if isinstance(face, int) else 0.0 for face in FACES]
    row[FACES.index(value)] = p
    return row


class ReadsByPlace:
    """A classifier that reads "2" at a crop with a bright centre (sure if it is white),
    else "1" (unsure)."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        centres = [float(c[28:36, 28:36].mean()) for c in crops]
        return FaceScores(np.array([pip_row(1, 0.6) if m <= 200 else
                                    pip_row(2, 0.99 if m > 250 else 0.95) for m in centres]),
                          np.array([quality() for _ in crops]))


@pytest.mark.parametrize(("shift", "value", "confidence", "x"), [
    (0.0, 1, 0.6, 100),  # not moved: not read again
    (0.02, 1, 0.6, 100),  # moved too little to read again (nor to be worth moving)
    (0.5, 2, 0.4, 120),  # moved onto the bright face: the surer read's value, no surer
])                       # than the other read was unsure
def test_a_find_the_refiner_moves_is_read_again_where_it_was_put(
        shift: float, value: int, confidence: float, x: float) -> None:
    frame = FRAME.copy()
    frame[90:110, 110:130] = 255  # the top face, half a die size right of the find
    reader = Reader(FixedDetector([cand(100, 100, size=40)]), ReadsByPlace(), "pips",
                    refiner=ShiftingRefiner(shift))
    (die,) = reader.read(frame).dice
    assert die.value == value and die.confidence == pytest.approx(confidence, abs=1e-6)
    assert die.x == pytest.approx(x)
    assert die.flag == "unreadable"  # asked either way


def test_a_surer_first_read_keeps_its_value_when_the_second_differs() -> None:
    frame = FRAME.copy()
    frame[90:110, 90:110] = 255  # bright where the die was found, not where it is moved
    # (moved half its size: `sure_moves` off, which would keep such a sure find in place)
    reader = Reader(FixedDetector([cand(100, 100, size=40)]), ReadsByPlace(), "pips",
                    Judge(sure_moves=None), refiner=ShiftingRefiner(0.5))
    (die,) = reader.read(frame).dice
    assert (die.value, die.flag) == (2, "unreadable")
    assert die.confidence == pytest.approx(0.4, abs=1e-6)


def test_a_second_read_that_agrees_leaves_the_less_sure_confidence() -> None:
    frame = FRAME.copy()
    frame[80:120, 80:105] = 230  # bright at the find (read 2 at 0.95) ...
    frame[80:120, 105:140] = 255  # ... and white where it is moved (read 2 at 0.99)
    reader = Reader(FixedDetector([cand(100, 100, size=40)]), ReadsByPlace(), "pips",
                    refiner=ShiftingRefiner(0.25))
    (die,) = reader.read(frame).dice
    assert (die.value, die.flag, die.x) == (2, None, 110)
    assert die.confidence == pytest.approx(0.95, abs=1e-6)


class GrowingRefiner:
    """Takes every find for half of a die larger than it: grows it 1.8 times and moves it a
    quarter of its size to the right."""

    def refine(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]:
        h, w = frame_bgr.shape[:2]
        return [moved(c, 0.25, 0.0, float(np.log(1.8)), w, h) for c in candidates]


def test_a_weak_find_touching_a_found_die_is_a_die_of_its_own() -> None:
    """Dice touching in a row seen at an angle lie closer than a die size (their boxes hold
    side faces too): a weak find 0.65 die sizes from a found die, that the classifier
    reads surely, is the next die (a 2 between a 4 and a 1, scored 0.38 by the detector,
    test scene 000827), not a side face of the found one (WEAK_AWAY)."""
    frame = np.full((480, 640, 3), 90, np.uint8)
    die = (255, 255, 40)
    for x in (100, 126):
        frame[80:120, x - 20:x + 20] = die
    reader = Reader(Searching(Search([cand(100, 100)], weak=[cand(126, 100, score=0.3)])),
                    ShadeReader())
    assert [d.x for d in reader.read(frame).dice] == [100, 126]


class LeapingRefiner:
    """Takes every find for its neighbour's half: moves it 0.6 of its size to the right."""

    def refine(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]:
        h, w = frame_bgr.shape[:2]
        return [moved(c, 0.6, 0.0, 0.0, w, h) for c in candidates]


@pytest.mark.parametrize(("refiner", "without_rule", "second", "moved_to"), [
    (GrowingRefiner(), Judge(sure_grows=None), 300, 10),
    # among touching dice: a die moved onto its neighbour (test scenes 000902, 001101)
    (LeapingRefiner(), Judge(sure_moves=None), 314, 24),
])
@pytest.mark.parametrize("on", [True, False])
def test_a_sure_find_the_refiner_would_grow_or_move_far_stays_as_read(
        refiner: Refiner, without_rule: Judge, second: int, moved_to: int, on: bool
        ) -> None:
    """A die read surely (a 2) that the refiner takes for half of a larger die
    (`sure_grows`), or moves half a die size or more (`sure_moves`), stays where it was
    found, as read; an unsure find (a 1) is read again where the refiner puts it. Without
    the rule (None) both are read again, and the sure die is asked about."""
    frame = FRAME.copy()
    frame[90:110, 90:110] = 255  # a die read as a sure 2 where it was found
    frame[90:110, second:second + 20] = 255  # where the unsure find is read again
    reader = Reader(FixedDetector([cand(100, 100, size=40), cand(300, 100, size=40)]),
                    ReadsByPlace(), "pips", Judge() if on else without_rule,
                    refiner=refiner)
    sure, unsure = reader.read(frame).dice
    assert (unsure.value, unsure.x, unsure.flag) == (2, 300 + moved_to, "unreadable")
    if on:
        assert (sure.value, sure.x, sure.flag) == (2, 100, None)
        assert sure.confidence == pytest.approx(0.99, abs=1e-6)
    else:
        assert (sure.value, sure.x, sure.flag) == (2, 100 + moved_to, "unreadable")


class NoDieUnlessBright:
    """A classifier that reads a crop with a white centre as a sure "2", anything else as
    no die."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        bright = [float(c[28:36, 28:36].mean()) > 250 for c in crops]
        return FaceScores(np.array([pip_row(2, 0.99) if b else pip_row(1, 0.5)
                                    for b in bright]),
                          np.array([quality(no_die=0.01 if b else 0.9) for b in bright]))


@pytest.mark.parametrize(("rescue", "kept_there", "read"), [
    (0.2, False, [(2, 120)]),  # the die's edge found: moved onto its face, read, kept
    (None, False, []),  # rescue off: dropped as no die, as the first look said
    # a die found on the face is kept (moved off it too, to 140, still near): the find
    # beside it is not read a second time
    (0.2, True, [(2, 140)]),
])
def test_a_find_taken_for_no_die_is_kept_where_the_refiner_puts_it_on_a_die(
        rescue: float | None, kept_there: bool, read: list[tuple[int, float]]) -> None:
    frame = FRAME.copy()
    frame[90:110, 110:130] = 255  # the top face, half a die size right of the find
    finds = [cand(100, 100, size=40, score=0.5)] + ([cand(120, 100, size=40)] if kept_there
                                                    else [])
    # (the sure die on the face moved too: `sure_moves` off, which would keep it in place)
    reader = Reader(FixedDetector(finds), NoDieUnlessBright(), "pips",
                    Judge(rescue_no_die=rescue, sure_moves=None),
                    refiner=ShiftingRefiner(0.5))
    dice = reader.read(frame).dice
    assert [(d.value, d.x) for d in dice] == read
    assert all(d.flag == "unreadable" for d in dice)  # the two looks differ: asked


class PipWhereBright:
    """Reads a crop with a white centre as a sure 2, anything else as a cat, unsure."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        bright = [float(c[28:36, 28:36].mean()) > 250 for c in crops]
        return FaceScores(np.array([one_hot(2) if b else one_hot("cat", 0.7) for b in bright]),
                          np.array([quality() for _ in crops]))


class MovesLeftFinds:
    """Moves the finds in the left half of the frame half a die size to the right."""

    def refine(self, frame_bgr: np.ndarray, candidates: list[Candidate]) -> list[Candidate]:
        h, w = frame_bgr.shape[:2]
        return [moved(c, 0.5 if c.x < w / 2 else 0.0, 0.0, 0.0, w, h) for c in candidates]


def test_a_frame_is_read_as_one_kind_of_dice_from_its_finds_as_last_read() -> None:
    """"auto" decides between pips and animals once, from every find as last read: where
    the first look took three finds for cats and the refiner moved two of them onto sure
    2s, the frame's dice are pips, the third one too (read unsure, so the table asks),
    not two 2s beside a cat."""
    frame = FRAME.copy()
    for x in (100, 200):
        frame[90:110, x + 10:x + 30] = 255  # half a die size right of two of the finds
    reader = Reader(FixedDetector([cand(100, 100), cand(200, 100), cand(500, 100)]),
                    PipWhereBright(), refiner=MovesLeftFinds())
    dice = reader.read(frame).dice
    assert all(d.value in PIP_VALUES for d in dice)
    assert [(d.value, d.x) for d in dice[:2]] == [(2, 120), (2, 220)]
    assert dice[2].flag == "unreadable"


def test_a_weak_find_the_classifier_is_sure_of_is_a_die() -> None:
    """The detector scored a clear die just under its threshold: it stands. A weak find
    the classifier only guesses at, and one beside a found die (its side face, half a die
    size from its top face), do not.
    For a taught set, whose art the classifier may never have seen, a weak find stands
    where the set recognises it as one of its dice."""
    frame = np.full((480, 640, 3), 90, np.uint8)
    die = (255, 255, 40)
    for x in (100, 300):
        frame[80:120, x - 20:x + 20] = die  # a found die and a clear die scored 0.28
    frame[80:120, 120:150] = die  # the found die's side face
    weak = [cand(300, 100, score=0.28), cand(500, 100, score=0.25), cand(120, 100, score=0.25)]
    reader = Reader(Searching(Search([cand(100, 100)], weak=weak)), ShadeReader())
    assert [(d.value, d.x) for d in reader.read(frame).dice] == [(5, 100), (5, 300)]
    taught = DiceSet("zoo", ["duck", "lion"], np.stack([patch(die), patch((0, 0, 230))]))
    reader = Reader(Searching(Search([cand(100, 100)], weak=weak)), ShadeReader(), dice_set=taught,
                    embedder=ColourEmbedder())
    assert [d.x for d in reader.read(frame).dice] == [100, 300]
    farm = DiceSet("farm", ["pig", "frog"], np.stack([patch((0, 0, 230)), patch((0, 230, 0))]))
    reader = Reader(Searching(Search([cand(100, 100)], weak=weak)), ShadeReader(), dice_set=farm,
                    embedder=ColourEmbedder())
    assert [d.x for d in reader.read(frame).dice] == [100]  # these dice are no pig nor frog


def test_reads_are_pooled_by_their_geometric_mean() -> None:
    """Reads that agree pool to what they say; a sure read against another sure read of
    something else pools to neither being sure; two reads of a 2 mend an unsure 1."""
    sure_two, unsure_one = pip_row(2, 0.9), pip_row(1, 0.5)
    assert pooled([np.array([sure_two])] * 2)[0] == pytest.approx(sure_two, abs=1e-5)
    torn = pooled([np.array([sure_two]), np.array([pip_row(5, 0.9)])])[0]
    assert torn.sum() == pytest.approx(1.0) and torn.max() < 0.4  # the mean would be 0.46
    mended = pooled([np.array([unsure_one]), np.array([sure_two]), np.array([sure_two])])[0]
    assert int(np.argmax(mended)) == FACES.index(2)


def test_pooled_reads_mend_a_value_but_are_no_surer_than_the_first_read() -> None:
    """Two more reads of an unsure 1 (0.6) say a sure 2: the pool says 2, no surer a die
    than the first read was. Two more reads that call it no die make it less of a die. A
    pool no surer than the first read is left as it is."""
    first = FaceScores(np.array([pip_row(1, 0.6)] * 3),
                       np.array([quality(), quality(no_die=0.05), quality()]))
    two = FaceScores(np.array([pip_row(2, 0.99), pip_row(2, 0.99), pip_row(1, 0.4)]),
                     np.array([quality(), quality(no_die=0.99), quality()]))
    pool = pooled_reads(first, [two, two])
    assert [FACES[int(np.argmax(v))] for v in pool.value] == [2, 2, 1]
    assert die_sureness(pool)[0] == pytest.approx(die_sureness(first)[0])
    assert die_sureness(pool)[1] < 0.2 < die_sureness(first)[1]
    assert pool.value[2] == pytest.approx(pooled([first.value[2:], two.value[2:],
                                                   two.value[2:]])[0])


def test_pooled_reads_keep_what_the_judge_asks_about() -> None:
    """More reads that see a die lying flat do not take away the first read's doubt that it
    leans (a leaning bear read as a rabbit, farm set C): what the judge asks about stays
    as likely, or grows."""
    first = FaceScores(np.array([one_hot("cat", 0.99)] * 2),
                       np.array([quality(tilted=0.3), quality(unreadable=0.1)]))
    more = FaceScores(np.array([one_hot("cat", 0.99)] * 2),
                      np.array([quality(), quality(unreadable=0.4)]))
    pool = pooled_reads(first, [more, more])
    tilted, unreadable = QUALITY.index("tilted"), QUALITY.index("unreadable")
    assert pool.quality[0, tilted] == pytest.approx(0.3)
    assert 0.1 < pool.quality[1, unreadable] < 0.4
    assert pool.quality.sum(axis=1) == pytest.approx([1.0, 1.0])


class ReadsBySize:
    """Reads a die by how much of its crop it fills: all of it, a sure 2; most of it, an
    unsure 1; less, an unsure 2."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        means = [float(c.mean()) for c in crops]
        return FaceScores(np.array([pip_row(2, 0.99) if m >= 240 else pip_row(1, 0.6)
                                    if m >= 200 else pip_row(2, 0.7) for m in means]),
                          np.array([quality() for _ in crops]))


@pytest.mark.parametrize("rescales", [(0.9, 1.12), ()])
def test_an_unsure_find_is_read_again_at_other_sizes(
        monkeypatch: pytest.MonkeyPatch, rescales: tuple[float, ...]) -> None:
    """A find a little larger than its die (44 px for 40) reads as an unsure 1; cut 0.9 and
    1.12 times as large it reads as a 2, and the pooled reads say 2 — still asked about,
    about as unsure as the first read (`pooled_reads`). A find of the die's size reads as a
    sure 2 and is read once."""
    monkeypatch.setattr(vision.reader, "RESCALES", rescales)
    frame = FRAME.copy()
    frame[80:120, 80:120] = 255
    frame[80:120, 380:420] = 255
    reader = Reader(FixedDetector([cand(100, 100, size=44), cand(400, 100, size=40)]),
                    ReadsBySize(), "pips")
    unsure, sure = reader.read(frame).dice
    assert (sure.value, sure.flag) == (2, None)
    assert unsure.flag == "unreadable" and unsure.value == (2 if rescales else 1)
    assert unsure.confidence == (pytest.approx(0.68, abs=0.01) if rescales
                                 else pytest.approx(0.6, abs=1e-6))


class ReadsNoDie:
    """Reads every crop as no die, as surely as `no_die`; counts the crops of each call."""

    def __init__(self, no_die: float) -> None:
        self.no_die = no_die
        self.calls: list[int] = []

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        self.calls.append(len(crops))
        return FaceScores(np.array([pip_row(3, 0.5) for _ in crops]),
                          np.array([quality(no_die=self.no_die) for _ in crops]))


@pytest.mark.parametrize("no_die, calls", [(0.95, [2]), (0.6, [2, 4])])
def test_a_find_surely_no_die_is_not_read_again_at_other_sizes(
        monkeypatch: pytest.MonkeyPatch, no_die: float, calls: list[int]) -> None:
    """Reading a find again at other sizes (RESCALES) may tell a die from no die, but
    reads of a find that is surely no die (the table, a cup's rim) changed no reading of
    the validation and test scenes: it is read once. One read as no die less surely is
    read again."""
    monkeypatch.setattr(vision.reader, "RESCALES", (0.9, 1.12))
    classifier = ReadsNoDie(no_die)
    reader = Reader(FixedDetector([]), classifier, "pips")
    reader.classified(FRAME, [cand(100, 100), cand(400, 100)])
    assert classifier.calls == calls


class ReadsByWhite:
    """Reads a crop as a sure 5 where a white die fills a fifth of it or more and black pips
    less than a third; else as no die (the table, or a pip seen close)."""

    def classify(self, crops: list[np.ndarray], turned: Sequence[bool] | None = None
                 ) -> FaceScores:
        def is_die(crop: np.ndarray) -> bool:
            return bool((crop.min(axis=2) > 200).mean() >= 0.2
                        and (crop.max(axis=2) < 30).mean() < 0.3)
        return FaceScores(np.array([pip_row(5, 0.99) for _ in crops]),
                          np.array([quality() if is_die(c) else quality(no_die=0.99)
                                    for c in crops]))


@pytest.mark.parametrize("grows", [(3.0,), ()])
def test_a_die_found_by_its_pip_is_read_again_larger(
        monkeypatch: pytest.MonkeyPatch, grows: tuple[float, ...]) -> None:
    """A 70 px die the detector found as a 30 px find on its black middle pip (no die to
    the classifier) is read again three times as large, where it reads as a die, and stands
    there. A find on the table beside a die found whole reads as a die that large too, but
    its larger crop holds that die, so it does not stand."""
    monkeypatch.setattr(vision.reader, "GROWS", grows)
    frame = FRAME.copy()
    frame[65:135, 65:135] = 255
    frame[88:112, 88:112] = 0  # the large die's middle pip
    frame[60:140, 380:420] = 255  # a die found whole
    table = cand(430, 100, size=25)
    reader = Reader(FixedDetector([cand(100, 100, size=30), cand(400, 100), table]),
                    ReadsByWhite(), "pips")
    dice = reader.read(frame).dice
    assert [(d.value, d.x) for d in dice] == ([(5, 100), (5, 400)] if grows else [(5, 400)])
    if grows:
        assert dice[0].box == (55, 55, 145, 145)
        _, read_larger = reader.classified(frame, [vision.reader.scaled(table, 3.0)])
        assert read_larger.quality[0, QUALITY.index("no_die")] < 0.5
