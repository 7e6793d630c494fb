"""Search over a built site (``Site.search``): through its ``_search/`` index, else by walking its topics.

One job: a query to hits, by one of ``METHODS`` (client.js offers the same). On a site with
``_search/``, ``searchindex.indexed_search`` ranks (the query embedded by the site's static encoder
where vectors are asked for); on one without, and always for the ``keyword`` method, every
topic's ``index.json`` is read and its chunks ranked by SimHash, embeddings or keywords
(``pipeline.client.ranking``). The query embedder is the site's static encoder, else the
caller's (checked against the site's model) or one built from the model's name once per
``Site`` (``embedder_for``). Navigating and reading the site is ``site.py``'s job.
"""

from __future__ import annotations

import re
import warnings

import numpy as np

from pipeline.client import ranking
from pipeline.client.searchindex import REQUEST_BUDGET, Filters, SearchIndex, indexed_search
from pipeline.promotion import check_level
from pipeline.simhash import ALGORITHM, simhash64, words
from pipeline.siteformat import indexnames
from pipeline.siteformat.searchrank import DEFAULT_FUSION
from pipeline.siteformat.readerrors import NO_EMBEDDINGS, SiteError
from pipeline.siteformat.records import ChunkRef, Hit, TopicIndex

# The radius the spec stage publishes by default; sites may override it in index.json.
DEFAULT_MAX_DISTANCE: int = indexnames.DEFAULT_MAX_DISTANCE
"""Hamming radius for SimHash matching when neither the caller nor the topic sets one."""

METHODS = ("auto", "simhash", "embedding", "keyword", "lexical", "hybrid")
STATIC, FULL = "static", "full"
"""``embedder=`` values: the site's static encoder (the default where it has one), the model's own."""


