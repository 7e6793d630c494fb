"""The ``_search/`` manifest and ``records.json`` as a client reads them: parsed and checked.

One job: turn the bytes of ``meta.json`` or ``records.json`` into a manifest (and the records
and postings ``records.json`` carries) that the rest of the client may trust, or raise
``CorruptIndex`` naming the file and what is wrong (a format, version or tokenizer this client
does not read, a missing or mistyped field, records that do not cover every chunk). No fetch:
``SearchIndex.open`` fetches, this checks. ``searchindex.js`` (``checkedStart``) is its twin.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import orjson

from pipeline.client.errors import CorruptIndex
from pipeline.search.index import FORMAT, RECORDS, VERSION
from pipeline.search.records import Unpacked
from pipeline.search.text import TOKENIZER

@dataclass(frozen=True)
class StartFile:
    """``records.json`` as read: the records (unpacked, by chunk number; None on a site too big,
    whose blocks hold them), the postings of the terms it holds, and whether those are all."""

    records: Unpacked | None
    terms: dict
    all_terms: bool



def meta_problem(meta: dict) -> str | None:
    """What is wrong with a ``meta.json`` that has the right format and version, or None."""
    for key in ("chunks", "shards", "block"):
        if not isinstance(meta.get(key), int) or isinstance(meta.get(key), bool) or meta[key] < (0 if key == "chunks" else 1):
            return f"{key}: expected a positive integer"
    if not isinstance((meta.get("scoring") or {}).get("scale"), (int, float)):
        return "scoring.scale: expected a number"
    if not isinstance(meta.get("prompts"), list) or not isinstance(meta.get("topics"), list):
        return "prompts and topics: expected lists"
    for i, t in enumerate(meta["topics"]):
        if not isinstance(t, dict) or not all(k in t for k in ("id", "start", "count", "documents", "embeddings", "bundle", "shards")):
            return f"topics[{i}]: expected id, start, count, documents, embeddings, bundle, shards"
        if t["shards"] is not None and (not isinstance(t["shards"], int) or isinstance(t["shards"], bool) or t["shards"] < 1):
            return f"topics[{i}].shards: expected a positive integer or null"
    if meta.get("records") not in (None, RECORDS):
        return f"records: expected {RECORDS!r} or null"
    if not isinstance(meta.get("base_url"), str) or not meta["base_url"]:
        return "base_url: expected the site's base URL"
    vectors = meta.get("vectors")
    if vectors is not None and not (isinstance(vectors, dict) and (isinstance(vectors.get("centroids"), str) or isinstance(vectors.get("href"), str))):
        return "vectors: expected centroids (base64 text) or href"
    if vectors is not None:
        documents, shards = vectors.get("documents"), vectors.get("shards")
        if not isinstance(vectors.get("dimension"), int) or not isinstance(documents, list) or not isinstance(shards, list):
            return "vectors: expected dimension, documents and shards"
        if sum(documents) != meta["chunks"] or sum(n for _, n in shards) != meta["chunks"]:
            return "vectors: documents and shards must cover every chunk"
    return None



def parse_manifest(data: bytes, url: str, *, records: bool) -> tuple[dict, dict | None]:
    """(the manifest, ``records.json`` parsed whole or None) from the bytes of ``meta.json``, or
    of ``records.json`` when ``records`` (whose ``meta`` is the manifest); raises CorruptIndex
    naming ``url`` unless it is a manifest this client reads."""
    try:
        meta = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptIndex(f"invalid JSON: {exc}", url) from None
    held = None
    if records:
        if not isinstance(meta, dict) or not isinstance(meta.get("meta"), dict):
            raise CorruptIndex("expected {meta, records, terms, all_terms}; rebuild the site", url)
        meta, held = meta["meta"], meta
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise CorruptIndex(f"not a {FORMAT} version {VERSION} file", url)
    if meta.get("tokenizer") != TOKENIZER:
        raise CorruptIndex(f"tokenizer {meta.get('tokenizer')!r}, this client reads {TOKENIZER!r}", url)
    problem = meta_problem(meta)
    if problem:
        raise CorruptIndex(f"{problem}; rebuild the site", url)
    return meta, held


def checked_start(meta: dict, starts: list[int], held: dict, url: str) -> StartFile:
    """``records.json`` (parsed, ``held``) of the site whose manifest is ``meta`` (``starts``: its
    topics' first chunk numbers) checked: its records unpacked (one per chunk number)."""
    if not meta.get("records"):
        return StartFile(None, {}, False)
    topics = meta["topics"]
    try:
        # built record by record as hits ask (``Unpacked``); a row that does not unpack fails then
        records = Unpacked(held["records"], lambda n: topics[bisect.bisect_right(starts, n) - 1]["id"])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptIndex(f"records: cannot unpack ({exc!r}); rebuild the site", url) from None
    if len(records) != meta["chunks"]:
        raise CorruptIndex(f"records: {len(records)} records for {meta['chunks']} chunks; rebuild the site", url)
    terms, all_terms = held.get("terms"), held.get("all_terms")
    if not isinstance(terms, dict) or not isinstance(all_terms, bool):
        raise CorruptIndex("terms and all_terms: expected an object and a boolean; rebuild the site", url)
    return StartFile(records, terms, all_terms)


def start_file(meta: dict, starts: list[int], data: bytes, url: str) -> StartFile:
    """``checked_start`` of ``records.json``'s bytes ``data``, fetched after the manifest (a
    JSON error propagates: the fetch names it)."""
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise CorruptIndex("expected {meta, records, terms, all_terms}; rebuild the site", url)
    return checked_start(meta, starts, value, url)
