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


def test_in_a_private_folder_a_new_file_is_created_in_place_and_an_existing_one_still_renamed(tmp_path, monkeypatch):
    renames = []
    real_rename = fsutil.rename
    monkeypatch.setattr(fsutil, "rename", lambda a, b: (renames.append(b), real_rename(a, b)))
    live = tmp_path / "live.md"
    live.write_bytes(b"live")
    folder = tmp_path / "staging"
    folder.mkdir()
    os.link(live, folder / "shared.md")  # as the staging mirror links the live site's files
    with fsutil.private_folder(folder):
        assert write_bytes_atomic(folder / "new" / "one.md", b"new") is True
        assert write_bytes_atomic(folder / "shared.md", b"changed") is True
        assert write_bytes_atomic(tmp_path / "outside.md", b"x") is True
    assert (folder / "new" / "one.md").read_bytes() == b"new"
    assert live.read_bytes() == b"live"  # the shared inode was replaced, not written through
    assert renames == [os.fspath(folder / "shared.md"), os.fspath(tmp_path / "outside.md")]
    renames.clear()
    write_bytes_atomic(folder / "later.md", b"y")  # outside the context: temp + rename again
    assert renames == [os.fspath(folder / "later.md")]


def test_a_failed_write_of_a_new_file_in_a_private_folder_leaves_no_part(tmp_path, monkeypatch):
    def fail(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "write", fail)
    with fsutil.private_folder(tmp_path), pytest.raises(OSError):
        write_bytes_atomic(tmp_path / "f.json", b"new bytes")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kernel", [True, False], ids=["copy_file_range", "buffered"])
def test_a_copy_holds_the_source_bytes_and_skips_unchanged(tmp_path, monkeypatch, kernel):
    if not kernel:  # a system or filesystem without copy_file_range: the same bytes by reading
        def unsupported(*a, **kw):
            raise OSError(fsutil.errno.EXDEV, "cross-device")

        monkeypatch.setattr(fsutil.os, "copy_file_range", unsupported, raising=False)
    source = tmp_path / "model.onnx"
    source.write_bytes(os.urandom(3 << 20) + b"tail")  # more than one read block
    target = tmp_path / "site" / "model.onnx"
    assert fsutil.copy_file_atomic(source, target) is True and target.read_bytes() == source.read_bytes()
    before = target.stat().st_mtime_ns
    assert fsutil.copy_file_atomic(source, target) is False and target.stat().st_mtime_ns == before
    source.write_bytes(source.read_bytes()[:-1] + b"!")  # same size, one byte differs
    assert fsutil.copy_file_atomic(source, target) is True and target.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.onnx"]


def test_a_copy_in_a_private_folder_is_made_in_place_and_never_writes_through_a_link(tmp_path, monkeypatch):
    renames = []
    real_rename = fsutil.rename
    monkeypatch.setattr(fsutil, "rename", lambda a, b: (renames.append(b), real_rename(a, b)))
    source = tmp_path / "source.bin"
    source.write_bytes(b"new model")
    live = tmp_path / "live.bin"
    live.write_bytes(b"old model")
    folder = tmp_path / "staging"
    folder.mkdir()
    os.link(live, folder / "shared.bin")
    with fsutil.private_folder(folder):
        assert fsutil.copy_file_atomic(source, folder / "model" / "new.bin") is True
        assert fsutil.copy_file_atomic(source, folder / "shared.bin") is True
    assert (folder / "model" / "new.bin").read_bytes() == (folder / "shared.bin").read_bytes() == b"new model"
    assert live.read_bytes() == b"old model"  # the shared inode was replaced, not written through
    assert renames == [os.fspath(folder / "shared.bin")]


def test_a_failed_copy_leaves_no_part(tmp_path, monkeypatch):
    def fail(*a, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "copy_file_range", fail, raising=False)
    source = tmp_path / "source.bin"
    source.write_bytes(b"bytes")
    (tmp_path / "site").mkdir()
    old = tmp_path / "site" / "old.bin"
    old.write_bytes(b"old")
    with pytest.raises(OSError):
        fsutil.copy_file_atomic(source, old)
    with fsutil.private_folder(tmp_path / "site"), pytest.raises(OSError):
        fsutil.copy_file_atomic(source, tmp_path / "site" / "new.bin")
    assert old.read_bytes() == b"old" and sorted(p.name for p in (tmp_path / "site").iterdir()) == ["old.bin"]


def test_a_new_file_in_a_private_folder_is_created_without_a_stat_first(tmp_path, monkeypatch):
    # A cold build's staging folder is nearly all new files: one create each, not a failing stat
    # and then a create; an existing one is still compared (unchanged: False, untouched).
    (tmp_path / "deep").mkdir()
    stats = []
    real_stat = os.stat
    monkeypatch.setattr(fsutil.os, "stat", lambda p, *a, **kw: (stats.append(os.fspath(p)), real_stat(p, *a, **kw))[1])
    with fsutil.private_folder(tmp_path):
        assert write_bytes_atomic(tmp_path / "deep" / "new.json", b"{}") is True
        assert stats == []
        assert write_bytes_atomic(tmp_path / "deep" / "new.json", b"{}") is False
    assert (tmp_path / "deep" / "new.json").read_bytes() == b"{}"


# -- read_below: what is checked is what is read (issue 35.1) ------------------------------------


def test_read_below_reads_a_file_in_nested_folders(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "doc.md").write_bytes(b"# Doc\n")
    assert fsutil.read_below(tmp_path, "a/b/doc.md") == b"# Doc\n"


@pytest.mark.parametrize("where", ["doc.md", "a/doc.md"])
def test_read_below_refuses_a_link_to_a_file_and_a_link_on_the_way(tmp_path, where):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "doc.md").write_bytes(b"secret")
    root = tmp_path / "root"
    root.mkdir()
    if where == "doc.md":
        (root / "doc.md").symlink_to(outside / "doc.md")
    else:
        (root / "a").symlink_to(outside)  # the folder on the way is the link
    with pytest.raises(fsutil.LinkRefused, match="symbolic link") as caught:
        fsutil.read_below(root, where)
    assert caught.value.path == str(root / where.split("/")[0])  # the link itself is named


def test_read_below_tells_a_vanished_file_a_fifo_and_a_folder(tmp_path):
    with pytest.raises(fsutil.Vanished, match="removed during the build"):
        fsutil.read_below(tmp_path, "gone.md")
    with pytest.raises(fsutil.Vanished):
        fsutil.read_below(tmp_path, "no-folder/gone.md")
    os.mkfifo(tmp_path / "fifo.md")  # opened without blocking, then refused
    with pytest.raises(fsutil.Vanished, match="not a regular file"):
        fsutil.read_below(tmp_path, "fifo.md")
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(fsutil.Vanished):
        fsutil.read_below(tmp_path, "dir.md")


def test_read_below_checks_the_size_of_the_open_file(tmp_path):
    (tmp_path / "big.md").write_bytes(b"x" * 100)
    assert fsutil.read_below(tmp_path, "big.md", limit=100) == b"x" * 100
    with pytest.raises(fsutil.PipelineError, match="over the limit of 99"):
        fsutil.read_below(tmp_path, "big.md", limit=99)


def test_read_below_follows_a_link_that_is_the_root_itself(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "doc.md").write_bytes(b"ok")
    (tmp_path / "alias").symlink_to(tmp_path / "real")  # the folder the user named: their choice
    assert fsutil.read_below(tmp_path / "alias", "doc.md") == b"ok"
