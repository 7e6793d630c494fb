"""Which ``_search/`` files a query reads, and how many requests it may make (the fetch plan).

One job: decide, without fetching (but ``vector_topics``, which reads the centroids), the files
each step of a query needs; ``searchfiles`` fetches them, ``searchrankings`` and
``recordlookup`` read them. Every file but the manifest, ``records.json`` and ``nodes.json`` is
content-named: the manifest lists its name (``siteformat.searchlayout.content_path``). What a query fetches:

A cold unscoped query: ``_search/records.json`` (the root manifest, which carries the topic
centroids, with every chunk record packed beside it and the postings of the rarest terms on a
site small enough); on a small site (``parts``) every part instead, which holds every record and
every term's postings; else one term shard per distinct query term's shard, for the terms
records.json does not hold; then, once the lexical ranking is known, for vectors the vector
shards holding the documents of the first lexical hits (``lexical_documents``: in hit order, at
most ``LEX_DOCUMENTS`` documents and ``VECTOR_ROWS`` rows); with a ``request_budget``, at most
the budget left (the budget minus the requests this query already made, at least 1; held files
cost nothing): documents whose shard is not fetched get no vector evidence. A query without
lexical hits reads instead the vector pages (``_embeddings.bin`` and the next ones, 32 documents
a page: ``topic_pages``) of the topics whose centroids are closest to the query
(``vector_topics``: no more pages than the budget left, the closest topic's first ones always),
and so does a topic-scoped query whose topics hold at most ``VECTOR_ROWS`` rows on at most
``VECTOR_TOPICS`` pages (``whole_topics``: those topics' pages). On
a site too big for records.json to hold the records, the record blocks (``blocks``) holding the
results it returns, once the ranking is known. A query with a ``topic`` filter starts from
``meta.json`` (the manifest alone). A topic-scoped query (a ``topic`` filter matching at most
``BUNDLE_TOPICS`` topics: ``scope``) reads each matched topic's own files instead of site-wide
shards and blocks: a small topic's segments (its records and postings, read whole), a bigger
one's term shards (one per distinct query term's shard) and, once the ranking is known, the
record blocks of its hits: postings and records of those topics only, and never another topic's
vectors. Every file is fetched at most once per ``Site``. Every path gives the same ranking:
the files hold the same levels, and the reader counts each term's idf over the chunks its
filter allows (``rank.lexical_ranking``).

The limits below are read when a query runs (a test or benchmark may set them here).
"""

from __future__ import annotations

import bisect
import posixpath

import numpy as np

from pipeline.client.searchfiles import IndexFiles
from pipeline.client.searchfilters import Filters
from pipeline.client.searchmanifest import StartFile
from pipeline.siteformat import searchrank as rank
from pipeline.siteformat.searchtext import shard_of
from pipeline.siteformat.vectors import page_names
from pipeline.siteformat.searchlayout import BLOCKS, PARTS, RECORDS, SEARCH_DIR, SEGMENTS, TERMS, TOPIC_SHARDS, VECTORS, content_path

VECTOR_TOPICS = 3
"""At most this many topics' vectors per query (closest centroids first)..."""
VECTOR_ROWS = 600
"""...and no more rows than this in all (~230 kB of int8 vectors), except that the closest
topic is always taken: a site of big topics fetches one, a site of small ones up to three."""
BUNDLE_TOPICS = 3
"""A topic filter matching at most this many topics reads their own files (segments, or topic
shards and blocks); a broader one, the site-wide files."""
LEX_DOCUMENTS = 5
"""Vector candidates: the rows of the documents of the first lexical hits, at most this many
documents (and VECTOR_ROWS rows, the first document always): on the three eval sets that equals
exhaustive vectors, where the closest topics' files lose 9 points R@5 on realdocs
(docs/decisions/search.md)."""
REQUEST_BUDGET: int | None = 6
"""The default ``request_budget``: requests a cold query may make before its vectors are cut off
(issue 11's "<= 6 requests at 10k chunks"): its vector shards take what is left, at least one,
and when that leaves some chosen documents without vectors the fusion only re-orders the chunks
that have one, within their lexical places (``rank.within_slots``). None: no cap (every chosen
document's shard, up to LEX_DOCUMENTS requests). On a site whose records.json carries every term
(up to ~2,500 chunks of real documentation: the three eval sets) the cap never cuts; on a bigger
one it costs 1.4 points R@5 on the realdocs set modelled so (docs/decisions/search.md "A default cap of
6 requests")."""


