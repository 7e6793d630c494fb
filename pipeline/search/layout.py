"""The files of ``_search/`` (``pipeline.search.index``'s docstring has the whole layout): their
names, the writer that puts each on disk as it is made, and the makers of the term shards, a
topic's postings, records.json's inline terms and the vector shards with their manifest entry.

Job: bytes and file names only; what goes in them (scoring, each topic's share) is the other
modules', and when to make them is ``pipeline.search.index``'s.

Guarantees: deterministic bytes (``dumps``: sorted keys, orjson's fixed separators); ``Output``
writes each file atomically and only when changed, keeping only its name.
"""

from __future__ import annotations

import base64
import bisect
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from pipeline.fsutil import write_bytes_atomic
from pipeline.search import vectorshards
from pipeline.search.text import shard_of

SEARCH_DIR = "_search"
META = "meta.json"
RECORDS = "records.json"
NODES = "nodes.json"  # the folder tree for a page's navigation (one request instead of every index.json)
CENTROIDS = "centroids.bin"
BLOCK = 128
"""Chunk records per ``chunks/<b>.json`` file."""
CENTROIDS_INLINE_BYTES = 32 * 1024
"""Centroids up to this size (about 80 topics of 384 int8 dimensions) travel inside meta.json."""
TERM_BYTES_WEIGHT = 3
"""Postings compress ~3x worse than packed records (gzip: 2.6x against 8.1x, measured on the 10k
synthetic site), so a budget of JSON bytes that stands for gzipped bytes counts theirs 3 times."""
ALL_TERMS_FACTOR = 2
"""records.json carries every term's postings when the records and all of them fit this many
times RECORDS_INLINE_BYTES (``pipeline.search.index``; 1.6 MB of weighted JSON, ~200 kB gzipped: the sites up to ~2,500
chunks of real documentation): then a query's lexical side is one request, whatever its terms,
where the rarest-first rule left the frequent terms (those most queries use: "file", "app",
"use") to 2-8 shard requests (docs/DECISIONS.md "Requests of a cold hybrid query"). Above it,
inlining frequent terms one by one would cost ~15 kB gzipped each to spare one request for the
queries that use that very term, so the rarest-first rule under RECORDS_INLINE_BYTES stays."""


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


class Output:
    """The files of ``_search/`` as they are made: each written at once (``write_bytes_atomic``:
    atomically, and not at all when unchanged) and only its name kept, so the index (~180 MB at
    100k chunks) is never whole in memory; ``rel in output`` tells the files to keep."""

    def __init__(self, folder: Path, report: SearchReport):
        self.folder, self.report, self.names = folder, report, set()

    def __setitem__(self, rel: str, data: bytes) -> None:
        self.report.written += write_bytes_atomic(self.folder / rel, data)
        self.report.bytes += len(data)
        self.names.add(rel)

    def update(self, files: dict[str, bytes]) -> None:
        for rel, data in files.items():
            self[rel] = data

    def __contains__(self, rel: str) -> bool:
        return rel in self.names


def topic_dir(i: int) -> str:
    """The folder of topic ``i``'s own term shards and record blocks (a topic without a bundle)."""
    return f"topics/{i}"


def shard_files(folder: str, entries: dict[str, list], shards: int) -> dict[str, bytes]:
    """``{folder}/<s>.json`` for s in 0..shards-1, each {term: entry} of the terms of ``entries``
    with ``shard_of(term, shards) == s`` (an empty object when none): the site-wide term shards
    and a big topic's own are the same files, hashed alike."""
    by_shard: dict[int, dict] = defaultdict(dict)
    for term, entry in entries.items():
        by_shard[shard_of(term, shards)][term] = entry
    return {f"{folder}/{s}.json": dumps(by_shard.get(s, {})) for s in range(shards)}


