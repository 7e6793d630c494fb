"""Publishing a build as one switch: build beside OUT, then swap the two folders atomically.

Protocol (``Staging``; docs/ARCHITECTURE.md "Publishing a build"):

1. Lock ``.<out>.pipeline-lock`` beside OUT (``flock``; the kernel releases it when the process
   dies, SIGKILL included). A second build into the same OUT fails at once (PipelineError).
2. The staging folder ``.<out>.pipeline-staging`` is recycled: a killed build's, else the
   previous generation ``.<out>.pipeline-previous`` renamed (where a failed build also leaves its
   folder), else a new one. (If OUT is missing because a build died inside the fallback swap,
   ``.<out>.pipeline-swapping`` is put back first; a SITE deleted by hand is built anew.)
3. ``mirror_tree`` makes it a copy of OUT made of hard links: unchanged files cost nothing
   (already linked) or one ``link``; symbolic links and temp files are removed, so no stage can
   write or delete through a link planted in OUT, and a killed build's temp files vanish.
   Nothing is deleted in bulk: on this kind of disk an unlink costs more than a link, so the
   old generation is kept for the next build instead of removed.
4. The stages write into the staging folder only. A file that exists there is replaced by temp
   file + rename (``fsutil.write_bytes_atomic``): a rename replaces the link, never the shared
   inode, so the live site's files are never changed. A new file is written in place
   (``fsutil.private_folder``): no reader sees the folder before the swap, and a file a killed
   build left half-written is not the live site's inode, so step 3 of the next build removes it.
5. ``publish`` first carries over, as links, the files the new site lacks (``site/retire.py``: a
   reader holding the old index.json never meets a 404; they go with the build after), then
   ``renameat2(RENAME_EXCHANGE)`` swaps staging and OUT in one step; the old site
   (now at the staging name) becomes ``.pipeline-previous``. Where the exchange is not supported,
   two renames (OUT -> swapping, staging -> OUT) leave OUT missing for that instant.

A build that fails or is killed at any point before the swap leaves OUT exactly as it was;
one killed after it has published the new site.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import time
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fsutil import exchange, is_temp_name, link_or_copy, private_folder, rename
from pipeline.site import retire

SITE_MARKER = ".pipeline-site"
# A marker whose write was killed before its rename (``..pipeline-site.<pid>[.<n>].tmp``) still
# proves the folder is ours: the marker is written first, into an empty or new folder.
_MARKER_TEMP = f".{SITE_MARKER}."


def sibling(out: Path, role: str) -> Path:
    """``.<name>.pipeline-<role>`` beside ``out`` (role: lock, staging, previous, swapping, and
    stamps: the build state's file stamps, ``reuse/state.py``)."""
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
    try:
        foreign = out.is_dir() and bool(os.listdir(out)) and not is_pipeline_site(out)
    except OSError as exc:
        raise PipelineError(f"cannot read the output directory: {exc.strerror}", path=out) from None
    if foreign:
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


def _mirrored(entries) -> dict[str, os.DirEntry]:
    """The entries ``mirror_tree`` copies, by name: no link, no temp file (a temp name starts
    with a dot: ``is_temp_name`` is asked of those alone, ~90,000 names on a no-op rebuild)."""
    return {e.name: e for e in entries if not e.is_symlink() and not (e.name[0] == "." and is_temp_name(e.name))}


def mirror_tree(src: Path, dst: Path) -> int:
    """Make the folder ``dst`` hold exactly ``src``'s folders and regular files, each file a hard
    link to ``src``'s (copied where the filesystem cannot link). Entries already linked are kept,
    so recycling the previous generation costs a walk plus one link per file changed since;
    symbolic links, temp files and whatever ``src`` lacks are removed, never followed.
    Returns the number of files linked or copied."""
    count = 0
    stack = [(os.fspath(src), os.fspath(dst))]
    while stack:
        s, d = stack.pop()
        with os.scandir(s) as entries:
            want = _mirrored(entries)
        with os.scandir(d) as entries:
            have = list(entries)
        # One pass per entry. Kept: a folder for a folder, the same inode for a regular file
        # (``is_dir``/``is_file`` without following links are False for a link).
        for entry in have:
            name = entry.name
            source = want.get(name)
            if source is not None:
                if source.is_dir(follow_symlinks=False):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((source.path, entry.path))
                        del want[name]
                        continue
                elif entry.is_file(follow_symlinks=False) and entry.inode() == source.inode():
                    del want[name]
                    continue
            _remove(Path(entry.path))
        for name, entry in want.items():
            target = os.path.join(d, name)
            if entry.is_dir(follow_symlinks=False):
                os.mkdir(target)
                stack.append((entry.path, target))
            elif entry.is_file(follow_symlinks=False):
                link_or_copy(entry.path, target)
                count += 1
    return count


class Staging:
    """A locked build of ``out`` in a sibling folder (``dir``), published by ``publish``.

    Use as a context manager: leaving it without ``publish`` (an error) keeps OUT untouched and
    the staging folder as the previous generation, for the next build to recycle; the lock is
    released either way."""

    def __init__(self, out: Path, *, retire_removed: bool = True):
        self.retire_removed = retire_removed
        self.out = Path(os.path.realpath(out))  # OUT given as a link: build and swap its target
        if self.out.parent == self.out:
            raise PipelineError("the output directory cannot be the filesystem root", path=out)
        self.dir = sibling(self.out, "staging")
        self._old = sibling(self.out, "previous")
        self._swapping = sibling(self.out, "swapping")  # OUT's name inside the fallback swap
        self._lock_fd: int | None = None
        self._private = None
        self._mirrored_since: int | None = None
        self.published = False
        self.expired: list[str] = []  # the previous build's retired files, removed now (``retire.expire``)
        self.retired: list[str] = []  # files this build removed, kept served until the next (``retire.retire``)

    def __enter__(self) -> "Staging":
        check_output(self.out)
        self._lock()
        try:
            self._recover()
            check_output(self.out)  # again, now that no other build can change it
            if self.out.is_dir():
                self._mirrored_since = time.time_ns()  # folders unchanged since: retire need not list them
                mirror_tree(self.out, self.dir)
                os.chmod(self.dir, stat.S_IMODE(os.stat(self.out).st_mode))
                self.expired = retire.expire(self.dir)  # what the last build kept one build longer goes now
            else:  # a first build starts empty, whatever a failed one left
                for name in os.listdir(self.dir):
                    _remove(self.dir / name)
        except BaseException:
            self._unlock()
            raise
        self._private = private_folder(self.dir)  # step 4: new files are written in place
        self._private.__enter__()
        return self

    def _end_private(self) -> None:
        if self._private is not None:
            self._private.__exit__(None, None, None)
            self._private = None

    def __exit__(self, *exc) -> None:
        self._end_private()
        try:
            if not self.published and not os.path.lexists(self._old):
                rename(self.dir, self._old)  # a failed build's folder: the next build recycles it
        except OSError:
            pass  # it stays at the staging name, which the next build recycles as well
        finally:
            self._unlock()

    def _lock(self) -> None:
        path = sibling(self.out, "lock")
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where the output's folder belongs: named as any such
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(self.out.parent)) from None
        try:
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
        """Undo a fallback swap a build died in; then make the staging folder from the earlier
        generation (or a failed build's staging folder), or anew. Never follows a link."""
        if not os.path.lexists(self.out) and os.path.isdir(self._swapping) and not os.path.islink(self._swapping):
            rename(self._swapping, self.out)
        _remove(self._swapping)
        old_is_dir = os.path.isdir(self._old) and not os.path.islink(self._old)
        if os.path.isdir(self.dir) and not os.path.islink(self.dir):
            _remove(self._old)
        else:
            _remove(self.dir)
            if old_is_dir:
                rename(self._old, self.dir)
            else:
                _remove(self._old)
                os.mkdir(self.dir)

    def publish(self) -> None:
        """Make the staging folder OUT in one step; keep the site it replaces as the previous
        generation (a build killed right after the swap leaves it at the staging name, which the
        next build recycles just the same)."""
        self._end_private()  # from here on the folder is (about to be) the live site
        if self.retire_removed and os.path.isdir(self.out):
            self.retired = retire.retire(self.out, self.dir, expired=retire.read_retired(self.out), since=self._mirrored_since)
        if not os.path.lexists(self.out):
            rename(self.dir, self.out)
        else:
            try:
                exchange(self.dir, self.out)
            except OSError as exc:
                if exc.errno in (errno.EBUSY, errno.EXDEV, errno.EACCES, errno.EPERM):
                    raise PipelineError(
                        f"cannot swap the new site in ({exc.strerror}); the output directory must be an "
                        "ordinary folder (not a mount point) in a folder this user can write",
                        path=self.out,
                    ) from None
                if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
                    raise
                _remove(self._old)
                rename(self.out, self._swapping)  # OUT is missing until the next rename
                rename(self.dir, self.out)
                rename(self._swapping, self._old)
            else:
                rename(self.dir, self._old)
        self.published = True
