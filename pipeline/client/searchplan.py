"""Which ``_search/`` files a query reads, and how many requests it may make (the fetch plan).

One job: decide, without fetching (but ``vector_topics``, which reads the centroids), the files
each step of a query needs; ``searchfiles`` fetches them, ``searchrankings`` and
``recordlookup`` read them. What a query fetches:

A cold unscoped query: ``_search/records.json`` (the root manifest, which carries
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
site-wide shards).

The limits below are read when a query runs (a test or benchmark may set them here).
"""

from __future__ import annotations

import bisect

import numpy as np

from pipeline.client.searchfiles import IndexFiles
from pipeline.client.searchfilters import Filters
from pipeline.client.searchmanifest import StartFile
from pipeline.search import rank
from pipeline.search.index import RECORDS, SEARCH_DIR, topic_dir
from pipeline.search.text import shard_of
from pipeline.search.vectorshards import VECTORS_DIR

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


class FetchPlan(IndexFiles):
    """The files a query on this index needs (``IndexFiles`` holds them)."""

    def __init__(self, transport, meta: dict):
        super().__init__(transport, meta)
        vectors = meta.get("vectors") or {}
        self._doc_starts = list(np.cumsum([0, *vectors.get("documents", [])[:-1]]).tolist()) if vectors.get("documents") else []
        self._shard_starts = [start for start, _ in vectors.get("shards", [])]

    # --- scope and postings --------------------------------------------------------------------

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

    # --- vectors -------------------------------------------------------------------------------

    def vector_budget(self, request_budget: int | None) -> int:
        """How many vector files a query may still fetch: ``request_budget`` less the requests it
        made so far (``spent``), at least one; None: no cap, every chosen document's shard (at
        most ``LEX_DOCUMENTS``)."""
        return LEX_DOCUMENTS if request_budget is None else max(1, request_budget - self.spent())

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

    # --- records -------------------------------------------------------------------------------

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

