"""A built site as a reader sees it: topics by following links, stripe-order samples, search.

``open_site(url_or_dir)`` makes no request: the root ``index.json`` is fetched and checked (is it
a pipeline site?) when something first needs it (``topics``, ``nodes``, ``title``, ``check()``...);
a search through ``_search/`` never does, so a cold query costs one request fewer.
Index documents are fetched once per ``Site`` and kept; chunk texts and embeddings files are
fetched when asked for. Every failure is a ``SiteError`` naming the URL or file involved.

Navigation is ``pipeline.siteformat.reader.SiteReader``'s (the search index's writer reads a
site with it too); this module reads chunks and embeddings; ``Site.search`` is
``sitesearch.SiteSearch``'s (whose
``DEFAULT_MAX_DISTANCE``, ``METHODS`` and ``embedder_for`` are importable from here too).
"""

from __future__ import annotations

import os
import posixpath
from concurrent.futures import ThreadPoolExecutor

from pipeline.client.searchindex import SearchIndex
from pipeline.client.sitesearch import DEFAULT_MAX_DISTANCE, METHODS, SiteSearch, embedder_for
from pipeline.client.transport import DEFAULT_TIMEOUT, HttpTransport, Transport, transport_for
from pipeline.siteformat.reader import SiteReader
from pipeline.siteformat.readerrors import NotFound, SiteError
from pipeline.siteformat.records import Chunk, ChunkRef, Node, TopicIndex, links_href
from pipeline.siteformat.tree import QUESTIONS_FILE
from pipeline.siteformat.vectors import EmbeddingTable, FILE_NAME as EMBEDDINGS_FILE, read as read_table

__all__ = ["DEFAULT_MAX_DISTANCE", "METHODS", "Site", "SiteSearch", "embedder_for", "open_site"]

_FETCH_THREADS = 8


def open_site(location: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT) -> "Site":
    """The site at an http(s) URL or local directory (or its root ``index.json``).

    No request yet: the root ``index.json`` is read on first use (``Site.check()`` reads it now),
    and raises NotASite then when it is missing or not a pipeline site's root index (a search on
    a site without ``_search/`` falls back to a walk from the root, so it raises there too).
    FetchFailed on network errors or after ``timeout``; a missing local directory raises NotASite
    at once.
    """
    transport, index = transport_for(location, timeout=timeout)
    return Site(transport, index)