class SiteSearch:
    """``Site.search`` and what it needs (mixed into ``Site``, whose ``_json``, ``_root``,
    ``topic``, ``topics`` and ``embeddings`` it uses; ``Site.__init__`` sets its caches)."""

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        keyword: str | None = None,
        is_code: bool | None = None,
        topic: str | None = None,
        promotion_level: str | None = None,
        max_distance: int | None = None,
        method: str = "auto",
        embedder=None,
        header_path: str | None = None,
        entry_type: str | None = None,
        tags: tuple[str, ...] | list[str] = (),
        fusion: str = DEFAULT_FUSION,
        sentences: bool = False,
        request_budget: int | None = REQUEST_BUDGET,
    ) -> list[Hit]:
        """The ``k`` best chunks for ``query``.

        On a site with a search index (``_search/``, ``pipeline.client.searchindex``): ``auto``
        gives SimHash prompt matches first, then the lexical (BM25F) and vector rankings fused
        (``fusion``: ``score``, the default, or ``rrf``); ``hybrid`` the fused ranking alone,
        ``lexical`` the lexical ranking alone, ``simhash`` the prompt matches alone, ``embedding``
        the vector ranking alone (``searchindex.embedding_search``: the closest topics' rows; a
        SiteError when the query cannot be embedded or the site has no vectors). The vector
        side needs the query embedded with the site's model (``embedder``, else the model's
        default embedder, loaded on first use) and fetches only the vector shards of the first
        lexical hits' documents (at most 5; ``request_budget``: how many requests a cold query
        may make before its vectors are cut off, 6 by default, None: no cap;
        docs/ARCHITECTURE.md "`_search/`"); without an embedder it is left out. The query is
        embedded by the site's static encoder when it has one (``_search/encoder/``: a table
        lookup, only the rows of the query's word pieces fetched; ``embedder="static"`` insists
        on it), else, or with ``embedder="full"``, by the model itself (loaded on first use); a
        spec string or an embedder object picks another. Filters: ``topic`` (that node and the nodes below
        it) narrows every ranking; ``keyword``, ``is_code``, ``promotion_level`` (the document's;
        ValueError unless one of ``promotion.LEVELS``), ``header_path`` (prefix), ``entry_type`` and ``tags`` (front matter) select
        among the ranked chunks.

        On a site without one, and always for ``keyword``: ``auto`` tries
        SimHash (radius ``max_distance``, else the topic's published
        ``prompt_matching.max_distance``, else ``DEFAULT_MAX_DISTANCE``), then embeddings, then
        keywords, and returns the first that finds anything; this path fetches every index.json
        and needs no ``_search/``; only chunks that pass ``keyword``, ``is_code``, ``topic`` and
        ``promotion_level`` are ranked. A query without words (``""``, ``"?!"``) has no hits.

        ``sentences=True`` (search index, ``hybrid``/``auto`` with score fusion): the first ten
        fused chunks are re-ordered with their best sentence's cosine to the query
        (``rank.sentence_rerank``; +0.6 to +1.4 R@5 on the three eval sets, docs/decisions/search.md),
        at the cost of fetching those chunks' texts and embedding their sentences.
        """
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if promotion_level is not None:  # a level no document can have is a mistake, not "no hits"
            promotion_level = check_level(promotion_level)
        if k <= 0 or not words(query):
            return []
        # an unscoped query starts from records.json (the manifest with every record, on a site
        # small enough): its hits' records then cost no request of their own
        index = self.search_index(records=topic is None) if method != "keyword" else None
        if index is not None:
            filters = Filters(topic, keyword, is_code, header_path, entry_type, tuple(tags), promotion_level)
            embed = None
            if method == "embedding":
                if not index.meta.get("vectors"):
                    raise SiteError(NO_EMBEDDINGS, self.url)
                query_embedder = self._query_embedder(index, embedder, required=True)

                def embed(text: str):
                    return _embed_one(query_embedder, text, index)
            elif method in ("auto", "hybrid") and index.meta.get("vectors"):
                def embed(text: str):
                    chosen = self._query_embedder(index, embedder)
                    return None if chosen is None else _embed_one(chosen, text, index)
            return indexed_search(index, query, k, filters, method=method, max_distance=max_distance, embed=embed, fusion=fusion,
                                  request_budget=request_budget,
                                  sentences=sentences)
        self._root()  # no _search/: is it a pipeline site at all? (NotASite if not)
        if method in ("lexical", "hybrid"):
            raise SiteError("this site has no search index (_search/meta.json); rebuild it", self.url)
        if header_path is not None or entry_type is not None or tags:
            raise SiteError("header_path, entry_type and tags filters need the site's search index; rebuild it", self.url)
        indexes = [self.topic(node) for node in self.topics() if _within(node.id, topic)]
        candidates = [
            [
                c
                for d in ti.documents
                for c in d.items
                if ranking.passes(c, keyword=keyword, is_code=is_code, promotion_level=promotion_level)
            ]
            for ti in indexes
        ]
        if method in ("auto", "simhash"):
            hits = self._simhash(indexes, candidates, query, max_distance)
            if hits or method == "simhash":
                return hits[:k]
        if method in ("auto", "embedding"):
            hits = self._embedding(indexes, candidates, query, embedder, required=method == "embedding")
            if hits or method == "embedding":
                return (hits or [])[:k]
        return ranking.keyword_hits([c for group in candidates for c in group], query)[:k]

    def search_index(self, *, records: bool = False) -> SearchIndex | None:
        """The site's ``_search/`` index (one request, then kept), or None when it has none.
        ``records``: open it from ``records.json`` (``SearchIndex.open``)."""
        if self._search_index is False:
            self._search_index = SearchIndex.open(self.transport, records=records)
        return self._search_index

    def _simhash(self, indexes: list[TopicIndex], candidates: list[list[ChunkRef]], query: str, max_distance: int | None) -> list[Hit]:
        entries: list[tuple[ChunkRef, int]] = []
        for ti, chunks in zip(indexes, candidates):
            matching = self._json(ti.node.path).get("prompt_matching")
            matching = matching if isinstance(matching, dict) else {}
            algorithm = matching.get("algorithm", ALGORITHM)
            if algorithm != ALGORITHM:
                warnings.warn(f"{ti.node.url}: prompt hashes use {algorithm!r}, this client computes {ALGORITHM!r}; skipped")
                continue
            radius = max_distance
            if radius is None:
                published = matching.get("max_distance")
                radius = published if isinstance(published, int) and not isinstance(published, bool) else DEFAULT_MAX_DISTANCE
            entries.extend((chunk, radius) for chunk in chunks)
        return ranking.simhash_hits(entries, simhash64(query))

    def _embedding(self, indexes, candidates, query: str, embedder, *, required: bool) -> list[Hit] | None:
        tables = [(chunks, self.embeddings(ti)) for ti, chunks in zip(indexes, candidates)]
        tables = [(chunks, t) for chunks, t in tables if t is not None]
        if not tables:
            if required:
                raise SiteError(NO_EMBEDDINGS, self.url)
            return None
        models = sorted({t.model for _, t in tables})
        if len(models) > 1:
            raise SiteError(f"topics were embedded with different models ({', '.join(models)}); rebuild the site", self.url)
        chosen = self._embedder(models[0], embedder, required=required)
        if chosen is None:
            return None
        chunks: list[ChunkRef] = []
        rows = []
        for group, table in tables:
            for chunk in group:
                r = table.row_of(chunk.document, chunk.index)
                if r is not None:
                    chunks.append(chunk)
                    rows.append(table.vectors[r])
        if not chunks:
            return []
        query_vector = chosen.embed([query])[0]
        return ranking.embedding_hits(chunks, np.vstack(rows), query_vector)

    def query_embedder(self, embedder=None):
        """What ``search(..., embedder=embedder)`` embeds a query with on this site's search
        index (``_query_embedder``; ``None``: the site's static encoder where it has one), or None
        when the site has no search index with vectors. A SiteError when there is no embedder for
        the site's model here, or ``embedder`` gives vectors of another model."""
        index = self.search_index(records=True)
        if index is None or not index.meta.get("vectors"):
            return None
        return self._query_embedder(index, embedder, required=True)

    def _query_embedder(self, index: SearchIndex, embedder, *, required: bool = False):
        """The embedder of a ``_search/`` query: the site's static encoder (``_search/encoder/``)
        unless ``embedder`` asks for another (``"full"``: the model's own, ``embedder_for``; a spec
        string or an object), or the site has none (then the model's own, as ``"full"``).
        ``required``: a SiteError rather than None when there is no embedder for the model."""
        model = index.meta["vectors"]["model"]
        entry = index.meta.get("encoder")
        if embedder in (None, STATIC) and entry and entry.get("model") == model:
            if self._static is None or self._static.entry != entry:
                from pipeline.client.staticembed import SiteStaticEncoder

                self._static = SiteStaticEncoder(self.transport, entry)
            return self._static
        if embedder == STATIC:
            raise SiteError("this site publishes no static query encoder (_search/encoder/); rebuild it, or pass embedder='full'", self.url)
        return self._embedder(model, None if embedder == FULL else embedder, required=required)

    def _embedder(self, model: str, embedder, *, required: bool):
        """An embedder for ``model``: the caller's (checked), or one built from the model's name."""
        if embedder == STATIC:
            raise SiteError("the static query encoder reads the site's search index; this search has none", self.url)
        if embedder == FULL:
            embedder = None
        if embedder is not None:
            if isinstance(embedder, str):
                from pipeline.embedding.registry import make_embedder

                embedder = make_embedder(embedder)
            if embedder.name != model:
                raise SiteError(f"the site's embeddings are from {model!r} but the query embedder is {embedder.name!r}", self.url)
            return embedder
        if model in self._embedders:
            return self._embedders[model]
        built = embedder_for(model)
        if built is None:
            if required:
                raise SiteError(f"no local embedder for the site's model {model!r}; pass embedder=", self.url)
            warnings.warn(f"cannot embed queries with {model!r} here; searching without vectors (keywords, or the lexical index where the site has one)")
            return None
        self._embedders[model] = built
        return built


