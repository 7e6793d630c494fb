"""What the MCP server's tools do, as plain methods over one ``Site`` (no MCP here: testable alone).

Every chunk is named by its ``chunk_id`` (``{document_id}_chunk_{i}``, the id manifests and
exports use; ``document_id`` is the source path without ``.md``), and also as the resource URI
``site://chunk/{chunk_id}``. Results are JSON-ready dicts within a token budget
(``pipeline.agents.budget``: ``max_tokens``, ~4k by default), with a ``next_cursor`` where a
list or text goes on; every chunk in them carries its citation (``describe``: source path,
``start_line``-``end_line``, header path, public ``url`` and ``section_url``). Bad ids, unknown
topics and arguments out of range raise ``LookupError``/``ValueError`` with a message that says
what exists (a few names, the closest first), so an agent can correct itself; site read failures
raise ``SiteError`` naming the URL.

One ``SiteTools`` holds one ``Site`` (index files fetched once and kept) and at most one query
embedder: the site's model is loaded on the first embedding search and reused by every later
call (``Site`` keeps it; an explicit ``embedder`` spec is built once here).
"""

from __future__ import annotations

import difflib
import posixpath
import threading

from pipeline.agents import budget
from pipeline.agents.budget import Cursor
from pipeline.client import Site
from pipeline.promotion import LEVELS
from pipeline.siteformat.citations import file_url
from pipeline.siteformat.records import ORDERS, ChunkRef, Document, Hit, TopicIndex

CHUNK_URI = "site://chunk/"
DOCUMENT_URI = "site://document/"
FOLLOW = ("next", "prev", "related")
MAX_K = 50
"""Most hits (and chunks a page of ``sample``) a call may ask for."""
NAMES_SHOWN = 12
"""Most names an error lists (the closest to what was asked first)."""


def chunk_id(ref: ChunkRef) -> str:
    return f"{_document_id(ref.source)}_chunk_{ref.index}"


def _document_id(source: str) -> str:
    return source[: -len(".md")] if source.endswith(".md") else source


def _count(value, name: str, high: int = MAX_K) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValueError(f"{name} must be an integer from 1 to {high}, not {value!r}")
    return value


def _names(wanted: str, names: list[str], what: str) -> str:
    """Some of ``names`` for an error message: the closest to ``wanted`` first, then the rest in
    order, at most ``NAMES_SHOWN``, and how many there are."""
    if not names:
        return f"no {what}"
    shown = list(dict.fromkeys([*difflib.get_close_matches(wanted, names, n=5, cutoff=0.5), *names]))[:NAMES_SHOWN]
    more = f" ... ({len(names)} in all)" if len(names) > len(shown) else ""
    return f"{what}: {', '.join(repr(n) for n in shown)}{more}"


