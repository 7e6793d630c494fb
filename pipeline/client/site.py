"""A built site as a reader sees it: topics by following links, stripe-order samples, search.

``open_site(url_or_dir)`` makes no request: the root ``index.json`` is fetched and checked (is it
a pipeline site?) when something first needs it (``topics``, ``nodes``, ``title``, ``check()``...);
a search through ``_search/`` never does, so a cold query costs one request fewer.
Index documents are fetched once per ``Site`` and kept; chunk texts and embeddings files are
fetched when asked for. Every failure is a ``SiteError`` naming the URL or file involved.

This module navigates and reads; ``Site.search`` is ``sitesearch.SiteSearch``'s (whose
``DEFAULT_MAX_DISTANCE``, ``METHODS`` and ``embedder_for`` are importable from here too).
"""

from __future__ import annotations

import os
import posixpath
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlsplit

import orjson

from pipeline.client import citations
from pipeline.client.errors import CorruptIndex, NotASite, NotFound, SiteError
from pipeline.client.indexfiles import DocumentPages, check_version
from pipeline.client.records import Chunk, ChunkRef, Node, TopicIndex, links_href
from pipeline.client.searchindex import SearchIndex
from pipeline.client.sitesearch import DEFAULT_MAX_DISTANCE, METHODS, SiteSearch, embedder_for
from pipeline.client.transport import DEFAULT_TIMEOUT, HttpTransport, Transport, clean_rel, transport_for
from pipeline.client.walk import IndexWalk
from pipeline.siteformat.hrefs import base_of, site_relative
from pipeline.siteformat.tree import QUESTIONS_FILE
from pipeline.siteformat.vectors import EmbeddingTable, FILE_NAME as EMBEDDINGS_FILE, decode

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


