"""What the MCP server's tools do, as plain methods over one ``Site`` (no MCP here: testable alone).

Every chunk is named by its ``chunk_id`` (``{document_id}_chunk_{i}``, the id manifests and
exports use; ``document_id`` is the source path without ``.md``), and also as the resource URI
``site://chunk/{chunk_id}``. Results are JSON-ready dicts. Bad ids and unknown topics raise
``LookupError``/``ValueError`` with a message that says what exists, so an agent can correct
itself; site read failures raise ``SiteError`` naming the URL.

One ``SiteTools`` holds one ``Site`` (index files fetched once and kept) and at most one query
embedder: the site's model is loaded on the first embedding search and reused by every later
call (``Site`` keeps it; an explicit ``embedder`` spec is built once here).
"""

from __future__ import annotations

import posixpath
import threading

from pipeline.client import Site
from pipeline.client.records import ChunkRef, Document, Hit, TopicIndex
from pipeline.promotion import LEVELS

CHUNK_URI = "site://chunk/"
DOCUMENT_URI = "site://document/"
FOLLOW = ("next", "prev", "related")


def chunk_id(ref: ChunkRef) -> str:
    return f"{_document_id(ref.source)}_chunk_{ref.index}"


def _document_id(source: str) -> str:
    return source[: -len(".md")] if source.endswith(".md") else source


