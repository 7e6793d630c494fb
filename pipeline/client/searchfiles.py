"""The ``_search/`` files of one site as a client holds them: each fetched at most once, parsed by kind.

One job: the file cache under ``SearchIndex`` (its base class ``IndexFiles``). A file is fetched
through the site's transport the first time something asks for it, parsed as its kind (JSON, a
topic's ``_embeddings.bin``, a vector shard, ``records.json`` checked by ``searchmanifest``) and
kept for the ``Site``'s life; a 404 for vectors is kept too (that topic or document then has no
vectors). ``prefetch`` fetches several files concurrently over HTTP (one round trip); ``fetches``
counts every file fetched, so ``spent`` tells a query how many requests it has made. Which files a
query needs is ``searchplan``'s job, not this one's.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import orjson

from pipeline.client.searchmanifest import start_file
from pipeline.embedding.statictable import decode_rows as decode_static_rows
from pipeline.embedding.statictable import row_bytes
from pipeline.siteformat.vectorshards import decode_rows
from pipeline.siteformat.readerrors import CorruptIndex, NotFound
from pipeline.siteformat.searchlayout import META, RECORDS, SEARCH_DIR, VECTORS, WORD_ROWS, WORDS
from pipeline.siteformat.vectors import decode


_WORD_FILES = f"{SEARCH_DIR}/{WORDS}/"


class IndexFiles:
    """The ``_search/`` files of one site, fetched lazily through the site's transport."""

    def __init__(self, transport, meta: dict):
        self.transport = transport
        self.meta = meta
        self._files: dict[str, object] = {}
        self._rows: dict[str, dict] = {}  # term shard -> its word rows, decoded (``term_rows``)
        self._lock = threading.Lock()
        self._starts = [t["start"] for t in meta["topics"]]
        documents = meta["documents"]
        self.doc_starts = [0] * (len(documents) + 1)
        """Each document's first chunk number (and the chunk count last): document d holds chunks
        ``doc_starts[d]`` to ``doc_starts[d + 1] - 1``."""
        for d, count in enumerate(documents):
            self.doc_starts[d + 1] = self.doc_starts[d] + count
        self.fetches = 0
        """Files fetched from the transport (the manifest's included); ``settled``: as many
        when the last query ended, so a query's requests so far are the difference."""
        self.settled = 0
        self.word_fetches = 0
        """Word files fetched (``searchlayout.WORDS``): the static query encoder's, so not in
        ``fetches``, as the encoder's own files are not."""
        self._parsed: dict[str, object] | None = None
        """Parsed files shared by the cold copies of one index (``SearchIndex.cold``): a copy
        still fetches and counts a file, but does not parse what another copy parsed."""

    def _start_file(self, data: bytes, url: str):
        return start_file(self.meta, self._starts, data, url)

    def _get(self, rel: str, parse: Callable[[bytes, str], object]):
        with self._lock:
            if rel in self._files:
                return self._files[rel]
        data = self.transport.get(rel)
        with self._lock:
            if rel.startswith(_WORD_FILES):  # the query encoder's, outside a query's request budget
                self.word_fetches += 1
            else:
                self.fetches += 1
        value = self.shared(rel, lambda: parse(data, self.transport.locate(rel)))
        with self._lock:
            self._files[rel] = value
        return value

    def shared(self, key: str, make: Callable[[], object]):
        """``make()``, or what it gave a cold copy of this index before (``_parsed``)."""
        shared = self._parsed
        if shared is not None and key in shared:
            return shared[key]
        try:
            value = make()
        except orjson.JSONDecodeError as exc:
            raise CorruptIndex(f"invalid JSON: {exc}", self.transport.locate(key)) from None
        if shared is not None:
            shared[key] = value
        return value

    def _json(self, rel: str):
        return self._get(rel, lambda data, url: orjson.loads(data))

    def _vectors_file(self, rel: str):
        """A topic's decoded ``_embeddings.bin``, or None when it is gone (404: the topic then
        has no vectors); fetched once either way."""
        try:
            return self._get(rel, lambda data, url: decode(data, source=url))
        except NotFound:  # removed since the index was built
            with self._lock:
                self._files[rel] = None
            return None

    def prefetch(self, rels: list[str]) -> None:
        """Fetch the files ``rels`` (JSON, or ``.bin`` vectors) not held yet, concurrently over
        HTTP: one round trip for all of them."""
        from pipeline.client.transport import HttpTransport

        with self._lock:
            todo = list(dict.fromkeys(r for r in rels if r not in self._files))
        if len(todo) > 1 and isinstance(self.transport, HttpTransport):
            with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
                list(pool.map(self._fetch, todo))

    def _fetch(self, rel: str):
        """File ``rel`` parsed as its kind: vectors, records.json (unpacked) or JSON."""
        if rel.startswith(f"{SEARCH_DIR}/{VECTORS}/"):
            return self._shard_file(rel)
        if rel.endswith(".bin"):
            return self._vectors_file(rel)
        if rel == f"{SEARCH_DIR}/{RECORDS}":
            return self._get(rel, self._start_file)
        return self._json(rel)

    def load(self, rels: list[str]) -> None:
        """Fetch the files ``rels`` now (concurrently where ``prefetch`` can)."""
        self.prefetch(rels)
        for rel in rels:
            self._fetch(rel)

    def term_rows(self, rel: str) -> dict[str, np.ndarray]:
        """{word: its static encoder row} that the term shard ``rel`` carries
        (``searchlayout.WORD_ROWS``), fetched if not held, decoded once."""
        with self._lock:
            if rel in self._rows:
                return self._rows[rel]
        entry = self.meta["encoder"]
        dtype = entry.get("word_dtype") or entry["dtype"]
        width = row_bytes(dtype, int(entry["dimension"]))
        held = self._json(rel).get(WORD_ROWS) or {}
        try:
            data = b"".join(base64.b64decode(held[w], validate=True) for w in held)
        except (ValueError, TypeError):
            data = None
        if data is None or len(data) != width * len(held):
            raise CorruptIndex("a term shard's word rows are not the encoder's rows; rebuild the site", self.transport.locate(rel))
        matrix = decode_static_rows(data, dtype, int(entry["dimension"]))
        rows = dict(zip(held, matrix))
        with self._lock:
            self._rows[rel] = rows
        return rows

    def _shard_file(self, rel: str):
        """A vector shard's (unit rows, present) (``vectorshards.decode_rows``), or None when it
        is gone (404: its documents then have no vectors); fetched once either way."""
        dimension = self.meta["vectors"]["dimension"]

        def parse(data: bytes, url: str):
            try:
                return decode_rows(data, dimension)
            except ValueError as exc:
                raise CorruptIndex(f"vector shard: {exc}; rebuild the site", url) from None

        try:
            return self._get(rel, parse)
        except NotFound:
            with self._lock:
                self._files[rel] = None
            return None

    def centroids(self):
        """The topic centroids: inline in ``meta.json`` (decoded once, no fetch), or
        ``centroids.bin`` on a site of many topics (fetched once)."""
        info = self.meta["vectors"]
        if "centroids" not in info:
            return self._get(f"{SEARCH_DIR}/{info['href']}", lambda data, url: decode(data, source=url))
        with self._lock:
            table = self._files.get(f"{SEARCH_DIR}/{META}#centroids")
        if table is None:
            table = decode(base64.b64decode(info["centroids"]), source=self.transport.locate(f"{SEARCH_DIR}/{META}"))
            with self._lock:
                self._files[f"{SEARCH_DIR}/{META}#centroids"] = table
        return table

    def spent(self) -> int:
        """Requests made since the last query ended (the manifest's, if this query opened it)."""
        with self._lock:
            return self.fetches - self.settled
