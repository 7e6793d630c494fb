"""File stamps: telling that a file is unchanged since the last build from one ``stat``.

A rebuild confirms that the files it reuses (sources, their copies in the site, chunk files and
manifests) still hold what the last build verified. Reading and hashing them all makes a no-op
rebuild linear in the bytes of the site; a *stamp* makes it one ``stat`` per file, as make and
rsync do, with git's guards:

- The stamp is ``[size, mtime_ns, ctime_ns, inode]``. Any write, truncation, ``touch`` (even one
  that restores the old mtime: ``touch -r``, ``os.utime``), ``chmod``, new hard link or
  replacement by rename (a new inode) changes it: user space can set the mtime but not the ctime,
  which the kernel sets to "now" on every change of the file or its metadata.
- A stamp is recorded only for a file that was *verified* (read and checked against its hash,
  or trusted by a matching stamp), with the ``stat`` taken *before* the read, and only when the
  file last changed at least ``RACY_NS`` before that ``stat`` (``recordable``). Timestamps come
  from a coarse clock: a write in the same tick as the ``stat`` could leave every field equal
  ("racy git"); a file that changed that recently is verified again next time instead.
- A file the build itself just wrote gets no stamp (it is "racy"): the next build verifies it by
  content and records its stamp then. A mismatch never means "changed", only "verify by content".

What escapes (accepted, as for make, rsync and git): setting the system clock back and then
writing the same number of bytes at the recorded times; a filesystem that does not keep ctime
(some FUSE or network mounts) or whose clock is more than ``RACY_NS`` behind this machine's;
writes to the block device under the filesystem. Deleting ``.pipeline-state.json`` (or any
change of the pipeline's code) drops every stamp: the next build verifies everything.
"""

from __future__ import annotations

import os
import stat as stat_module
import time
from collections.abc import Callable, Iterable

import xxhash

from pipeline.fsutil import write_bytes_atomic

RACY_NS = 1_000_000_000  # a change this recent before the stat: no stamp (timestamps are coarse)

Stamp = list  # [size, mtime_ns, ctime_ns, inode]


def stat(path: str | os.PathLike) -> os.stat_result | None:
    """The file's ``stat`` (links not followed); None when it is missing or unreadable."""
    try:
        return os.stat(path, follow_symlinks=False)
    except OSError:
        return None


def stamp_of(st: os.stat_result) -> Stamp:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def matches(st: os.stat_result | None, recorded: object) -> bool:
    """True when ``st`` has exactly the stamp ``recorded`` (anything else, e.g. a corrupt or
    missing record, is no match: the file is then verified by content)."""
    return st is not None and isinstance(recorded, list) and recorded == stamp_of(st)


def recordable(st: os.stat_result | None, now_ns: int | None = None) -> Stamp | None:
    """The stamp to record for a file (or folder: its stamp changes when an entry is added,
    removed or renamed in it) that is verified after ``st`` was taken, or None: neither a regular
    file nor a folder, or changed less than ``RACY_NS`` before now (or in the future). Call it
    right after the ``stat`` (``now`` stands for the time of the ``stat``)."""
    if st is None or not (stat_module.S_ISREG(st.st_mode) or stat_module.S_ISDIR(st.st_mode)):
        return None
    now_ns = time.time_ns() if now_ns is None else now_ns
    if max(st.st_mtime_ns, st.st_ctime_ns) > now_ns - RACY_NS:
        return None
    return stamp_of(st)


def _xxh64_of_file(path: str) -> str:
    with open(path, "rb") as handle:
        return xxhash.xxh64_hexdigest(handle.read())


def verify(path: str | os.PathLike, recorded: object, expected: str, digest: Callable[[str], str] = _xxh64_of_file,
           ) -> tuple[bool, Stamp | None]:
    """``(True, stamp to record)`` when the file at ``path`` still holds what a build verified:
    its stamp is the one ``recorded`` (trusted unread), or its bytes' ``digest`` (xxh64 unless
    given) is ``expected``; ``(False, None)`` when it is missing, unreadable or different. The
    stat comes before the read, as ``recordable`` requires."""
    st = stat(path)
    if st is None:
        return False, None
    if matches(st, recorded):
        return True, recorded
    try:
        if digest(os.fspath(path)) != expected:
            return False, None
    except (OSError, UnicodeDecodeError):
        return False, None
    return True, recordable(st)


def verify_all(paths: Iterable[str | os.PathLike], expected: Iterable[str], recorded: object = None) -> list | None:
    """The stamps to record for files that each still hold what a build verified (``verify``;
    ``recorded[i]``: the stamp recorded for the i-th path, if any), in order; None as soon as one
    does not (a stage then recomputes what they hold)."""
    recorded = recorded if isinstance(recorded, list) else []
    out = []
    for i, (path, want) in enumerate(zip(paths, expected)):
        intact, stamp = verify(path, recorded[i] if i < len(recorded) else None, want)
        if not intact:
            return None
        out.append(stamp)
    return out


def write(path: str | os.PathLike, data: bytes, before: os.stat_result | None = None) -> tuple[bool, Stamp | None]:
    """Write ``data`` to ``path`` unless it holds those bytes already (``write_bytes_atomic``):
    (whether it changed, the stamp to record). A file written now gets none: the next build
    verifies it by content and stamps it then. ``before``: the file's stat the caller took
    already (else it is taken here, before the write reads the file)."""
    before = stat(path) if before is None else before
    stamp = recordable(before)
    changed = write_bytes_atomic(path, data)
    return changed, None if changed else stamp
