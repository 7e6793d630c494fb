"""File I/O at the edges: atomic writes and strict UTF-8 reads.

Every rename the pipeline makes goes through ``rename`` (or ``exchange``), the one place where a
build changes what a reader sees. For the kill tests, ``PIPELINE_KILL_AT_RENAME=N`` makes the
process SIGKILL itself just before its N-th rename or exchange, or just after creating its N-th
file in place (``private_folder``; counted together from process start, or from
``reset_rename_count``); unset, it costs one dictionary lookup per rename.
"""

from __future__ import annotations

import ctypes
import errno
import itertools
import os
import re
import shutil
import signal
import stat
from contextlib import contextmanager
from typing import Callable
from pathlib import Path

from pipeline.errors import PipelineError


_URL_START = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/+")


def require_dir(path: Path, what: str) -> Path:
    """``path`` when it is a directory; else PipelineError "<what> directory not found", or, for
    a URL (which a ``Path`` argument has already folded to ``https:/host``), that this command
    reads a local folder: "http:/host: site directory not found" named neither the mistake nor the URL."""
    if not Path(path).is_dir():
        start = _URL_START.match(str(path))
        if start:
            url = start.group(0).rstrip("/") + "//" + str(path)[start.end():]
            raise PipelineError(f"{url} is a URL; this command reads a local {what} folder")
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


class LinkRefused(PipelineError):
    """A symbolic link stood where ``read_below`` expected a file or folder: never followed
    (``sources/confine.py``); the caller skips it with ``warn_link``."""


class Vanished(PipelineError):
    """The file (or a folder on its way) was gone, or no longer a regular file, when
    ``read_below`` opened it: it was removed or replaced during the build."""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put there meanwhile must not block the open (it is refused below)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def read_below(root: str | os.PathLike, rel: str, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``rel`` (a POSIX path) below the folder ``root``, read
    without following a symbolic link anywhere below ``root``: each folder of ``rel`` is opened
    with ``O_NOFOLLOW`` relative to its parent's descriptor and the file itself with
    ``O_NOFOLLOW``, so the check is the open and what is read is what was checked (a ``stat``
    then an ``open`` would let a link swapped in between publish any file of the machine).

    Raises LinkRefused for a link in the way, Vanished for a file or folder that is missing or
    not what it was (a folder, a FIFO), PipelineError when it is over ``limit`` bytes (told by
    ``fstat`` of the open file) or cannot be read (permissions), each naming the path."""
    path = os.path.join(os.fspath(root), rel)
    parts = rel.split("/")
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the root itself is the caller's choice
    except OSError as exc:
        raise read_error(exc, os.fspath(root)) from None
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=folder)
            except OSError as exc:
                raise _component_error(exc, folder, part, os.path.join(os.fspath(root), *parts[: i + 1])) from None
            os.close(folder)
            folder = inner
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
        except OSError as exc:
            raise _component_error(exc, folder, parts[-1], path) from None
    finally:
        os.close(folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Vanished("is not a regular file any more (replaced during the build)", path=path)
        if limit is not None and st.st_size > limit:
            raise PipelineError(
                f"document is {st.st_size:,} bytes, over the limit of {limit:,} (max_document_bytes in the site "
                "config); split it into several documents or raise the limit",
                path=path,
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError as exc:
        raise read_error(exc, path) from None
    finally:
        os.close(fd)


def _component_error(exc: OSError, folder: int, name: str, path: str) -> PipelineError:
    """What an ``O_NOFOLLOW`` open of ``name`` in ``folder`` failing with ``exc`` means."""
    if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link (EMLINK: the BSDs)
        return LinkRefused("is a symbolic link; links are never followed", path=path)
    if exc.errno == errno.ENOTDIR:  # a folder on the way is a link now, or a file
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                return LinkRefused("is a symbolic link; links are never followed", path=path)
        except OSError:
            pass
    return read_error(exc, path)


def read_error(exc: OSError, path: str | os.PathLike) -> PipelineError:
    """The PipelineError for a read of ``path`` failing with ``exc``: Vanished when it is gone."""
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Vanished("was removed during the build", path=path)
    if exc.errno == errno.EISDIR:
        return Vanished("is a directory, expected a file", path=path)
    return PipelineError(f"cannot read: {exc.strerror or exc}", path=path)


def _read_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise PipelineError("file not found", path=path) from None
    except IsADirectoryError:
        raise PipelineError("is a directory, expected a file", path=path) from None
    except PermissionError:
        raise PipelineError("permission denied", path=path) from None


# Folders no reader sees until they are renamed into place whole (a build's staging folder,
# ``site/staging.py``): a NEW file there is written in place, without temp file and rename.
_private: set[str] = set()


@contextmanager
def private_folder(folder: str | os.PathLike):
    """While inside, ``write_bytes_atomic`` writes a file that does not exist yet below
    ``folder`` directly (one create instead of a create and a rename). Only for a folder that
    nobody reads until it is published whole: a killed build may leave a partial new file there,
    which the folder's owner must discard (the staging mirror removes every file the live site
    does not hold under the same inode). A file that exists is still replaced by temp + rename:
    its inode may be shared with the live site."""
    key = os.path.join(os.fspath(folder), "")
    _private.add(key)
    try:
        yield
    finally:
        _private.discard(key)


def _in_private(target: str) -> bool:
    return any(target.startswith(key) for key in _private)


def write_bytes_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` via a temporary file and rename; never leaves a half-written file
    (below a ``private_folder``, a new file is written in place: see there).

    Returns False (and touches nothing) when the file already holds exactly ``data``, so
    unchanged outputs keep their mtime and a rebuild is byte-identical.
    """
    target = os.fspath(path)

    def fill(fd: int) -> None:
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view) :]

    if _private and _in_private(target):
        # Most files of a cold build's staging folder are new: create first, one call where a
        # stat that fails was a second; a file that exists is compared below, as anywhere else.
        fd = _create_new(target)
        if fd is not None:
            _fill_new(target, fd, fill)
            return True
    new = False
    try:
        if os.stat(target).st_size == len(data):
            with open(target, "rb") as handle:
                if handle.read() == data:
                    return False
    except FileNotFoundError:
        new = True
    _write_whole(target, fill, new=new)
    return True


