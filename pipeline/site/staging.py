"""Publishing a build as one switch: build beside OUT, then swap the two folders atomically.

Protocol (``Staging``; docs/ARCHITECTURE.md "Publishing a build"):

1. Lock ``.<out>.pipeline-lock`` beside OUT (``flock``; the kernel releases it when the process
   dies, SIGKILL included). A second build into the same OUT fails at once (PipelineError).
2. Remove what a killed build left beside OUT (``.<out>.pipeline-staging``, ``.<out>.pipeline-old``;
   if OUT itself is missing because a build died inside the fallback swap, put the old one back).
3. Clone OUT into the staging folder with hard links (unchanged files cost one ``link`` each
   and keep their bytes and mtimes); symbolic links and temp files are not cloned, so no stage
   can write or delete through a link planted in OUT, and a crashed build's temp files vanish.
4. The stages write into the staging folder only, always by temp file + rename
   (``fsutil.write_bytes_atomic``): a rename replaces the link, never the shared inode, so the
   live site's files are never changed.
5. ``publish``: ``renameat2(RENAME_EXCHANGE)`` swaps staging and OUT in one step, then the old
   site (now at the staging name) is removed. Where the exchange is not supported, two renames
   (OUT -> ``.pipeline-old``, staging -> OUT) leave OUT missing for that instant; step 2 repairs a
   build killed between them.

A build that fails or is killed at any point before step 5 leaves OUT exactly as it was.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fsutil import exchange, is_temp_name, rename

SITE_MARKER = ".pipeline-site"
# A marker whose write was killed before its rename (``..pipeline-site.<pid>[.<n>].tmp``) still
# proves the folder is ours: the marker is written first, into an empty or new folder.
_MARKER_TEMP = f".{SITE_MARKER}."


def sibling(out: Path, role: str) -> Path:
    """``.<name>.pipeline-<role>`` beside ``out`` (role: lock, staging, old)."""
    return out.parent / f".{out.name}.pipeline-{role}"


def is_pipeline_site(folder: Path) -> bool:
    """True when ``folder`` holds the marker, or the temp file of a marker write that was killed."""
    if (folder / SITE_MARKER).is_file():
        return True
    return any(name.startswith(_MARKER_TEMP) and is_temp_name(name) for name in os.listdir(folder))


def check_output(out: Path) -> None:
    """Raise PipelineError unless ``out`` is missing, empty, or a pipeline site."""
    if os.path.lexists(out) and not out.is_dir():
        raise PipelineError("output exists and is not a directory", path=out)
    if out.is_dir() and os.listdir(out) and not is_pipeline_site(out):
        raise PipelineError(
            f"output directory is not empty and was not built by pipeline (no {SITE_MARKER}); "
            "choose an empty or new directory",
            path=out,
        )


def _remove(path: Path) -> None:
    """Remove a file, link or folder tree (never following links: ``rmtree`` unlinks them)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def clone_tree(src: Path, dst: Path) -> int:
    """Recreate ``src`` at ``dst``: folders made, regular files hard-linked (copied where the
    filesystem cannot link); symbolic links, temp files and anything else skipped. Returns the
    number of files cloned."""
    os.mkdir(dst)
    count = 0
    stack = [(os.fspath(src), os.fspath(dst))]
    while stack:
        s, d = stack.pop()
        with os.scandir(s) as entries:
            for entry in entries:
                target = os.path.join(d, entry.name)
                if entry.is_symlink() or is_temp_name(entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    os.mkdir(target)
                    stack.append((entry.path, target))
                elif entry.is_file(follow_symlinks=False):
                    try:
                        os.link(entry.path, target, follow_symlinks=False)
                    except OSError as exc:
                        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
                            raise
                        shutil.copy2(entry.path, target, follow_symlinks=False)
                    count += 1
    return count


class Staging:
    """A locked build of ``out`` in a fresh sibling folder (``dir``), published by ``publish``.

    Use as a context manager: leaving it without ``publish`` (an error) removes the staging
    folder and keeps OUT untouched; the lock is released either way."""

    def __init__(self, out: Path):
        self.out = Path(os.path.realpath(out))  # OUT given as a link: build and swap its target
        if self.out.parent == self.out:
            raise PipelineError("the output directory cannot be the filesystem root", path=out)
        self.dir = sibling(self.out, "staging")
        self._old = sibling(self.out, "old")
        self._lock_fd: int | None = None
        self.published = False

    def __enter__(self) -> "Staging":
        check_output(self.out)
        self._lock()
        try:
            self._recover()
            check_output(self.out)  # again, now that no other build can change it
            if self.out.is_dir():
                clone_tree(self.out, self.dir)
                os.chmod(self.dir, stat.S_IMODE(os.stat(self.out).st_mode))
            else:
                os.mkdir(self.dir)
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if not self.published:
                _remove(self.dir)
        finally:
            self._unlock()

    def _lock(self) -> None:
        path = sibling(self.out, "lock")
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise PipelineError(f"cannot create the build lock beside the output: {exc.strerror}", path=path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise PipelineError(
                "another build is writing this output directory right now; run again when it has finished",
                path=self.out,
            ) from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def _recover(self) -> None:
        """Undo what a killed build left: a half-done fallback swap, staging and old folders."""
        if not os.path.lexists(self.out) and os.path.isdir(self._old) and not os.path.islink(self._old):
            rename(self._old, self.out)
        _remove(self.dir)
        _remove(self._old)

    def publish(self) -> None:
        """Make the staging folder OUT in one step; remove the previous site."""
        previous = self.dir  # where the previous site is once the swap is done
        if not os.path.lexists(self.out):
            rename(self.dir, self.out)
        else:
            try:
                exchange(self.dir, self.out)
            except OSError as exc:
                if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
                    raise
                rename(self.out, self._old)  # OUT is missing until the next rename
                rename(self.dir, self.out)
                previous = self._old
        self.published = True
        _remove(previous)  # a build killed here leaves it for the next one to remove
