"""Files written whole or not at all.

A Pi at the table is switched off at the wall, not shut down. What the table keeps (a taught
dice set, its configuration, its secret) is written into a temporary file beside its place,
flushed to the card and renamed over the old file, so that a power cut at any moment leaves
the old file or the new one, never half of one or an empty one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO

#: The temporary file's suffix: never a name the folder's readers take for a saved file.
TEMPORARY_SUFFIX = ".tmp"


def write_durably(path: Path, write: Callable[[IO[bytes]], object],
                  mode: int | None = None) -> None:
    """Write `path` through `write`, all of it or nothing (see the module). `mode`: the new
    file's permission bits; default the old file's, else what the umask gives. On any
    error the old file is as it was and no temporary file is left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        with contextlib.suppress(FileNotFoundError):
            mode = path.stat().st_mode & 0o777
    fd, tmp = _created_beside(path, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _created_beside(path: Path, mode: int) -> tuple[int, Path]:
    """A new, empty temporary file in `path`'s folder, opened for writing. Made by the
    kernel with `mode` less the umask: reading the umask would mean setting it, which
    races with other threads making files."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}{TEMPORARY_SUFFIX}")
        with contextlib.suppress(FileExistsError):
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp


def _sync_folder(folder: Path) -> None:
    """Make a rename in `folder` itself durable (where the system allows: not on Windows,
    nor on every file system)."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
