"""One evaluation of a built site: its questions asked, scored per method, document and topic.

``evaluate`` reads the site through the Site client (``run.open_for_eval``), takes its questions
from the first source that exists (``questions`` module docstring: a file, the site's
``qa-pairs.md``, probes), asks them (``run.ask``), and gathers the figures (``metrics``) and
the competing sections (``competition``) into an ``Evaluation``, which ``to_dict`` gives as the
JSON of ``pipeline eval --json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError
from pipeline.evaluate import competition, metrics, probes, run
from pipeline.evaluate.questions import Question, read_question_file, site_questions
from pipeline.evaluate.targets import Inventory

DEFAULT_K = 5
PROBE_KIND = probes.KIND
"""The probes ``pipeline eval`` makes when a site has no questions (``probes``)."""
FORMAT = 1
"""Version of the JSON ``to_dict`` gives; raised when a field changes meaning or goes away."""


@dataclass
class Evaluation:
    site: str
    title: str
    k: int
    origin: str  # "file", "qa-pairs" or "probe"
    questions_file: str | None
    methods: run.Methods
    answers: list[run.Answer]
    inventory: Inventory
    untied: list[Question] = field(default_factory=list)
    competing: list[competition.Competing] = field(default_factory=list)
    seconds: float = 0.0  # how long ``evaluate`` took (not in the JSON: the same site gives the same bytes)
    probes_asked: bool = False  # probes asked for (``use_probes``), whatever other questions the site has

    # --- figures ---------------------------------------------------------------------------

    def summary(self, method: str) -> metrics.Score:
        return metrics.score(a.ranks[method] for a in self.answers)

    def by_document(self, method: str) -> dict[str, metrics.Score]:
        return metrics.grouped(self.answers, lambda a: a.ranks[method], lambda a: a.question.source)

    def by_topic(self, method: str) -> dict[str, metrics.Score]:
        topic = {s: d.topic for s, d in self.inventory.documents.items()}
        return metrics.grouped(self.answers, lambda a: a.ranks[method], lambda a: topic.get(a.question.source, ""))

    def failing(self, method: str) -> list[run.Answer]:
        return [a for a in self.answers if a.ranks[method] is None]

    def unreached(self, method: str) -> list[tuple[str, str]]:
        """Sections no question's first k hits of ``method`` lie in."""
        return metrics.unreached(self.inventory.sections(),
                                 ((h.source, h.header_path) for a in self.answers for h in a.hits[method]))

    @property
    def page(self) -> str:
        return self.methods.page

    def to_dict(self) -> dict:
        names = self.methods.names
        docs = self.inventory.documents
        per_doc = {m: self.by_document(m) for m in names}
        per_topic = {m: self.by_topic(m) for m in names}
        return {
            "format": FORMAT,
            "site": self.site,
            "title": self.title,
            "k": self.k,
            "questions_from": self.origin,
            "questions_file": self.questions_file,
            "probe_kind": PROBE_KIND if self.origin == "probe" else None,
            "methods": list(names),
            "page_method": self.page,
            "notes": list(self.methods.notes),
            "documents_in_site": len(docs),
            "sections_in_site": len(self.inventory.sections()),
            "summary": {m: self.summary(m).to_dict() for m in names},
            "documents": [
                {"source": s, "topic": docs[s].topic if s in docs else "", "title": docs[s].title if s in docs else "",
                 **{m: per_doc[m][s].to_dict() for m in names}}
                for s in per_doc[names[0]]
            ],
            "topics": [{"topic": t, **{m: per_topic[m][t].to_dict() for m in names}} for t in per_topic[names[0]]],
            "questions": [
                {"question": a.question.text, "expect": a.question.expect, "where": a.question.where, "tie": a.question.tie,
                 "ranks": dict(a.ranks),
                 "hits": {m: [{"source": h.source, "header_path": h.header_path, "title": h.title, "score": h.score}
                              for h in hits] for m, hits in a.hits.items()}}
                for a in self.answers
            ],
            "untied_questions": [{"question": q.text, "where": q.where} for q in self.untied],
            "unreached_sections": {m: [{"source": s, "header_path": h} for s, h in self.unreached(m)] for m in names},
            "competing_sections": [c.to_dict() for c in self.competing],
        }


def gather_questions(site, inventory: Inventory, questions_file: Path | None, *, use_probes: bool,
                     sections: list[probes.Section]) -> tuple[str, list[Question], list[Question]]:
    """(origin, questions, untied qa-pairs questions) from the first source that exists."""
    if questions_file is not None:
        return "file", read_question_file(questions_file, inventory), []
    if not use_probes:
        tied, untied = site_questions(site, inventory)
        if tied:
            return "qa-pairs", tied, untied
    made = probes.make_probes(sections)
    if not made:
        raise PipelineError(f"{site.url}: no questions: the site has no qa-pairs.md questions and no section to probe")
    return "probe", made, []


def evaluate(location: str, *, questions_file: Path | None = None, use_probes: bool = False, k: int = DEFAULT_K,
             embedder=None, timeout: float = 10.0, progress: Callable[[int, int], None] | None = None) -> Evaluation:
    """Evaluate the site at ``location`` (directory or URL); see the module docstring."""
    if k < 1:
        raise ValueError("k must be at least 1")
    started = time.perf_counter()
    site = run.open_for_eval(location, timeout=timeout)
    inventory = run.inventory_of(site)
    if not inventory.documents:
        raise PipelineError(f"{site.url}: the site has no documents")
    methods = run.site_methods(site, embedder)
    chunks = run.chunks_of(site)
    origin, questions, untied = gather_questions(site, inventory, questions_file, use_probes=use_probes,
                                                 sections=run.sections_of(chunks))
    answers = run.ask(site, questions, methods, k=k, progress=progress)
    keys = [(c.ref.source, c.ref.header_path) for c in chunks]
    vectors = _vectors(site, chunks)
    texts = [probes.body(c.text) for c in chunks]
    return Evaluation(site.url, site.title, k, origin, str(questions_file) if questions_file else None, methods, answers,
                      inventory, untied, competition.competing(keys, vectors, texts), time.perf_counter() - started,
                      probes_asked=use_probes and questions_file is None)


def _vectors(site, chunks: list[run.SiteChunk]) -> np.ndarray | None:
    """The chunks' vectors in their order, or None when some topic publishes none."""
    rows = []
    tables = {}
    for c in chunks:
        if c.ref.topic not in tables:
            tables[c.ref.topic] = site.embeddings(c.ref.topic)
        table = tables[c.ref.topic]
        r = table.row_of(c.ref.document, c.ref.index) if table is not None else None
        if r is None:
            return None
        rows.append(table.vectors[r])
    return np.vstack(rows) if rows else None
