"""The files of ``_search/`` (``pipeline.search.index``'s docstring has the whole layout; their
names and the format's version: ``pipeline.siteformat.searchlayout``): the writer that puts each on disk as it is made, and the makers of the stored postings,
the term shards, records.json's inline terms and the vector shards.

Job: bytes and file names only; what goes in them (scoring, each topic's share) is the other
modules', and when to make them is ``pipeline.search.index``'s.

Every file but ``meta.json``, ``records.json`` and ``nodes.json`` is *content-named*:
``<kind>/<the first 48 bits of its bytes' xxh3-64, 12 hex>.<json|bin>``, listed by that name in
the manifest (two different files of one build never share a name: ``Output.put`` checks). A name
never holds two texts, so hosts may let readers cache these files for good (``build/_headers``,
``build/nginx.conf``, ``pipeline serve``: every file in a folder of ``_search/``), an edit
changes the names of the files whose bytes it changes and no other, and a reader holding one
generation's manifest reads exactly that generation's files (the retired-file window,
``site/retire.py``, keeps the previous ones one build longer).

Guarantees: deterministic bytes (``dumps``: sorted keys, orjson's fixed separators); ``Output``
writes each file atomically and only when changed, keeping only its name.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import xxhash

from pipeline.errors import PipelineError
from pipeline.fsutil import write_bytes_atomic
from pipeline.siteformat.searchtext import shard_of
from pipeline.siteformat.searchlayout import CENTROIDS, WORD_ROWS, content_path

CENTROIDS_INLINE_BYTES = 32 * 1024
"""Centroids up to this size (about 80 topics of 384 int8 dimensions) travel inside meta.json."""
TERM_BYTES_WEIGHT = 3
"""Postings compress ~3x worse than packed records (gzip: 2.6x against 8.1x, measured on the 10k
synthetic site), so a budget of JSON bytes that stands for gzipped bytes counts theirs 3 times."""
ALL_TERMS_FACTOR = 2
"""The site's records and every term's postings go into parts (``PART_WEIGHT``) that an unscoped
query reads whole when they fit this many times RECORDS_INLINE_BYTES (``pipeline.search.index``;
1.6 MB of weighted JSON, ~200 kB gzipped: the sites up to ~2,500 chunks of real documentation):
then a query's lexical side is the parts, whatever its terms, where the rarest-first rule left
the frequent terms (those most queries use: "file", "app", "use") to 2-8 shard requests
(docs/decisions/search.md "Requests of a cold hybrid query"). Above it, records.json's rarest-first
rule under RECORDS_INLINE_BYTES stays."""
PART_WEIGHT = 500_000
"""Weighted JSON bytes (records plus TERM_BYTES_WEIGHT x postings) a part holds: a site of parts
has ceil(weight / PART_WEIGHT) of them (FastAPI's docs: 3, ~170 kB each), so an edit rewrites one
part, not all of its records and postings, for two requests more on a cold unscoped query."""


@dataclass
class SearchReport:
    chunks: int = 0
    terms: int = 0
    shards: int = 0
    written: int = 0
    bytes: int = 0
    removed: int = 0


def dumps(value) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


NAME_DIGITS = 12
"""Hex digits of a content name: 48 bits, 6 bytes a name in a gzipped manifest (a site of 10,000
documents lists ~3,000), where two names of one build collide with odds ~n**2 / 2**49."""


def content_hash(data: bytes) -> str:
    """The name of a content-named file's bytes: the first NAME_DIGITS hex digits of its xxh3-64."""
    return xxhash.xxh3_64_hexdigest(data)[:NAME_DIGITS]


class Output:
    """The files of ``_search/`` as they are made: each written at once (``write_bytes_atomic``:
    atomically, and not at all when unchanged) and only its name kept, so the index (~180 MB at
    100k chunks) is never whole in memory; ``rel in output`` tells the files to keep."""

    def __init__(self, folder: Path, report: SearchReport):
        self.folder, self.report, self.names = folder, report, set()
        self._digests: dict[str, str] = {}  # content name -> xxh3-128 of its bytes (collision check)

    def __setitem__(self, rel: str, data: bytes) -> None:
        self.report.written += write_bytes_atomic(self.folder / rel, data)
        self.report.bytes += len(data)
        self.names.add(rel)

    def put(self, kind: str, data: bytes) -> str:
        """Write a content-named file of ``kind``; returns its name (hash)."""
        name = content_hash(data)
        rel = content_path(kind, name)
        digest = xxhash.xxh3_128_hexdigest(data)
        if self._digests.setdefault(rel, digest) != digest:
            raise PipelineError(f"two files of the search index would be named {rel}; please report this", path=self.folder)
        if rel not in self.names:
            self[rel] = data
        return name

    def __contains__(self, rel: str) -> bool:
        return rel in self.names


def shard_count(postings: int, per_shard: int) -> int:
    """Term shards for ``postings`` postings: the power of two that gives at most ``per_shard``
    a shard on average (a count that changes only when the postings double or halve, and then
    splits or joins shards: an edit does not rehash every term)."""
    shards = 1
    while shards * per_shard < postings:
        shards *= 2
    return shards


def shard_files(entries: dict[str, list], shards: int, rows: dict[int, dict[str, str]] | None = None) -> list[bytes]:
    """The bytes of ``shards`` term shards, shard s holding {term: entry} of the terms of
    ``entries`` with ``shard_of(term, shards) == s`` (an empty object when none), and
    ``rows[s]`` under ``searchlayout.WORD_ROWS`` when given (the site-wide shards' word rows): the
    site-wide term shards and a big topic's own are the same files, hashed alike."""
    by_shard: dict[int, dict] = defaultdict(dict)
    for term, entry in entries.items():
        by_shard[shard_of(term, shards)][term] = entry
    for s, held in (rows or {}).items():
        by_shard[s][WORD_ROWS] = held
    return [dumps(by_shard.get(s, {})) for s in range(shards)]


class Postings:
    """The site's postings sorted by term then chunk (``PostingTable.sorted_postings``), cut into
    the entries files store, in one of two forms (``entries``):

    * by chunk, ``[chunk deltas, levels]``: chunk numbers counted from the file's first chunk (a
      part's or segment's: a run of documents that an edit of one of them rewrites anyway), the
      first delta that number itself;
    * by document, ``[document deltas, chunk indexes, levels]``: a posting named by its
      document (its number counted from the file's first document, the site's or a topic's;
      the first delta is that number) and its index there, in the site-wide term shards,
      records.json and a big topic's own term shards, so that a document gaining or losing a
      chunk changes no other document's postings there."""

    def __init__(self, chunks: np.ndarray, levels: np.ndarray, bounds: np.ndarray, names: list[str], counts: list[int]):
        self.chunks, self.levels, self.names = chunks, levels, names  # names: the terms by id
        starts = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        document_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        self.document = document_of[chunks]
        self.index = chunks - starts[self.document]
        self.term = np.repeat(np.arange(len(names), dtype=np.int32), np.diff(bounds))

    def __len__(self) -> int:
        return len(self.levels)

    def entries(self, at: np.ndarray | None = None, base: int | None = None, first_document: int = 0) -> dict[str, list]:
        """{term: entry} of the postings at positions ``at`` (in term then chunk order; None:
        all): by chunk counted from chunk ``base``, or by document (counted from document
        ``first_document``) when ``base`` is None."""
        if at is None:
            at = np.arange(len(self.levels))
        if not len(at):
            return {}
        tids = self.term[at]
        numbers = self.document[at] - first_document if base is None else self.chunks[at].astype(np.int64) - base
        deltas = np.diff(numbers, prepend=0)
        firsts = np.flatnonzero(np.diff(tids, prepend=-1))  # each term's first posting here
        deltas[firsts] = numbers[firsts]
        cuts = [*firsts.tolist(), len(at)]
        lists = [deltas.tolist()] + ([self.index[at].tolist()] if base is None else []) + [self.levels[at].tolist()]
        return {self.names[tid]: [values[a:b] for values in lists] for tid, a, b in zip(tids[firsts].tolist(), cuts, cuts[1:])}

    def by_group(self, group_of_document: np.ndarray, groups: int) -> tuple[np.ndarray, list[int]]:
        """(positions of the postings ordered by the group of their document, stable so each
        group's stay in term then chunk order; each group's bounds in that order);
        ``group_of_document``: a group number per document, -1 for none (left out)."""
        owner = group_of_document[self.document]
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner[owner >= 0], minlength=groups)
        skipped = int((owner < 0).sum())
        bounds = (skipped + np.concatenate(([0], np.cumsum(counts)))).tolist()
        return order, bounds


