"""Typed records of a site as readers see it, and the field checks of their parsing (pure;
``indexfiles.py`` parses the index files with them).

Parsing checks exactly the fields readers rely on and raises ``CorruptIndex`` naming the URL
and the field (``items[3].href``) when one is missing or mistyped. Optional fields are used
when present and never required: ``prompt_hashes_hex`` (16-hex SimHashes; preferred) or
``prompt_hashes`` (decimal 64-bit ints), ``stripe_order_technical``, ``_links.embeddings``,
``start_line``/``end_line``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pipeline.simhash import MASK, from_hex
from pipeline.siteformat import citations
from pipeline.siteformat.readerrors import CorruptIndex

ORDERS = ("conceptual", "technical")


@dataclass(frozen=True)
class Keyword:
    name: str
    score: int


@dataclass(frozen=True)
class Node:
    """A directory of the site: a section (has sub-directories), a topic (has documents), or both.

    ``path`` is its index.json relative to the site root; ``url`` its absolute URL or file path.
    """

    id: str  # "guide/chunking"; "" for the root
    title: str
    documents: int
    path: str
    url: str
    parent: str | None  # id of the parent node; None for the root
    children: tuple[str, ...] = ()

    @property
    def is_topic(self) -> bool:
        return self.documents > 0


@dataclass(frozen=True)
class ChunkRef:
    """One chunk as its document's resource lists it (its text is fetched separately).

    What a citation needs (``citation()``): ``source``, ``start_line``-``end_line`` (1-based,
    inclusive, lines of the source file as the chunk manifest records them; None on a site built
    without them), ``header_path``, and the public ``url`` of the chunk and ``section_url`` of its
    section of the source (``pipeline.siteformat.citations``; None when ``site_url`` is unknown).
    """

    topic: str
    document: str  # the document's key: the source's name without ``.md``
    source: str  # the parent document, relative to the site root: "guide/chunking/setup.md"
    index: int
    path: str  # the chunk file, relative to the site root
    href: str  # the chunk file's absolute URL or file path
    title: str
    header_path: str
    is_code: bool
    keywords: tuple[Keyword, ...] = ()
    prompt_hashes: tuple[int, ...] = ()
    promotion_level: str = "standard"  # the document's (pipeline/promotion.py); absent in older sites
    start_line: int | None = None
    end_line: int | None = None
    site_url: str = ""  # the base public links start with (citations.public_base); "" unknown
    page_url: str | None = None  # the chunk's place on its document's HTML page (MkDocs: sources/pages.py)

    @property
    def url(self) -> str | None:
        """The chunk file's public URL."""
        return citations.file_url(self.site_url, self.path) if self.site_url else None

    @property
    def section_url(self) -> str | None:
        """The public URL of the chunk's section of its source (the search page's deep link)."""
        return citations.section_url(self.site_url, self.topic, self.document, self.index) if self.site_url else None

    def citation(self) -> dict:
        """``source``, ``start_line``, ``end_line``, ``header_path``, ``url``, ``section_url``."""
        return {"source": self.source, "start_line": self.start_line, "end_line": self.end_line,
                "header_path": self.header_path, "url": self.url, "section_url": self.section_url}

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["site_url"]
        if out["page_url"] is None:
            del out["page_url"]  # a site without pages: the field is not there
        out["prompt_hashes"] = [f"{h:016x}" for h in self.prompt_hashes]
        out.update(url=self.url, section_url=self.section_url)
        return out


@dataclass(frozen=True)
class Document:
    """One document of a topic with its chunks (``items[i].index == i``) and stripe orders."""

    topic: str
    name: str
    source: str
    title: str
    stripe_order: tuple[int, ...]
    stripe_order_technical: tuple[int, ...] | None
    items: tuple[ChunkRef, ...]

    def reading_order(self, order: str = "conceptual") -> list[int]:
        """Chunk indexes in stripe order, then every chunk it leaves out (the baselines), ascending.

        ``technical`` uses ``stripe_order_technical`` when the document has one, else the
        conceptual order. The result lists every chunk exactly once, so its first n entries
        are the stripe order's first n whenever n does not exceed the stripe order's length.
        """
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        stripe = self.stripe_order_technical if order == "technical" and self.stripe_order_technical else self.stripe_order
        seen: set[int] = set()
        out = []
        for i in [*stripe, *range(len(self.items))]:
            if i not in seen and 0 <= i < len(self.items):
                seen.add(i)
                out.append(i)
        return out


@dataclass(frozen=True)
class TopicIndex:
    """A topic read whole: its node, every document (every page of its listing and of each
    document's resource) and its optional embeddings link."""

    node: Node
    documents: tuple[Document, ...]
    embeddings_href: str | None  # from _links.embeddings, unresolved; None when not linked

    def document(self, name: str) -> Document | None:
        return next((d for d in self.documents if d.name == name), None)


