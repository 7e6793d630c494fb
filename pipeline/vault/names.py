"""Which file of a vault a wikilink names, as Obsidian resolves it (pure but for ``scan``).

``VaultNames.scan`` lists every file of CONTENT (hidden folders such as ``.obsidian/`` are no
part of the vault) and whether the site publishes it. ``resolve`` finds a link's file:
case-insensitively, ``name`` meaning ``name.md`` first, then the file called ``name`` itself
(``diagram.png``); a target with a ``/`` is a path from the vault's root, else from the linking
note's folder, else the end of some path; a bare name is a file name anywhere in the vault,
preferring the linking note's folder, then the shortest path, then the first in sort order
(so two notes of one name resolve the same way on every build).
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.reuse.state import Digest
from pipeline.sources.exclude import Exclude

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".avif"}


@dataclass
class VaultNames:
    """The vault's files (POSIX paths below CONTENT) and the ones the site publishes."""

    files: tuple[str, ...]
    published: frozenset[str]
    documents: frozenset[str]
    _by_name: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _by_path: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for rel in sorted(self.files, key=lambda r: (r.count("/"), r)):
            self._by_path.setdefault(rel.casefold(), rel)
            self._by_name.setdefault(posixpath.basename(rel).casefold(), []).append(rel)

    @classmethod
    def scan(cls, root: Path, exclude: Exclude, documents: set[str]) -> "VaultNames":
        """Every file under ``root`` outside hidden folders; published: those ``exclude`` keeps."""
        files, published = [], set()
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            rel_folder = Path(folder).relative_to(root).as_posix()
            for name in sorted(names):
                if name.startswith("."):
                    continue
                rel = name if rel_folder == "." else f"{rel_folder}/{name}"
                files.append(rel)
                if not exclude.excludes(rel):
                    published.add(rel)
        return cls(tuple(files), frozenset(published), frozenset(documents))

    def digest(self) -> str:
        """Changes when a file is added, removed or renamed, or starts or stops being published:
        what every note's resolved links depend on."""
        return Digest(list(self.files), sorted(self.published), sorted(self.documents)).hex()

    def resolve(self, target: str, source: str) -> str | None:
        """The file ``target`` (a wikilink's target, no ``#`` part) names from note ``source``."""
        target = target.strip().replace("\\", "/").lstrip("/")
        if not target:
            return None
        for candidate in (target + ".md", target) if not target.lower().endswith(".md") else (target,):
            found = self._find(candidate, posixpath.dirname(source))
            if found is not None:
                return found
        return None

    def _find(self, name: str, folder: str) -> str | None:
        key = name.casefold()
        if "/" in name:
            for path in (key, posixpath.normpath(posixpath.join(folder, name)).casefold()):
                if path in self._by_path:
                    return self._by_path[path]
            ends = [p for k, p in self._by_path.items() if k.endswith("/" + key)]
            return ends[0] if ends else None
        matches = self._by_name.get(key)
        if not matches:
            return None
        near = [m for m in matches if posixpath.dirname(m) == folder]
        return near[0] if near else matches[0]  # sorted by depth, then path