def inline_terms(records_size: int, candidates: list[tuple[int, str, list]], records_inline_bytes: int) -> dict[str, list]:
    """The terms records.json carries: the rarest, in order of (document frequency, term), while
    the whole stays under ``records_inline_bytes`` (postings counted TERM_BYTES_WEIGHT times).
    ``candidates``: (document frequency, term, postings) of every term."""
    inline: dict[str, list] = {}
    room = records_inline_bytes - records_size
    for df, term, entry in sorted(candidates, key=lambda c: (c[0], c[1])):
        room -= term_weight(term, entry)
        if room < 0:
            break
        inline[term] = entry
    return inline


def term_weight(term: str, entry: list) -> int:
    """A term's postings in weighted JSON bytes (TERM_BYTES_WEIGHT times theirs)."""
    return TERM_BYTES_WEIGHT * (len(orjson.dumps(entry)) + len(orjson.dumps(term)) + 2)


def vectors_meta(model: str | None, centroids: bytes | None, files: Output, shards: dict | None = None) -> dict | None:
    """``meta.json``'s ``vectors``: the centroids inline (base64) while they are small, since every
    hybrid query needs them and a request fewer is worth a few kB; else a content-named
    ``centroids/<hash>.bin``, added to ``files`` (a site of hundreds of topics must not make every
    query's meta.json heavy). With ``shards``, its dimension and shards too."""
    if not centroids:
        return None
    extra = shards or {}
    if len(centroids) <= CENTROIDS_INLINE_BYTES:
        return {"model": model, "centroids": base64.b64encode(centroids).decode("ascii"), **extra}
    return {"model": model, "href": content_path(CENTROIDS, files.put(CENTROIDS, centroids)), **extra}
