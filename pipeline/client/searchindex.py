"""Search through a site's ``_search/`` index with bounded fetches (used by ``Site.search``).

What a cold unscoped query fetches: ``_search/records.json`` (the root manifest, which carries
the topic centroids, with every chunk record packed beside it and the postings of the rarest
terms); one ``terms/<s>.json`` per distinct query term's shard, for the terms records.json does
not hold; then, once the lexical ranking is known, for vectors the ``vectors/<i>.bin`` shards
holding the documents of the first lexical hits (``lexical_documents``: in hit order, at most
``LEX_DOCUMENTS`` documents and ``VECTOR_ROWS`` rows); with a ``request_budget`` (none by
default), at most the budget left (the budget minus the requests this query already made, at
least 1; held files cost nothing): documents whose shard is not fetched get no vector evidence. A query without lexical
hits reads instead the ``_embeddings.bin`` of the topics whose centroids are closest to the
query (``vector_topics``, no more of them than the budget left), and so does a topic-scoped
query whose topics hold at most ``VECTOR_ROWS`` rows (``whole_topics``: those topics' files). On a site too big for records.json to hold the
records (``pipeline.search.index.RECORDS_INLINE_BYTES``), the ``chunks/<b>.json`` blocks holding
the results it returns, once the ranking is known. A query with a ``topic`` filter starts from
``meta.json`` (the manifest alone). A topic-scoped query (a
``topic`` filter matching at most ``BUNDLE_TOPICS`` topics: ``scope``) reads each matched topic's
own files instead of site-wide shards and blocks: a small topic's ``topics/<i>.json`` bundle, a
bigger one's ``topics/<i>/terms/<s>.json`` (one per distinct query term's shard) and, once the
ranking is known, the ``topics/<i>/chunks/<b>.json`` blocks of its hits: postings and records of
those topics only, and never another topic's vectors. Every file is fetched at most once per
``Site``. Every path gives the same ranking (a topic's files hold the very impacts of the
site-wide shards). Rankings come from ``pipeline.search.rank`` (the browser's ``lexical.js`` is
its twin).
"""

from __future__ import annotations

import base64
import bisect
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import orjson

from pipeline.client.errors import CorruptIndex, NotFound
from pipeline.client.records import ChunkRef, Keyword
from pipeline.client.ranking import norm_keyword
from pipeline.search import rank
from pipeline.search.rank import DEFAULT_FUSION
from pipeline.search.index import FORMAT, META, RECORDS, SEARCH_DIR, VERSION, topic_dir
from pipeline.search.records import Unpacked
from pipeline.search.text import TOKENIZER, clean_heading, shard_of
from pipeline.search.vectorshards import VECTORS_DIR, decode_rows, row_bytes
from pipeline.simhash import simhash64
from pipeline.site.vectors import decode

VECTOR_TOPICS = 3
"""At most this many topics' vectors per query (closest centroids first)..."""
VECTOR_ROWS = 600
"""...and no more rows than this in all (~230 kB of int8 vectors), except that the closest
topic is always taken: a site of big topics fetches one, a site of small ones up to three."""
BUNDLE_TOPICS = 3
"""A topic filter matching at most this many topics reads their own files (bundles or topic
shards and blocks); a broader one, the site-wide files."""
LEX_DOCUMENTS = 5
"""Vector candidates: the rows of the documents of the first lexical hits, at most this many
documents (and VECTOR_ROWS rows, the first document always): on the three eval sets that equals
exhaustive vectors, where the closest topics' files lose 9 points R@5 on realdocs
(docs/DECISIONS.md)."""
REQUEST_BUDGET: int | None = 6
"""The default ``request_budget``: requests a cold query may make before its vectors are cut off
(issue 11's "<= 6 requests at 10k chunks"): its vector shards take what is left, at least one,
and when that leaves some chosen documents without vectors the fusion only re-orders the chunks
that have one, within their lexical places (``rank.within_slots``). None: no cap (every chosen
document's shard, up to LEX_DOCUMENTS requests). On a site whose records.json carries every term
(up to ~2,500 chunks of real documentation: the three eval sets) the cap never cuts; on a bigger
one it costs 1.4 points R@5 on the realdocs set modelled so (docs/DECISIONS.md "A default cap of
6 requests")."""


