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
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from urllib.parse import unquote, urlsplit

import orjson

from pipeline.client import citations, ranking
from pipeline.client.errors import CorruptIndex, NotASite, NotFound, SiteError
from pipeline.client.searchindex import SearchIndex
from pipeline.client.records import ORDERS, Chunk, ChunkRef, Document, Node, TopicIndex, links_href, parse_children, parse_topic
from pipeline.client.transport import DEFAULT_TIMEOUT, HttpTransport, Transport, clean_rel, transport_for
from pipeline.index.hrefs import site_relative
from pipeline.site.vectors import FILE_NAME as EMBEDDINGS_FILE
from pipeline.site.vectors import EmbeddingTable, decode
from pipeline.client.sitesearch import DEFAULT_MAX_DISTANCE, METHODS, SiteSearch, embedder_for

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


class Site(SiteSearch):
    """A pipeline site read through ``transport``; see the module docstring (search: ``SiteSearch``)."""

    def __init__(self, transport: Transport, index: str = "index.json"):
        self.transport = transport
        self._lock = threading.Lock()
        self._docs: dict[str, dict] = {}
        self._topics: dict[str, TopicIndex] = {}
        self._tables: dict[str, EmbeddingTable | None] = {}
        self._embedders: dict[str, object] = {}
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
        path = unquote(urlsplit(self_href).path)
        return (
            path.rsplit("/", 1)[0] + "/",  # e.g. "/" or "/my-repo/"; what hrefs start with
            root.get("id", ""),
            root.get("title", "") if isinstance(root.get("title"), str) else "",
            root.get("model") if isinstance(root.get("model"), str) else None,
            citations.base_of(self_href),
        )

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
        clean = clean_rel(rel)
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

    # --- navigation ---------------------------------------------------------------------

    def nodes(self) -> list[Node]:
        """Every directory of the site, found by following ``_embedded.topics[]._links.self``
        from the root, breadth first (one request per index.json not fetched before)."""
        if self._nodes is not None:
            return self._nodes
        self._root()  # checked first: a folder that is no site says so (NotASite), not "no such file"
        out: list[Node] = []
        seen = {self.index_path}
        queue: list[tuple[str, str | None, dict | None]] = [(self.index_path, None, None)]
        while queue:
            path, parent, listing = queue.pop(0)
            doc = self._json(path)
            url = self.transport.locate(path)
            children = parse_children(doc, url)
            chunk_sets = doc["_embedded"].get("chunks")
            node_id = doc.get("id") if isinstance(doc.get("id"), str) else (listing or {}).get("id", "")
            out.append(
                Node(
                    id=node_id,
                    title=(doc.get("title") if isinstance(doc.get("title"), str) else None) or (listing or {}).get("title", ""),
                    documents=len(chunk_sets) if isinstance(chunk_sets, dict) else 0,
                    path=path,
                    url=url,
                    parent=parent,
                    children=tuple(c["id"] for c in children),
                )
            )
            for child in children:
                rel = self.resolve(child["href"], path)
                if rel not in seen:
                    seen.add(rel)
                    queue.append((rel, node_id, child))
        self._nodes = out
        return out

    def topics(self) -> list[Node]:
        """The nodes that hold documents, in ``nodes()`` order."""
        return [n for n in self.nodes() if n.is_topic]

    def index_document(self, node: Node) -> dict:
        """The node's ``index.json`` as parsed JSON (fetched once; ``nodes()`` fetched it already)."""
        return self._json(node.path)

    def topic(self, topic: str | Node) -> TopicIndex:
        """A topic's documents and chunks: one request (``<id>/index.json``) unless already fetched."""
        topic_id = topic.id if isinstance(topic, Node) else topic
        with self._lock:
            cached = self._topics.get(topic_id)
        if cached is not None:
            return cached
        path = topic.path if isinstance(topic, Node) else self._node_path(topic_id)
        try:
            doc = self._json(path)
        except NotFound as exc:
            raise NotFound(f"no topic {topic_id!r} in this site ({exc.message})", exc.url) from None
        known = topic if isinstance(topic, Node) else next((n for n in self._nodes or () if n.id == topic_id), None)
        url = self.transport.locate(path)
        title = doc.get("title") if isinstance(doc.get("title"), str) else ""
        node = known or Node(topic_id, title, 0, path, url, None)
        parsed = parse_topic(doc, node, locate=self.transport.locate, site_url=self.site_url)
        parsed = replace(parsed, node=replace(node, documents=len(parsed.documents)))
        with self._lock:
            self._topics[topic_id] = parsed
        return parsed

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
        if len(chunks) <= 1 or not isinstance(self.transport, HttpTransport):
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
        document asked for has one, a UserWarning naming those that fall back to their
        conceptual order when only some do. Makes at most ``n + 1`` requests: the topic's
        index.json (unless fetched before) and one per chunk.
        """
        refs = self.plan_sample(topic, n, order=order, document=document)
        return self.read_all(refs)

    def plan_sample(self, topic: str | Node, n: int, *, order: str = "conceptual", document: str | None = None) -> list[ChunkRef]:
        """The chunks ``sample`` would read, without their text (at most one request)."""
        if n < 0:
            raise ValueError("n must not be negative")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        index = self.topic(topic)
        docs: list[Document] = list(index.documents)
        if document is not None:
            doc = index.document(document)
            if doc is None:
                names = ", ".join(d.name for d in index.documents) or "none"
                raise NotFound(f"no document {document!r} in topic {index.node.id!r} (documents: {names})", index.node.url)
            docs = [doc]
        if order == "technical":
            _check_technical(docs, index, document)
        sequences = [[doc.items[i] for i in doc.reading_order(order)] for doc in docs]
        return ranking.interleave(sequences)[:n]

    def embeddings(self, topic: str | Node | TopicIndex) -> EmbeddingTable | None:
        """The topic's embeddings (``_links.embeddings``, else ``_embeddings.bin`` beside its
        index.json), or None when it has none (404). A truncated or invalid file raises
        VectorFormatError naming its URL."""
        index = topic if isinstance(topic, TopicIndex) else self.topic(topic)
        key = index.node.id
        with self._lock:
            if key in self._tables:
                return self._tables[key]
        href = index.embeddings_href or EMBEDDINGS_FILE
        rel = self.resolve(href, index.node.path)
        try:
            data = self.transport.get(rel)
        except NotFound:
            table = None
        else:
            table = decode(data, source=self.transport.locate(rel))
            counts = dict(table.documents)
            for doc in index.documents:
                if counts.get(doc.name, len(doc.items)) != len(doc.items):
                    raise SiteError(
                        f"embeddings file holds {counts[doc.name]} rows for {doc.name!r} but index.json lists "
                        f"{len(doc.items)} chunks; the site is half rebuilt",
                        self.transport.locate(rel),
                    )
        with self._lock:
            self._tables[key] = table
        return table


def _check_technical(docs: list[Document], index: TopicIndex, document: str | None) -> None:
    """The technical order was asked for: an error when none of ``docs`` has one, a warning
    naming those that fall back to their conceptual order when only some lack one."""
    lacking = [d.name for d in docs if d.stripe_order_technical is None]
    if not lacking:
        return
    if len(lacking) == len(docs):
        subject = f"document {document!r}" if document is not None else f"topic {index.node.id!r}"
        raise ValueError(
            f"{subject} has no technical order: no technical baseline (a chunk titled like 'Quick Reference' "
            "right after the overview); use the conceptual order"
        )
    warnings.warn(
        f"{len(lacking)} of {len(docs)} documents of topic {index.node.id!r} have no technical order; "
        f"their conceptual order is used: {', '.join(lacking)}",
        UserWarning,
        stacklevel=3,
    )
