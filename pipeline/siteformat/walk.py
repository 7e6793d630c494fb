"""A site's folders and documents as a reader walks them (``Site``'s navigation half).

Every index file is fetched once per ``Site`` and kept (``_json``). A folder's listing is its
``index.json`` then the pages its ``next`` links name, folders before documents; a document's
resource is the file its listing entry links (or the topic's templated ``document`` link names,
so a document deep in a paged folder costs no walk), then its own ``next`` pages. Requests:

- ``nodes()``: each folder's ``index.json``, and its later pages only while they list folders;
- ``plan_sample(topic, n, document=d)``: the topic's ``index.json`` and the first page of d's
  resource (more pages only for a chunk past it: a long document's technical order), so
  ``sample`` is 2 + n requests in 3 round trips;
- ``document(topic, d)``: that and the resource's other pages; ``listing(topic)``: every page
  of the listing; ``topic(topic)``: the listing and every document (concurrent over HTTP).
"""

from __future__ import annotations

import posixpath
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Iterator, Sequence, TypeVar
from urllib.parse import quote

from pipeline.siteformat.indexfiles import DocumentEntry, DocumentPages, check_version, parse_entries
from pipeline.siteformat.readerrors import CorruptIndex, NotFound
from pipeline.siteformat.records import ORDERS, ChunkRef, Document, Node, TopicIndex, links_href, parse_children

_FETCH_THREADS = 8
T = TypeVar("T")