@dataclass(frozen=True)
class Hit:
    """A search result: a chunk, how it was found, and how well it matched.

    ``score``: ``simhash`` 1 - distance/64 (1.0 is an identical hash); ``embedding`` the
    cosine similarity; ``keyword`` the summed authority scores of matched keywords plus one per
    query word in the chunk's title or header path. Higher is better within one method.
    """

    chunk: ChunkRef
    score: float
    method: str  # "simhash" | "embedding" | "keyword" | "lexical" | "hybrid": the ranking that placed it
    distance: int | None = None  # Hamming distance of the closest prompt hash (simhash only)

    @property
    def topic(self) -> str:
        return self.chunk.topic

    @property
    def source(self) -> str:
        return self.chunk.source

    @property
    def href(self) -> str:
        return self.chunk.href

    @property
    def header_path(self) -> str:
        return self.chunk.header_path

    @property
    def title(self) -> str:
        return self.chunk.title

    def to_dict(self) -> dict:
        """The hit as JSON: where it was read from (``href``), what a citation needs (``source``,
        ``start_line``, ``end_line``, ``header_path``, ``url``, ``section_url``), how it matched."""
        return {
            "topic": self.topic,
            "href": self.href,
            **self.chunk.citation(),
            "title": self.title,
            "index": self.chunk.index,
            "is_code": self.chunk.is_code,
            "promotion_level": self.chunk.promotion_level,
            "score": round(self.score, 4),
            "method": self.method,
            "distance": self.distance,
            **({"page_url": self.chunk.page_url} if self.chunk.page_url else {}),  # MkDocs: the page + anchor
        }


@dataclass(frozen=True)
class Chunk:
    """A chunk with its text, exactly as the site serves it (heading context + source span)."""

    ref: ChunkRef
    text: str

    def to_dict(self) -> dict:
        return {**self.ref.to_dict(), "text": self.text}


# --- parsing --------------------------------------------------------------------------------


class _Reader:
    """Typed field access that reports the URL and field path of what is wrong."""

    def __init__(self, url: str):
        self.url = url

    def fail(self, where: str, message: str) -> CorruptIndex:
        return CorruptIndex(f"{where}: {message}", self.url)

    def get(self, obj: dict, key: str, kind, where: str, *, optional: bool = False):
        if not isinstance(obj, dict):
            raise self.fail(where, "expected an object")
        if key not in obj:
            if optional:
                return None
            raise self.fail(f"{where}.{key}" if where else key, "missing")
        value = obj[key]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok:
            name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise self.fail(f"{where}.{key}" if where else key, f"expected {name}, got {type(value).__name__}")
        return value


def links_href(doc: dict, rel: str) -> str | None:
    """``_links[rel].href`` if present and a string."""
    link = doc.get("_links", {}).get(rel) if isinstance(doc.get("_links"), dict) else None
    href = link.get("href") if isinstance(link, dict) else None
    return href if isinstance(href, str) else None


def parse_children(doc: dict, url: str) -> list[dict]:
    """``_embedded.topics`` entries as ``{"id", "title", "documents", "href"}``."""
    r = _Reader(url)
    embedded = r.get(doc, "_embedded", dict, "")
    topics = r.get(embedded, "topics", list, "_embedded", optional=True) or []
    out = []
    for i, entry in enumerate(topics):
        where = f"_embedded.topics[{i}]"
        href = links_href(entry, "self") if isinstance(entry, dict) else None
        if href is None:
            raise r.fail(where, "no _links.self.href")
        out.append(
            {
                "id": r.get(entry, "id", str, where),
                "title": r.get(entry, "title", str, where, optional=True) or "",
                "documents": r.get(entry, "documents", int, where, optional=True) or 0,
                "href": href,
            }
        )
    return out


def item_prompt_hashes(item: dict) -> tuple[int, ...]:
    """A chunk item's prompt hashes as a reader reads them (``ChunkRef.prompt_hashes``): what a
    writer hands on in memory instead of the file (``index.tool.written_prompts``)."""
    return _hashes(_Reader(""), item, "")


def _hashes(r: _Reader, item: dict, where: str) -> tuple[int, ...]:
    hexes = r.get(item, "prompt_hashes_hex", list, where, optional=True)
    if hexes is not None:
        try:
            values = [from_hex(h) for h in hexes]
        except ValueError as exc:
            raise r.fail(f"{where}.prompt_hashes_hex", str(exc)) from None
    else:
        values = r.get(item, "prompt_hashes", list, where, optional=True) or []
        for h in values:
            if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h <= MASK:
                raise r.fail(f"{where}.prompt_hashes", f"expected 64-bit unsigned integers, got {h!r}")
    return tuple(h for h in values if h != 0)  # 0 is the hash of "no words": never matched


def line_of(r: _Reader, item: dict, key: str, where: str) -> int | None:
    """An item's ``start_line``/``end_line`` (from 1), or None when absent."""
    value = r.get(item, key, int, where, optional=True)
    if value is not None and value < 1:
        raise r.fail(f"{where}.{key}", f"expected a line number from 1, got {value}")
    return value
