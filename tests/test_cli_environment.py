"""Environment errors are one line, ``error: <path>: <reason>``, exit 1, never a traceback
(issue 35.5): unreadable or exec-only folders in CONTENT, a read-only cache or site, an
unreadable cache file, ``--cache-dir`` naming a regular file.

Permissions bind only an unprivileged user: as root, each command runs in a forked child that
drops to ``nobody`` (65534) first, over a world it owns.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import write_tree
from pipeline.cli import app

NOBODY = 65534
FILES = {"a.md": "# A\n\nAlpha text.\n", "sub/b.md": "# B\n\nBeta text.\n", "exec/c.md": "# C\n\nGamma text.\n"}


def _run_unprivileged(args: list[str]) -> dict:
    """``pipeline ARGS`` in a forked child, as ``nobody`` when this process is root; its exit
    code and stderr."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            result = CliRunner().invoke(app, args)
            crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
            answer = {"code": result.exit_code, "stderr": result.stderr, "crashed": repr(result.exception) if crashed else None}
            os.write(write, json.dumps(answer).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """One build in this process first: every module a build imports is imported before a child
    drops its privileges (the interpreter's own library may not be readable by ``nobody``)."""
    root = tmp_path_factory.mktemp("warm")
    write_tree(root / "content", FILES)
    # not -q: quiet mode lasts for the rest of the process (pipeline/quiet.py), and this is pytest's
    assert CliRunner().invoke(app, _build_args(root, quiet=False)).exit_code == 0
    _edit(root)
    (root / "cache-file").write_bytes(b"")
    CliRunner().invoke(app, _build_args(root, root / "cache-file", quiet=False))  # the error path's imports too


@pytest.fixture
def world(imported):
    """A built site, its content and cache, owned by the user the commands run as."""
    root = Path(tempfile.mkdtemp(prefix="pipeline-env-"))  # not below pytest's 0700 folder: nobody must reach it
    try:
        write_tree(root / "content", FILES)
        if os.geteuid() == 0:
            for folder, dirs, files in os.walk(root):
                for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                    os.chown(name, NOBODY, NOBODY)
        answer = _run_unprivileged(_build_args(root))
        assert answer["code"] == 0, answer
        yield root
    finally:
        for folder, dirs, _ in os.walk(root):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(root, ignore_errors=True)


def _build_args(root: Path, cache: Path | None = None, *, quiet: bool = True) -> list[str]:
    return ["build", str(root / "content"), "--out", str(root / "site"), "--embedder", "hashing",
            "--cache-dir", str(cache or root / "cache"), *(["-q"] if quiet else [])]


def _edit(root: Path) -> None:
    """A change to embed, so the build writes to the cache."""
    path = root / "content" / "a.md"
    path.write_text("# A\n\nAlpha text, edited.\n", encoding="utf-8")


def _one_line_error(answer: dict, path: Path, reason: str) -> None:
    assert answer["crashed"] is None, answer
    assert answer["code"] == 1, answer
    assert "Traceback" not in answer["stderr"], answer["stderr"]
    errors = [line for line in answer["stderr"].splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {path}: {reason}"] or (errors and errors[0].startswith(f"error: {path}") and errors[0].endswith(reason)), answer


def _chmod_tree(root: Path, clear: int) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [folder, *(os.path.join(folder, n) for n in files + dirs)]:
            os.chmod(name, stat.S_IMODE(os.lstat(name).st_mode) & ~clear)


@pytest.mark.parametrize("mode", [0o000, 0o111], ids=["unreadable", "exec-only"])
def test_an_unreadable_content_folder_is_a_one_line_error(world, mode):
    os.chmod(world / "content" / "sub", mode)
    _one_line_error(_run_unprivileged(_build_args(world)), world / "content" / "sub", "Permission denied")


def test_a_read_only_cache_is_a_one_line_error(world):
    _edit(world)
    _chmod_tree(world / "cache", 0o222)
    _one_line_error(_run_unprivileged(_build_args(world)), world / "cache", "Permission denied")


def test_a_read_only_site_folder_is_a_one_line_error_and_the_site_stays(world):
    before = sorted(p.name for p in (world / "site").iterdir())
    _edit(world)
    os.chmod(world / "site", 0o555)
    os.chmod(world, 0o555)  # nor can the staging folder beside it be made or swapped
    try:
        _one_line_error(_run_unprivileged(_build_args(world)), world, "Permission denied")
    finally:
        os.chmod(world, 0o755)
    assert sorted(p.name for p in (world / "site").iterdir()) == before


def test_an_unreadable_cache_file_is_a_one_line_error(world):
    chunk = next((world / "cache").rglob("chunk-0.bin"))
    os.chmod(chunk, 0)
    (world / "site" / ".pipeline-state.json").unlink()  # the vectors are read again
    _one_line_error(_run_unprivileged(_build_args(world)), chunk, "Permission denied")


def test_a_cache_dir_that_is_a_regular_file_is_a_one_line_error(world):
    cache = world / "cache-file"
    cache.write_bytes(b"not a folder")
    os.chown(cache, *(2 * [NOBODY] if os.geteuid() == 0 else [os.getuid(), os.getgid()]))
    _one_line_error(_run_unprivileged(_build_args(world, cache)), cache, "Not a directory")


@pytest.mark.parametrize("below", ["site", "a/site"])
def test_an_output_below_a_regular_file_is_a_one_line_error_naming_the_file(world, below):
    """It named the build lock beside the output, with "File exists" (mkdir met the file)."""
    blocker = world / "blocker"
    blocker.write_bytes(b"not a folder")
    os.chown(blocker, *(2 * [NOBODY] if os.geteuid() == 0 else [os.getuid(), os.getgid()]))
    args = [*_build_args(world)]
    args[args.index("--out") + 1] = str(blocker / below)
    _one_line_error(_run_unprivileged(args), blocker, "Not a directory")