def topic_postings(ids: np.ndarray, levels: np.ndarray, term_of: np.ndarray, names: list[str], at: np.ndarray) -> dict[str, list]:
    """{term: [chunk-number deltas, impacts]} of the postings at positions ``at`` (one topic's,
    in term then chunk order) of the sorted arrays (``PostingTable.sorted_postings``; ``term_of``:
    each posting's term id, ``names``: the terms by id). As in the site-wide shards, a term's
    first delta is its chunk number: the entries are the shards' restricted to the topic."""
    if not len(at):
        return {}
    chunks, tids = ids[at], term_of[at]
    deltas = np.diff(chunks, prepend=0)
    firsts = np.flatnonzero(np.diff(tids, prepend=-1))  # each term's first posting in the topic
    deltas[firsts] = chunks[firsts]
    cuts = [*firsts.tolist(), len(at)]
    delta_list, level_list = deltas.tolist(), levels[at].tolist()
    return {names[tid]: [delta_list[a:b], level_list[a:b]] for tid, a, b in zip(tids[firsts].tolist(), cuts, cuts[1:])}


def inline_terms(records_size: int, candidates: list[tuple[int, str, list]], records_inline_bytes: int) -> dict[str, list]:
    """The terms records.json carries: every one when the records and all the postings fit
    ``ALL_TERMS_FACTOR * records_inline_bytes`` (postings counted TERM_BYTES_WEIGHT times), so a
    query's lexical side is that one request; else the rarest, in order of (document frequency,
    term), while the whole stays under ``records_inline_bytes``. ``candidates``: (document
    frequency, term, postings) of every term."""
    weights = [TERM_BYTES_WEIGHT * (len(orjson.dumps(entry)) + len(orjson.dumps(term)) + 2) for _, term, entry in candidates]
    if records_size + sum(weights) <= ALL_TERMS_FACTOR * records_inline_bytes:
        return {term: entry for _, term, entry in candidates}
    inline: dict[str, list] = {}
    room = records_inline_bytes - records_size
    for weight, (_, term, entry) in sorted(zip(weights, candidates), key=lambda c: (c[1][0], c[1][1])):
        room -= weight
        if room < 0:
            break
        inline[term] = entry
    return inline


def vector_shards(topic_vectors: list[tuple[bytes | None, list[list]]], dimension: int, files: Output) -> dict:
    """The ``vectors/<i>.bin`` shard files (``pipeline.search.vectorshards``), added to ``files``,
    and what the manifest says of them: dimension, each document's rows, each shard's range."""
    width = vectorshards.row_bytes(dimension)
    shards = vectorshards.shard_layout([[c for _, c in docs] for _, docs in topic_vectors], dimension)
    topic_starts = np.cumsum([0] + [sum(c for _, c in docs) for _, docs in topic_vectors]).tolist()
    for i, (start, count) in enumerate(shards):
        # a shard never crosses a topic: a slice of that topic's rows (no copy of the site's)
        t = bisect.bisect_right(topic_starts, start) - 1
        data, offset = topic_vectors[t][0], (start - topic_starts[t]) * width
        files[f"{vectorshards.VECTORS_DIR}/{i}.bin"] = bytes(count * width) if data is None else data[offset:offset + count * width]
    documents = [c for _, docs in topic_vectors for _, c in docs if c]
    return {"dimension": dimension, "documents": documents, "shards": shards}


def vectors_meta(model: str | None, centroids: bytes | None, files: Output, shards: dict | None = None) -> dict | None:
    """``meta.json``'s ``vectors``: the centroids inline (base64) while they are small, since every
    hybrid query needs them and a request fewer is worth a few kB; else ``centroids.bin``, added
    to ``files`` (a site of hundreds of topics must not make every query's meta.json heavy).
    With ``shards`` (``vector_shards``), its dimension, documents and shards too."""
    if not centroids:
        return None
    extra = shards or {}
    if len(centroids) <= CENTROIDS_INLINE_BYTES:
        return {"model": model, "centroids": base64.b64encode(centroids).decode("ascii"), **extra}
    files[CENTROIDS] = centroids
    return {"model": model, "href": CENTROIDS, **extra}