class SiteTools:
    """The tools over ``site``; ``embedder``: a spec string (``minilm``, ``hashing``...) for query
    embeddings instead of the one named by the site's model."""

    def __init__(self, site: Site, embedder: str | None = None):
        self.site = site
        self._embedder_spec = embedder
        self._embedder = None
        self._lock = threading.Lock()
        self._by_path: dict[str, dict[str, ChunkRef]] = {}  # each topic's chunks by path, when first needed

    # --- lookup -----------------------------------------------------------------------

    def embedder(self):
        """The query embedder built from ``embedder`` (once), or None: the site's default (its
        static query encoder, else its model). ``static`` and ``full`` pass through to
        ``Site.search`` (the site's static encoder, the model itself)."""
        if self._embedder_spec in (None, "static", "full"):
            return self._embedder_spec
        with self._lock:
            if self._embedder is None:
                from pipeline.embedding.registry import make_embedder

                self._embedder = make_embedder(self._embedder_spec)
            return self._embedder

    def _topic_ids(self) -> list[str]:
        return [n.id for n in self.site.topics()]

    def _topic(self, topic: str) -> TopicIndex:
        topic = topic.strip().strip("/")
        if topic not in self._topic_ids():
            raise LookupError(f"no topic {topic!r}; {_names(topic, self._topic_ids(), 'topics')} (see list_topics)")
        return self.site.topic(topic)

    def document(self, document: str) -> tuple[TopicIndex, Document]:
        """A document by source path (``guide/setup.md``), document id (``guide/setup``) or URI."""
        document = document.strip().removeprefix(DOCUMENT_URI).strip("/")
        topic = posixpath.dirname(document)
        if topic not in self._topic_ids():
            raise LookupError(f"no document {document!r}: no topic {topic!r} (list_topics lists topics, "
                              "list_topics(topic) a topic's document paths)")
        index = self.site.topic(topic)
        for doc in index.documents:
            if document in (doc.source, _document_id(doc.source)):
                return index, doc
        names = [d.source for d in index.documents]
        raise LookupError(f"no document {document!r} in topic {topic!r}; {_names(document, names, 'its documents')}")

    def chunk(self, chunk: str) -> tuple[Document, ChunkRef]:
        """A chunk by id (``guide/setup_chunk_3``) or URI (``site://chunk/guide/setup_chunk_3``)."""
        name = chunk.strip().removeprefix(CHUNK_URI)
        doc_id, sep, number = name.rpartition("_chunk_")
        if not sep or not number.isdigit():
            raise ValueError(f"{chunk!r} is not a chunk id: expected '<document id>_chunk_<n>', e.g. 'guide/setup_chunk_0'")
        _, doc = self.document(doc_id)
        i = int(number)
        if i >= len(doc.items):
            raise LookupError(f"{doc.source} has chunks 0 to {len(doc.items) - 1}, not {i}")
        return doc, doc.items[i]

    def _ref_at(self, topic: str, path: str) -> ChunkRef | None:
        if topic not in self._by_path:
            self._by_path[topic] = {c.path: c for d in self.site.topic(topic).documents for c in d.items}
        return self._by_path[topic].get(path)

    # --- results ----------------------------------------------------------------------

    @staticmethod
    def describe(ref: ChunkRef, text: str | None = None, **extra) -> dict:
        """A chunk as the tools give it: its id and what a citation needs, ``extra``, its text."""
        out = {"chunk_id": chunk_id(ref), "document": ref.source, "header_path": ref.header_path,
               "start_line": ref.start_line, "end_line": ref.end_line, "url": ref.url, "section_url": ref.section_url,
               **({"page_url": ref.page_url} if ref.page_url else {}), **extra}  # MkDocs: the page a person opens
        if text is not None:
            out["text"] = text
        return out

    def _with_text(self, refs: list[ChunkRef], extras: list[dict] | None = None) -> list[dict]:
        chunks = self.site.read_all(refs)
        extras = extras or [{} for _ in refs]
        return [self.describe(c.ref, c.text, **extra) for c, extra in zip(chunks, extras)]

    # --- the tools ----------------------------------------------------------------------

    def list_topics(self, topic: str | None = None, cursor: str | None = None) -> dict:
        """Without ``topic``: the site's topics (id, title, parent, number of documents); with it,
        that topic's documents (path, title, chunks, promotion level when not standard). Paged.
        (A cursor keeps the arguments as given, so the same call with ``cursor`` goes on.)"""
        args, at, cur = budget.opened(cursor, "list_topics", {"topic": topic})
        if args.get("topic") is None:
            nodes = self.site.topics()
            rows = [{"id": n.id, "title": n.title, "parent": n.parent, "documents": n.documents} for n in nodes]
            answer, key, names = {"site": self.site.title, "model": self.site.model, "total": len(rows)}, "topics", [n.id for n in nodes]
        else:
            index = self._topic(args["topic"])
            rows = [{"path": d.source, "title": d.title, "chunks": len(d.items),
                     **({"promotion_level": d.items[0].promotion_level} if d.items and d.items[0].promotion_level != LEVELS[0] else {})}
                    for d in index.documents]
            answer, key, names = {"topic": index.node.id, "title": index.node.title, "total": len(rows)}, "documents", [r["path"] for r in rows]
        mark = Cursor("list_topics", args, 0, budget.digest(names))
        if cur is not None:
            cur.check(mark.digest)
        return self._page(answer, key, rows[at:] if at <= len(rows) else None, at, len(rows), mark, budget.limit(None))

    @staticmethod
    def _page(answer: dict, key: str, rows: list[dict] | None, at: int, total: int, mark: Cursor, room: int) -> dict:
        """``answer`` with the ``rows`` (those from item ``at`` of ``total``) that fit ``room``
        under ``key``, ``from`` and a ``next_cursor`` (``mark`` at the next item) when items are left."""
        if rows is None:
            raise ValueError("cursor is past the end: call again without a cursor")
        answer["from"] = at
        taken = budget.fill(answer, key, rows, room)
        if at + taken < total:
            if taken == 0:
                raise ValueError(f"{key} entry {at} alone is over the budget; raise max_tokens")
            answer["next_cursor"] = Cursor(mark.tool, mark.arguments, at + taken, mark.digest).encode()
        return answer

    def search(self, query: str, k: int = 5, *, topic: str | None = None, keyword: str | None = None,
               is_code: bool | None = None, promotion_level: str | None = None, method: str = "auto",
               max_distance: int | None = None, max_tokens: int | None = None) -> dict:
        _count(k, "k")
        room = budget.limit(max_tokens)
        if topic is not None and topic.strip("/"):
            self._topic(topic)  # an unknown topic is an error, not an empty result
        if promotion_level is not None and promotion_level not in LEVELS:
            raise ValueError(f"promotion_level must be one of {', '.join(LEVELS)}, not {promotion_level!r}")
        hits: list[Hit] = self.site.search(
            query, k, topic=topic, keyword=keyword, is_code=is_code, promotion_level=promotion_level,
            method=method, max_distance=max_distance, embedder=self.embedder(),
        )
        extras = [{"score": round(h.score, 4), "method": h.method} for h in hits]
        answer: dict = {"query": query}
        taken = budget.fill(answer, "hits", self._with_text([h.chunk for h in hits], extras), room)
        if taken < len(hits):
            answer["omitted"] = len(hits) - taken
            answer["hint"] = "hits past max_tokens were left out: lower k, raise max_tokens, or read_chunk them"
        return answer

    def sample(self, topic: str | None = None, n: int = 5, *, order: str | None = None, document: str | None = None,
               cursor: str | None = None, max_tokens: int | None = None) -> dict:
        """A page of up to ``n`` chunks of the reading order of ``topic`` (or of one ``document``
        of it), with text; ``next_cursor`` continues the order."""
        _count(n, "n")
        room = budget.limit(max_tokens)
        args, at, cur = budget.opened(cursor, "sample", {"topic": topic, "document": document, "order": order})
        if args.get("topic") is None:
            raise ValueError("sample needs a topic (a topic id from list_topics), or the cursor of an earlier sample")
        order = args.get("order") or ORDERS[0]
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
        name = args.get("document")
        if name is not None:
            if "/" not in name.strip("/") and args["topic"].strip("/"):  # a bare name: the topic's document
                name = f"{args['topic'].strip('/')}/{name.strip('/')}"
            index, doc = self.document(name)
            refs = self.site.plan_sample(index.node.id, len(doc.items), order=order, document=doc.name)
            answer = {"topic": index.node.id, "document": doc.source, "title": doc.title}
        else:
            index = self._topic(args["topic"])
            refs = self.site.plan_sample(index.node.id, sum(len(d.items) for d in index.documents), order=order)
            answer = {"topic": index.node.id, "title": index.node.title}
        answer["order"] = order
        answer["total"] = len(refs)
        mark = Cursor("sample", args, 0, budget.digest(chunk_id(r) for r in refs))
        if cur is not None:
            cur.check(mark.digest)
        page = self._with_text(refs[at:at + n]) if at <= len(refs) else None
        return self._page(answer, "chunks", page, at, len(refs), mark, room)

    def read_chunk(self, chunk: str | None = None, cursor: str | None = None) -> dict:
        args, at, cur = budget.opened(cursor, "read_chunk", {"chunk_id": chunk})
        if args.get("chunk_id") is None:
            raise ValueError("read_chunk needs a chunk_id, or the cursor of an earlier read_chunk")
        doc, ref = self.chunk(args["chunk_id"])
        links = {
            "prev": chunk_id(doc.items[ref.index - 1]) if ref.index > 0 else None,
            "next": chunk_id(doc.items[ref.index + 1]) if ref.index + 1 < len(doc.items) else None,
            "related": [r["chunk_id"] for r in self._related(ref)],
        }
        text = self.site.read(ref).text
        answer = self.describe(ref, None, links=links)
        return self._text_page(answer, text, at, Cursor("read_chunk", args, 0, budget.digest([text])), cur,
                               budget.limit(None))

    def _text_page(self, answer: dict, text: str, at: int, cursor: Cursor, given: Cursor | None, room: int, outline=None) -> dict:
        """``answer`` with the part of ``text`` from character ``at`` that fits ``room``, ending at
        a line end, and a ``next_cursor`` when text is left. ``outline(part_start, part)``: more
        fields for the part (they count against the room)."""
        if given is not None:
            given.check(cursor.digest)
        if at > len(text):
            raise ValueError("cursor is past the end: call again without a cursor")
        left = room - budget.RESERVE - budget.length({**answer, "text": ""})
        while True:
            part = budget.cut(text[at:], left) if left > 0 else ""
            extra = outline(at, part) if outline is not None else {}
            over = budget.length({**answer, **extra, "text": part}) + budget.RESERVE - room
            if over <= 0 or not part:
                break
            left -= over
        answer.update(extra, text=part)
        if at + len(part) < len(text):
            if not part:
                raise ValueError("the text's part is over the budget; raise max_tokens")
            answer["next_cursor"] = Cursor(cursor.tool, cursor.arguments, at + len(part), cursor.digest).encode()
        return answer

    def read_document(self, document: str | None = None, cursor: str | None = None, max_tokens: int | None = None) -> dict:
        """The source document exactly as written, a page of lines at a time, with the chunks
        those lines hold (id and lines)."""
        room = budget.limit(max_tokens)
        args, at, cur = budget.opened(cursor, "read_document", {"document": document})
        if args.get("document") is None:
            raise ValueError("read_document needs a document path, or the cursor of an earlier read_document")
        index, doc = self.document(args["document"])
        text = self.site.transport.get(doc.source).decode("utf-8", errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)

        def outline(start: int, part: str) -> dict:
            first = text.count("\n", 0, start) + 1
            last = max(first, first + part.count("\n") - (1 if part.endswith("\n") else 0))
            held = [{"chunk_id": chunk_id(c), "start_line": c.start_line, "end_line": c.end_line} for c in doc.items
                    if c.start_line is not None and c.end_line is not None and c.start_line <= last and c.end_line >= first]
            return {"start_line": first, "end_line": last, "chunks": held}

        answer = {"document": doc.source, "title": doc.title, "topic": index.node.id, "total_lines": lines,
                  "url": file_url(self.site.site_url, doc.source)}
        mark = Cursor("read_document", args, 0, budget.digest([text]))
        return self._text_page(answer, text, at, mark, cur, room, outline)

    def follow(self, chunk: str, rel: str = "next", max_tokens: int | None = None) -> dict:
        if rel not in FOLLOW:
            raise ValueError(f"rel must be one of {', '.join(FOLLOW)}, not {rel!r}")
        room = budget.limit(max_tokens)
        doc, ref = self.chunk(chunk)
        if rel == "related":
            related = self._related(ref)
            refs = [r["ref"] for r in related]
            extras = [{"similarity": r["similarity"]} for r in related]
        else:
            j = ref.index + (1 if rel == "next" else -1)
            refs, extras = ([doc.items[j]], None) if 0 <= j < len(doc.items) else ([], None)
        answer: dict = {"from": chunk_id(ref), "rel": rel}
        taken = budget.fill(answer, "chunks", self._with_text(refs, extras), room)
        if taken < len(refs):
            answer["omitted"] = [chunk_id(r) for r in refs[taken:]]
        return answer

    def _related(self, ref: ChunkRef) -> list[dict]:
        """The chunk's ``_links.related`` from its document's resource, resolved to chunks."""
        item_links, page = self.site.item_links(ref)
        links = item_links.get("related", [])
        out = []
        for link in links if isinstance(links, list) else []:
            href = link.get("href") if isinstance(link, dict) else None
            target = self._ref_at(ref.topic, self.site.resolve(href, page)) if isinstance(href, str) else None
            if target is not None:
                out.append({"ref": target, "chunk_id": chunk_id(target), "similarity": link.get("similarity")})
        return out

    def topics_overview(self) -> dict:
        """The site's topics, every one (the ``site://topics`` resource): ``list_topics``'s rows
        without paging; it grows with the number of topics only."""
        nodes = self.site.topics()
        return {"site": self.site.title, "model": self.site.model,
                "topics": [{"id": n.id, "title": n.title, "parent": n.parent, "documents": n.documents} for n in nodes]}
