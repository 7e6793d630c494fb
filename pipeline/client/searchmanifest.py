"""The ``_search/`` manifest and ``records.json`` as a client reads them: parsed and checked.

One job: turn the bytes of ``meta.json`` or ``records.json`` into a manifest (and the records
and postings ``records.json`` carries) that the rest of the client may trust, or raise
``CorruptIndex`` naming the file and what is wrong (a format, version or tokenizer this client
does not read, a missing or mistyped field, records that do not cover their chunks: also for
the records of a part, segment or block, ``unpacked``). No fetch:
``SearchIndex.open`` fetches, this checks. ``searchmanifest.js`` (``checkedStart``) is its twin.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import orjson

from pipeline.siteformat.packedrecords import Unpacked
from pipeline.siteformat.searchtext import TOKENIZER
from pipeline.siteformat.readerrors import CorruptIndex
from pipeline.siteformat.searchlayout import FORMAT, RECORDS, VERSION

@dataclass(frozen=True)
class StartFile:
    """``records.json`` as read: the records (unpacked, by chunk number; None on a site whose
    parts or blocks hold them) and the postings of the terms it holds."""

    records: Unpacked | None
    terms: dict


def _count(value, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _ranges(value, what: str) -> str | None:
    """What is wrong with a list of [first document, documents, name] entries, or None."""
    if not isinstance(value, list) or not all(
        isinstance(e, list) and len(e) == 3 and _count(e[0]) and _count(e[1]) and isinstance(e[2], str) for e in value
    ):
        return f"{what}: expected [[first document, documents, name]]"
    return None


def meta_problem(meta: dict) -> str | None:
    """What is wrong with a ``meta.json`` that has the right format and version, or None."""
    if not _count(meta.get("chunks")):
        return "chunks: expected a count"
    documents = meta.get("documents")
    if not isinstance(documents, list) or not all(_count(c) for c in documents) or sum(documents) != meta["chunks"]:
        return "documents: expected each document's chunk count, summing to chunks"
    if not isinstance((meta.get("scoring") or {}).get("scale"), (int, float)):
        return "scoring.scale: expected a number"
    if not isinstance(meta.get("prompts"), list) or not isinstance(meta.get("topics"), list):
        return "prompts and topics: expected lists"
    keys = ("id", "start", "count", "first", "docs", "documents", "embeddings", "segments", "shards", "blocks")
    for i, t in enumerate(meta["topics"]):
        if not isinstance(t, dict) or not all(k in t for k in keys):
            return f"topics[{i}]: expected {', '.join(keys)}"
        for name in ("segments", "blocks"):
            if t[name] is not None and _ranges(t[name], f"topics[{i}].{name}"):
                return _ranges(t[name], f"topics[{i}].{name}")
        if t["shards"] is not None and (not isinstance(t["shards"], list) or not t["shards"] or not all(isinstance(h, str) for h in t["shards"])):
            return f"topics[{i}].shards: expected a list of names or null"
    if meta.get("records") not in (None, RECORDS):
        return f"records: expected {RECORDS!r} or null"
    if not isinstance(meta.get("base_url"), str) or not meta["base_url"]:
        return "base_url: expected the site's base URL"
    if meta.get("parts") is not None and _ranges(meta["parts"], "parts"):
        return _ranges(meta["parts"], "parts")
    terms = meta.get("terms")
    if terms is not None and (not isinstance(terms, list) or not terms or not all(isinstance(h, str) for h in terms)):
        return "terms: expected a list of names or null"
    if (meta.get("parts") is None) == (terms is None):
        return "parts and terms: expected exactly one"
    vectors = meta.get("vectors")
    if vectors is not None and not (isinstance(vectors, dict) and (isinstance(vectors.get("centroids"), str) or isinstance(vectors.get("href"), str))):
        return "vectors: expected centroids (base64 text) or href"
    if vectors is not None:
        if not isinstance(vectors.get("dimension"), int) or _ranges(vectors.get("shards"), "vectors.shards"):
            return "vectors: expected dimension and shards"
        if sum(n for _, n, _ in vectors["shards"]) != len(documents):
            return "vectors: shards must cover every document"
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
            raise CorruptIndex("expected {meta, records, terms}; rebuild the site", url)
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
    terms = held.get("terms")
    if not isinstance(terms, dict):
        raise CorruptIndex("terms: expected an object; rebuild the site", url)
    if not meta.get("records"):
        return StartFile(None, terms)
    records = unpacked(held.get("records"), meta, starts, 0, meta["chunks"], url)
    return StartFile(records, terms)


def unpacked(packed, meta: dict, starts: list[int], first: int, count: int, url: str) -> Unpacked:
    """The packed records of chunk numbers ``first`` .. ``first + count - 1`` (a file's; ``starts``:
    the topics' first chunk numbers), checked to hold one record a chunk."""
    topics = meta["topics"]
    try:
        # built record by record as hits ask (``Unpacked``); a row that does not unpack fails then
        records = Unpacked(packed, lambda n: topics[bisect.bisect_right(starts, first + n) - 1]["id"])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptIndex(f"records: cannot unpack ({exc!r}); rebuild the site", url) from None
    if len(records) != count:
        raise CorruptIndex(f"records: {len(records)} records for {count} chunks; rebuild the site", url)
    return records


def start_file(meta: dict, starts: list[int], data: bytes, url: str) -> StartFile:
    """``checked_start`` of ``records.json``'s bytes ``data``, fetched after the manifest (a
    JSON error propagates: the fetch names it)."""
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise CorruptIndex("expected {meta, records, terms}; rebuild the site", url)
    return checked_start(meta, starts, value, url)