class IndexWalk:
    """The navigation methods of ``Site`` (which provides ``_json``, ``resolve``, ``transport``,
    ``_node_path``, ``_root``, ``_lock`` and the caches)."""

    # --- listings -----------------------------------------------------------------------

    def _page(self, rel: str) -> dict:
        """An index file, checked to be of the version this client reads."""
        doc = self._json(rel)
        check_version(doc, self.transport.locate(rel))
        return doc

    def _listing_pages(self, path: str) -> Iterator[tuple[str, dict]]:
        """(path, parsed page) of every page of the listing whose ``index.json`` is ``path``, in
        order, each fetched when the walk reaches it."""
        seen = set()
        rel: str | None = path
        while rel is not None:
            if rel in seen:
                raise CorruptIndex("its next links loop", self.transport.locate(rel))
            seen.add(rel)
            doc = self._page(rel)
            yield rel, doc
            href = links_href(doc, "next")
            rel = self.resolve(href, rel) if href is not None else None

    def nodes(self) -> list[Node]:
        """Every folder of the site, found by following ``_embedded.topics[]._links.self`` from
        the root, breadth first (each ``index.json``, and its later pages while they list folders)."""
        if self._nodes is not None:
            return self._nodes
        self._root()  # checked first: a folder that is no site says so (NotASite), not "no such file"
        out: list[Node] = []
        seen = {self.index_path}
        queue: list[tuple[str, str | None, dict | None]] = [(self.index_path, None, None)]
        while queue:
            path, parent, listing = queue.pop(0)
            first = self._page(path)
            url = self.transport.locate(path)
            folders = first.get("topics") if isinstance(first.get("topics"), int) else 0
            children: list[dict] = []
            for rel, page in self._listing_pages(path):
                children += parse_children(page, self.transport.locate(rel))
                if len(children) >= folders:  # folders come first: the later pages list documents
                    break
            node_id = first.get("id") if isinstance(first.get("id"), str) else (listing or {}).get("id", "")
            documents = first.get("documents")
            out.append(Node(
                id=node_id,
                title=(first.get("title") if isinstance(first.get("title"), str) else None) or (listing or {}).get("title", ""),
                documents=documents if isinstance(documents, int) and not isinstance(documents, bool) else 0,
                path=path, url=url, parent=parent, children=tuple(c["id"] for c in children),
            ))
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
        return self._page(node.path)

    def _topic_node(self, topic: str | Node) -> Node:
        if isinstance(topic, Node):
            return topic
        known = next((n for n in self._nodes or () if n.id == topic), None)
        if known is not None:
            return known
        path = self._node_path(topic)
        try:
            doc = self._page(path)
        except NotFound as exc:
            raise NotFound(f"no topic {topic!r} in this site ({exc.message})", exc.url) from None
        count = doc.get("documents")
        return Node(topic, doc.get("title") if isinstance(doc.get("title"), str) else "",
                    count if isinstance(count, int) and not isinstance(count, bool) else 0, path, self.transport.locate(path), None)

    def listing(self, topic: str | Node, *, most: int | None = None) -> list[DocumentEntry]:
        """The topic's documents as its listing names them (every page; with ``most``, the
        pages until that many are listed)."""
        node = self._topic_node(topic)
        base = posixpath.dirname(node.path)
        out: list[DocumentEntry] = []
        for rel, page in self._listing_pages(node.path):
            out += parse_entries(page, node.id, base, self.transport.locate(rel))
            if most is not None and len(out) >= most:
                break
        return out

    # --- documents ----------------------------------------------------------------------

    def _entry_href(self, node: Node, name: str) -> tuple[str, bool]:
        """(the site-relative path of document ``name``'s resource, whether it was only
        expanded from a template): from the listing's first page, else from the topic's
        templated ``document`` link (no walk), else a walk of the listing."""
        first = self._page(node.path)
        base = posixpath.dirname(node.path)
        for entry in parse_entries(first, node.id, base, node.url):
            if entry.name == name:
                return self.resolve(entry.href, node.path), False
        link = (first.get("_links") or {}).get("document") if isinstance(first.get("_links"), dict) else None
        if isinstance(link, dict) and link.get("templated") and isinstance(link.get("href"), str) and "{key}" in link["href"]:
            return self.resolve(link["href"].replace("{key}", quote(name, safe="")), node.path), True
        for entry in self.listing(node):
            if entry.name == name:
                return self.resolve(entry.href, node.path), False
        raise self._no_document(node, name)

    def _no_document(self, node: Node, name: str) -> NotFound:
        names = [e.name for e in self.listing(node, most=20)]
        shown = ", ".join(names) + (", ..." if len(names) >= 20 else "") if names else "none"
        return NotFound(f"no document {name!r} in topic {node.id!r} (documents: {shown})", node.url)

    def _document_pages(self, node: Node, name: str, *, whole: bool, href: str | None = None) -> DocumentPages:
        """Document ``name``'s resource, its first page read (every page with ``whole``)."""
        key = (node.id, name)
        with self._lock:
            pages = self._documents.get(key)
        if pages is None:
            rel, guessed = (href, False) if href is not None else self._entry_href(node, name)
            pages = DocumentPages(topic=node.id, name=name, base=posixpath.dirname(node.path), site_url=self.site_url, next_rel=rel)
            try:
                self._read_page(pages)
            except NotFound as exc:
                if not guessed:
                    raise
                raise self._no_document(node, name) from exc
            with self._lock:
                pages = self._documents.setdefault(key, pages)
        while whole and not pages.complete:
            self._read_page(pages)
        return pages

    def _read_page(self, pages: DocumentPages) -> None:
        rel = pages.next_rel
        if rel is None:
            raise CorruptIndex(f"document {pages.name!r} has {pages.pages} pages but links {pages.read}", self.url)
        doc = self._page(rel)
        pages.add(doc, self.transport.locate(rel), self.transport.locate)
        pages.page_rels.append(rel)
        href = links_href(doc, "next")
        pages.next_rel = self.resolve(href, rel) if href is not None and not pages.complete else None

    def item_links(self, ref: ChunkRef) -> tuple[dict, str]:
        """(the ``_links`` of the chunk's item in its document's resource, the page that lists it,
        relative to the site root: what the links resolve against); ({}, "") when not listed."""
        pages = self._document_pages(self._topic_node(ref.topic), ref.document, whole=True)
        for rel in pages.page_rels:
            for item in self._json(rel).get("items") or ():
                if isinstance(item, dict) and item.get("index") == ref.index:
                    links = item.get("_links")
                    return (links if isinstance(links, dict) else {}), rel
        return {}, ""

    def document(self, topic: str | Node, name: str) -> Document:
        """One document of the topic with every chunk (its resource's pages, and the topic's
        ``index.json`` when not fetched before). NotFound when the topic has no such document."""
        return self._document_pages(self._topic_node(topic), name, whole=True).document()

    def topic(self, topic: str | Node) -> TopicIndex:
        """A topic read whole: every page of its listing and every document's resource (fetched
        once; concurrently over HTTP)."""
        node = self._topic_node(topic)
        with self._lock:
            cached = self._topics.get(node.id)
        if cached is not None:
            return cached
        entries = self.listing(node)
        hrefs = [self.resolve(e.href, node.path) for e in entries]
        load = lambda pair: self._document_pages(node, pair[0].name, whole=True, href=pair[1]).document()  # noqa: E731
        pairs = list(zip(entries, hrefs))
        if len(pairs) > 1 and self._concurrent():
            with ThreadPoolExecutor(max_workers=min(_FETCH_THREADS, len(pairs))) as pool:
                documents = list(pool.map(load, pairs))
        else:
            documents = [load(p) for p in pairs]
        first = self._page(node.path)
        parsed = TopicIndex(node=replace(node, documents=len(documents)), documents=tuple(documents),
                            embeddings_href=links_href(first, "embeddings"))
        with self._lock:
            self._topics[node.id] = parsed
        return parsed

    def plan_sample(self, topic: str | Node, n: int, *, order: str = "conceptual", document: str | None = None) -> list[ChunkRef]:
        """The chunks ``sample`` would read, without their text: the topic's ``index.json`` and
        the first page of each document's resource it needs (the first ``n`` of the topic's
        documents, or ``document``), and later pages only for a chunk past them. For the
        technical order, ValueError when none of those documents has one, a UserWarning naming
        those that fall back to their conceptual order when only some lack one."""
        if n < 0:
            raise ValueError("n must not be negative")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        node = self._topic_node(topic)
        if n == 0:
            return []
        if document is not None:
            heads = [self._document_pages(node, document, whole=False)]
        else:
            entries = self.listing(node, most=n)[:n]
            hrefs = [(e.name, self.resolve(e.href, node.path)) for e in entries]
            load = lambda pair: self._document_pages(node, pair[0], whole=False, href=pair[1])  # noqa: E731
            if len(hrefs) > 1 and self._concurrent():
                with ThreadPoolExecutor(max_workers=min(_FETCH_THREADS, len(hrefs))) as pool:
                    heads = list(pool.map(load, hrefs))
            else:
                heads = [load(p) for p in hrefs]
        if order == "technical":
            _check_technical(heads, node, document)
        sequences = []
        for pages in heads:
            if not pages.orders_complete():
                pages = self._document_pages(node, pages.name, whole=True)
            wanted = pages.reading_order(order)[:n]
            if any(i not in pages.refs for i in wanted):
                pages = self._document_pages(node, pages.name, whole=True)
            sequences.append([pages.refs[i] for i in wanted])
        return interleave(sequences)[:n]


