"""Atomic writes: a target holds its old bytes or its new ones, never a part; no temp file stays."""

import os

import pytest

from pipeline import fsutil
from pipeline.fsutil import write_bytes_atomic


def test_writes_creates_folders_and_skips_unchanged(tmp_path):
    target = tmp_path / "a" / "b" / "file.md"
    assert write_bytes_atomic(target, b"one") is True and target.read_bytes() == b"one"
    before = target.stat().st_mtime_ns
    assert write_bytes_atomic(target, b"one") is False and target.stat().st_mtime_ns == before
    assert write_bytes_atomic(target, b"two!") is True and target.read_bytes() == b"two!"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.md"]


def test_a_new_file_has_the_umask_mode(tmp_path):
    mask = os.umask(0o022)
    try:
        write_bytes_atomic(tmp_path / "f", b"x")
    finally:
        os.umask(mask)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o644  # readable by a web server's user


def test_a_failed_write_keeps_the_old_bytes_and_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "f.json"
    write_bytes_atomic(target, b"old")

    def fail(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "write", fail)
    with pytest.raises(OSError):
        write_bytes_atomic(target, b"new bytes")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_a_short_write_is_completed(tmp_path, monkeypatch):
    real = os.write
    monkeypatch.setattr(fsutil.os, "write", lambda fd, data: real(fd, bytes(data[:3])))  # 3 bytes a call
    write_bytes_atomic(tmp_path / "f", b"0123456789")
    assert (tmp_path / "f").read_bytes() == b"0123456789"
