"""Loading photos from files: a JPEG cut short is refused, not read half grey."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.photo import (
    MAX_FILE_BYTES,
    SOF,
    _decoder_messages,
    header_markers,
    jpeg_cut_short,
    read_photo,
    read_whole_photo,
    stated_size,
)


def jpeg(width: int = 320, height: int = 240, progressive: bool = False) -> bytes:
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    params = [cv2.IMWRITE_JPEG_QUALITY, 90]
    if progressive:
        params += [cv2.IMWRITE_JPEG_PROGRESSIVE, 1]
    ok, data = cv2.imencode(".jpg", image, params)
    assert ok
    return data.tobytes()


def with_thumbnail(data: bytes) -> bytes:
    """`data` with an EXIF-like APP1 segment after its start that holds a whole small JPEG
    (with its own end marker), as cameras store a thumbnail."""
    thumb = jpeg(32, 24)
    body = b"Exif\x00\x00" + thumb
    return data[:2] + b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body + data[2:]


@pytest.mark.parametrize("progressive", [False, True])
def test_a_whole_jpeg_is_not_cut_short_and_a_cut_one_is(progressive: bool) -> None:
    data = jpeg(progressive=progressive)
    assert not jpeg_cut_short(data)
    for keep in (len(data) // 2, len(data) - 2, 1000, 100, 3):
        assert jpeg_cut_short(data[:keep]), keep


def test_a_thumbnail_end_marker_does_not_hide_a_cut_photo() -> None:
    data = with_thumbnail(jpeg())
    assert cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) is not None
    assert not jpeg_cut_short(data)
    assert jpeg_cut_short(data[:len(data) // 2])


def test_bytes_after_the_end_marker_and_other_formats_are_left_to_the_decoder() -> None:
    assert not jpeg_cut_short(jpeg() + b"\x00" * 64 + b"ftypmp42 a motion photo's video")
    ok, png = cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))
    assert ok and not jpeg_cut_short(png.tobytes()[:20])
    assert not jpeg_cut_short(b"not a picture")


def test_read_photo_gives_one_line_reasons(tmp_path: Path) -> None:
    whole = tmp_path / "whole.jpg"
    whole.write_bytes(jpeg())
    photo = read_photo(whole)
    assert photo.frame.shape == (240, 320, 3) and photo.damage is None and not photo.warnings
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(jpeg()[:5000])
    # OpenCV would decode it, the rest grey: that is what must not happen unnoticed
    assert cv2.imread(str(cut), cv2.IMREAD_COLOR) is not None
    with pytest.raises(ValueError, match=r"^the JPEG file is cut short \(a copy or an upload"):
        read_photo(cut)
    text = tmp_path / "text.jpg"
    text.write_text("hello")
    with pytest.raises(ValueError, match="^not a readable image$"):
        read_photo(text)
    # `kniffel read photos` instead of `kniffel read photos/*.jpg`
    with pytest.raises(ValueError, match=r"^a folder, not a photo \(name its photos: .*\*\.jpg\)$"):
        read_photo(tmp_path)
    with pytest.raises(ValueError, match="^no such file$"):
        read_photo(tmp_path / "missing.jpg")
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="^not a readable image$"):
        read_photo(empty)


def test_read_photo_turns_a_photo_as_its_exif_orientation_says(tmp_path: Path) -> None:
    """A phone held upright stores the picture on its side with orientation 6 (turn 90°
    clockwise): read_photo gives it upright, as cv2.imread does."""
    import struct

    image = np.zeros((40, 80, 3), np.uint8)
    image[:, :40] = 255  # white left half
    ok, encoded = cv2.imencode(".jpg", image)
    assert ok
    tiff = (b"II*\x00" + struct.pack("<IH", 8, 1) + struct.pack("<HHIHH", 0x0112, 3, 1, 6, 0)
            + struct.pack("<I", 0))
    body = b"Exif\x00\x00" + tiff
    data = encoded.tobytes()
    photo = tmp_path / "upright.jpg"
    photo.write_bytes(data[:2] + b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body
                      + data[2:])
    frame = read_photo(photo).frame
    assert frame.shape == (80, 40, 3)
    assert frame[5, 20].mean() > 200 and frame[75, 20].mean() < 50  # white half now on top
    assert np.array_equal(frame, cv2.imread(str(photo), cv2.IMREAD_COLOR))


def test_a_photo_too_large_to_read_is_a_one_line_error_before_decoding(tmp_path: Path
                                                                       ) -> None:
    """A PNG or JPEG whose header states more than MAX_PIXELS is refused unread (a few
    megabytes of PNG can hold gigabytes of picture); other formats past OpenCV's own limit
    (an exception inside OpenCV) are not a readable image, never a traceback."""
    assert stated_size(jpeg()) == stated_size(jpeg(progressive=True)) == (320, 240)
    ok, png = cv2.imencode(".png", np.zeros((30, 40, 3), np.uint8))
    assert ok and stated_size(png.tobytes()) == (40, 30)
    big_png = bytearray(png.tobytes())
    big_png[16:24] = (20_000).to_bytes(4, "big") + (15_000).to_bytes(4, "big")
    big_jpeg = bytearray(jpeg())
    sof = next(i for marker, i in header_markers(bytes(big_jpeg)) if marker in SOF)
    big_jpeg[sof + 5:sof + 9] = (15_000).to_bytes(2, "big") + (20_000).to_bytes(2, "big")
    for name, data in (("big.png", big_png), ("big.jpg", big_jpeg)):
        (tmp_path / name).write_bytes(bytes(data))
        with pytest.raises(ValueError, match=r"^too large to read \(20000×15000 pixels; at "
                                             r"most 250 million\)$"):
            read_photo(tmp_path / name)
    # a BMP header stating 40 000 × 40 000 pixels, past OpenCV's limit of 2^30
    bmp = b"BM" + struct.pack("<IHHI", 54, 0, 0, 54) + struct.pack(
        "<IiiHHIIiiII", 40, 40_000, 40_000, 1, 24, 0, 0, 2835, 2835, 0, 0)
    (tmp_path / "huge.bmp").write_bytes(bmp)
    with pytest.raises(ValueError, match="^not a readable image$"):
        read_photo(tmp_path / "huge.bmp")


def test_a_file_opencv_cannot_read_gets_one_line_and_no_opencv_log(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """OpenCV logs its own error (a C++ source line) for a GIF with no picture in it; the
    user sees only the reader's reason, and OpenCV's logging is as it was after."""
    gif = tmp_path / "empty.gif"
    gif.write_bytes(b"GIF89a" + bytes(20))
    before = cv2.utils.logging.getLogLevel()
    with pytest.raises(ValueError, match="^not a readable image$"):
        read_photo(gif)
    assert capfd.readouterr().err == ""
    assert cv2.utils.logging.getLogLevel() == before


def test_a_jpeg_damaged_inside_is_read_with_a_warning_and_refused_for_teaching(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Bytes lost inside a JPEG (a bad copy, a failing card): OpenCV decodes it, part of
    the picture garbled, and libjpeg says so only on standard error. The reading says it in
    one warning instead; teaching refuses such a photo; no raw decoder line reaches the
    user."""
    data = jpeg(640, 480)
    damaged = tmp_path / "damaged.jpg"
    damaged.write_bytes(data[:len(data) // 2] + data[len(data) // 2 + 2000:])
    photo = read_photo(damaged)
    assert photo.frame.shape == (480, 640, 3)
    assert photo.damage is not None
    assert re.fullmatch(r"damaged JPEG data \((premature end|\d+ extraneous bytes).*\)",
                        photo.damage)
    assert photo.warnings == [f"{photo.damage}: part of the picture may be garbled, and dice "
                              "there missed"]
    with pytest.raises(ValueError, match=r"^damaged JPEG data \(.+\): take or copy the "
                                         r"photo again$"):
        read_whole_photo(damaged)
    whole = tmp_path / "whole.jpg"
    whole.write_bytes(data)
    assert read_whole_photo(whole).shape == (480, 640, 3)
    assert capfd.readouterr().err == ""


def test_a_damaged_png_is_not_readable_and_says_why(tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    ok, png = cv2.imencode(".png", np.random.default_rng(2).integers(
        0, 256, (120, 160, 3), dtype=np.uint8))
    assert ok
    data = bytearray(png.tobytes())
    data[len(data) // 2] ^= 0x55
    bad = tmp_path / "bad.png"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"^not a readable image \(damaged PNG data: .+\)$"):
        read_photo(bad)
    assert capfd.readouterr().err == ""


def test_other_lines_on_standard_error_while_decoding_are_passed_on(
        capfd: pytest.CaptureFixture[str]) -> None:
    """Standard error is the process's: a line another thread writes while a photo is
    decoded reaches it after the decoding, and only the decoder's lines are taken."""
    def decode() -> np.ndarray:
        os.write(2, b"Corrupt JPEG data: bad Huffman code\nanother thread's log line\n")
        return np.zeros((2, 2, 3), np.uint8)

    frame, messages = _decoder_messages(decode)
    assert frame is not None and messages == ["Corrupt JPEG data: bad Huffman code"]
    assert capfd.readouterr().err == "another thread's log line\n"


def test_a_file_too_large_to_be_a_photo_is_not_read(tmp_path: Path) -> None:
    """A video named by mistake: refused by its size, before it is read into memory."""
    video = tmp_path / "game.mp4"
    with open(video, "wb") as f:  # sparse: takes no room on the disk
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ValueError, match=r"^too large to be a photo \(256 MB; at most 256\)$"):
        read_photo(video)
