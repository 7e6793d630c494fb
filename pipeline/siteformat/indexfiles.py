"""Parsing a site's index files (``index_version`` 2, ``pipeline/siteformat/indexnames.py``): the listing
pages of a folder and the pages of a document's resource (pure: parsed JSON in, records out).

Each check names the file and the field (``_embedded.documents[3].key: missing``,
``items[2].href: ... leaves the topic directory``) through ``CorruptIndex``. A chunk's data
``href`` is relative to its topic's directory, wherever it is listed.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from urllib.parse import unquote

from pipeline.siteformat.indexnames import INDEX_VERSION
from pipeline.siteformat.readerrors import CorruptIndex
from pipeline.siteformat.records import ORDERS, ChunkRef, Document, Keyword, _Reader, _hashes, line_of, links_href


def check_version(doc: object, url: str) -> None:
    """CorruptIndex unless ``doc`` is an index file of the version this client reads."""
    version = doc.get("index_version") if isinstance(doc, dict) else None
    if version != INDEX_VERSION:
        built = "an older pipeline (index_version 1)" if version is None else f"index_version {version!r}"
        raise CorruptIndex(f"built by {built}; this client reads index_version {INDEX_VERSION}: rebuild the site with `pipeline build`", url)


@dataclass(frozen=True)
class DocumentEntry:
    """A document as its folder's listing names it (the resource holds the rest)."""

    topic: str
    name: str  # its key: the source's name without ``.md``
    source: str  # relative to the site root
    title: str
    count: int
    promotion_level: str
    sample: tuple[int, ...]  # the first chunks of its reading order
    href: str  # its resource's ``_links.self.href``, unresolved


def parse_entries(doc: dict, topic: str, base: str, url: str) -> list[DocumentEntry]:
    """``_embedded.documents`` of one listing page; ``base``: the folder, relative to the site."""
    r = _Reader(url)
    embedded = r.get(doc, "_embedded", dict, "")
    out = []
    for i, entry in enumerate(r.get(embedded, "documents", list, "_embedded", optional=True) or []):
        where = f"_embedded.documents[{i}]"
        href = links_href(entry, "self") if isinstance(entry, dict) else None
        if href is None:
            raise r.fail(where, "no _links.self.href")
        source = r.get(entry, "source", str, where)
        out.append(DocumentEntry(
            topic=topic,
            name=r.get(entry, "key", str, where),
            source=posixpath.join(base, source) if base else source,
            title=r.get(entry, "title", str, where, optional=True) or "",
            count=r.get(entry, "count", int, where),
            promotion_level=r.get(entry, "promotion_level", str, where, optional=True) or "standard",
            sample=tuple(r.get(s, "index", int, f"{where}.sample[{j}]")
                         for j, s in enumerate(r.get(entry, "sample", list, where, optional=True) or [])),
            href=href,
        ))
    return out


