"""Asking a site its questions through its own search (``Site.search``), each as a reader's first query.

``ask`` runs every question with every method the site supports (``site_methods``) on a cold
reader of the site (``Site.reader``): what ``open_site(site).search(question, k, method=m)``
returns, whatever was asked before. Query vectors are computed once per question text, in one
batch, by the embedder ``Site.search`` would use (``QueryVectors``), and shared by the methods
that need them. Files are read once (``MemoTransport``), so a cold query costs no disk or network
again, while the client still counts its requests and spends its request budget as a reader's.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from pipeline.errors import PipelineError
from pipeline.evaluate.probes import Section
from pipeline.evaluate.questions import Question
from pipeline.evaluate.targets import Inventory


class MemoTransport:
    """A site's transport whose files are fetched once and then served from memory."""

    def __init__(self, inner):
        self.inner = inner
        self.root = inner.root
        self.requests = 0
        self._held: dict[str, bytes] = {}

    def locate(self, rel: str) -> str:
        return self.inner.locate(rel)

    def get(self, rel: str) -> bytes:
        self.requests += 1
        data = self._held.get(rel)
        if data is None:
            data = self._held[rel] = self.inner.get(rel)
        return data


class QueryVectors:
    """An embedder (``name``, ``embed``) answering from vectors computed once per text, each as
    ``Site.search`` computes it: the site's static encoder reads the word rows of ``index`` (its
    search index), as it does there (``sitesearch._embed_one``); another embedder, in batches."""

    def __init__(self, inner, index=None):
        from pipeline.client.staticembed import SiteStaticEncoder

        self.inner = inner
        self.name = inner.name
        self.index = index if isinstance(inner, SiteStaticEncoder) else None
        self._vectors: dict[str, np.ndarray] = {}

    def prepare(self, texts: Sequence[str], batch: int = 64) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if self.index is not None:
            batch = 1  # the word path embeds one text at a time
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            vectors = self.inner.embed(part, index=self.index) if self.index is not None else self.inner.embed(part)
            self._vectors.update(zip(part, np.asarray(vectors, dtype=np.float32)))

    def embed(self, texts: list[str], **_) -> np.ndarray:
        self.prepare(texts)
        return np.vstack([self._vectors[t] for t in texts])


@dataclass(frozen=True)
class Returned:
    """One hit as the report shows it."""

    source: str
    header_path: str
    title: str
    topic: str
    index: int
    score: float

    @classmethod
    def of(cls, hit) -> "Returned":
        return cls(hit.source, hit.header_path, hit.title, hit.topic, hit.chunk.index, round(float(hit.score), 4))


@dataclass
class Answer:
    """A question's outcome: per method, the rank of its first hit in a target (None: not in
    the first k) and the hits that came back."""

    question: Question
    ranks: dict[str, int | None] = field(default_factory=dict)
    hits: dict[str, list[Returned]] = field(default_factory=dict)


@dataclass(frozen=True)
class Methods:
    names: tuple[str, ...]  # evaluated, in this order
    page: str  # the one the search page uses
    embedder: object | None  # the query embedder for hybrid and auto, or None
    notes: tuple[str, ...] = ()


def site_methods(site, embedder=None) -> Methods:
    """The methods ``site`` supports: ``lexical`` always; ``hybrid`` when it has vectors and their
    model can embed queries here: with what ``Site.search(..., embedder=embedder)`` embeds them
    (``Site.query_embedder``; by default the site's static encoder, as the search page and every
    client embed a query); ``auto`` when it has prompt hashes (without them ``auto`` is
    ``hybrid``, not asked twice). Raises PipelineError for a site without a search index, and
    SiteError when ``embedder`` cannot embed the site's queries."""
    from pipeline.siteformat.readerrors import SiteError

    index = site.search_index(records=True)
    if index is None:
        raise PipelineError(f"{site.url}: this site has no search index (_search/); rebuild it with `pipeline build`")
    names, notes = ["lexical"], []
    vectors = index.meta.get("vectors") or {}
    chosen = None
    if vectors.get("model"):
        try:
            chosen = site.query_embedder(embedder)
        except SiteError:
            if embedder is not None:  # asked for: a model that does not fit, no static encoder, ...
                raise
            notes.append(f"hybrid not evaluated: no local query embedder for the site's model {vectors['model']!r} (pass --embedder)")
        else:
            names.append("hybrid")
    else:
        notes.append("hybrid not evaluated: the site publishes no vectors")
    if index.meta.get("prompts"):
        names.append("auto")
    page = "auto" if "auto" in names else names[-1]
    if "auto" not in names and "hybrid" in names:
        notes.append("auto (the search page's method) ranks as hybrid here: the site has no prompt hashes")
    return Methods(tuple(names), page, QueryVectors(chosen, index) if chosen is not None and "hybrid" in names else None,
                   tuple(notes))


