"""Photos from files (`kniffel read`, `kniffel teach`, `kniffel calibrate`): one way to load
them, with a one-line reason when one cannot be read, and a one-line warning when part of
one may be garbled; and one way to encode a picture for a file.

Files are read and written by Python, never by OpenCV from a path: OpenCV's Python binding
crashes the process on a path that is not valid Unicode (a name in another encoding, as
an old camera's card may hold)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

SOI = b"\xff\xd8"  # start of image
EOI = b"\xff\xd9"  # end of image
SOS = 0xDA  # start of scan: the compressed image data follows
#: Markers without a length field: TEM and the restart markers RST0–7.
STANDALONE = {0x01, *range(0xD0, 0xD8)}
#: Start-of-frame markers, which carry a JPEG's size: SOF0–15 but DHT, JPG and DAC.
SOF = {*range(0xC0, 0xD0)} - {0xC4, 0xC8, 0xCC}
#: What `header_markers` gives where a byte is not a marker.
NOT_A_MARKER = -1
PNG = b"\x89PNG\r\n\x1a\n"  # signature; its first chunk, IHDR, states the size
#: A photo with more pixels than this is not decoded: more than any camera's (a 200
#: megapixel phone's is 16 320 × 12 240), while a PNG of a few megabytes can hold a
#: picture of gigabytes that would fill a Raspberry Pi's memory.
MAX_PIXELS = 250_000_000
#: A file larger than this is not read at all: more than any camera's photo (a 200
#: megapixel phone's JPEG is some 50–100 MB), and read whole — a video named by mistake —
#: it would fill a Raspberry Pi's memory before the decoder could refuse it.
MAX_FILE_BYTES = 256 * 2**20
_QUIET_DECODING = threading.Lock()
#: How libjpeg's messages about damaged data begin. A JPEG with bytes lost or changed (a
#: bad copy, a failing card) still decodes, part of it garbled or grey, and libjpeg says
#: so only on the process's standard error: OpenCV passes none of it on.
JPEG_DAMAGE = ("Corrupt JPEG data", "Premature end of JPEG file")
#: How the image decoders' other messages on standard error begin (libpng's warnings and
#: errors, libjpeg's other warnings): taken from the decoding, never shown raw.
DECODER_MESSAGES = (*JPEG_DAMAGE, "libpng ", "Warning: unknown JFIF", "Invalid SOS",
                    "Inconsistent progression", "Unknown Adobe", "Application transferred")


@dataclass(frozen=True)
class Photo:
    """A photo read from a file."""

    frame: np.ndarray  # BGR, turned as its EXIF orientation says
    #: What the decoder found wrong in a JPEG it still read ("damaged JPEG data (…)");
    #: None where it found nothing.
    damage: str | None = None

    @property
    def warnings(self) -> list[str]:
        """What a reading of this photo must say of the photo itself."""
        if self.damage is None:
            return []
        return [f"{self.damage}: part of the picture may be garbled, and dice there missed"]


def read_photo(path: Path) -> Photo:
    """The photo at `path`, or ValueError with a one-line reason: no such file, a folder,
    not a readable image, too large (MAX_FILE_BYTES, MAX_PIXELS), or a JPEG cut short — a
    copy or an upload that did not finish. OpenCV decodes such a file without an error,
    the missing part grey, and the dice there would silently go unseen (or be taught from
    half a picture).
    A JPEG damaged inside is read as its decoder can, with the `damage` said: a file can
    also carry a few stray bytes that harm nothing, and the decoder says the same of it."""
    if not path.exists():
        raise ValueError("no such file")
    if path.is_dir():
        raise ValueError(f"a folder, not a photo (name its photos: {path / '*.jpg'})")
    if not path.is_file():
        raise ValueError("not a readable image")
    try:
        file_bytes = path.stat().st_size
        if file_bytes > MAX_FILE_BYTES:
            raise ValueError(f"too large to be a photo ({file_bytes // 2**20} MB; at most "
                             f"{MAX_FILE_BYTES // 2**20})")
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if jpeg_cut_short(data):
        raise ValueError("the JPEG file is cut short (a copy or an upload that did not finish?)")
    size = stated_size(data)
    if size is not None and size[0] * size[1] > MAX_PIXELS:
        raise ValueError(f"too large to read ({size[0]}×{size[1]} pixels; at most "
                         f"{MAX_PIXELS // 1_000_000} million)")
    # Decoded from the bytes already read; like imread, imdecode turns the photo as its
    # EXIF orientation says (tests/vision/test_photo.py).
    frame, messages = _decoded_quietly(data) if data else (None, [])
    if frame is None:
        png = [m.removeprefix("libpng error: ") for m in messages
               if m.startswith("libpng error: ")]
        raise ValueError("not a readable image"
                         + (f" (damaged PNG data: {png[0]})" if png else ""))
    damage = [m for m in messages if m.startswith(JPEG_DAMAGE)]
    return Photo(frame, jpeg_damage(damage[0]) if damage else None)


def read_whole_photo(path: Path) -> np.ndarray:
    """The frame of the photo at `path`, to teach from: as `read_photo`, but a JPEG damaged
    inside is refused, as one cut short is (a garbled die, taught, would draw other dice to
    its face)."""
    photo = read_photo(path)
    if photo.damage is not None:
        raise ValueError(f"{photo.damage}: take or copy the photo again")
    return photo.frame


def jpeg_damage(message: str) -> str:
    """What a photo's `damage` says where libjpeg wrote `message` (JPEG_DAMAGE)."""
    detail = message.removeprefix("Corrupt JPEG data: ")
    return f"damaged JPEG data ({detail[:1].lower()}{detail[1:]})"


