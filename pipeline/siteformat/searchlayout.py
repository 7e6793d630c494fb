"""Where the files of ``_search/`` live and the format's name and version: what the search
index's writer (``pipeline.search``) and its readers (``pipeline.client``, the browser's
``assets/searchindex.js``) agree on. The whole layout is ``pipeline.search.index``'s docstring.

Every file but the MUTABLE ones is content-named: ``<kind>/<hash>.<json|bin>`` (``content_path``).
"""

from __future__ import annotations

import re

FORMAT = "pipeline-search"
VERSION = 8
"""5: a topic too big for a bundle has its own term shards and record blocks (``topics/<i>/``);
6: records carry their source lines (``records.py`` rows) and ``meta.json`` the site's ``base_url``;
7: content-named files; postings by (document, chunk index) with term-frequency levels, the idf
counted by the reader; parts on a small site, segments for small topics, record blocks by
document groups; 8: vector shard rows of 4-bit values (``vectorshards``)."""

SEARCH_DIR = "_search"
META = "meta.json"
RECORDS = "records.json"
NODES = "nodes.json"  # the folder tree for a page's navigation (one request instead of every index.json)
MUTABLE = (META, RECORDS, NODES)
"""The files at fixed names (revalidated by readers); every other file is content-named."""
TERMS, PARTS, SEGMENTS, TOPIC_SHARDS, BLOCKS, VECTORS, CENTROIDS, WORDS = (
    "terms", "parts", "segments", "topics", "blocks", "vectors", "centroids", "words")
"""The folders of the content-named files, one a kind (``content_path``)."""
WORD_ROWS = ""
"""The key under which a site-wide term shard carries the static encoder's rows of its terms'
words, ``{word: base64 row}`` (no term is empty; ``pipeline.search.wordrows``); the manifest's
``encoder`` entry then says ``"words": "terms"``. A site without term shards (a small site's
parts) has word files instead, ``words/<hash>.json`` holding ``{WORD_ROWS: {...}}``, the entry's
``"words"`` their names (a term's file: ``shard_of(term, len(names))``)."""
WHOLE_WORD = re.compile(r"[a-z0-9]+")
"""A word a term shard can carry a row for: one whole ASCII token of the encoder's vocabulary."""


def content_path(kind: str, name: str) -> str:
    """A content-named file's path below ``_search/`` (``kind``: its folder, ``name``: its hash)."""
    return f"{kind}/{name}.{'bin' if kind in (VECTORS, CENTROIDS) else 'json'}"


def encoder_names(entry: dict | None) -> list[str]:
    """The paths under ``_search/`` of the files a manifest's ``encoder`` entry names."""
    if not entry:
        return []
    folder = entry["href"].rstrip("/")
    shards = -(-entry["count"] // entry["rows"])
    return [f"{folder}/{entry['vocab']}", f"{folder}/{entry['other']}", *(f"{folder}/{s}.bin" for s in range(shards))]
