"""File I/O at the edges: atomic writes and strict UTF-8 reads."""

from __future__ import annotations

import os
import tempfile
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
    path = Path(path)
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        # mkstemp makes 0600 files; a published site must be readable by the web server's user.
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it; done once, at import
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_text_atomic(path: Path, text: str) -> bool:
    """``write_bytes_atomic`` for UTF-8 text, written without newline translation."""
    return write_bytes_atomic(path, text.encode("utf-8"))
