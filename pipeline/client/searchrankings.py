"""The rankings of a ``_search/`` query, each over the files the fetch plan names.

One job: rank chunk numbers for a query: SimHash prompt matches (``prompts``, from the manifest
alone), BM25F (``lexical``: the term-frequency levels of term shards, ``records.json``, a small
site's parts or a scope's topic files, times the idf of each term over the query's collection)
and cosines (``vector`` over the closest topics' ``_embeddings.bin``, ``document_vector`` over
the vector shards of the lexical hits' documents). The scoring itself is
``pipeline.siteformat.searchrank``'s (the browser's ``lexical.js`` is its twin); fusing the rankings is
``searchindex``'s.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.client.searchfilters import Filters
from pipeline.client.searchplan import VECTOR_TOPICS, FetchPlan, search_path
from pipeline.siteformat import searchrank as rank
from pipeline.siteformat.searchtext import shard_of
from pipeline.simhash import simhash64
from pipeline.siteformat.searchlayout import SEGMENTS, TOPIC_SHARDS


class Rankings(FetchPlan):
    """The rankings over an index's files."""

    def allowed(self, filters: Filters) -> Callable[[int], bool]:
        """A test on chunk numbers: inside a topic the filter allows (no fetch)."""
        ranges = [(t["start"], t["start"] + t["count"]) for t in self.meta["topics"] if filters.topic_ok(t["id"])]
        if len(ranges) == len(self.meta["topics"]) and sum(b - a for a, b in ranges) == self.meta.get("chunks"):
            return lambda n: True  # unscoped, and the topics hold every chunk: asked per posting, so kept cheap
        return lambda n: any(a <= n < b for a, b in ranges)

    def prompts(self, query: str, filters: Filters, max_distance: int | None = None) -> list[tuple[int, int]]:
        """[(chunk number, distance)] of SimHash prompt matches (no fetch beyond meta.json).

        The radius: ``max_distance`` if given, else the topic's published one, else
        ``DEFAULT_MAX_DISTANCE``."""
        from pipeline.client.sitesearch import DEFAULT_MAX_DISTANCE

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

    def lexical(self, query: str, filters: Filters) -> list[tuple[int, int]]:
        """[(chunk number, score)] by BM25F; fetches one shard per distinct query term's shard
        (but for terms a fetched records.json holds), a small site's parts, or for a scoped query
        the scope's topics' own files (``scoped_files``)."""
        query = rank.query_terms(query)
        scope = self.scope(filters)
        if scope is not None:
            self.prefetch(self.scoped_files(scope, query))
            # topics are contiguous ranges in site order (the scope ascends), so the
            # concatenation stays sorted
            postings = {term: [p for i in scope for p in self._topic_postings(i, term)] for term in query}
        elif self.meta.get("parts"):
            self.prefetch(self.part_files())
            postings = {term: [] for term in query}
            for (first, _, name), rel in zip(self.meta["parts"], self.part_files()):
                held = self._json(rel)["terms"]
                for term in query:
                    if term in held:
                        postings[term] += rank.decode_postings(held[term], self.doc_starts[first])
        else:
            self.prefetch(list(dict.fromkeys(r for r in map(self._shard_of, query) if r)))
            start = self._held_start()
            postings = {}
            for term in query:
                rel = self._shard_of(term)
                entry = start.terms.get(term) if rel is None else self._json(rel).get(term)
                postings[term] = rank.decode_document_postings(entry, self.doc_starts) if entry else []
        return rank.lexical_ranking(postings, self.allowed(filters), chunks=self.collection(filters))

    def _topic_postings(self, i: int, term: str) -> list[tuple[int, int]]:
        """Topic ``i``'s postings of ``term``: from its segments, or its own shard of ``term``
        (fetched once)."""
        topic = self.meta["topics"][i]
        if topic.get("segments"):
            out = []
            for first, _, name in topic["segments"]:
                held = self._json(search_path(SEGMENTS, name))["terms"]
                if term in held:
                    out += rank.decode_postings(held[term], self.doc_starts[first])
            return out
        held = self._json(search_path(TOPIC_SHARDS, topic["shards"][shard_of(term, len(topic["shards"]))]))
        return rank.decode_document_postings(held[term], self.doc_starts, topic["first"]) if term in held else []

    def vector(self, query_vector: np.ndarray, filters: Filters, *, topics: int = VECTOR_TOPICS,
               pages: int | None = None) -> list[tuple[int, float]]:
        """[(chunk number, cosine)] over the ``vector_topics`` chosen for the query: the rows of
        their ``vector_files`` (``pages`` of them; None: ``topics``), fetched concurrently."""
        pages = topics if pages is None else pages
        chosen = self.vector_topics(query_vector, filters, topics, pages)
        files = self.vector_files(chosen, pages)
        self.prefetch([rel for own in files for rel in own])
        numbers: list[int] = []
        rows = []
        for topic, own in zip(chosen, files):
            tables = []
            for rel in own:  # a page removed since the index was built ends what is read
                table = self._vectors_file(rel)
                if table is None:
                    break
                tables.append(table)
            documents = [d for table in tables for d in table.documents]
            offsets, start = {}, topic["start"]
            # documents null: the pages' rows are the topic's chunks in order
            for name, count in documents if topic["documents"] is None else topic["documents"]:
                offsets[name] = (start, count)
                start += count
            for table in tables:
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

    def document_vector(self, lexical: list[tuple[int, int]], query_vector: np.ndarray, budget: int) -> list[tuple[int, float]]:
        """[(chunk number, cosine)] over the rows of ``lexical_documents`` whose shards the
        ``budget`` reaches (``document_shards``), fetched concurrently."""
        documents, todo = self.document_shards(self.lexical_documents(lexical), budget)
        self.prefetch(todo)
        numbers, rows = [], []
        for first, count in documents:
            rel, start = self.vector_shard(first)
            shard = self._shard_file(rel)
            if shard is None:
                continue
            matrix, present = shard
            offset = first - start
            for i in range(count):
                if present[offset + i]:
                    numbers.append(first + i)
                    rows.append(matrix[offset + i])
        if not numbers:
            return []
        return rank.vector_ranking(numbers, np.vstack(rows), query_vector)

