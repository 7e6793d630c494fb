"""The export cache's housekeeping: what nothing used for ``STALE_DAYS`` goes, what is in use
stays (onnx_export.prune_stale). The exports themselves: test_embedding_onnx.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.embedding import onnx_export
from pipeline.embedding.onnx_export import STALE_DAYS, USED_STAMP, prune_stale

NOW = 2_000_000_000.0
DAY = 86400.0
MODEL = "all-MiniLM-L6-v2"


def _export(root: Path, name: str, *, used: float | None, made: float) -> Path:
    folder = root / name
    (folder / "openvino").mkdir(parents=True)
    (folder / "fp32.onnx").write_bytes(b"graph")
    if used is not None:
        (folder / USED_STAMP).touch()
        os.utime(folder / USED_STAMP, (used, used))
    os.utime(folder, (made, made))
    return folder


def _blob(folder: Path, name: str, *, read: float, written: float) -> Path:
    blob = folder / "openvino" / name
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(b"compiled")
    os.utime(blob, (read, written))
    return blob


def test_what_nothing_used_for_the_stale_days_goes_and_the_rest_stays(tmp_path):
    old, recent = NOW - (STALE_DAYS + 1) * DAY, NOW - (STALE_DAYS - 1) * DAY
    current = _export(tmp_path, f"{MODEL}-{'a' * 16}", used=old, made=old)
    stale = _export(tmp_path, f"{MODEL}-{'b' * 16}", used=old, made=recent)  # the stamp decides
    in_use = _export(tmp_path, f"{MODEL}-{'c' * 16}", used=recent, made=old)  # another version's
    unstamped = _export(tmp_path, f"{MODEL}-{'d' * 16}", used=None, made=old)  # made before stamps
    other_model = _export(tmp_path, f"bge-small-{'e' * 16}", used=old, made=old)
    not_an_export = _export(tmp_path, f"{MODEL}-notes", used=old, made=old)
    interrupted = tmp_path / f".{MODEL}-{'f' * 16}.removing-42"
    interrupted.mkdir()
    read_lately = _blob(current, "1.blob", read=recent, written=old)
    compiled_lately = _blob(current, "2.blob", read=old, written=recent)
    forgotten = _blob(current, "3.blob", read=old, written=old)  # left by a version before the folder a precision
    forgotten_bf16 = _blob(current, "bf16/4.blob", read=old, written=old)
    read_lately_bf16 = _blob(current, "bf16/5.blob", read=recent, written=old)

    removed = prune_stale(current, MODEL, now=NOW)

    assert sorted(removed) == sorted([stale, unstamped, forgotten, forgotten_bf16])
    assert not stale.exists() and not unstamped.exists() and not forgotten.exists() and not interrupted.exists()
    for kept in (current, in_use, other_model, not_an_export, read_lately, compiled_lately, read_lately_bf16):
        assert kept.exists(), kept
    assert (current / USED_STAMP).stat().st_mtime == NOW  # marked used now
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # nothing renamed away is left


def test_static_tables_of_another_fit_version_go_when_unused_and_the_current_one_stays(tmp_path):
    from pipeline.embedding.staticfit import static_name

    old, recent = NOW - (STALE_DAYS + 1) * DAY, NOW - (STALE_DAYS - 1) * DAY
    folder = _export(tmp_path, f"{MODEL}-{'a' * 16}", used=None, made=NOW)
    tables = {name: folder / name for name in (static_name(), "static-0.bin", "static-00.bin")}
    for (name, path), (read, written) in zip(tables.items(), [(old, old), (old, old), (recent, old)]):
        path.write_bytes(b"rows")
        os.utime(path, (read, written))
    assert prune_stale(folder, MODEL, now=NOW) == [tables["static-0.bin"]]
    assert sorted(p.name for p in folder.glob("static-*.bin")) == sorted([static_name(), "static-00.bin"])


def test_the_stamp_is_touched_at_most_once_a_day(tmp_path):
    folder = _export(tmp_path, f"{MODEL}-{'a' * 16}", used=None, made=NOW)
    prune_stale(folder, MODEL, now=NOW)
    assert (folder / USED_STAMP).stat().st_mtime == NOW
    prune_stale(folder, MODEL, now=NOW + DAY / 2)  # a stat, no write
    assert (folder / USED_STAMP).stat().st_mtime == NOW
    prune_stale(folder, MODEL, now=NOW + 2 * DAY)
    assert (folder / USED_STAMP).stat().st_mtime == NOW + 2 * DAY


@pytest.mark.model
def test_finding_an_export_marks_it_used(onnx_cache):
    from pipeline.embedding.models import DEFAULT_MODEL

    path = onnx_export.cached_onnx(DEFAULT_MODEL)
    assert path is not None and (path.parent / USED_STAMP).is_file()


@pytest.mark.model
def test_housekeeping_that_fails_never_fails_the_caller(onnx_cache, monkeypatch):
    from pipeline.embedding.models import DEFAULT_MODEL

    calls = []

    def unwritable(folder, model_name, **options):
        calls.append(model_name)
        raise PermissionError("a read-only cache")

    monkeypatch.setattr(onnx_export, "prune_stale", unwritable)
    monkeypatch.setattr(onnx_export, "_NOTED", set())
    path = onnx_export.cached_onnx(DEFAULT_MODEL)
    assert path is not None and path.is_file() and calls == [DEFAULT_MODEL.name]
    assert onnx_export.cached_onnx(DEFAULT_MODEL) == path and len(calls) == 1  # once per process
