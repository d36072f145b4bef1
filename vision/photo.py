"""Photos from files (`kniffel read`, `kniffel teach`, `kniffel calibrate`): one way to load
them, with a one-line reason when one cannot be read."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np

SOI = b"\xff\xd8"  # start of image
EOI = b"\xff\xd9"  # end of image
SOS = 0xDA  # start of scan: the compressed image data follows
#: Markers without a length field: TEM and the restart markers RST0–7.
STANDALONE = {0x01, *range(0xD0, 0xD8)}
_QUIET_DECODING = threading.Lock()


def read_photo(path: Path) -> np.ndarray:
    """The photo at `path` as a BGR frame, or ValueError with a one-line reason: no such
    file, a folder, not a readable image, or a JPEG cut short — a copy or an upload that
    did not finish. OpenCV decodes such a file without an error, the missing part grey,
    and the dice there would silently go unseen (or be taught from half a picture)."""
    if not path.exists():
        raise ValueError("no such file")
    if path.is_dir():
        raise ValueError(f"a folder, not a photo (name its photos: {path / '*.jpg'})")
    if not path.is_file():
        raise ValueError("not a readable image")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if jpeg_cut_short(data):
        raise ValueError("the JPEG file is cut short (a copy or an upload that did not finish?)")
    # Decoded from the bytes already read; like imread, imdecode turns the photo as its
    # EXIF orientation says (tests/vision/test_photo.py).
    frame = _decoded_quietly(data) if data else None
    if frame is None:
        raise ValueError("not a readable image")
    return frame


def _decoded_quietly(data: bytes) -> np.ndarray | None:
    """`data` decoded without OpenCV's own log lines (a file it cannot read gets the
    caller's one-line reason, not a line of C++ source locations before it). OpenCV's log
    level is the process's: one decode at a time, so that two threads cannot leave it
    silenced."""
    with _QUIET_DECODING:
        level = cv2.utils.logging.getLogLevel()
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        try:
            return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        finally:
            cv2.utils.logging.setLogLevel(level)


def jpeg_cut_short(data: bytes) -> bool:
    """Whether `data` is a JPEG whose image data stops before its end marker.

    The header segments are skipped by their lengths (an EXIF thumbnail inside one has an
    end marker of its own); after the first start-of-scan the end marker must follow —
    byte stuffing keeps it out of the compressed data. Bytes after it (a phone's motion
    photo appends a video) do not matter. Not a JPEG, or headers this does not follow:
    False, and the decoder judges."""
    if not data.startswith(SOI):
        return False
    i = len(SOI)
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return False
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
        elif marker == SOS:
            return data.find(EOI, i) < 0
        elif marker in STANDALONE:
            i += 2
        else:
            i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return True  # cut short within the headers