@dataclass
class DocumentPages:
    """A document resource read page by page: its fields from the first page, the stripe orders
    and chunk items of every page read so far (``add``). ``complete`` once every page is in."""

    topic: str
    name: str
    base: str  # the topic's folder, relative to the site root
    site_url: str = ""  # the base of the site's public links (``ChunkRef.site_url``)
    source: str = ""
    title: str = ""
    count: int = 0
    pages: int = 0
    read: int = 0
    orders: dict[str, list[int] | None] = field(default_factory=lambda: {"stripe_order": [], "stripe_order_technical": None})
    refs: dict[int, ChunkRef] = field(default_factory=dict)
    next_rel: str | None = None  # the next page to read, relative to the site root
    page_rels: list[str] = field(default_factory=list)  # the pages read, relative to the site root

    @property
    def complete(self) -> bool:
        return self.read == self.pages and self.pages > 0

    def add(self, doc: dict, url: str, locate) -> None:
        """Page ``self.read + 1`` (parsed); ``locate(site_rel)``: a chunk's href."""
        check_version(doc, url)
        r = _Reader(url)
        number = r.get(doc, "page", int, "")
        if number != self.read + 1:
            raise r.fail("page", f"expected page {self.read + 1}, got {number}")
        if number == 1:
            source = r.get(doc, "source", str, "")
            self.source = posixpath.join(self.base, source) if self.base else source
            self.title = r.get(doc, "title", str, "", optional=True) or self.name
            self.count = r.get(doc, "count", int, "")
            self.pages = r.get(doc, "pages", int, "")
            if "stripe_order_technical" in doc:
                self.orders["stripe_order_technical"] = []
        for key in ORDERS_FIELDS:
            value = r.get(doc, key, list, "", optional=True)
            if value is not None:
                if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < self.count for x in value):
                    raise r.fail(key, f"expected chunk indexes below {self.count}")
                if self.orders[key] is None:
                    raise r.fail(key, "on a later page but not on the first")
                self.orders[key].extend(value)
        for i, item in enumerate(r.get(doc, "items", list, "")):
            ref = chunk_ref(r, item, f"items[{i}]", self, locate)
            if ref.index >= self.count or ref.index in self.refs:
                raise r.fail(f"items[{i}].index", f"{ref.index} is past the document's {self.count} chunks or listed twice")
            self.refs[ref.index] = ref
        self.read = number
        if self.complete and len(self.refs) != self.count:
            raise r.fail("items", f"the pages list {len(self.refs)} chunks, the document has {self.count}")

    def orders_complete(self) -> bool:
        """True when the stripe orders read so far are whole (a long order continues on later pages)."""
        technical = self.orders["stripe_order_technical"]
        return self.complete or (len(self.orders["stripe_order"]) >= self.count - 1
                                 and (technical is None or len(technical) >= self.count - 2))

    def document(self) -> Document:
        """The whole document (every page read)."""
        assert self.complete
        technical = self.orders["stripe_order_technical"]
        return Document(topic=self.topic, name=self.name, source=self.source, title=self.title,
                        stripe_order=tuple(self.orders["stripe_order"]),
                        stripe_order_technical=tuple(technical) if technical is not None else None,
                        items=tuple(self.refs[i] for i in range(self.count)))

    def reading_order(self, order: str) -> list[int]:
        """``Document.reading_order`` from the orders read so far (``orders_complete``)."""
        technical = self.orders["stripe_order_technical"]
        partial = Document(self.topic, self.name, self.source, self.title, tuple(self.orders["stripe_order"]),
                           tuple(technical) if technical is not None else None, tuple(range(self.count)))
        return partial.reading_order(order)


ORDERS_FIELDS = ("stripe_order", "stripe_order_technical")
assert len(ORDERS_FIELDS) == len(ORDERS)


def chunk_ref(r: _Reader, item: dict, at: str, pages: DocumentPages, locate) -> ChunkRef:
    """A chunk item of a document resource as a ``ChunkRef``."""
    index = r.get(item, "index", int, at)
    href = r.get(item, "href", str, at)
    rel = unquote(href)  # hrefs are percent-encoded (pipeline/siteformat/hrefs.py)
    base = pages.base
    path = posixpath.normpath(posixpath.join(base, rel))
    if href.startswith("/") or rel.startswith("/") or path == ".." or path.startswith("../") or (base and not path.startswith(base + "/")):
        raise r.fail(f"{at}.href", f"{href!r} leaves the topic directory")
    keywords = tuple(
        Keyword(r.get(kw, "name", str, f"{at}.keywords[{j}]"), r.get(kw, "score", (int, float), f"{at}.keywords[{j}]"))
        for j, kw in enumerate(r.get(item, "keywords", list, at, optional=True) or [])
    )
    return ChunkRef(
        topic=pages.topic,
        document=pages.name,
        source=pages.source,
        index=index,
        path=path,
        href=locate(path),
        title=r.get(item, "title", str, at, optional=True) or "",
        header_path=r.get(item, "header_path", str, at, optional=True) or "",
        is_code=bool(r.get(item, "is_code", bool, at, optional=True)),
        keywords=keywords,
        prompt_hashes=_hashes(r, item, at),
        promotion_level=r.get(item, "promotion_level", str, at, optional=True) or "standard",
        start_line=line_of(r, item, "start_line", at),
        end_line=line_of(r, item, "end_line", at),
        site_url=pages.site_url,
        page_url=r.get(item, "page_url", str, at, optional=True),  # MkDocs: its page + anchor
    )