def _write_whole(target: str, fill: Callable[[int], None], *, new: bool) -> None:
    """Give ``target`` the bytes ``fill(fd)`` writes, never leaving a half-written file where a
    reader or a later build could meet it: a ``new`` file (the caller found none) below a
    ``private_folder`` is created and filled in place (removed if filling fails); any other goes
    to a temporary file renamed over it."""
    if new and _private and _in_private(target):
        fd = _create_new(target)
        if fd is not None:  # else it appeared meanwhile: replaced below
            _fill_new(target, fd, fill)
            return
    try:
        fd, tmp = _create_temp(target)
    except FileNotFoundError:  # the folder is new; creating it only then saves a call per file
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        fd, tmp = _create_temp(target)
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        rename(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fill_new(target: str, fd: int, fill: Callable[[int], None]) -> None:
    """Fill the file ``_create_new`` just made (``fd``, closed here); removed if filling fails."""
    try:
        try:
            _fault_point()  # the kill tests also die with a new file created and still empty
            fill(fd)
        finally:
            os.close(fd)
    except BaseException:
        Path(target).unlink(missing_ok=True)
        raise


def copy_file_atomic(source: str | os.PathLike, path: str | os.PathLike) -> bool:
    """``write_bytes_atomic(path, <source's bytes>)`` without reading them into this process:
    the kernel copies (``copy_file_range``), so a 45 MB model file costs a fraction of a read
    and a write. The same guarantees: never a half-written file (below a ``private_folder``, a
    new file is written in place), False and nothing touched when ``path`` holds the same bytes."""
    target = os.fspath(path)
    with open(source, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        new = False
        try:
            if os.stat(target).st_size == size and _same_bytes(src, target):
                return False
        except FileNotFoundError:
            new = True
        _write_whole(target, lambda fd: _copy_into(src, fd, size), new=new)
    return True


def _same_bytes(src, target: str, block: int = 1 << 20) -> bool:
    """Whether the open file ``src`` (read from its start) and ``target`` hold the same bytes."""
    src.seek(0)
    with open(target, "rb") as other:
        while True:
            a, b = src.read(block), other.read(block)
            if a != b:
                return False
            if not a:
                return True


def _create_new(target: str) -> int | None:
    """A new file ``target`` open for writing (its folder made if missing); None when it exists."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        try:
            return os.open(target, flags, 0o666)
        except FileNotFoundError:  # the folder is new
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            return os.open(target, flags, 0o666)
    except FileExistsError:
        return None


def _copy_into(src, fd: int, size: int) -> None:
    """Copy the open file ``src`` (``size`` bytes, from its start) into the descriptor ``fd``: in the
    kernel where it can, else through a buffer."""
    src.seek(0)
    offset = 0
    try:
        while offset < size:
            copied = os.copy_file_range(src.fileno(), fd, size - offset, offset)
            if copied == 0:  # the file shrank meanwhile: the rest by reading
                break
            offset += copied
    except (AttributeError, OSError) as exc:  # no copy_file_range here (other system, filesystem)
        if isinstance(exc, OSError) and exc.errno not in (errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
            raise
    src.seek(offset)
    os.lseek(fd, offset, os.SEEK_SET)
    while chunk := src.read(1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]


_temp_numbers = itertools.count()
# ``.<name>.<pid>.<n>.tmp`` (and ``.<name>.<pid>.tmp`` of earlier versions): a temp file of
# ``write_bytes_atomic``, which a killed process may leave behind; a build never publishes one.
TEMP_NAME = re.compile(r"\..+\.\d+(\.\d+)?\.tmp")


def is_temp_name(name: str) -> bool:
    return TEMP_NAME.fullmatch(name) is not None


KILL_AT_RENAME = "PIPELINE_KILL_AT_RENAME"
_renames = itertools.count(1)


def reset_rename_count() -> None:
    """Count renames from 1 again (a forked test process calls it before a build)."""
    global _renames
    _renames = itertools.count(1)


def _fault_point() -> None:
    """Fault injection for tests: SIGKILL this process at the N-th rename (``KILL_AT_RENAME``)."""
    at = os.environ.get(KILL_AT_RENAME)
    if at is not None and next(_renames) == int(at):
        os.kill(os.getpid(), signal.SIGKILL)


def rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """``os.replace``: atomic on one filesystem (a reader sees the old ``dst`` or the new one)."""
    _fault_point()
    os.replace(src, dst)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Swap two existing paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``): at every
    moment each name holds one of the two, never nothing. Raises OSError (``ENOSYS`` where the C
    library or kernel lacks it, ``EINVAL`` where the filesystem does) so a caller can fall back."""
    _fault_point()
    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available", os.fspath(a))
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), os.fspath(a), None, os.fspath(b))


def link_or_copy(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Hard-link ``src`` as ``dst`` (never following links), or copy it where the filesystem
    cannot link (another device, no hard links, the link count at its limit)."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(src, dst, follow_symlinks=False)


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