@dataclass(frozen=True)
class StartFile:
    """``records.json`` as read: the records (unpacked, by chunk number; None on a site too big,
    whose blocks hold them), the postings of the terms it holds, and whether those are all."""

    records: Unpacked | None
    terms: dict
    all_terms: bool


@dataclass(frozen=True)
class Filters:
    """What a hit must satisfy besides its rank. ``None`` means no condition."""

    topic: str | None = None
    keyword: str | None = None
    is_code: bool | None = None
    header_path: str | None = None  # prefix of the cleaned header path, case-insensitive
    entry_type: str | None = None  # front matter ``type``
    tags: tuple[str, ...] = ()  # every one among the front matter ``tags``
    promotion_level: str | None = None  # the document's level, exactly

    def topic_ok(self, topic_id: str) -> bool:
        if self.topic is None:
            return True
        prefix = self.topic.strip("/")
        return not prefix or topic_id == prefix or topic_id.startswith(prefix + "/")

    def passes(self, record: dict) -> bool:
        if self.is_code is not None and bool(record["is_code"]) != self.is_code:
            return False
        if self.keyword is not None:
            wanted = norm_keyword(self.keyword)
            if not any(norm_keyword(name) == wanted for name, _ in record["keywords"]):
                return False
        if self.header_path is not None:
            if not clean_heading(record["header_path"]).lower().startswith(clean_heading(self.header_path).lower()):
                return False
        if self.entry_type is not None and record.get("type") != self.entry_type:
            return False
        if self.promotion_level is not None and record.get("promotion_level", "standard") != self.promotion_level:
            return False
        return all(t in record.get("tags", []) for t in self.tags)


def _meta_problem(meta: dict) -> str | None:
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