def _embed_one(embedder, text: str, index: SearchIndex):
    """``text``'s vector by ``embedder``; the site's static encoder also reads the word rows of
    ``index``'s term shards (``staticembed``)."""
    from pipeline.client.staticembed import SiteStaticEncoder

    if isinstance(embedder, SiteStaticEncoder):
        return embedder.embed([text], index=index)[0]
    return embedder.embed([text])[0]


def embedder_for(model: str):
    """An embedder producing ``model``'s vectors without configuration, or None.

    ``all-MiniLM-L6-v2`` (the default model, shipped in a package) and ``hashing-<dim>``
    (the test embedder) are known; others need ``embedder=`` (e.g. ``"ollama:MODEL"``).
    """
    from pipeline.embedding.models import DEFAULT_MODEL

    if model == DEFAULT_MODEL.name:
        from pipeline.embedding.registry import make_embedder

        # ONNX Runtime: no torch import, ~0.3 s to load once exported (pipeline/embedding/onnx.py)
        return make_embedder("minilm+onnx")
    match = re.fullmatch(r"hashing-(\d+)", model)
    if match:
        from pipeline.embedding.hashing import HashingEmbedder

        return HashingEmbedder(int(match.group(1)))
    return None


def _within(node_id: str, prefix: str | None) -> bool:
    if prefix is None:
        return True
    prefix = prefix.strip("/")
    return not prefix or node_id == prefix or node_id.startswith(prefix + "/")
