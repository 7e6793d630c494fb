"""Search through a site's ``_search/`` index with bounded fetches (used by ``Site.search``).

This module runs a query (``indexed_search``): prompt matches, then the lexical and vector
rankings fused, re-ordered by sentences if asked, and the records of the hits that pass the
filters. ``SearchIndex`` is the index it runs on, one per ``Site``, built of one module a job:

- ``searchmanifest``: ``meta.json`` and ``records.json`` parsed and checked (``StartFile``);
- ``searchfiles``: each file fetched at most once, parsed by kind, requests counted;
- ``searchplan``: which files a query reads and its request budget (what a cold query fetches,
  and the limits ``VECTOR_TOPICS``, ``VECTOR_ROWS``, ``BUNDLE_TOPICS``, ``LEX_DOCUMENTS``,
  ``REQUEST_BUDGET``, are described there);
- ``searchrankings``: the SimHash, lexical and vector rankings;
- ``recordlookup``: the hits' records, filtered (``searchfilters.Filters``).

Every path gives the same ranking (a topic's files hold the very impacts of the site-wide
shards). Rankings come from ``pipeline.siteformat.searchrank`` (the browser's ``lexical.js`` is its twin;
``searchindex.js`` and the modules it names, each named as its twin here, are this package's). The
names above are importable from here too.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable

import numpy as np

from pipeline.siteformat.readerrors import NO_EMBEDDINGS, NotFound, SiteError
from pipeline.client.recordlookup import RecordLookup
from pipeline.client.searchfilters import Filters
from pipeline.client.searchmanifest import StartFile, checked_start, parse_manifest
from pipeline.client.searchplan import BUNDLE_TOPICS, LEX_DOCUMENTS, REQUEST_BUDGET, VECTOR_ROWS, VECTOR_TOPICS
from pipeline.client.searchrankings import Rankings
from pipeline.siteformat import searchrank as rank
from pipeline.siteformat.searchrank import DEFAULT_FUSION
from pipeline.siteformat.searchlayout import META, RECORDS, SEARCH_DIR

__all__ = [
    "BUNDLE_TOPICS", "LEX_DOCUMENTS", "REQUEST_BUDGET", "VECTOR_ROWS", "VECTOR_TOPICS",
    "Filters", "SearchIndex", "StartFile", "indexed_search",
]


class SearchIndex(RecordLookup, Rankings):
    """The ``_search/`` files of one site, fetched lazily through the site's transport: the
    rankings (``Rankings``) and records (``RecordLookup``) over the files the plan names
    (``FetchPlan``), each fetched once (``IndexFiles``)."""

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
        meta, held = parse_manifest(data, transport.locate(rel), records=records)
        index = cls(transport, meta)
        index.fetches = 1  # the manifest
        if records and meta.get("records"):
            index._files[f"{SEARCH_DIR}/{RECORDS}"] = checked_start(meta, index._starts, held, transport.locate(rel))
        index._opened = dict(index._files)
        return index

    def cold(self) -> "SearchIndex":
        """This index as ``open`` returned it: its manifest parsed and counted as its one
        request, no other file held. A query on it ranks, fetches and spends its request budget
        exactly as a reader's first query does, without parsing the manifest again, nor a file
        another cold copy parsed (fetched and counted all the same; an evaluation asks each of
        its questions so: ``Site.reader``)."""
        copy = type(self)(self.transport, self.meta)
        copy.fetches = 1
        copy._files.update(getattr(self, "_opened", {}))
        copy._opened = dict(copy._files)
        if self._parsed is None:
            self._parsed = {}
        copy._parsed = self._parsed  # what one copy parsed, the next fetches (and counts) but does not parse
        return copy


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
    """The ``k`` best hits by ``method`` (``auto``, ``hybrid``, ``lexical``, ``simhash``,
    ``embedding``).

    ``auto``: SimHash prompt matches first, then the hybrid ranking. ``hybrid``: lexical and
    vector rankings fused (``fusion``); without vectors (no ``embed``, it returns None, or the
    site has none) the lexical ranking alone. Filters other than ``topic`` select among the
    ranked chunks in rank order (records fetched as the walk needs them).
    ``sentences`` (hybrid, score fusion): the first ``rank.RERANK_DEPTH`` fused chunks that pass
    the filters are re-ordered by ``rank.sentence_rerank``: their texts fetched and each
    sentence embedded with ``embed`` (up to ten chunk requests and ~60 embeddings a query).
    Vector candidates: see the module docstring (the request budget counts from the end of the
    previous query on this index, ``SearchIndex.spent``).
    ``embedding``: the vector ranking alone (``embedding_search``).
    """
    try:
        if method == "embedding":
            return embedding_search(index, query, k, filters, embed=embed, vector_topics=vector_topics, request_budget=request_budget)
        return _indexed_search(index, query, k, filters, method=method, max_distance=max_distance, embed=embed,
                               fusion=fusion, vector_topics=vector_topics, sentences=sentences, request_budget=request_budget)
    finally:
        with index._lock:
            index.settled = index.fetches  # the next query's requests count from here


def embedding_search(index: SearchIndex, query: str, k: int, filters: Filters, *, embed: Callable[[str], np.ndarray | None] | None,
                     vector_topics: int = VECTOR_TOPICS, request_budget: int | None = REQUEST_BUDGET) -> list:
    """The ``k`` best hits by the cosine of the query's vector (``embed``) alone: the rows of the
    vector pages of the topics whose centroids are closest to the query (at most
    ``vector_topics`` of them and ``VECTOR_ROWS`` rows, no more pages than the request budget leaves),
    which is what hybrid's vector half reads when no lexical hit picks the documents; no lexical
    ranking and no fusion. Hits say ``embedding``. No hits for a query whose vector is zero (its
    words have no rows); a SiteError when none of the chosen topics publishes embeddings."""
    from pipeline.siteformat.records import Hit

    query_vector = embed(query) if embed is not None else None
    if query_vector is None or not np.any(query_vector) or not index.meta.get("vectors"):
        return []
    budget = index.vector_budget(request_budget)
    topics = min(vector_topics, budget)
    chosen = [t["embeddings"] for t in index.vector_topics(query_vector, filters, topics, budget) if t.get("embeddings")]
    ranked = index.vector(query_vector, filters, topics=topics, pages=budget)
    if not ranked and chosen and all(index._vectors_file(rel) is None for rel in chosen):
        raise SiteError(NO_EMBEDDINGS, index.transport.locate(f"{SEARCH_DIR}/{META}"))
    score = dict(ranked)
    return [Hit(index.chunk_ref(record), float(score[number]), "embedding")
            for number, record in index.select([n for n, _ in ranked], filters, k)]


def _indexed_search(index, query, k, filters, *, method, max_distance, embed, fusion, vector_topics, sentences, request_budget) -> list:
    from pipeline.siteformat.records import Hit
    from pipeline.simhash import BITS

    out: list[Hit] = []
    taken: set[int] = set()
    if method != "simhash":
        index.load(index.segment_files(filters))  # prompt hits then read their records from the segments too
    if method in ("auto", "simhash"):
        matches = index.prompts(query, filters, max_distance)
        distance = dict(matches)
        for number, record in index.select([n for n, _ in matches], filters, k):
            d = distance[number]
            out.append(Hit(index.chunk_ref(record), 1.0 - d / BITS, "simhash", d))
            taken.add(number)
        if method == "simhash" or len(out) >= k:
            return out[:k]
    # the term shards (or parts, or a scope's segments) in one concurrent round trip
    files = index.lexical_files(query, filters)
    if index.scope(filters) is None and index.records_file():
        # the records too, in the same round: with records.json no hit waits for a record block
        files.append(index.records_file())
    index.load(files)  # held before the query is embedded: the static encoder reads its words' rows there
    query_vector = None
    if method in ("auto", "hybrid") and embed is not None and index.meta.get("vectors"):
        query_vector = embed(query)
    lexical = index.lexical(query, filters)
    vector: list[tuple[int, float]] = []
    partial = False  # whether the budget left some chosen documents without vectors
    if query_vector is not None:
        # then the vectors, in a second round: those of the lexical hits' documents, within the
        # requests left; without a lexical hit, those of the closest topics
        budget = index.vector_budget(request_budget)
        if lexical and not index.whole_topics(filters):
            chosen = index.lexical_documents(lexical)
            partial = len(index.document_shards(chosen, budget)[0]) < len(chosen)  # before the fetch makes them held
            vector = index.document_vector(lexical, query_vector, budget)
        else:  # no lexical hit, or a scope small enough to read its topics' files whole
            vector = index.vector(query_vector, filters, topics=min(vector_topics, budget), pages=budget)
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
