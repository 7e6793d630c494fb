"""Memo: per-topic intermediate results of earlier builds, content-addressed, beside the site.

The build state (``reuse/state.py``) records small facts ("inputs D gave output H") and is read
on every build. Some results that make a one-edit rebuild cheap are large: a topic's keyword
candidate counts (``topicspec/keywordtables.py``, ``generated_stats``) and its share of the search index's
postings and records (``search/topicpart.py``). Those live here, one file per (kind, key) in
``.<site>.pipeline-memo/<kind>/<key>`` (beside the site, as the stamps file: a cold build's site
holds the same files whether or not a memo existed), and are read only by a build that has to
recompute the whole they are part of: a no-op rebuild reads none.

Guarantees: a key is a digest of every input of the value (``Digest``) and of the pipeline's
code (``code_digest``), so an entry is either exactly what recomputing would give or not found;
the file holds its key, checked on read, and any unreadable, truncated or foreign file reads as
missing (the caller recomputes). Files are written atomically. After a build, ``prune`` removes
the entries of each kind the build used that it neither read nor wrote (the entries of content
that is gone), so the folder holds about one entry per topic and kind.
"""

from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Callable, TypeVar

from pipeline.fsutil import write_bytes_atomic
from pipeline.reuse.state import Digest, code_digest

MAGIC = b"pipeline-memo/1\n"
MARSHAL_VERSION = 4  # fixed: the bytes of an entry do not depend on the interpreter's default
BIG_TOPIC_CHUNKS = 10_000
"""Chunks from which a topic's per-topic results are also kept per document (``DocumentMemo``).
An edit recomputes a topic's whole result; in one folder of 10,000 documents (42,656 chunks)
that was 13 s of keyword counts and 5 s of search-index share a one-edit rebuild. Keeping a
result per document costs a cold build about as much again as computing it (24,000 documents in
24 topics: the keyword stage 21.1 -> 23.1 s with every topic kept), so only topics whose whole
recomputation an edit would notice keep them (docs/decisions/build.md "One edit recomputes per-topic parts")."""

T = TypeVar("T")


def is_big(chunks: int) -> bool:
    """A topic of ``chunks`` chunks keeps its per-topic results per document too."""
    return chunks >= BIG_TOPIC_CHUNKS


class Memo:
    """The memo folder of one build (None: a memo that finds nothing and keeps nothing)."""

    def __init__(self, folder: Path | None):
        self.folder = Path(folder) if folder is not None else None
        self._touched: dict[str, set[str]] = {}  # kind -> keys read or written by this build

    def key(self, *parts: object) -> str:
        """The key of a value computed from ``parts`` by this code."""
        return Digest(code_digest(), *parts).hex()

    def get(self, kind: str, key: str) -> object | None:
        """The value stored under ``key``, or None when there is none or it cannot be read."""
        self._touched.setdefault(kind, set()).add(key)
        if self.folder is None:
            return None
        try:
            with open(self.folder / kind / key, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        head = MAGIC + key.encode("ascii") + b"\n"
        if not data.startswith(head):
            return None
        try:
            return marshal.loads(data[len(head):])
        except (EOFError, ValueError, TypeError):
            return None

    def keep(self, kind: str, key: str) -> None:
        """Keep the entry under ``key`` past ``prune`` without reading it (a stage that found its
        result unchanged, but will want the entry when it changes)."""
        self._touched.setdefault(kind, set()).add(key)

    def put(self, kind: str, key: str, value: object) -> None:
        """Store ``value`` (made of None, bool, int, float, str, bytes, list, tuple, dict)."""
        self._touched.setdefault(kind, set()).add(key)
        if self.folder is None:
            return
        data = MAGIC + key.encode("ascii") + b"\n" + marshal.dumps(value, MARSHAL_VERSION)
        write_bytes_atomic(self.folder / kind / key, data)

    def prune(self) -> int:
        """Remove the entries of every kind this build used that it did not read or write.
        Returns how many were removed."""
        removed = 0
        if self.folder is None:
            return removed
        for kind, keys in self._touched.items():
            try:
                names = os.listdir(self.folder / kind)
            except OSError:
                continue
            for name in names:
                if name not in keys:
                    try:
                        os.unlink(self.folder / kind / name)
                        removed += 1
                    except OSError:
                        pass
        return removed


class DocumentMemo:
    """One topic's values per document, in one memo entry ``{document key: value}``: a rebuild
    after an edit computes the values of the documents whose keys are new, and takes the rest.

    A document key must name every input of its value (a manifest's digest names its chunks'
    spans and metadata). A stored value is taken only when ``valid(value)`` (checked, never
    trusted). ``store`` writes the entry when a value was computed or a document left, so an
    entry never holds a document the topic no longer has."""

    def __init__(self, memo: Memo, kind: str, key: str, valid: Callable[[object], bool]):
        self.memo, self.kind, self.key, self.valid = memo, kind, key, valid
        known = memo.get(kind, key)
        self._known = known if isinstance(known, dict) else {}
        self._values: dict[str, object] = {}
        self._computed = False

    def value(self, document_key: str | None, compute: Callable[[], T]) -> T:
        """The stored value of ``document_key``, else ``compute()`` (stored by ``store``; a None
        key is computed and not stored)."""
        value = self._known.get(document_key) if document_key is not None else None
        if value is None or not self.valid(value):
            value = compute()
            if document_key is None:
                return value
            self._computed = True
        self._values[document_key] = value
        return value  # type: ignore[return-value]

    def grew(self) -> None:
        """Say that a value taken was added to in place (``store`` then writes the entry)."""
        self._computed = True

    def store(self) -> None:
        """Write the values this build used, when any was computed or grew, or a document left."""
        if self._computed or self._values.keys() != self._known.keys():
            self.memo.put(self.kind, self.key, self._values)