class SiteTools:
    """The tools over ``site``; ``embedder``: a spec string (``minilm``, ``hashing``...) for query
    embeddings instead of the one named by the site's model."""

    def __init__(self, site: Site, embedder: str | None = None):
        self.site = site
        self._embedder_spec = embedder
        self._embedder = None
        self._lock = threading.Lock()
        self._by_path: dict[str, ChunkRef] | None = None

    # --- lookup -----------------------------------------------------------------------

    def embedder(self):
        """The query embedder built from ``embedder`` (once), or None: the site's own model."""
        if self._embedder_spec is None:
            return None
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
            raise LookupError(f"no topic {topic!r}; topics: {', '.join(self._topic_ids()) or 'none'} (see list_topics)")
        return self.site.topic(topic)

    def document(self, document: str) -> tuple[TopicIndex, Document]:
        """A document by source path (``guide/setup.md``), document id (``guide/setup``) or URI."""
        document = document.strip().removeprefix(DOCUMENT_URI).strip("/")
        topic = posixpath.dirname(document)
        if topic not in self._topic_ids():
            raise LookupError(f"no document {document!r}: no topic {topic!r} (see list_topics for document paths)")
        index = self.site.topic(topic)
        for doc in index.documents:
            if document in (doc.source, _document_id(doc.source)):
                return index, doc
        names = ", ".join(d.source for d in index.documents)
        raise LookupError(f"no document {document!r} in topic {topic!r}; its documents: {names}")

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

    def _ref_at(self, path: str) -> ChunkRef | None:
        if self._by_path is None:
            table = {}
            for node in self.site.topics():
                for doc in self.site.topic(node).documents:
                    table.update((c.path, c) for c in doc.items)
            self._by_path = table
        return self._by_path.get(path)

    # --- results ----------------------------------------------------------------------

    def describe(self, ref: ChunkRef, text: str | None = None, **extra) -> dict:
        _, doc = self.document(ref.source)
        out = {
            "chunk_id": chunk_id(ref),
            "uri": CHUNK_URI + chunk_id(ref),
            "topic": ref.topic,
            "document": ref.source,
            "document_title": doc.title,
            "position": f"{ref.index + 1} of {len(doc.items)}",
            "header_path": ref.header_path,
            "title": ref.title,
            "is_code": ref.is_code,
            "promotion_level": ref.promotion_level,
            "keywords": [k.name for k in ref.keywords],
            **extra,
        }
        if text is not None:
            out["text"] = text
        return out

    def _with_text(self, refs: list[ChunkRef], extras: list[dict] | None = None) -> list[dict]:
        chunks = self.site.read_all(refs)
        extras = extras or [{} for _ in refs]
        return [self.describe(c.ref, c.text, **extra) for c, extra in zip(chunks, extras)]

    # --- the tools ----------------------------------------------------------------------

    def list_topics(self) -> dict:
        topics = []
        for node in self.site.topics():
            index = self.site.topic(node)
            topics.append(
                {
                    "id": node.id,
                    "title": node.title,
                    "parent": node.parent,
                    "documents": [
                        {
                            "path": d.source,
                            "title": d.title,
                            "chunks": len(d.items),
                            "promotion_level": d.items[0].promotion_level if d.items else LEVELS[0],
                        }
                        for d in index.documents
                    ],
                }
            )
        return {"site": self.site.title, "model": self.site.model, "topics": topics}

    def search(self, query: str, k: int = 5, *, topic: str | None = None, keyword: str | None = None,
               is_code: bool | None = None, promotion_level: str | None = None, method: str = "auto",
               max_distance: int | None = None) -> dict:
        if topic is not None and topic.strip("/"):
            self._topic(topic)  # an unknown topic is an error, not an empty result
        if promotion_level is not None and promotion_level not in LEVELS:
            raise ValueError(f"promotion_level must be one of {', '.join(LEVELS)}, not {promotion_level!r}")
        hits: list[Hit] = self.site.search(
            query, k, topic=topic, keyword=keyword, is_code=is_code, promotion_level=promotion_level,
            method=method, max_distance=max_distance, embedder=self.embedder(),
        )
        extras = [{"score": round(h.score, 4), "method": h.method} for h in hits]
        return {"query": query, "hits": self._with_text([h.chunk for h in hits], extras)}

    def sample(self, topic: str, n: int = 5, *, order: str = "conceptual", document: str | None = None) -> dict:
        if document is not None:
            if "/" not in document.strip("/") and topic.strip("/"):  # a bare name: the topic's document
                document = f"{topic.strip('/')}/{document.strip('/')}"
            index, doc = self.document(document)
            refs = self.site.plan_sample(index.node.id, n, order=order, document=doc.name)
        else:
            refs = self.site.plan_sample(self._topic(topic).node.id, n, order=order)
        return {"topic": topic, "document": document, "order": order, "chunks": self._with_text(refs)}

    def read_chunk(self, chunk: str) -> dict:
        doc, ref = self.chunk(chunk)
        links = {
            "prev": chunk_id(doc.items[ref.index - 1]) if ref.index > 0 else None,
            "next": chunk_id(doc.items[ref.index + 1]) if ref.index + 1 < len(doc.items) else None,
            "related": [r["chunk_id"] for r in self._related(ref)],
        }
        return self._with_text([ref], [{"links": links}])[0]

    def read_document(self, document: str) -> dict:
        index, doc = self.document(document)
        data = self.site.transport.get(doc.source)
        return {
            "document": doc.source,
            "title": doc.title,
            "topic": index.node.id,
            "chunks": [chunk_id(c) for c in doc.items],
            "text": data.decode("utf-8", errors="replace"),
        }

    def follow(self, chunk: str, rel: str = "next") -> dict:
        if rel not in FOLLOW:
            raise ValueError(f"rel must be one of {', '.join(FOLLOW)}, not {rel!r}")
        doc, ref = self.chunk(chunk)
        if rel == "related":
            related = self._related(ref)
            refs = [r["ref"] for r in related]
            extras = [{"similarity": r["similarity"]} for r in related]
        else:
            j = ref.index + (1 if rel == "next" else -1)
            refs, extras = ([doc.items[j]], None) if 0 <= j < len(doc.items) else ([], None)
        return {"from": chunk_id(ref), "rel": rel, "chunks": self._with_text(refs, extras)}

    def _related(self, ref: ChunkRef) -> list[dict]:
        """The chunk's ``_links.related`` from its topic's index.json, resolved to chunks."""
        node_path = self.site.topic(ref.topic).node.path
        raw = self.site._json(node_path)  # noqa: SLF001 - the client keeps every index.json it fetched
        try:
            links = raw["_embedded"]["chunks"][ref.document]["items"][ref.index].get("_links", {}).get("related", [])
        except (KeyError, IndexError, TypeError, AttributeError):
            return []
        out = []
        for link in links if isinstance(links, list) else []:
            href = link.get("href") if isinstance(link, dict) else None
            target = self._ref_at(self.site.resolve(href, node_path)) if isinstance(href, str) else None
            if target is not None:
                out.append({"ref": target, "chunk_id": chunk_id(target), "similarity": link.get("similarity")})
        return out
