"""The tree's names and paths, shared by the source and the published site: which directories
are nodes, what a document's key is, where its chunks and manifest live.

Every directory not starting with ``_`` or ``.`` is a node of the site (it gets an index.json);
its documents are the ``*.md`` files other than the reserved names below, and the knowledge-base
entries stored as ``.yaml``/``.yml``/``.json`` (which files are documents: ``pipeline.sources.documents``).
Pure names and directory walks; imports nothing of the pipeline but ``pipeline.errors``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath


CHUNKS_DIR = "_chunks"
# A manifest's name ends so that no one takes it for a HAL index (a document ``index.md`` would
# otherwise get ``_chunks/index.json``); chunk files end in ``-<i>.md``, so nothing collides. Its
# later pages end in ``.manifest-<p>.json``: never ``MANIFEST_SUFFIX``, so a glob for it finds
# each document's first page once.
MANIFEST_SUFFIX = ".manifest.json"


def manifest_name(key: str, page: int = 1) -> str:
    """Page ``page`` (from 1) of the manifest (in ``_chunks/``) of the document with ``key``."""
    return key + MANIFEST_SUFFIX if page == 1 else f"{key}.manifest-{page}.json"
KEYWORDS_FILE = "_keywords/words.md"
QUESTIONS_FILE = "qa-pairs.md"
TOPIC_SPEC_FILE = "topic-spec.md"
INDEX_FILE = "index.json"
# Files the pipeline writes or reads for its own purposes: never documents.
RESERVED_NAMES = {TOPIC_SPEC_FILE, QUESTIONS_FILE, INDEX_FILE, "index.html"}


@dataclass(frozen=True)
class SourceDoc:
    """A document; ``rel`` is its POSIX path below the root (``guide/setup.md``).

    ``name`` (``setup.md``), ``key`` (``setup``: ``document_key``) and ``dir_rel`` (``guide``) are
    pure functions of ``rel``, computed once when the record is made: a no-op rebuild of 10,000
    documents asks for them ~150,000 times. They are plain attributes, not fields (equality,
    hashing and ``repr`` are those of ``root`` and ``rel``)."""

    root: Path
    rel: str

    def __post_init__(self) -> None:
        # ``rel`` is a normalised POSIX path (no trailing or doubled "/"): its last part is the
        # name, found without a PurePosixPath
        dir_rel, _, name = self.rel.rpartition("/")
        object.__setattr__(self, "name", name)
        # The document's name in the site: ``setup`` for ``setup.md``, the whole file name for an
        # entry file (``api-key.yaml``), so no two documents of a folder share it. It names the
        # chunk files (``<key>-<i>.md``), the manifest (``<key>.manifest.json``) and the index entry.
        object.__setattr__(self, "key", document_key(name))
        object.__setattr__(self, "dir_rel", dir_rel)

    @cached_property
    def path(self) -> Path:
        return self.root / self.rel

    @property
    def stem(self) -> str:
        return PurePosixPath(self.rel).stem

    @property
    def document_id(self) -> str:
        """The path without ``.md`` (``guide/setup``; ``kb/api-key.yaml``): unique in the site."""
        return document_key(self.rel)


def document_key(name: str) -> str:
    """``SourceDoc.key`` of the document file ``name`` (also of a path: ``document_id``)."""
    return name.removesuffix(".md")


MAX_NAME_BYTES = 200  # a file name's UTF-8 bytes: derived names (``.<key>-<i>.md.<pid>.<n>.tmp``) add ~40 to it, filesystems allow 255


def name_problem(name: str, *, is_file: bool = True) -> str | None:
    """Why the site cannot hold a file (or folder) called ``name``, or None when it can: the name
    must be UTF-8 (it is written into JSON and URLs) and, for a file, at most MAX_NAME_BYTES."""
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:  # os.walk hands undecodable bytes over as surrogates
        return "its name is not valid UTF-8"
    if is_file and size > MAX_NAME_BYTES:
        return f"its name is {size} bytes long, over the limit of {MAX_NAME_BYTES}"
    return None


_reported: set[str] = set()


def usable(folder: str | Path, name: str, *, is_file: bool = True) -> bool:
    """True when ``name`` in ``folder`` can be published; else warns once, naming it, and the
    caller skips it (and, for a folder, everything in it)."""
    problem = name_problem(name, is_file=is_file)
    if problem is None:
        return True
    shown = os.fsencode(os.path.join(folder, name)).decode("utf-8", "backslashreplace")
    if shown not in _reported:
        _reported.add(shown)
        warnings.warn(f"{shown}: skipped, {problem}", UserWarning, stacklevel=3)
    return False


def is_hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def site_dirs(root: Path) -> list[str]:
    """Relative POSIX paths of every site directory under ``root`` ("" is the root), sorted
    (by path components, as ``pathlib`` sorts). Hidden directories are not entered."""
    out = [""]
    for dirpath, dirnames, _ in os.walk(root, onerror=_raise):  # an unreadable folder is an error, never skipped unsaid
        dirnames[:] = [d for d in dirnames if not is_hidden(d) and usable(dirpath, d, is_file=False)]
        rel = os.path.relpath(dirpath, root)
        if rel != ".":
            out.append(Path(rel).as_posix())
    return sorted(out, key=lambda rel: rel.split("/") if rel else [])


def _raise(error: OSError) -> None:
    """``os.walk``'s error handler: a folder that is gone is none; any other error is raised."""
    if not isinstance(error, (FileNotFoundError, NotADirectoryError)):
        raise error


def child_dirs(root: Path, dir_rel: str) -> list[str]:
    """The site directories directly in ``dir_rel`` (a link to a folder is none: links are
    never followed, ``sources/confine.py``), sorted."""
    base = root / dir_rel
    prefix = f"{dir_rel}/" if dir_rel else ""
    # one scandir, its entries' types: no Path and no stat per file (a site folder holds a file
    # per document); ``is_dir(follow_symlinks=False)`` is a folder that is not a link
    with os.scandir(base) as entries:
        names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    return sorted(prefix + name for name in names if not is_hidden(name) and usable(base, name, is_file=False))


def humanize(dir_rel: str) -> str:
    """``getting-started`` -> ``Getting started``."""
    name = PurePosixPath(dir_rel).name.replace("-", " ").replace("_", " ").strip()
    return name[:1].upper() + name[1:] if name else ""