class Site(IndexWalk, SiteSearch):
    """A pipeline site read through ``transport``; see the module docstring (navigation:
    ``IndexWalk``; search: ``SiteSearch``)."""

    def __init__(self, transport: Transport, index: str = "index.json"):
        self.transport = transport
        self._lock = threading.Lock()
        self._docs: dict[str, dict] = {}
        self._topics: dict[str, TopicIndex] = {}
        self._documents: dict[tuple[str, str], DocumentPages] = {}
        self._tables: dict[str, EmbeddingTable | None] = {}
        self._embedders: dict[str, object] = {}
        self._static = None  # the site's static query encoder, once a search needed it
        self._search_index: SearchIndex | None | bool = False  # False: not looked for yet
        self._nodes: list[Node] | None = None
        self.index_path = clean_rel(index) or "index.json"
        self._root_fields: tuple[str, str, str, str | None, str] | None = None
        self._root_lock = threading.Lock()  # not self._lock: _json takes that one

    def _root(self) -> tuple[str, str, str, str | None, str]:
        """(base path, root id, title, model, base URL) from the root ``index.json``, fetched and checked
        on first use: a search through ``_search/`` needs none of it, so a cold query costs one
        request fewer. Raises NotASite when it is missing or not a pipeline site's root index."""
        if self._root_fields is not None:
            return self._root_fields
        with self._root_lock:  # threads reading chunks concurrently: one fetch of the root
            if self._root_fields is None:
                self._root_fields = self._read_root()
        return self._root_fields

    def _read_root(self) -> tuple[str, str, str, str | None, str]:
        try:
            root = self._json(self.index_path)
        except NotFound:
            raise NotASite("no index.json here: not a pipeline site", self.transport.locate(self.index_path)) from None
        except CorruptIndex as exc:
            raise NotASite(f"index.json is not a pipeline site index ({exc.message})", exc.url) from None
        self_href = links_href(root, "self") if isinstance(root, dict) else None
        if self_href is None or not isinstance(root.get("_embedded"), dict) or not isinstance(root.get("id", ""), str):
            raise NotASite("index.json lacks _links.self or _embedded: not a pipeline site index", self.url)
        check_version(root, self.url)
        path = unquote(urlsplit(self_href).path)
        return (
            path.rsplit("/", 1)[0] + "/",  # e.g. "/" or "/my-repo/"; what hrefs start with
            root.get("id", ""),
            root.get("title", "") if isinstance(root.get("title"), str) else "",
            root.get("model") if isinstance(root.get("model"), str) else None,
            base_of(self_href),
        )

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

    def check(self) -> "Site":
        """Fetch and check the root ``index.json`` now (``open_site`` defers it); returns self.
        Raises NotASite as ``_root`` does."""
        self._root()
        return self

    @property
    def base_path(self) -> str:
        """The path every absolute href of the site starts with (from the root's ``_links.self``)."""
        return self._root()[0]

    @property
    def root_id(self) -> str:
        return self._root()[1]

    @property
    def title(self) -> str:
        return self._root()[2]

    @property
    def model(self) -> str | None:
        return self._root()[3]

    @property
    def base_url(self) -> str:
        """The base URL the site was built with, as its root's ``_links.self`` says
        (``https://example.org/docs/``, ``/docs/``)."""
        return self._root()[4]

    @property
    def site_url(self) -> str:
        """The base the site's public URLs start with (``citations.public_base``: ``base_url``,
        made absolute against the URL the site is read from when it is a path and that an http(s) URL)."""
        return citations.public_base(self.base_url, self.transport.root if isinstance(self.transport, HttpTransport) else None)

    @property
    def url(self) -> str:
        """The root index.json's URL or file path."""
        return self.transport.locate(self.index_path)

    # --- fetching -----------------------------------------------------------------------

    def _json(self, rel: str) -> dict:
        with self._lock:
            cached = self._docs.get(rel)
        if cached is not None:
            return cached
        data = self.transport.get(rel)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CorruptIndex(f"not valid JSON ({exc})", self.transport.locate(rel)) from None
        if not isinstance(doc, dict):
            raise CorruptIndex(f"expected a JSON object, got {type(doc).__name__}", self.transport.locate(rel))
        with self._lock:
            self._docs[rel] = doc
        return doc

    def resolve(self, href: str, from_rel: str) -> str:
        """The site-relative path of ``href`` found in the document at ``from_rel``.

        An absolute href must start with the site's own base URL (from the root's
        ``_links.self``: ``/my-repo/``, ``https://host/docs/``) or, with a scheme, with where the
        site was opened, so a site reads the same from a directory, a mirror or another prefix.
        """
        under_base = site_relative(href, self.base_url) if href.startswith(("/", "http:", "https:")) else None
        parts = urlsplit(href)
        if under_base is not None:
            rel = under_base
        elif parts.scheme or parts.netloc:
            root = self.transport.root if isinstance(self.transport, HttpTransport) else None
            if root is None or not href.startswith(root):
                raise CorruptIndex(f"link {href!r} points outside the site", self.transport.locate(from_rel))
            rel = unquote(urlsplit(href[len(root) :]).path)
        elif href.startswith("/"):
            path = unquote(parts.path)
            if not path.startswith(self.base_path):
                raise CorruptIndex(f"link {href!r} is not under the site's base path {self.base_path!r}", self.transport.locate(from_rel))
            rel = path[len(self.base_path) :]
        else:
            rel = posixpath.join(posixpath.dirname(from_rel), unquote(parts.path))
        clean = clean_rel(rel, backslash="\\" not in href)  # a %5C in the href: part of a name
        if clean is None or posixpath.normpath(rel.lstrip("/")).startswith(".."):
            raise CorruptIndex(f"link {href!r} points outside the site", self.transport.locate(from_rel))
        return clean

    def _node_path(self, topic_id: str) -> str:
        """Where a node's index.json lives: as found by ``nodes()``, else ``<id>/index.json``."""
        for node in self._nodes or ():
            if node.id == topic_id:
                return node.path
        rel = topic_id.strip("/")
        if self.root_id:
            if rel == self.root_id:
                rel = ""
            elif rel.startswith(self.root_id + "/"):
                rel = rel[len(self.root_id) + 1 :]
        return f"{rel}/index.json" if rel else self.index_path

    # --- reading ------------------------------------------------------------------------

    def read(self, chunk: ChunkRef) -> Chunk:
        """The chunk with its text (one request). A missing file raises NotFound naming its URL."""
        data = self.transport.get(chunk.path)
        try:
            return Chunk(chunk, data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise SiteError(f"chunk is not UTF-8 (byte {exc.start})", chunk.href) from None

    def _concurrent(self) -> bool:
        """True when fetches are worth running concurrently (HTTP, not a directory)."""
        return isinstance(self.transport, HttpTransport)

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
        """The topic's embeddings (``_links.embeddings``, else ``_embeddings.bin`` beside its
        index.json), or None when it has none (404). A truncated or invalid file raises
        VectorFormatError naming its URL."""
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
        try:
            data = self.transport.get(rel)
        except NotFound:
            table = None
        else:
            table = decode(data, source=self.transport.locate(rel))
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
