"""Content-defined groups of whole documents: where ``_search/`` cuts a run of documents into the
files that hold them (vector shards, record blocks, topic segments), so that an edit of one
document moves no boundary but, rarely, its own group's (pure).

A file holding a fixed number of rows cut greedily (the next file starts where the last one is
full) moves every later boundary when one document gains or loses a chunk: every later file
changes. Here whether a group ends after a document depends on that document alone (its key and
its rows) and on the group's size so far: after document ``d`` the group ends when it holds at
least ``minimum`` rows and ``u(key) < rows / target`` (``u``: the key's xxh64 as a fraction of
2**64; a document of ``target`` rows or more always ends one), and a document that would take a
group past ``cap`` rows starts a new one. Groups average about ``target`` rows; an edit of
document ``d`` can change the ends of ``d``'s group only, and of the next when that group's size
crosses ``minimum``: the groups after agree again at the next document that ends a group in both.

Guarantees: ``groups(...)`` covers the documents in order, each group non-empty and within one
call's run; the same keys and rows give the same groups.
"""

from __future__ import annotations

import xxhash

from pipeline.siteformat import vectorshards

_SPAN = float(1 << 64)


def key_fraction(key: str) -> float:
    """The key's xxh64 as a fraction of 2**64, in [0, 1)."""
    return xxhash.xxh64_intdigest(key.encode("utf-8")) / _SPAN


def groups(keys: list[str], rows: list[int], target: int, cap: int | None = None,
           minimum: int | None = None) -> list[tuple[int, int]]:
    """[(first document, documents)] of the run ``keys`` (each document's key, unique in the
    run) with ``rows`` rows each (module docstring). ``minimum`` defaults to ``target // 4``,
    ``cap`` to ``4 * target``; a document bigger than ``cap`` is a group alone."""
    minimum = target // 4 if minimum is None else minimum
    cap = 4 * target if cap is None else cap
    out: list[tuple[int, int]] = []
    first, size = 0, 0
    for d, (key, n) in enumerate(zip(keys, rows)):
        if d > first and size + n > cap:
            out.append((first, d - first))
            first, size = d, 0
        size += n
        if size >= minimum and key_fraction(key) * target < n:
            out.append((first, d + 1 - first))
            first, size = d + 1, 0
    if first < len(keys):
        out.append((first, len(keys) - first))
    return out


def shard_groups(keys: list[str], rows: list[int]) -> list[tuple[int, int]]:
    """[(first document, documents)] of one topic's shards (``keys``: its documents' keys in
    order, ``rows``: their chunk counts); documents without a row join their neighbours."""
    return groups(keys, rows, vectorshards.SHARD_ROWS, vectorshards.SHARD_CAP)
