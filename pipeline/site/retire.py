"""Files a build removes stay served for one more build, so links never dangle for a reader.

A reader who fetched ``index.json`` just before a build was published follows its links just
after: without this, every chunk file, topic folder or shard the new build dropped answers 404.
So ``publish`` carries into the new generation (as hard links) each file the old site had and the
new one lacks, and lists them in ``.pipeline-retired``; the next build removes exactly those
(``expire``) before it starts, so a removed file lives one build longer, never two.

Guarantee: every link in the index of generation N names an existing file in generation N+1
(the same text where the name was retired; possibly newer text where the build rewrote that
name). ``retire_removed_files = false`` in the site config turns this off (e.g. to withdraw a
document at once).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from pipeline.fsutil import is_temp_name, link_or_copy, write_bytes_atomic
from pipeline.reuse import stamps

RETIRED_FILE = ".pipeline-retired"
CHANGE_MARGIN_NS = stamps.RACY_NS  # a folder changed this shortly before ``since`` counts as changed


def site_files(root: Path) -> set[str]:
    """Relative posix paths of the regular files below ``root`` that a reader can fetch: links,
    temp files and the root's dot files (marker, state, this list) are left out."""
    found: set[str] = set()
    stack = [("", os.fspath(root))]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_symlink() or is_temp_name(entry.name) or (not prefix and entry.name.startswith(".")):
                    continue
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((rel + "/", entry.path))
                elif entry.is_file(follow_symlinks=False):
                    found.add(rel)
    return found


def removed_files(old: Path, new: Path, since: int | None = None) -> set[str]:
    """``site_files(old) - site_files(new)``. With ``since`` (``time.time_ns()`` taken before
    ``new`` was made a copy of ``old``: ``staging.mirror_tree``), the files of a folder that
    neither tree changed since then are not listed: the copy left the two with the same entries,
    and a change of a folder's entries changes its mtime and ctime (judged with the margin of
    ``reuse/stamps.py``). Only its subfolders are visited."""
    found: set[str] = set()
    stack = [("", os.fspath(old), os.fspath(new))]
    while stack:
        prefix, o, n = stack.pop()
        if since is not None and prefix and _untouched(o, since) and _untouched(n, since):
            with os.scandir(n) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and not is_temp_name(entry.name):
                        stack.append((prefix + entry.name + "/", os.path.join(o, entry.name), entry.path))
            continue
        old_files, old_dirs = _listing(o, root=not prefix)
        new_files, new_dirs = _listing(n, root=not prefix) if os.path.isdir(n) and not os.path.islink(n) else (set(), set())
        found.update(prefix + name for name in old_files - new_files)
        for name in old_dirs:
            if name in new_dirs:
                stack.append((prefix + name + "/", os.path.join(o, name), os.path.join(n, name)))
            else:
                found.update(f"{prefix}{name}/{rel}" for rel in site_files(Path(o) / name))
    return found


def _listing(folder: str, *, root: bool) -> tuple[set[str], set[str]]:
    """The names of ``folder``'s regular files and folders, as ``site_files`` counts them."""
    files, dirs = set(), set()
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_symlink() or is_temp_name(entry.name) or (root and entry.name.startswith(".")):
                continue
            if entry.is_dir(follow_symlinks=False):
                dirs.add(entry.name)
            elif entry.is_file(follow_symlinks=False):
                files.add(entry.name)
    return files, dirs


def _untouched(folder: str, since: int) -> bool:
    """True when ``folder`` is a folder whose entries did not change since ``since`` (ns)."""
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and max(st.st_mtime_ns, st.st_ctime_ns) < since - CHANGE_MARGIN_NS


def read_retired(site: Path) -> set[str]:
    """The paths ``site``'s build kept for one more build; an unreadable or foreign list is empty
    (the files it named are then treated as the site's own, and retired when next removed)."""
    try:
        listed = orjson.loads((site / RETIRED_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return set()
    if not isinstance(listed, list):
        return set()
    return {p for p in listed if isinstance(p, str) and _is_relative(p)}


def _is_relative(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def expire(site: Path) -> list[str]:
    """Remove the files ``site``'s previous build retired, the folders that leaves empty, and the
    list itself. Returns the paths removed. Never follows a link."""
    removed = []
    for rel in sorted(read_retired(site)):
        path = site / rel
        if os.path.islink(path) or not path.is_file():
            continue
        if any(os.path.islink(p) for p in path.parents if site in p.parents):
            continue  # a folder on the way is a link: not ours to delete through
        path.unlink()
        removed.append(rel)
        for parent in path.parents:
            if parent == site or site not in parent.parents:
                break
            try:
                parent.rmdir()  # only when empty
            except OSError:
                break
    try:
        os.unlink(site / RETIRED_FILE)
    except FileNotFoundError:
        pass
    return removed


def retire(old: Path, new: Path, expired: set[str], *, since: int | None = None) -> list[str]:
    """Link into ``new`` every file ``old`` has and ``new`` lacks, except those ``old``'s own build
    retired (``expired``: their extra build is over), and list them in ``new/.pipeline-retired``.
    ``since``: see ``removed_files``. Returns the paths carried over (sorted)."""
    carried = sorted(removed_files(old, new, since) - expired)
    for rel in carried:
        target = new / rel
        # A path whose folder is now a file in the new site (a document became a folder or back)
        # cannot be carried: the new site's file wins.
        if any(p.exists() and not p.is_dir() for p in target.parents if new in p.parents):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        link_or_copy(old / rel, target)
    kept = [rel for rel in carried if (new / rel).is_file()]
    if kept:
        write_bytes_atomic(new / RETIRED_FILE, orjson.dumps(kept) + b"\n")
    return kept