def _decoded_quietly(data: bytes) -> tuple[np.ndarray | None, list[str]]:
    """`data` decoded without OpenCV's own log lines (a file it cannot read gets the
    caller's one-line reason, not a line of C++ source locations before it), and what the
    decoders wrote to standard error meanwhile (`_decoder_messages`). OpenCV's log level
    and the standard error are the process's: one decode at a time, so that two threads
    cannot leave them changed."""
    def decode() -> np.ndarray | None:
        try:
            return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        except cv2.error:  # e.g. more pixels than OpenCV's own limit, in another format
            return None

    with _QUIET_DECODING:
        level = cv2.utils.logging.getLogLevel()
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        try:
            return _decoder_messages(decode)
        finally:
            cv2.utils.logging.setLogLevel(level)


def _decoder_messages(decode: Callable[[], np.ndarray | None]
                      ) -> tuple[np.ndarray | None, list[str]]:
    """What `decode` gives, and the lines of DECODER_MESSAGES written to the standard error
    (file descriptor 2: libjpeg and libpng print there themselves) while it ran. The
    standard error goes to a file for that while; lines of anyone else's (another
    thread's log) are written back after it, late but not lost. Where the standard error
    cannot be taken so, nothing is collected."""
    with contextlib.ExitStack() as stack:
        try:
            if sys.stderr is not None:
                sys.stderr.flush()
            taken = stack.enter_context(tempfile.TemporaryFile())
            saved = os.dup(2)
        except (OSError, ValueError):  # no standard error to take, no room for the file
            return decode(), []
        stack.callback(os.close, saved)
        os.dup2(taken.fileno(), 2)
        try:
            frame = decode()
        finally:
            os.dup2(saved, 2)
        taken.seek(0)
        lines = taken.read().decode(errors="replace").splitlines()
    others = [line for line in lines if not line.startswith(DECODER_MESSAGES)]
    if others:
        os.write(2, ("\n".join(others) + "\n").encode())
    return frame, [line for line in lines if line.startswith(DECODER_MESSAGES)]


def encoded(image: np.ndarray, suffix: str) -> bytes | None:
    """`image` encoded as a file named with `suffix` (".jpg", ".png", …) holds it; None
    where OpenCV has no writer for that suffix."""
    if not suffix.isascii() or len(suffix) < 2:  # not a suffix OpenCV could know
        return None
    try:
        ok, data = cv2.imencode(suffix, image)
    except cv2.error:
        return None
    return data.tobytes() if ok else None


def stated_size(data: bytes) -> tuple[int, int] | None:
    """The width and height a PNG's or a JPEG's header states, read before decoding it;
    None for other formats (OpenCV's own limit of 2^30 pixels guards those) or headers
    this does not follow."""
    if data.startswith(PNG) and data[12:16] == b"IHDR" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if not data.startswith(SOI):
        return None
    for marker, i in header_markers(data):
        if marker in SOF and i + 9 <= len(data):  # length, precision, height, width
            height = int.from_bytes(data[i + 5:i + 7], "big")
            return int.from_bytes(data[i + 7:i + 9], "big"), height
    return None


def jpeg_cut_short(data: bytes) -> bool:
    """Whether `data` is a JPEG whose image data stops before its end marker.

    The header segments are skipped by their lengths (an EXIF thumbnail inside one has an
    end marker of its own); after the first start-of-scan the end marker must follow —
    byte stuffing keeps it out of the compressed data. Bytes after it (a phone's motion
    photo appends a video) do not matter. Not a JPEG, or headers this does not follow:
    False, and the decoder judges."""
    if not data.startswith(SOI):
        return False
    for marker, i in header_markers(data):
        if marker == SOS:
            return data.find(EOI, i) < 0
        if marker == NOT_A_MARKER:
            return False
    return True  # cut short within the headers


def header_markers(data: bytes) -> Iterator[tuple[int, int]]:
    """Each marker of a JPEG's header segments and where it stands, up to and with the
    first start-of-scan; NOT_A_MARKER, and no more, where a byte is not one."""
    i = len(SOI)
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            yield NOT_A_MARKER, i
            return
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        yield marker, i
        if marker == SOS:
            return
        i += 2 if marker in STANDALONE else 2 + int.from_bytes(data[i + 2:i + 4], "big")