def search_path(kind: str, name: str) -> str:
    """A content-named file's path from the site root."""
    return f"{SEARCH_DIR}/{content_path(kind, name)}"


class FetchPlan(IndexFiles):
    """The files a query on this index needs (``IndexFiles`` holds them)."""

    def __init__(self, transport, meta: dict):
        super().__init__(transport, meta)
        vectors = meta.get("vectors") or {}
        self._vector_shards = vectors.get("shards") or []
        self._shard_docs = [first for first, _, _ in self._vector_shards]
        self._part_docs = [first for first, _, _ in meta.get("parts") or ()]

    # --- scope and postings --------------------------------------------------------------------

    def scope(self, filters: Filters) -> list[int] | None:
        """The numbers of the topics whose own files a query with ``filters`` reads instead of
        the site-wide files: those the ``topic`` filter matches, when it is set and matches 1 to
        ``BUNDLE_TOPICS`` topics that all have segments or their own shards; else None (no fetch)."""
        if filters.topic is None:
            return None
        matched = [i for i, t in enumerate(self.meta["topics"]) if filters.topic_ok(t["id"])]
        if not 0 < len(matched) <= BUNDLE_TOPICS or not all(self.meta["topics"][i].get("segments") or self.meta["topics"][i].get("shards")
                                                             for i in matched):
            return None
        return matched

    def collection(self, filters: Filters) -> int:
        """The chunks a query with ``filters`` ranks as its collection (the idf counts them): every
        chunk of the topics its ``topic`` filter allows (no fetch)."""
        if filters.topic is None:
            return self.meta["chunks"]
        return sum(t["count"] for t in self.meta["topics"] if filters.topic_ok(t["id"]))

    def segment_files(self, filters: Filters) -> list[str]:
        """The segment files of the ``scope`` topics (read whole, before any ranking: their
        records serve prompt hits too); [] for an unscoped query (no fetch)."""
        topics = self.meta["topics"]
        return [search_path(SEGMENTS, h) for i in self.scope(filters) or () for _, _, h in topics[i].get("segments") or ()]

    def part_files(self) -> list[str]:
        """A small site's parts, in site order ([] elsewhere)."""
        return [search_path(PARTS, h) for _, _, h in self.meta.get("parts") or ()]

    def scoped_files(self, scope: list[int], terms: list[str]) -> list[str]:
        """The files that hold the postings of ``terms`` in the ``scope`` topics: a topic's
        segments, or its own shard of each term (``shards[fnv1a32(term) % len(shards)]``), in
        topic then term order, each once (no fetch)."""
        files = []
        for i in scope:
            topic = self.meta["topics"][i]
            if topic.get("segments"):
                files += [search_path(SEGMENTS, h) for _, _, h in topic["segments"]]
            else:
                files += [search_path(TOPIC_SHARDS, topic["shards"][shard_of(term, len(topic["shards"]))]) for term in terms]
        return list(dict.fromkeys(files))

    def whole_topics(self, filters: Filters) -> bool:
        """Whether a query with ``filters`` reads its vectors from the matched topics' vector
        pages whole instead of vector shards: a ``topic`` filter matching at most
        ``VECTOR_TOPICS`` topics of at most ``VECTOR_ROWS`` rows and ``VECTOR_TOPICS`` pages in
        all, each with vectors. A request a page instead of one a document (a query scoped to
        one small topic: manifest, segment, vectors), and every row of the scope as candidates;
        the same whether the topics have segments or not, so every layout ranks alike (no fetch)."""
        if filters.topic is None or not self.meta.get("vectors"):
            return False
        matched = [t for t in self.meta["topics"] if filters.topic_ok(t["id"])]
        return (0 < len(matched) <= VECTOR_TOPICS and sum(t["count"] for t in matched) <= VECTOR_ROWS
                and all(t.get("embeddings") for t in matched)
                and sum(len(topic_pages(t)) for t in matched) <= VECTOR_TOPICS)

    def _held_start(self) -> StartFile | None:
        """``records.json`` when it is fetched and holds records (and so terms), else None."""
        rel = self.records_file()
        with self._lock:
            return self._files.get(rel) if rel else None

    def _shard_of(self, term: str) -> str | None:
        """The site-wide shard file ``term``'s postings need, or None when a fetched records.json
        holds them, or on a small site (its parts hold every term)."""
        if not self.meta.get("terms"):
            return None
        start = self._held_start()
        if start is not None and term in start.terms:
            return None
        return self.term_shard(term)

    def term_shard(self, term: str) -> str:
        """The site-wide term shard of ``term`` (its postings, and the rows of its words:
        ``pipeline.search.wordrows``); the site has term shards (``meta["terms"]``)."""
        shards = self.meta["terms"]
        return search_path(TERMS, shards[shard_of(term, len(shards))])

    def lexical_files(self, query: str, filters: Filters) -> list[str]:
        """The files ``lexical`` reads for ``query`` (no fetch)."""
        scope = self.scope(filters)
        if scope is not None:
            return self.scoped_files(scope, rank.query_terms(query))
        if self.meta.get("parts"):
            return self.part_files()
        return list(dict.fromkeys(r for r in map(self._shard_of, rank.query_terms(query)) if r))

    # --- vectors -------------------------------------------------------------------------------

    def vector_budget(self, request_budget: int | None) -> int:
        """How many vector files a query may still fetch: ``request_budget`` less the requests it
        made so far (``spent``), at least one; None: no cap, every chosen document's shard (at
        most ``LEX_DOCUMENTS``)."""
        return LEX_DOCUMENTS if request_budget is None else max(1, request_budget - self.spent())

    def vector_topics(self, query_vector: np.ndarray, filters: Filters, topics: int = VECTOR_TOPICS,
                      pages: int | None = None) -> list[dict]:
        """The allowed topics whose vectors ``vector`` reads: the closest centroids first, at most
        ``topics`` of them, ``VECTOR_ROWS`` rows and ``pages`` vector pages (``topic_pages``;
        None: ``topics``), the closest always."""
        if not self.meta.get("vectors"):
            return []
        pages = topics if pages is None else pages
        centroids = self.centroids()
        by_id = {t["id"]: t for t in self.meta["topics"]}
        names = [name for name, _ in centroids.documents]
        ranked = rank.vector_ranking(list(range(len(names))), centroids.vectors, query_vector)
        chosen: list[dict] = []
        rows_taken = pages_taken = 0
        for r, _ in ranked:
            topic = by_id.get(names[r])
            if topic is None or not filters.topic_ok(topic["id"]):
                continue
            own = len(topic_pages(topic))
            if len(chosen) == topics or (chosen and (rows_taken + topic["count"] > VECTOR_ROWS or pages_taken + own > pages)):
                break
            chosen.append(topic)
            rows_taken += topic["count"]
            pages_taken += own
        return chosen

    @staticmethod
    def vector_files(chosen: list[dict], pages: int) -> list[list[str]]:
        """The vector pages read of each ``chosen`` topic, in order: the first ``pages`` of them
        all (the closest topic's first pages when it alone has more; no fetch)."""
        out, left = [], pages
        for topic in chosen:
            own = topic_pages(topic)[:max(0, left)]
            out.append(own)
            left -= len(own)
        return out

    def document_of(self, number: int) -> int:
        """The document holding chunk ``number`` (a document without chunks holds none)."""
        return bisect.bisect_right(self.doc_starts, number) - 1

    def lexical_documents(self, lexical: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """[(first chunk, rows)] of the documents holding the first ``lexical`` hits, in hit
        order: at most ``LEX_DOCUMENTS`` and ``VECTOR_ROWS`` rows, the first always."""
        if not self._vector_shards:
            return []
        counts = self.meta["documents"]
        chosen: list[tuple[int, int]] = []
        seen: set[int] = set()
        taken = 0
        for number, _ in lexical:
            d = self.document_of(number)
            if d in seen:
                continue
            seen.add(d)
            if len(chosen) == LEX_DOCUMENTS or (chosen and taken + counts[d] > VECTOR_ROWS):
                break
            chosen.append((self.doc_starts[d], counts[d]))
            taken += counts[d]
        return chosen

    def vector_shard(self, number: int) -> tuple[str, int]:
        """(the vector shard file holding chunk ``number``'s row, the shard's first chunk number)."""
        first, _, name = self._vector_shards[bisect.bisect_right(self._shard_docs, self.document_of(number)) - 1]
        return search_path(VECTORS, name), self.doc_starts[first]

    def document_shards(self, documents: list[tuple[int, int]], budget: int) -> tuple[list[tuple[int, int]], list[str]]:
        """(the ``documents`` whose shard is read, the shard files to fetch): in document order,
        a held shard free, at most ``budget`` others (no fetch)."""
        kept, todo = [], []
        with self._lock:
            held = set(self._files)
        for document in documents:
            rel = self.vector_shard(document[0])[0]
            if rel not in held and rel not in todo:
                if len(todo) >= budget:
                    continue  # over the budget: this document gets no vector evidence
                todo.append(rel)
            kept.append(document)
        return kept, todo

    # --- records -------------------------------------------------------------------------------

    def records_file(self) -> str | None:
        """``_search/records.json`` when it holds the records (a site small enough), else None."""
        return f"{SEARCH_DIR}/{RECORDS}" if self.meta.get("records") else None

    def _container(self, number: int, scope: list[int] | None = None) -> tuple[str, int, int] | None:
        """(the file holding ``number``'s record, its first chunk number, its chunks), or None when
        records.json does: a segment of a ``scope`` topic (the query's ``scope()``) with
        segments, else a part (a small site), else a record block of its topic when records.json
        holds no records or a ``scope`` topic has blocks."""
        d = self.document_of(number)
        topic_number = bisect.bisect_right(self._starts, number) - 1
        topic = self.meta["topics"][topic_number]
        in_scope = bool(scope) and topic_number in scope
        if in_scope and topic.get("segments"):
            return self._range_file(SEGMENTS, topic["segments"], d)
        if self.meta.get("parts") and not (in_scope and topic.get("blocks")):
            return self._range_file(PARTS, self.meta["parts"], d)
        if self.meta.get("records") and not (in_scope and topic.get("blocks")):
            return None
        return self._range_file(BLOCKS, topic["blocks"], d)

    def _range_file(self, kind: str, ranges: list[list], document: int) -> tuple[str, int, int]:
        first, count, name = ranges[bisect.bisect_right([r[0] for r in ranges], document) - 1]
        start = self.doc_starts[first]
        return search_path(kind, name), start, self.doc_starts[first + count] - start

    def _record_file(self, number: int, scope: list[int] | None = None) -> str:
        """The file ``number``'s record comes from (``_container``, else records.json)."""
        container = self._container(number, scope)
        return container[0] if container is not None else f"{SEARCH_DIR}/{RECORDS}"


def topic_pages(topic: dict) -> list[str]:
    """The site paths of a ``meta.json`` topic's vector pages (``vectors.page_names`` of its
    ``docs`` documents, beside its ``embeddings``, the first); [] when it has none."""
    first = topic.get("embeddings")
    if not first:
        return []
    folder = posixpath.dirname(first)
    return [posixpath.join(folder, name) for name in page_names(topic["docs"])]
