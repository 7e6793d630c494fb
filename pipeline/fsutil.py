"""File I/O at the edges: atomic writes and strict UTF-8 reads."""

from __future__ import annotations

import os
import itertools
from pathlib import Path

from pipeline.errors import PipelineError


def require_dir(path: Path, what: str) -> Path:
    """``path`` when it is a directory; else PipelineError "<what> directory not found"."""
    if not Path(path).is_dir():
        raise PipelineError(f"{what} directory not found", path=path)
    return Path(path)


def read_text(path: Path) -> str:
    """Return the file's text exactly as stored (``newline=""``: no newline translation).

    Raises PipelineError naming the file and the line of the first byte that is not UTF-8.
    """
    data = _read_bytes(path)
    return decode_utf8(data, path)


def decode_utf8(data: bytes, path: str | Path) -> str:
    """Decode ``data`` strictly; a bad byte raises PipelineError with its 1-based line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PipelineError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", path=path, line=line
        ) from None


def _read_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise PipelineError("file not found", path=path) from None
    except IsADirectoryError:
        raise PipelineError("is a directory, expected a file", path=path) from None
    except PermissionError:
        raise PipelineError("permission denied", path=path) from None


def write_bytes_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` via a temporary file and rename; never leaves a half-written file.

    Returns False (and touches nothing) when the file already holds exactly ``data``, so
    unchanged outputs keep their mtime and a rebuild is byte-identical.
    """
    target = os.fspath(path)
    try:
        if os.stat(target).st_size == len(data):
            with open(target, "rb") as handle:
                if handle.read() == data:
                    return False
    except FileNotFoundError:
        pass
    try:
        fd, tmp = _create_temp(target)
    except FileNotFoundError:  # the folder is new; creating it only then saves a call per file
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        fd, tmp = _create_temp(target)
    try:
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


_temp_numbers = itertools.count()


def _create_temp(target: str) -> tuple[int, str]:
    """A new file beside ``target`` (``.<name>.<pid>.<n>.tmp``), open for writing. Mode 0666 less
    the umask, as any new file: a published site must be readable by the web server's user
    (``mkstemp``'s 0600 is not, and its random names cost more than the write)."""
    folder, name = os.path.split(target)
    while True:
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{next(_temp_numbers)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:  # left by a crashed process that had our pid: take the next name
            continue


def write_text_atomic(path: Path, text: str) -> bool:
    """``write_bytes_atomic`` for UTF-8 text, written without newline translation."""
    return write_bytes_atomic(path, text.encode("utf-8"))