class SearchIndex:
    """The ``_search/`` files of one site, fetched lazily through the site's transport."""

    def __init__(self, transport, meta: dict):
        self.transport = transport
        self.meta = meta
        self._files: dict[str, object] = {}
        self._lock = threading.Lock()
        self._starts = [t["start"] for t in meta["topics"]]
        self.fetches = 0
        """Files fetched from the transport (the manifest's included); ``settled``: as many
        when the last query ended, so a query's requests so far are the difference."""
        self.settled = 0
        vectors = meta.get("vectors") or {}
        self._doc_starts = list(np.cumsum([0, *vectors.get("documents", [])[:-1]]).tolist()) if vectors.get("documents") else []
        self._shard_starts = [start for start, _ in vectors.get("shards", [])]

    @classmethod
    def open(cls, transport, *, records: bool = False) -> "SearchIndex | None":
        """The site's index, or None when it has none (a site built before ``_search/``).

        ``records``: read the manifest from ``records.json`` (which also holds every record on a
        site small enough), as an unscoped query will need records; else from ``meta.json``."""
        rel = f"{SEARCH_DIR}/{RECORDS if records else META}"
        try:
            data = transport.get(rel)
        except NotFound:
            if records:  # a site built before records.json: its meta.json says which version
                return cls.open(transport)
            return None
        try:
            meta = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CorruptIndex(f"invalid JSON: {exc}", transport.locate(rel)) from None
        held = None
        if records:
            if not isinstance(meta, dict) or not isinstance(meta.get("meta"), dict):
                raise CorruptIndex("expected {meta, records, terms, all_terms}; rebuild the site", transport.locate(rel))
            meta, held = meta["meta"], meta
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise CorruptIndex(f"not a {FORMAT} version {VERSION} file", transport.locate(rel))
        if meta.get("tokenizer") != TOKENIZER:
            raise CorruptIndex(f"tokenizer {meta.get('tokenizer')!r}, this client reads {TOKENIZER!r}", transport.locate(rel))
        problem = _meta_problem(meta)
        if problem:
            raise CorruptIndex(f"{problem}; rebuild the site", transport.locate(rel))
        index = cls(transport, meta)
        index.fetches = 1  # the manifest
        if records and meta.get("records"):
            index._files[f"{SEARCH_DIR}/{RECORDS}"] = index._start(held, transport.locate(rel))
        return index

    def _start(self, held: dict, url: str) -> StartFile:
        """``records.json`` (parsed, ``held``) checked: its records unpacked (one per chunk number)."""
        if not self.meta.get("records"):
            return StartFile(None, {}, False)
        topics = self.meta["topics"]
        try:
            # built record by record as hits ask (``Unpacked``); a row that does not unpack fails then
            records = Unpacked(held["records"], lambda n: topics[bisect.bisect_right(self._starts, n) - 1]["id"])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptIndex(f"records: cannot unpack ({exc!r}); rebuild the site", url) from None
        if len(records) != self.meta["chunks"]:
            raise CorruptIndex(f"records: {len(records)} records for {self.meta['chunks']} chunks; rebuild the site", url)
        terms, all_terms = held.get("terms"), held.get("all_terms")
        if not isinstance(terms, dict) or not isinstance(all_terms, bool):
            raise CorruptIndex("terms and all_terms: expected an object and a boolean; rebuild the site", url)
        return StartFile(records, terms, all_terms)

    def _start_file(self, data: bytes, url: str) -> StartFile:
        value = orjson.loads(data)
        if not isinstance(value, dict):
            raise CorruptIndex("expected {meta, records, terms, all_terms}; rebuild the site", url)
        return self._start(value, url)

    def _get(self, rel: str, parse: Callable[[bytes, str], object]):
        with self._lock:
            if rel in self._files:
                return self._files[rel]
        data = self.transport.get(rel)
        with self._lock:
            self.fetches += 1
        try:
            value = parse(data, self.transport.locate(rel))
        except orjson.JSONDecodeError as exc:
            raise CorruptIndex(f"invalid JSON: {exc}", self.transport.locate(rel)) from None
        with self._lock:
            self._files[rel] = value
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
        if rel.startswith(f"{SEARCH_DIR}/{VECTORS_DIR}/"):
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

    # --- the rankings -----------------------------------------------------------------------

    def allowed(self, filters: Filters) -> Callable[[int], bool]:
        """A test on chunk numbers: inside a topic the filter allows (no fetch)."""
        ranges = [(t["start"], t["start"] + t["count"]) for t in self.meta["topics"] if filters.topic_ok(t["id"])]
        return lambda n: any(a <= n < b for a, b in ranges)

    def prompts(self, query: str, filters: Filters, max_distance: int | None = None) -> list[tuple[int, int]]:
        """[(chunk number, distance)] of SimHash prompt matches (no fetch beyond meta.json).

        The radius: ``max_distance`` if given, else the topic's published one, else
        ``DEFAULT_MAX_DISTANCE``."""
        from pipeline.client.site import DEFAULT_MAX_DISTANCE

        radius_of = []
        for t in self.meta["topics"]:
            r = t.get("radius")
            r = max_distance if max_distance is not None else (DEFAULT_MAX_DISTANCE if r is None else r)
            radius_of.append((t["start"], t["start"] + t["count"], r))
        allowed = self.allowed(filters)
        entries = []
        for hex_hash, number in self.meta["prompts"]:
            if allowed(number):
                radius = next(r for a, b, r in radius_of if a <= number < b)
                entries.append((int(hex_hash, 16), number, radius))
        return rank.prompt_ranking(entries, simhash64(query))

    def scope(self, filters: Filters) -> list[int] | None:
        """The numbers of the topics whose own files a query with ``filters`` reads instead of
        the site-wide shards and record blocks: those the ``topic`` filter matches, when it is
        set and matches 1 to ``BUNDLE_TOPICS`` topics that all have a bundle or their own shards;
        else None (no fetch)."""
        if filters.topic is None:
            return None
        matched = [i for i, t in enumerate(self.meta["topics"]) if filters.topic_ok(t["id"])]
        if not 0 < len(matched) <= BUNDLE_TOPICS or not all(self.meta["topics"][i].get("bundle") or self.meta["topics"][i].get("shards")
                                                             for i in matched):
            return None
        return matched

    def bundles(self, filters: Filters) -> list[str]:
        """The bundle files among the ``scope`` topics' (read whole, before any ranking: their
        records serve prompt hits too); [] for an unscoped query (no fetch)."""
        return [f"{SEARCH_DIR}/{self.meta['topics'][i]['bundle']}" for i in self.scope(filters) or () if self.meta["topics"][i].get("bundle")]

    def scoped_files(self, scope: list[int], terms: list[str]) -> list[str]:
        """The files that hold the postings of ``terms`` in the ``scope`` topics: a topic's bundle,
        or its own shard of each term (``topics/<i>/terms/<fnv1a32(term) % shards>.json``), in
        topic then term order, each once (no fetch)."""
        files = []
        for i in scope:
            topic = self.meta["topics"][i]
            if topic.get("bundle"):
                files.append(f"{SEARCH_DIR}/{topic['bundle']}")
            else:
                files += [f"{SEARCH_DIR}/{topic_dir(i)}/terms/{shard_of(term, topic['shards'])}.json" for term in terms]
        return list(dict.fromkeys(files))

    def whole_topics(self, filters: Filters) -> bool:
        """Whether a query with ``filters`` reads its vectors from the matched topics'
        ``_embeddings.bin`` files whole instead of vector shards: a ``topic`` filter matching at
        most ``VECTOR_TOPICS`` topics of at most ``VECTOR_ROWS`` rows in all, each with vectors.
        A request a topic instead of one a document (a query scoped to one small topic: manifest,
        bundle, vectors), and every row of the scope as candidates; the same whether the topics
        have bundles or not, so every layout ranks alike (no fetch)."""
        if filters.topic is None or not self.meta.get("vectors"):
            return False
        matched = [t for t in self.meta["topics"] if filters.topic_ok(t["id"])]
        return (0 < len(matched) <= VECTOR_TOPICS and sum(t["count"] for t in matched) <= VECTOR_ROWS
                and all(t.get("embeddings") for t in matched))

    def _held_start(self) -> StartFile | None:
        """``records.json`` when it is fetched and holds records (and so terms), else None."""
        rel = self.records_file()
        with self._lock:
            return self._files.get(rel) if rel else None

    def _shard_of(self, term: str) -> str | None:
        """The shard file ``term``'s postings need, or None when a fetched records.json holds
        them (or holds every term, so the term is in none)."""
        start = self._held_start()
        if start is not None and (term in start.terms or start.all_terms):
            return None
        return f"{SEARCH_DIR}/terms/{shard_of(term, self.meta['shards'])}.json"

    def lexical_files(self, query: str, filters: Filters) -> list[str]:
        """The files ``lexical`` reads for ``query`` (no fetch)."""
        scope = self.scope(filters)
        if scope is not None:
            return self.scoped_files(scope, rank.query_terms(query))
        return list(dict.fromkeys(r for r in map(self._shard_of, rank.query_terms(query)) if r))

    def lexical(self, query: str, filters: Filters) -> list[tuple[int, int]]:
        """[(chunk number, score)] by BM25F impacts; fetches one shard per distinct query term's
        shard (but for terms a fetched records.json holds), or for a scoped query the scope's
        topics' own files (``scoped_files``)."""
        query = rank.query_terms(query)
        scope = self.scope(filters)
        if scope is not None:
            self.prefetch(self.scoped_files(scope, query))
            postings = {}
            for term in query:
                # topics are contiguous ranges in site order (the scope ascends), so the
                # concatenation stays sorted
                entries = [held.get(term) for held in (self._topic_terms(i, term) for i in scope)]
                postings[term] = [p for entry in entries if entry for p in rank.decode_postings(entry)]
            return rank.lexical_ranking(postings, self.allowed(filters))
        postings = {}
        self.prefetch(list(dict.fromkeys(r for r in map(self._shard_of, query) if r)))
        start = self._held_start()
        for term in query:
            rel = self._shard_of(term)
            entry = start.terms.get(term) if rel is None else self._json(rel).get(term)
            postings[term] = rank.decode_postings(entry) if entry else []
        return rank.lexical_ranking(postings, self.allowed(filters))

    def _topic_terms(self, i: int, term: str) -> dict:
        """{term: postings} of topic ``i`` that holds ``term``'s: its bundle's terms, or its own
        shard of ``term`` (fetched once)."""
        topic = self.meta["topics"][i]
        if topic.get("bundle"):
            return self._json(f"{SEARCH_DIR}/{topic['bundle']}")["terms"]
        return self._json(f"{SEARCH_DIR}/{topic_dir(i)}/terms/{shard_of(term, topic['shards'])}.json")

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

    def vector_topics(self, query_vector: np.ndarray, filters: Filters, topics: int = VECTOR_TOPICS) -> list[dict]:
        """The allowed topics whose vectors ``vector`` reads: the closest centroids first, at most
        ``topics`` of them and ``VECTOR_ROWS`` rows (the closest always)."""
        if not self.meta.get("vectors"):
            return []
        centroids = self.centroids()
        by_id = {t["id"]: t for t in self.meta["topics"]}
        names = [name for name, _ in centroids.documents]
        ranked = rank.vector_ranking(list(range(len(names))), centroids.vectors, query_vector)
        chosen: list[dict] = []
        rows_taken = 0
        for r, _ in ranked:
            topic = by_id.get(names[r])
            if topic is None or not filters.topic_ok(topic["id"]):
                continue
            if len(chosen) == topics or (chosen and rows_taken + topic["count"] > VECTOR_ROWS):
                break
            chosen.append(topic)
            rows_taken += topic["count"]
        return chosen

    def vector(self, query_vector: np.ndarray, filters: Filters, *, topics: int = VECTOR_TOPICS) -> list[tuple[int, float]]:
        """[(chunk number, cosine)] over the ``vector_topics`` chosen for the query."""
        numbers: list[int] = []
        rows = []
        for topic in self.vector_topics(query_vector, filters, topics):
            if not topic.get("embeddings"):
                continue
            table = self._vectors_file(topic["embeddings"])
            if table is None:  # removed since the index was built: that topic has no vectors
                continue
            offsets, start = {}, topic["start"]
            # documents null: the table's rows are the topic's chunks in order
            for name, count in table.documents if topic["documents"] is None else topic["documents"]:
                offsets[name] = (start, count)
                start += count
            row = 0
            for name, count in table.documents:
                first, listed = offsets.get(name, (None, 0))
                for i in range(count):
                    if first is not None and i < listed:
                        numbers.append(first + i)
                        rows.append(table.vectors[row])
                    row += 1
        if not numbers:
            return []
        return rank.vector_ranking(numbers, np.vstack(rows), query_vector)

    def spent(self) -> int:
        """Requests made since the last query ended (the manifest's, if this query opened it)."""
        with self._lock:
            return self.fetches - self.settled

    def lexical_documents(self, lexical: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """[(first chunk, rows)] of the documents holding the first ``lexical`` hits, in hit
        order: at most ``LEX_DOCUMENTS`` and ``VECTOR_ROWS`` rows, the first always."""
        counts = (self.meta.get("vectors") or {}).get("documents")
        if not counts:
            return []
        chosen: list[tuple[int, int]] = []
        seen: set[int] = set()
        taken = 0
        for number, _ in lexical:
            d = bisect.bisect_right(self._doc_starts, number) - 1
            if d in seen:
                continue
            seen.add(d)
            if len(chosen) == LEX_DOCUMENTS or (chosen and taken + counts[d] > VECTOR_ROWS):
                break
            chosen.append((self._doc_starts[d], counts[d]))
            taken += counts[d]
        return chosen

    def _shard_rel(self, number: int) -> str:
        return f"{SEARCH_DIR}/{VECTORS_DIR}/{bisect.bisect_right(self._shard_starts, number) - 1}.bin"

    def document_shards(self, documents: list[tuple[int, int]], budget: int) -> tuple[list[tuple[int, int]], list[str]]:
        """(the ``documents`` whose shard is read, the shard files to fetch): in document order,
        a held shard free, at most ``budget`` others (no fetch)."""
        kept, todo = [], []
        with self._lock:
            held = set(self._files)
        for document in documents:
            rel = self._shard_rel(document[0])
            if rel not in held and rel not in todo:
                if len(todo) >= budget:
                    continue  # over the budget: this document gets no vector evidence
                todo.append(rel)
            kept.append(document)
        return kept, todo

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

    def document_vector(self, lexical: list[tuple[int, int]], query_vector: np.ndarray, budget: int) -> list[tuple[int, float]]:
        """[(chunk number, cosine)] over the rows of ``lexical_documents`` whose shards the
        ``budget`` reaches (``document_shards``), fetched concurrently."""
        documents, todo = self.document_shards(self.lexical_documents(lexical), budget)
        self.prefetch(todo)
        numbers, rows = [], []
        for first, count in documents:
            rel = self._shard_rel(first)
            shard = self._shard_file(rel)
            if shard is None:
                continue
            matrix, present = shard
            offset = first - self._shard_starts[int(rel.rsplit("/", 1)[1][:-4])]
            for i in range(count):
                if present[offset + i]:
                    numbers.append(first + i)
                    rows.append(matrix[offset + i])
        if not numbers:
            return []
        return rank.vector_ranking(numbers, np.vstack(rows), query_vector)

    # --- records ------------------------------------------------------------------------------

    def _held_bundle(self, number: int) -> tuple[dict, int] | None:
        """(the bundle holding ``number``'s record, its topic's start) when it is already fetched."""
        topic = self.meta["topics"][bisect.bisect_right(self._starts, number) - 1] if self._starts else None
        rel = f"{SEARCH_DIR}/{topic['bundle']}" if topic and topic.get("bundle") else None
        with self._lock:
            bundle = self._files.get(rel) if rel else None
        return (bundle, topic["start"]) if bundle is not None else None

    def records_file(self) -> str | None:
        """``_search/records.json`` when it holds the records (a site small enough), else None."""
        return f"{SEARCH_DIR}/{RECORDS}" if self.meta.get("records") else None

    def _record_file(self, number: int, scope: list[int] | None = None) -> str | None:
        """The file ``number``'s record needs, or None when a fetched bundle holds it: its topic's
        own record block when ``scope`` (the query's ``scope()``) holds that topic and it has no
        bundle; else records.json, else the site-wide block."""
        if self._held_bundle(number):
            return None
        if scope:
            i = bisect.bisect_right(self._starts, number) - 1
            topic = self.meta["topics"][i]
            if i in scope and topic.get("shards"):
                return f"{SEARCH_DIR}/{topic_dir(i)}/chunks/{(number - topic['start']) // self.meta['block']}.json"
        return self.records_file() or f"{SEARCH_DIR}/chunks/{number // self.meta['block']}.json"

    def record(self, number: int, scope: list[int] | None = None) -> dict:
        """The chunk record of ``number``: from its topic's bundle when fetched, else from the file
        ``_record_file`` names (fetched once)."""
        held = self._held_bundle(number)
        if held is not None:
            bundle, start = held
            return bundle["records"][number - start]
        rel = self._record_file(number, scope)
        if rel == self.records_file():
            try:
                return self._fetch(rel).records[number]
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                raise CorruptIndex(f"records: cannot unpack chunk {number} ({exc!r}); rebuild the site",
                                   self.transport.locate(rel)) from None
        block = self.meta["block"]
        if rel.startswith(f"{SEARCH_DIR}/topics/"):  # a topic's own blocks count from its start
            return self._json(rel)[(number - self.meta["topics"][bisect.bisect_right(self._starts, number) - 1]["start"]) % block]
        return self._json(rel)[number % block]

    def chunk_ref(self, record: dict) -> ChunkRef:
        return ChunkRef(
            topic=record["topic"],
            document=record["document"],
            source=record["source"],
            index=record["index"],
            path=record["path"],
            href=self.transport.locate(record["path"]),
            title=record["title"],
            header_path=record["header_path"],
            is_code=record["is_code"],
            keywords=tuple(Keyword(name, score) for name, score in record["keywords"]),
            prompt_hashes=tuple(int(h, 16) for h in record["prompt_hashes"]),
            promotion_level=record.get("promotion_level", "standard"),
        )

    def select(self, numbers: list[int], filters: Filters, k: int) -> list[tuple[int, dict]]:
        """The first ``k`` of ``numbers`` (deduplicated) whose records pass ``filters``."""
        out, seen = [], set()
        scope = self.scope(filters)
        self.prefetch([r for r in (self._record_file(n, scope) for n in list(dict.fromkeys(numbers))[:k]) if r])
        for number in numbers:
            if number in seen:
                continue
            seen.add(number)
            record = self.record(number, scope)
            if filters.passes(record):
                out.append((number, record))
                if len(out) == k:
                    break
        return out


def indexed_search(
    index: SearchIndex,
    query: str,
    k: int,
    filters: Filters,
    *,
    method: str,
    max_distance: int | None = None,
    embed: Callable[[str], np.ndarray | None] | None = None,
    fusion: str = DEFAULT_FUSION,
    vector_topics: int = VECTOR_TOPICS,
    sentences: bool = False,
    request_budget: int | None = REQUEST_BUDGET,
) -> list:
    """The ``k`` best hits by ``method`` (``auto``, ``hybrid``, ``lexical``, ``simhash``).

    ``auto``: SimHash prompt matches first, then the hybrid ranking. ``hybrid``: lexical and
    vector rankings fused (``fusion``); without vectors (no ``embed``, it returns None, or the
    site has none) the lexical ranking alone. Filters other than ``topic`` select among the
    ranked chunks in rank order (records fetched as the walk needs them).
    ``sentences`` (hybrid, score fusion): the first ``rank.RERANK_DEPTH`` fused chunks that pass
    the filters are re-ordered by ``rank.sentence_rerank``: their texts fetched and each
    sentence embedded with ``embed`` (up to ten chunk requests and ~60 embeddings a query).
    Vector candidates: see the module docstring (the request budget counts from the end of the
    previous query on this index, ``SearchIndex.spent``).
    """
    try:
        return _indexed_search(index, query, k, filters, method=method, max_distance=max_distance, embed=embed,
                               fusion=fusion, vector_topics=vector_topics, sentences=sentences, request_budget=request_budget)
    finally:
        with index._lock:
            index.settled = index.fetches  # the next query's requests count from here


def _indexed_search(index, query, k, filters, *, method, max_distance, embed, fusion, vector_topics, sentences, request_budget) -> list:
    from pipeline.client.records import Hit
    from pipeline.simhash import BITS

    out: list[Hit] = []
    taken: set[int] = set()
    if method != "simhash":
        index.load(index.bundles(filters))  # prompt hits then read their records from the bundles too
    if method in ("auto", "simhash"):
        matches = index.prompts(query, filters, max_distance)
        distance = dict(matches)
        for number, record in index.select([n for n, _ in matches], filters, k):
            d = distance[number]
            out.append(Hit(index.chunk_ref(record), 1.0 - d / BITS, "simhash", d))
            taken.add(number)
        if method == "simhash" or len(out) >= k:
            return out[:k]
    query_vector = None
    if method in ("auto", "hybrid") and embed is not None and index.meta.get("vectors"):
        query_vector = embed(query)
    # the term shards (or bundles) in one concurrent round trip
    files = index.lexical_files(query, filters)
    if index.scope(filters) is None and index.records_file():
        # the records too, in the same round: with records.json no hit waits for a record block
        files.append(index.records_file())
    index.prefetch(files)
    lexical = index.lexical(query, filters)
    vector: list[tuple[int, float]] = []
    partial = False  # whether the budget left some chosen documents without vectors
    if query_vector is not None:
        # then the vectors, in a second round: those of the lexical hits' documents, within the
        # requests left; without a lexical hit, those of the closest topics
        # None: no cap, every chosen document's shard (at most LEX_DOCUMENTS)
        budget = LEX_DOCUMENTS if request_budget is None else max(1, request_budget - index.spent())
        if lexical and not index.whole_topics(filters):
            chosen = index.lexical_documents(lexical)
            partial = len(index.document_shards(chosen, budget)[0]) < len(chosen)  # before the fetch makes them held
            vector = index.document_vector(lexical, query_vector, budget)
        else:  # no lexical hit, or a scope small enough to read its topics' files whole
            chosen = index.vector_topics(query_vector, filters, min(vector_topics, budget))
            index.prefetch([t["embeddings"] for t in chosen if t.get("embeddings")])
            vector = index.vector(query_vector, filters, topics=min(vector_topics, budget))
    if method == "lexical" or not vector:
        scale = index.meta["scoring"]["scale"]
        ranked, label = [(n, s * scale) for n, s in lexical], "lexical"
    else:
        ranked, label = rank.fuse(lexical, vector, fusion), "hybrid"
        if partial:  # the vectors re-order only the chunks that have one, within their lexical places
            ranked = rank.within_slots(lexical, ranked, {n for n, _ in vector})
        if sentences and fusion == "score":
            ranked = _sentence_rerank(index, ranked, lexical, vector, query_vector, embed, filters, taken)
    score = dict(ranked)
    rest = [n for n, _ in ranked if n not in taken]
    for number, record in index.select(rest, filters, k - len(out)):
        out.append(Hit(index.chunk_ref(record), float(score[number]), label))
    return out


def _sentence_rerank(index, ranked, lexical, vector, query_vector, embed, filters, taken) -> list[tuple[int, float]]:
    """``rank.sentence_rerank`` over the first RERANK_DEPTH fused chunks that ``filters`` pass
    (the chunks a reader would be shown first), with their texts fetched concurrently."""
    head = [n for n, _ in index.select([n for n, _ in ranked if n not in taken], filters, rank.RERANK_DEPTH)]
    paths = [index.record(n, index.scope(filters))["path"] for n in head]
    from pipeline.client.transport import HttpTransport

    def text(path: str) -> str:
        return index.transport.get(path).decode("utf-8", "replace")

    if len(paths) > 1 and isinstance(index.transport, HttpTransport):
        with ThreadPoolExecutor(max_workers=min(8, len(paths))) as pool:
            texts = list(pool.map(text, paths))
    else:
        texts = [text(p) for p in paths]
    best: dict[int, float] = {}
    for n, chunk_text in zip(head, texts):
        # the embedder's vectors are unit length, as the chunks' are (vector_ranking's contract)
        vectors = [v for v in (embed(s) for s in rank.sentences(chunk_text)) if v is not None]
        if vectors:
            best[n] = rank.vector_ranking(range(len(vectors)), np.vstack(vectors), query_vector)[0][1]
    head_set = set(head)
    score = dict(ranked)
    reordered = [(n, score[n]) for n in head] + [(n, s) for n, s in ranked if n not in head_set]
    return rank.sentence_rerank(reordered, lexical, vector, best, depth=len(head))
