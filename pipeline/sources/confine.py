"""Confinement of a build: what it may read (CONTENT, never through a symbolic link) and where it
may write (OUT, which must share no folder with CONTENT or the embedding cache).

Guarantees:

* ``check_separate`` refuses, before anything is written or removed, every overlap of the
  build's folders: the same folder, either one inside the other, also when a path reaches the
  other through a symbolic link or a bind mount (folders are compared by device and inode, and
  by their resolved paths for folders that do not exist yet).
* Symbolic links in CONTENT are never followed, whatever they point at (a file or folder inside
  CONTENT included: a link to ``.env`` in CONTENT would otherwise publish a file CONTENT hides).
  ``is_link`` is the one test every reader of CONTENT applies; ``warn_link`` names a skipped
  link and where it points.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from pipeline.errors import PipelineError


def is_link(path: str | os.PathLike) -> bool:
    """True when ``path`` itself is a symbolic link (it is then skipped, never followed)."""
    return os.path.islink(path)


def warn_link(path: str | os.PathLike, root: str | os.PathLike) -> None:
    """Warn that the link ``path`` in the content tree ``root`` was skipped, naming its target."""
    try:
        target = os.path.realpath(path)
    except OSError:  # a loop of links
        target = "?"
    real_root = os.path.realpath(root)
    where = "inside" if target == real_root or target.startswith(real_root + os.sep) else "outside"
    warnings.warn(f"{path}: skipped a symbolic link to {target} ({where} the content directory); links are never followed")


def _chain(path: Path) -> tuple[str, list[tuple[int, int]]]:
    """The resolved path and the (device, inode) of the folder and of each existing ancestor."""
    resolved = path.resolve()
    ids = []
    for folder in [resolved, *resolved.parents]:
        try:
            st = os.stat(folder)
        except OSError:
            continue
        ids.append((st.st_dev, st.st_ino))
    return str(resolved), ids


def _inside(inner: Path, outer: Path) -> bool:
    """``inner`` is ``outer`` or lies below it, by resolved path or by folder identity."""
    inner_path, inner_ids = _chain(inner)
    outer_path, outer_ids = _chain(outer)
    if inner_path == outer_path or inner_path.startswith(outer_path.rstrip(os.sep) + os.sep):
        return True
    try:
        st = os.stat(outer)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in inner_ids


def check_separate(folders: dict[str, Path]) -> None:
    """Raise PipelineError when two of ``folders`` (name -> path) overlap: the same folder, or one
    inside the other, in either direction and through links."""
    items = list(folders.items())
    for i, (name_a, a) in enumerate(items):
        for name_b, b in items[i + 1 :]:
            if _inside(a, b) or _inside(b, a):
                raise PipelineError(
                    f"the {name_a} directory ({a}) and the {name_b} directory ({b}) overlap "
                    "(the same folder, or one inside the other); a build would publish or delete "
                    "one through the other. Choose separate folders",
                    path=a,
                )