class Site(SiteReader, SiteSearch):
    """A pipeline site read through ``transport``; see the module docstring (navigation:
    ``SiteReader``, shared with the search index's writer; search: ``SiteSearch``)."""

    def __init__(self, transport: Transport, index: str = "index.json"):
        super().__init__(transport, index)
        self._tables: dict[str, EmbeddingTable | None] = {}
        self._embedders: dict[str, object] = {}
        self._static = None  # the site's static query encoder, once a search needed it
        self._search_index: SearchIndex | None | bool = False  # False: not looked for yet

    def _http_root(self) -> str | None:
        return self.transport.root if isinstance(self.transport, HttpTransport) else None

    def reader(self) -> "Site":
        """Another reader of this site whose searches start cold, as a reader's first query
        does (its requests, its request budget: ``SearchIndex.cold``), sharing what this one
        has parsed: index documents, topics, embeddings, query embedders and the search
        manifest. ``site.reader().search(q)`` is ``open_site(...).search(q)`` without the
        parsing; an evaluation asks each question so, independent of the questions before it."""
        other = Site(self.transport, self.index_path)
        other._lock = self._lock  # the caches below are shared, so is the lock guarding them
        other._docs, other._topics, other._tables, other._embedders = self._docs, self._topics, self._tables, self._embedders
        other._nodes, other._root_fields = self._nodes, self._root_fields
        index = self.search_index(records=True)  # opened here once, as an unscoped query opens it
        other._search_index = index.cold() if isinstance(index, SearchIndex) else index
        return other

    def qa_pairs(self, topic: str | Node) -> tuple[str, str] | None:
        """The topic's ``qa-pairs.md`` as the site publishes it beside the topic's index.json:
        (its text, its URL or path), or None when the topic has none."""
        node = topic if isinstance(topic, Node) else None
        path = node.path if node is not None else self._node_path(topic)
        rel = posixpath.join(posixpath.dirname(path), QUESTIONS_FILE)
        try:
            data = self.transport.get(rel)
        except NotFound:
            return None
        try:
            return data.decode("utf-8"), self.transport.locate(rel)
        except UnicodeDecodeError as exc:
            raise SiteError(f"qa-pairs.md is not UTF-8 (byte {exc.start})", self.transport.locate(rel)) from None

    # --- reading ------------------------------------------------------------------------

    def read(self, chunk: ChunkRef) -> Chunk:
        """The chunk with its text (one request). A missing file raises NotFound naming its URL."""
        data = self.transport.get(chunk.path)
        try:
            return Chunk(chunk, data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise SiteError(f"chunk is not UTF-8 (byte {exc.start})", chunk.href) from None

    def read_all(self, chunks: list[ChunkRef]) -> list[Chunk]:
        """``read`` for each chunk, in order (fetched concurrently over HTTP)."""
        if len(chunks) <= 1 or not self._concurrent():
            return [self.read(c) for c in chunks]
        with ThreadPoolExecutor(max_workers=min(_FETCH_THREADS, len(chunks))) as pool:
            return list(pool.map(self.read, chunks))

    def sample(self, topic: str | Node, n: int, *, order: str = "conceptual", document: str | None = None) -> list[Chunk]:
        """The first ``n`` chunks of the topic's stripe order, with their text.

        For one ``document``, that document's reading order (``Document.reading_order``: the
        stripe order, then the baselines it leaves out). For a whole topic, the documents'
        reading orders interleaved round robin in the order the topic lists them: the first
        chunk of each document's stripe order, then the second of each, and so on.
        ``order="technical"`` uses ``stripe_order_technical`` where a document has one (a
        technical baseline: a "Quick Reference" chunk after the overview): ValueError when no
        document sampled has one, a UserWarning naming those that fall back to their
        conceptual order when only some do. Requests (``plan_sample``): the topic's index.json
        and the first page of each document's resource it needs, unless fetched before, then
        one per chunk (concurrent over HTTP): 2 + n for one document.
        """
        refs = self.plan_sample(topic, n, order=order, document=document)
        return self.read_all(refs)

    def embeddings(self, topic: str | Node | TopicIndex) -> EmbeddingTable | None:
        """The topic's embeddings, every page read (``_links.embeddings``, else ``_embeddings.bin``
        beside its index.json, then each page's ``next``, relative to the topic's directory), or
        None when it has none (404 on the first page). A truncated or invalid page, a missing
        later one or pages that do not join raise VectorFormatError naming its URL."""
        if isinstance(topic, TopicIndex):
            node, href = topic.node, topic.embeddings_href
            listed = [(d.name, len(d.items)) for d in topic.documents]
        else:
            node = self._topic_node(topic)
            href, listed = links_href(self.index_document(node), "embeddings"), None
        key = node.id
        with self._lock:
            if key in self._tables:
                return self._tables[key]
        rel = self.resolve(href or EMBEDDINGS_FILE, node.path)

        def page(name: str) -> bytes | None:
            try:
                return self.transport.get(rel if name == EMBEDDINGS_FILE else self.resolve(name, rel))
            except NotFound:
                return None

        table = read_table(page, locate=lambda name: self.transport.locate(rel if name == EMBEDDINGS_FILE else self.resolve(name, rel)))
        if table is not None:
            counts = dict(table.documents)
            for name, count in listed if listed is not None else [(e.name, e.count) for e in self.listing(node)]:
                if counts.get(name, count) != count:
                    raise SiteError(
                        f"embeddings file holds {counts[name]} rows for {name!r} but the index lists "
                        f"{count} chunks; the site is half rebuilt",
                        self.transport.locate(rel),
                    )
        with self._lock:
            self._tables[key] = table
        return table
