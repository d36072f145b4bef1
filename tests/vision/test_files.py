"""What the table keeps is written whole or not at all (vision.files)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

import numpy as np
import pytest

from vision.files import write_durably
from vision.teach import DiceSet, load_dice_set, taught_sets
from web.auth import SECRET_FILE, TableSecret


def test_a_new_file_is_written_with_the_umask_and_an_old_one_keeps_its_bits(
        tmp_path: Path) -> None:
    path = tmp_path / "deep" / "kept.bin"
    write_durably(path, lambda f: f.write(b"first"))
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_bytes() == b"first"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    os.chmod(path, 0o640)
    write_durably(path, lambda f: f.write(b"second"))
    assert path.read_bytes() == b"second" and stat.S_IMODE(path.stat().st_mode) == 0o640
    write_durably(path, lambda f: f.write(b"third"), mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["kept.bin"]


def test_a_write_that_fails_halfway_leaves_the_old_file_and_no_temporary_one(
        tmp_path: Path) -> None:
    path = tmp_path / "kept.bin"
    write_durably(path, lambda f: f.write(b"old"))

    def half_then_full(f: IO[bytes]) -> None:
        f.write(b"ne")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_durably(path, half_then_full)
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.bin"]


def test_the_data_is_on_the_card_before_the_name_points_at_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync of the file comes before the rename, and the folder is synced after it: a
    power cut between them leaves the old file, not an empty new one."""
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("folder fsync" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file fsync")
        real_fsync(fd)

    def replace(src: str, dst: Path) -> None:
        calls.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_durably(tmp_path / "kept.bin", lambda f: f.write(b"data"))
    assert calls == ["file fsync", "rename", "folder fsync"]


def test_a_dice_set_whose_save_fails_stays_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    patches = np.zeros((2, 8, 8, 3), np.uint8)
    taught = DiceSet("holz", [1, 2], patches, False, "e1", [1, 2],
                     np.eye(2, 4, dtype=np.float32))
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    taught.save(tmp_path)
    assert len(synced) == 2  # the file, then its folder

    def full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full)
    with pytest.raises(OSError):
        DiceSet("holz", [3, 4], patches, False, "e1", [3, 4],
                np.eye(2, 4, dtype=np.float32)).save(tmp_path)
    assert load_dice_set(tmp_path, "holz").patch_values == [1, 2]
    assert taught_sets(tmp_path) == {"holz": [1, 2]}
    assert [p.name for p in (tmp_path / "dice-sets").iterdir()] == ["holz.npz"]


def test_the_table_secret_is_private_to_the_service(tmp_path: Path) -> None:
    secret = TableSecret.load_or_create(tmp_path)
    assert stat.S_IMODE((tmp_path / SECRET_FILE).stat().st_mode) == 0o600
    assert TableSecret.load_or_create(tmp_path) == secret
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]
