"""Which files of a content tree are documents, and which directories are topics.

Every directory not starting with ``_`` or ``.`` is a node of the site (it gets an index.json);
its documents are the ``*.md`` files other than the reserved names below, and the knowledge-base
entries stored as ``.yaml``/``.yml``/``.json`` (``chunking.select.is_entry_file``).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pipeline.errors import PipelineError
from pipeline.site.exclude import Exclude

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
    """A document; ``rel`` is its POSIX path below the root (``guide/setup.md``)."""

    root: Path
    rel: str

    @property
    def path(self) -> Path:
        return self.root / self.rel

    @property
    def stem(self) -> str:
        return PurePosixPath(self.rel).stem

    @property
    def name(self) -> str:
        # ``rel`` is a normalised POSIX path (no trailing or doubled "/"): its last part is the
        # name, found without a PurePosixPath (a no-op rebuild asks ~10 times per document)
        return self.rel.rpartition("/")[2]

    @property
    def key(self) -> str:
        """The document's name in the site: ``setup`` for ``setup.md``, the whole file name for an
        entry file (``api-key.yaml``), so no two documents of a folder share it. It names the
        chunk files (``<key>-<i>.md``), the manifest (``<key>.manifest.json``) and the index entry."""
        return document_key(self.name)

    @property
    def dir_rel(self) -> str:
        return self.rel.rpartition("/")[0]

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
    never followed, ``site/confine.py``), sorted."""
    base = root / dir_rel
    return sorted(
        (PurePosixPath(dir_rel) / p.name).as_posix() if dir_rel else p.name
        for p in base.iterdir()
        if p.is_dir() and not is_hidden(p.name) and not p.is_symlink() and usable(base, p.name, is_file=False)
    )


def documents_in(root: Path, dir_rel: str) -> list[SourceDoc]:
    """The documents directly in ``dir_rel``, sorted by name. Names the site cannot hold are
    skipped with a warning (``usable``), symbolic links too (never
    followed: ``site/confine.py``); two documents with one key (``x.yaml`` and
    ``x.yaml.md``) are a PipelineError naming both."""
    from pipeline.chunking.select import is_entry_file

    base = root / dir_rel
    docs: dict[str, SourceDoc] = {}
    prefix = f"{dir_rel}/" if dir_rel else ""
    # names, not Paths (one folder: the same order): a rebuild lists every document of the site
    with os.scandir(base) as entries:
        names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
    for name in names:
        if is_hidden(name) or name in RESERVED_NAMES or not usable(base, name):
            continue
        if name.endswith(".md") or is_entry_file(base / name):
            doc = SourceDoc(root, prefix + name)
            if doc.key in docs:
                raise PipelineError(
                    f"{docs[doc.key].name} and {doc.name} would both publish as {doc.key!r}: rename one of them",
                    path=doc.path,
                )
            docs[doc.key] = doc
    return sorted(docs.values(), key=lambda d: d.rel)


def all_documents(root: Path, exclude: Exclude | None = None) -> list[SourceDoc]:
    """Every document under ``root`` but those ``exclude`` names."""
    docs = [doc for d in site_dirs(root) for doc in documents_in(root, d)]
    return [doc for doc in docs if not exclude.excludes(doc.rel)] if exclude else docs


def has_documents(root: Path, dir_rel: str) -> bool:
    """``bool(documents_in(root, dir_rel))`` without listing them all: true at the first file
    that is one (``node_dirs`` asks this of every folder of a site on every rebuild)."""
    from pipeline.chunking.select import is_entry_file

    base = root / dir_rel
    with os.scandir(base) as entries:
        names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
    for name in names:  # sorted: the same files (and warnings) as documents_in, up to the first document
        if is_hidden(name) or name in RESERVED_NAMES or not usable(base, name):
            continue
        if PurePosixPath(name).suffix == ".md" or is_entry_file(base / name):
            return True
    return False


def node_dirs(root: Path) -> list[str]:
    """``site_dirs`` that hold a document somewhere below them (the root always): the site's
    nodes, each with an index.json. A folder of images, CSS or scripts is no topic."""
    dirs = site_dirs(root)
    keep = {""}
    for d in dirs:
        if d and d not in keep and has_documents(root, d):
            parts = d.split("/")
            keep.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))  # it and its ancestors
    return [d for d in dirs if d in keep]


def humanize(dir_rel: str) -> str:
    """``getting-started`` -> ``Getting started``."""
    name = PurePosixPath(dir_rel).name.replace("-", " ").replace("_", " ").strip()
    return name[:1].upper() + name[1:] if name else ""
