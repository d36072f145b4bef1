"""Real-data adapter: YOLO pip boxes -> SceneLabels with die-body boxes."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from vision import datasets
from vision.datasets import (
    check_real,
    labelled_boxes,
    load_real,
    one_photo_per_value,
    real_root,
)

HAVE_REAL = (real_root() / "Train").is_dir() and (real_root() / "Valid").is_dir()
needs_real = pytest.mark.skipif(not HAVE_REAL, reason=f"real data not found at {real_root()} "
                                f"(set {datasets.REAL_ENV})")


def _inside(inner: tuple[float, ...], outer: tuple[float, ...], tol: float = 1e-6) -> bool:
    return (outer[0] - tol <= inner[0] and outer[1] - tol <= inner[1]
            and inner[2] <= outer[2] + tol and inner[3] <= outer[3] + tol)


@pytest.fixture(scope="module")
def real() -> dict[str, list]:
    if not HAVE_REAL:
        pytest.skip(f"real data not found at {real_root()}")
    return {s: load_real(s) for s in ("Train", "Valid")}


@needs_real
@pytest.mark.parametrize("split,images,dice", [("Train", 310, 951), ("Valid", 86, 256)])
def test_counts(real: dict[str, list], split: str, images: int, dice: int) -> None:
    samples = real[split]
    assert len(samples) == images
    assert sum(len(lab.dice) for _, lab in samples) == dice
    assert all(1 <= len(lab.dice) <= 5 for _, lab in samples)


@needs_real
@pytest.mark.parametrize("split", ["Train", "Valid"])
def test_padded_boxes_contain_pip_boxes(real: dict[str, list], split: str) -> None:
    for path, lab in real[split]:
        assert path.exists() and lab.image == path.name
        assert (lab.width, lab.height) == (640, 480)
        pips = labelled_boxes(split, path, lab.width, lab.height)
        assert len(pips) == len(lab.dice)
        for pip, die in zip(pips, lab.dice, strict=True):
            x0, y0, x1, y1 = die.box
            assert 0 <= x0 < x1 <= lab.width and 0 <= y0 < y1 <= lab.height
            clipped = (max(pip.box[0], 0), max(pip.box[1], 0),
                       min(pip.box[2], lab.width), min(pip.box[3], lab.height))
            assert _inside(clipped, die.box)
            assert die.center == pytest.approx((pip.cx, pip.cy))
            assert die.value in range(1, 7)
            # a die body is bigger than its pip pattern, and not absurdly big
            assert x1 - x0 >= max(pip.w, 30) and y1 - y0 >= max(pip.h, 30)
            assert x1 - x0 <= 160 and y1 - y0 <= 160


@needs_real
def test_values_and_known_fix(real: dict[str, list]) -> None:
    values = [d.value for _, lab in real["Train"] for d in lab.dice]
    assert sorted(set(values)) == [1, 2, 3, 4, 5, 6]
    valid56 = next(lab for p, lab in real["Valid"] if p.name == "valid_56.jpg")
    assert sorted(d.value for d in valid56.dice) == [1, 4, 5, 6]  # raw label says 4, 4, 5, 6
    valid9 = next(lab for p, lab in real["Valid"] if p.name == "valid_9.jpg")
    assert [d.value for d in valid9.dice] == [2, 2]  # the file labels only the upper die
    assert 340 < valid9.dice[1].center[0] < 400 and 290 < valid9.dice[1].center[1] < 340


@needs_real
def test_ones_get_die_size_of_their_neighbours(real: dict[str, list]) -> None:
    widths = {1: [], 5: []}
    for _, lab in real["Valid"]:
        for d in lab.dice:
            if d.value in widths:
                widths[int(d.value)].append(d.box[2] - d.box[0])
    # a 1's pip box is ~15 px, a 5's ~50 px; the padded bodies are alike
    assert 0.8 < np.median(widths[1]) / np.median(widths[5]) < 1.25


@needs_real
def test_data_check_finds_no_leak() -> None:
    rep = check_real()
    assert rep.images == {"Train": 310, "Valid": 86}
    assert rep.identical == []
    assert not [p for p in rep.near_duplicates if p[0][:5] != p[1][:5]]  # none across splits
    assert "Train" in str(rep)


def _fake_split(root: Path, name: str, lines: list[str]) -> Path:
    """A 200x100 grey image with white squares where the labels are."""
    folder = root / "Train"
    folder.mkdir(parents=True, exist_ok=True)
    img = np.full((100, 200, 3), 90, np.uint8)
    for line in lines:
        _, cx, cy, w, h = map(float, line.split())
        cv2.rectangle(img, (int((cx - 0.1) * 200), int((cy - 0.2) * 100)),
                      (int((cx + 0.1) * 200), int((cy + 0.2) * 100)), (240, 240, 240), -1)
    cv2.imwrite(str(folder / f"{name}.jpg"), img)
    (folder / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_padding_rule_on_fake_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a 5 (pip box 20x20 px) and a 1 (pip box 4x4 px), 640-px rules on a 200x100 image
    _fake_split(tmp_path, "a", ["4 0.25 0.5 0.1 0.2", "0 0.75 0.5 0.02 0.04"])
    monkeypatch.setenv(datasets.REAL_ENV, str(tmp_path))
    assert real_root() == tmp_path
    [(path, lab)] = load_real("Train")
    assert path.name == "a.jpg" and (lab.width, lab.height) == (200, 100)
    five, one = lab.dice
    assert (five.value, one.value) == (5, 1)
    size = 1.41 * 20  # body width of a 5 per pip-box side
    assert five.box[2] - five.box[0] == pytest.approx(2 * 0.52 * size)
    assert five.box[3] - five.box[1] == pytest.approx((0.46 + 0.62) * size)
    # the 1 borrows the 5's die size
    assert one.box[2] - one.box[0] == pytest.approx(five.box[2] - five.box[0])
    assert one.center == pytest.approx((150, 50))
    assert five.flag is None and one.flag is None


def test_cut_flag_and_bad_split(tmp_path: Path) -> None:
    _fake_split(tmp_path, "b", ["5 0.05 0.5 0.1 0.2"])  # pip box touches the left border
    [(_, lab)] = load_real("Train", root=tmp_path)
    assert lab.dice[0].flag == "cut" and lab.dice[0].box[0] == 0.0
    with pytest.raises(ValueError):
        load_real("Test", root=tmp_path)
    with pytest.raises(FileNotFoundError):
        load_real("Valid", root=tmp_path)


def test_one_photo_per_value_takes_the_first_photo_with_every_die_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    five = "4 {x} 0.5 0.1 0.2"  # class 4: a five, pip box 20x20 px
    _fake_split(tmp_path, "a_mixed", [five.format(x=0.25), "1 0.75 0.5 0.05 0.1"])
    _fake_split(tmp_path, "b_single", [five.format(x=0.25)])
    _fake_split(tmp_path, "c_fives", [five.format(x=0.25), five.format(x=0.75)])
    _fake_split(tmp_path, "d_fives", [five.format(x=0.25), five.format(x=0.75)])
    monkeypatch.setenv(datasets.REAL_ENV, str(tmp_path))
    assert {v: p.name for v, p in one_photo_per_value("Train").items()} == {5: "c_fives.jpg"}