def _check_technical(heads: list[DocumentPages], node: Node, document: str | None) -> None:
    """The technical order was asked for: an error when none of the documents sampled has one,
    a warning naming those that fall back to their conceptual order when only some lack one.
    Only the documents a sample reads are known (their resources' first pages): the first ``n``
    of a topic, so the error says so when the topic has more."""
    lacking = [p.name for p in heads if p.orders["stripe_order_technical"] is None]
    if not lacking:
        return
    if len(lacking) == len(heads):
        subject = f"document {document!r}" if document is not None else f"topic {node.id!r}"
        where = f" in its first {len(heads)} of {node.documents} documents" if document is None and len(heads) < node.documents else ""
        raise ValueError(
            f"{subject} has no technical order{where}: no technical baseline (a chunk titled like 'Quick Reference' "
            "right after the overview); use the conceptual order"
        )
    warnings.warn(
        f"{len(lacking)} of {len(heads)} documents of topic {node.id!r} have no technical order; "
        f"their conceptual order is used: {', '.join(lacking)}",
        UserWarning,
        stacklevel=3,
    )


def interleave(sequences: Sequence[Sequence[T]]) -> list[T]:
    """Round robin: the first of each sequence in turn, then the second of each, and so on."""
    out: list[T] = []
    longest = max((len(s) for s in sequences), default=0)
    for rank in range(longest):
        out.extend(s[rank] for s in sequences if rank < len(s))
    return out
