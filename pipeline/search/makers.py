"""The content-named files of ``_search/`` made from a build's postings and records, a kind a
function: a small site's parts, the site-wide term shards, each topic's segments or own term
shards and record blocks, the vector shards (``pipeline.search.index``'s docstring has the layout).

Job: cut the site's documents into the files' runs (``groups``, or equal runs for parts) and
write each file as it is made (``layout.Output.put``: named by its bytes); what goes in a file
is ``layout``'s (``Postings.entries``, ``shard_files``) and ``records``'. The stage
(``pipeline.search.index``) decides which kinds a site gets and puts their names in the manifest.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.siteformat import vectorshards
from pipeline.search.groups import groups, shard_groups
from pipeline.search.layout import Output, Postings, dumps, shard_count, shard_files
from pipeline.siteformat.packedrecords import Packer, slice_packed
from pipeline.siteformat.searchtext import shard_of
from pipeline.search.wordrows import ROW_POSTINGS, WORD_FILE_ROWS, row_count, rows_by_shard
from pipeline.siteformat.searchlayout import BLOCKS, PARTS, SEGMENTS, TERMS, TOPIC_SHARDS, VECTORS, WORD_ROWS, WORDS


def _starts(counts: list[int]) -> list[int]:
    return np.concatenate(([0], np.cumsum(counts, dtype=np.int64))).tolist()


def parts(files: Output, postings: Postings, packed: dict, counts: list[int], weight: int, part_weight: int) -> list[list]:
    """A small site's parts: [[first document, documents, name]] of ceil(``weight`` /
    ``part_weight``) runs of (nearly) equal document counts (``weight``: the records' and
    postings' weighted JSON bytes; ``packed``: every record, packed; ``counts``: each document's
    chunks), each its records and its postings by chunk. A run depends on the document count
    alone: an edit moves none."""
    documents = len(counts)
    count = max(1, min(documents, math.ceil(weight / part_weight)))
    cuts = [p * documents // count for p in range(count + 1)]
    part_of = np.repeat(np.arange(count, dtype=np.int64), np.diff(cuts))
    order, bounds = postings.by_group(part_of, count)
    starts = _starts(counts)
    out = []
    for p in range(count):
        first, end = cuts[p], cuts[p + 1]
        data = dumps({"records": slice_packed(packed, starts[first], starts[end]),
                      "terms": postings.entries(order[bounds[p]:bounds[p + 1]], base=starts[first])})
        out.append([first, end - first, files.put(PARTS, data)])
    return out


def term_shards(files: Output, postings: Postings, entries: dict | None, per_shard: int,
                word_rows: dict[str, dict[str, str]] | None = None) -> list[str]:
    """The site-wide term shards' names, shard s's at s: from ``entries`` (every term's, by
    document) when the caller holds them, else made one shard at a time (on a big site every
    term's lists at once would be the build's largest structure). ``word_rows``
    (``wordrows.site_word_rows``): the static encoder's rows each shard carries for its terms'
    words, each counted as ``wordrows.ROW_POSTINGS`` postings in the shard count."""
    word_rows = word_rows or {}
    shards = shard_count(len(postings) + ROW_POSTINGS * row_count(word_rows), per_shard)
    rows = rows_by_shard(word_rows, shards)
    if entries is not None:
        return [files.put(TERMS, data) for data in shard_files(entries, shards, rows)]
    shard_of_term = np.array([shard_of(name, shards) for name in postings.names], dtype=np.int64)
    order = np.argsort(shard_of_term[postings.term], kind="stable")  # stable: term then chunk order within a shard
    bounds = np.concatenate(([0], np.cumsum(np.bincount(shard_of_term[postings.term], minlength=shards)))).tolist()
    out = []
    for s in range(shards):
        held = postings.entries(order[bounds[s]:bounds[s + 1]])
        if s in rows:
            held[WORD_ROWS] = rows[s]
        out.append(files.put(TERMS, dumps(held)))
    return out


def word_files(files: Output, word_rows: dict[str, dict[str, str]]) -> list[str]:
    """The names of the word files of a site without term shards (``searchlayout.WORD_ROWS``):
    file s holds the rows of the terms with ``shard_of(term, files) == s``, about
    ``WORD_FILE_ROWS`` rows a file (a power of two of files, as term shards)."""
    shards = shard_count(row_count(word_rows), WORD_FILE_ROWS)
    rows = rows_by_shard(word_rows, shards)
    return [files.put(WORDS, dumps({WORD_ROWS: rows.get(s, {})})) for s in range(shards)]


def topic_files(files: Output, postings: Postings, topics: list[dict], keys: list[str], counts: list[int],
                segment_records: dict[int, list[dict]], blocks: dict[int, list[tuple[int, int, bytes]]], *,
                segment_rows: int, per_shard: int, every_block: bool, site_shards: bool = False) -> None:
    """Each topic's own files, named in its manifest entry (``topics``, changed in place):
    segments for a topic whose records ``segment_records`` holds (small enough), about
    ``segment_rows`` chunks each; its own term shards and record blocks (``blocks``, made) for a
    bigger one; record blocks for every topic when ``every_block`` (records.json holds none).
    ``site_shards``: the site has site-wide term shards; a bigger topic holding every chunk of
    the site (one folder) then gets none of its own (``shards`` null): they would be the same
    postings, and an edit would rewrite each changed shard twice; a query scoped to it reads the
    site-wide shards, with the same collection and so the same ranking."""
    segment_of = np.full(len(counts), -1, dtype=np.int64)
    segments: list[tuple[int, int, int]] = []  # (topic, first document, documents)
    for i, topic in enumerate(topics):
        if i not in segment_records:
            continue
        first, n = topic["first"], topic["docs"]
        for a, k in groups(keys[first:first + n], counts[first:first + n], segment_rows):
            segment_of[first + a:first + a + k] = len(segments)
            segments.append((i, first + a, k))
    order, bounds = postings.by_group(segment_of, len(segments))
    starts = _starts(counts)
    for g, (i, first, n) in enumerate(segments):
        topic = topics[i]
        at = starts[first] - topic["start"]
        records = segment_records[i][at:at + starts[first + n] - starts[first]]
        data = dumps({"records": packed(records, topic["id"]),
                      "terms": postings.entries(order[bounds[g]:bounds[g + 1]], base=starts[first])})
        topic["segments"] = (topic["segments"] or []) + [[first, n, files.put(SEGMENTS, data)]]
    del order
    topic_of = np.repeat(np.arange(len(topics), dtype=np.int64), [t["docs"] for t in topics])
    total = sum(counts)
    big = [i for i, t in enumerate(topics) if t["segments"] is None and t["count"] and not (site_shards and t["count"] == total)]
    mask = np.full(len(topics), -1, dtype=np.int64)
    mask[big] = np.arange(len(big))
    order, bounds = postings.by_group(mask[topic_of] if len(topic_of) else topic_of, len(big))
    for g, i in enumerate(big):
        topic = topics[i]
        entries = postings.entries(order[bounds[g]:bounds[g + 1]], first_document=topic["first"])
        count = shard_count(bounds[g + 1] - bounds[g], per_shard)
        topic["shards"] = [files.put(TOPIC_SHARDS, data) for data in shard_files(entries, count)]
    for i, topic in enumerate(topics):
        if every_block or topic["shards"] is not None:
            topic["blocks"] = [[first, n, files.put(BLOCKS, data)] for first, n, data in blocks[i]]


def vector_shards(files: Output, topics: list[dict], rows_of: list[bytes | None], keys: list[str], counts: list[int],
                  dimension: int) -> list[list]:
    """[[first document, documents, name]] of the vector shards (``vectorshards``): each topic's
    rows (``rows_of``: its ``vectorshards.topic_rows``, None for zero rows) cut into
    ``groups.shard_groups``."""
    width = vectorshards.row_bytes(dimension)
    out = []
    for topic, rows in zip(topics, rows_of):
        first, n = topic["first"], topic["docs"]
        topic_counts = counts[first:first + n]
        at = 0
        for a, k in shard_groups(keys[first:first + n], topic_counts):
            size = sum(topic_counts[a:a + k]) * width
            data = bytes(size) if rows is None else rows[at:at + size]
            out.append([first + a, k, files.put(VECTORS, data)])
            at += size
    return out


def packed(records: list[dict], topic: str) -> dict:
    """``records`` (of one topic) packed (``pipeline.siteformat.packedrecords``)."""
    packer = Packer()
    for record in records:
        packer.add(record, topic)
    return packer.packed()


def record_blocks(records: list[dict], keys: list[str], rows: list[int], first: int, topic: str,
                  target: int) -> list[tuple[int, int, bytes]]:
    """One topic's record blocks: (first document, documents, bytes) of content-defined groups of
    its documents (``groups``, about ``target`` chunks), each the packed records of its chunks;
    ``first``: the topic's first document's number."""
    out, at = [], 0
    for a, k in groups(keys, rows, target):
        n = sum(rows[a:a + k])
        out.append((first + a, k, dumps(packed(records[at:at + n], topic))))
        at += n
    return out
