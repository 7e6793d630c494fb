"""Which files of a content tree are documents, and which directories are topics.

Every directory not starting with ``_`` or ``.`` is a node of the site (it gets an index.json);
its documents are the ``*.md`` files other than the reserved names below, and the knowledge-base
entries stored as ``.yaml``/``.yml``/``.json`` (``chunking.select.is_entry_file``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CHUNKS_DIR = "_chunks"
# A manifest's name ends so that no one takes it for a HAL index (a document ``index.md`` would
# otherwise get ``_chunks/index.json``); chunk files end in ``-<i>.md``, so nothing collides.
MANIFEST_SUFFIX = ".manifest.json"


def manifest_name(key: str) -> str:
    """The manifest file (in ``_chunks/``) of the document with ``key``."""
    return key + MANIFEST_SUFFIX
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
        return PurePosixPath(self.rel).name

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


def is_hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def site_dirs(root: Path) -> list[str]:
    """Relative POSIX paths of every site directory under ``root`` ("" is the root), sorted
    (by path components, as ``pathlib`` sorts). Hidden directories are not entered."""
    out = [""]
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = [d for d in dirnames if not is_hidden(d)]
        rel = os.path.relpath(dirpath, root)
        if rel != ".":
            out.append(Path(rel).as_posix())
    return sorted(out, key=lambda rel: rel.split("/") if rel else [])


def child_dirs(root: Path, dir_rel: str) -> list[str]:
    base = root / dir_rel
    return sorted(
        (PurePosixPath(dir_rel) / p.name).as_posix() if dir_rel else p.name
        for p in base.iterdir()
        if p.is_dir() and not is_hidden(p.name)
    )


def documents_in(root: Path, dir_rel: str) -> list[SourceDoc]:
    """The documents directly in ``dir_rel``, sorted by name."""
    from pipeline.chunking.select import is_entry_file

    base = root / dir_rel
    docs = []
    for path in sorted(p for p in base.iterdir() if p.is_file()):
        if is_hidden(path.name) or path.name in RESERVED_NAMES:
            continue
        if path.suffix == ".md" or is_entry_file(path):
            docs.append(SourceDoc(root, path.relative_to(root).as_posix()))
    return docs


def all_documents(root: Path) -> list[SourceDoc]:
    return [doc for d in site_dirs(root) for doc in documents_in(root, d)]


def humanize(dir_rel: str) -> str:
    """``getting-started`` -> ``Getting started``."""
    name = PurePosixPath(dir_rel).name.replace("-", " ").replace("_", " ").strip()
    return name[:1].upper() + name[1:] if name else ""