def rank_in(hits: Sequence[Returned], question: Question) -> int | None:
    """The 1-based rank of the first hit lying in one of the question's targets, else None."""
    for rank, hit in enumerate(hits, start=1):
        if any(t.matches(hit.source, hit.header_path) for t in question.targets):
            return rank
    return None


def ask(site, questions: Sequence[Question], methods: Methods, *, k: int = 5,
        progress: Callable[[int, int], None] | None = None) -> list[Answer]:
    """Every question asked with every method on a cold reader of ``site`` (module docstring)."""
    if methods.embedder is not None:
        methods.embedder.prepare([q.text for q in questions])
    answers = []
    for i, question in enumerate(questions):
        answer = Answer(question)
        for method in methods.names:
            hits = site.reader().search(question.text, k, method=method,
                                        embedder=methods.embedder if method != "lexical" else None)
            answer.hits[method] = [Returned.of(h) for h in hits]
            answer.ranks[method] = rank_in(answer.hits[method], question)
        answers.append(answer)
        if progress is not None:
            progress(i + 1, len(questions))
    return answers


def inventory_of(site) -> Inventory:
    """The site's documents and sections, from its topics' index documents."""
    inventory = Inventory()
    for node in site.topics():
        for doc in site.topic(node).documents:
            inventory.add(doc.source, node.id, doc.title, [c.header_path for c in doc.items],
                          tuple(c.title for c in doc.items if not c.header_path))
    return inventory


@dataclass(frozen=True)
class SiteChunk:
    ref: object  # ChunkRef
    document_title: str
    text: str  # as served: heading context + span


def chunks_of(site) -> list[SiteChunk]:
    """Every chunk of the site with its text, in site order (eight reads in flight over HTTP)."""
    listed = [(doc.title, chunk) for node in site.topics() for doc in site.topic(node).documents for chunk in doc.items]
    with ThreadPoolExecutor(max_workers=8) as pool:
        texts = list(pool.map(site.read, [c for _, c in listed]))
    return [SiteChunk(c, title, t.text) for (title, c), t in zip(listed, texts)]


def sections_of(chunks: Sequence[SiteChunk]) -> list[Section]:
    """Every section (source, header path) of the site, in site order."""
    out, seen = [], set()
    for c in chunks:
        key = (c.ref.source, c.ref.header_path)
        if key not in seen:
            seen.add(key)
            out.append(Section(c.ref.source, c.ref.header_path, c.document_title))
    return out


def open_for_eval(location: str, *, timeout: float):
    """The site at ``location`` read through a ``MemoTransport`` (each file fetched once)."""
    from pipeline.client import Site
    from pipeline.client.transport import transport_for

    transport, index = transport_for(location, timeout=timeout)
    return Site(MemoTransport(transport), index).check()


def progress_bar(label: str, *, stream=None, every: float = 0.5) -> Callable[[int, int], None]:
    """A one-line progress counter on stderr (a terminal only), at most every ``every`` seconds."""
    stream = stream or sys.stderr
    state = {"at": 0.0}

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - state["at"] >= every:
            state["at"] = now
            stream.write(f"\r{label}: {done}/{total}" + ("\n" if done == total else ""))
            stream.flush()

    return show if getattr(stream, "isatty", lambda: False)() else (lambda done, total: None)
