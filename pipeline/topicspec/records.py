"""The spec record of a document and the context of its chunks (pure functions of manifests,
vectors and questions): similarities to the baselines, keywords, position, neighbours'
summaries, related chunks and attached prompt hashes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.promotion import DEFAULT_LEVEL
from pipeline.topicspec.context import plain_text, position, related, summarize
from pipeline.topicspec.prompts import DEFAULT_POLICY, PromptPolicy, attach, hash_fields, similarities
from pipeline.topicspec.questions import Question


def similarity(vectors: np.ndarray, baseline: int) -> list[float]:
    """Cosine similarity of every row to row ``baseline`` (rows are unit length), 4 decimals."""
    return [round(float(x), 4) for x in vectors @ vectors[baseline]]


@dataclass(frozen=True)
class ChunkContext:
    """What a chunk knows about its surroundings, computed at topic level (``topic_context``)."""

    position: str
    prev_summary: str | None
    next_summary: str | None
    related: list[dict]
    prompt_hashes: list[int]


AUTHOR_KEYWORD_SCORE = 10  # a vault note's aliases and tags: the author named the note so


def document_spec(
    manifest: dict, vectors: np.ndarray, keywords: list, context: list[ChunkContext] | None = None, authored: dict | None = None
) -> dict:
    """The spec record of one document: what IndexTool needs, from its chunks and their vectors.
    A vault note's aliases and tags (its manifest's) are keywords of each of its chunks;
    ``authored``: its ``links`` and ``backlinks`` (``vault/graph.py``)."""
    named = _first_spellings([*manifest.get("aliases", ()), *manifest.get("tags", ())])
    technical = manifest.get("technical_baseline")
    conceptual_sim = similarity(vectors, 0)
    technical_sim = similarity(vectors, technical) if technical is not None else None
    level = manifest.get("promotion_level", DEFAULT_LEVEL)
    items = []
    for i, chunk in enumerate(manifest["chunks"]):
        item = {
            "index": chunk["chunk_index"],
            "href": chunk["href"],
            "title": chunk["title"],
            "header_path": chunk["header_path"],
            "is_code": chunk["is_code"],
            "token_count": chunk["token_count"],
            "start_line": chunk["start_line"],
            "end_line": chunk["end_line"],
            "similarity_conceptual": conceptual_sim[i],
        }
        if technical_sim is not None:
            item["similarity_technical"] = technical_sim[i]
        item["keywords"] = [k.to_dict() for k in keywords[i]]
        if named:
            found = {k["name"].casefold() for k in item["keywords"]}
            item["keywords"] += [{"name": n, "score": AUTHOR_KEYWORD_SCORE} for n in named if n.casefold() not in found]
        item["promotion_level"] = level  # inherited from the document (pipeline/promotion.py)
        if "page_url" in chunk:  # its place on the document's MkDocs page (sources/pages.py)
            item["page_url"] = chunk["page_url"]
        if context is not None:
            ctx = context[i]
            item.update(hash_fields(ctx.prompt_hashes))
            item["position"] = ctx.position
            if ctx.prev_summary is not None:
                item["prev_summary"] = ctx.prev_summary
            if ctx.next_summary is not None:
                item["next_summary"] = ctx.next_summary
            item["related"] = ctx.related
        items.append(item)
    spec = {
        "source": manifest["source"],
        "title": manifest["title"],
        "document_id": manifest["document_id"],
        "strategy": manifest["strategy_key"],
        "count": manifest["count"],
        "baseline_conceptual": 0,
        "promotion_level": level,
    }
    if technical is not None:
        spec["baseline_technical"] = technical
    if authored is not None:
        spec["links"], spec["backlinks"] = authored["links"], authored["backlinks"]
    spec["items"] = items
    return spec


def _first_spellings(names: list[str]) -> list[str]:
    """``names`` without case-insensitive repeats, each as first written."""
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.casefold(), name)
    return list(seen.values())


def chunk_summaries(manifests: list[dict], spans: list[list[str]]) -> list[str]:
    """Each chunk's summary (its prose, else its title), in manifest order then chunk order: what
    ``topic_context`` gives a chunk's neighbours. No vectors needed: a build computes it while
    they are encoded."""
    return [summarize(plain_text(span) or chunk["title"]) for doc_spans, m in zip(spans, manifests) for span, chunk in zip(doc_spans, m["chunks"])]


def topic_context(
    manifests: list[dict],
    summaries: list[str],
    vectors: np.ndarray,
    question_vectors: np.ndarray,
    questions: list[Question],
    *,
    related_k: int,
    policy: PromptPolicy = DEFAULT_POLICY,
    neighbours: list[list[tuple[int, float]]] | None = None,
) -> tuple[list[list[ChunkContext]], list[list[int]]]:
    """Context of every chunk of a topic (pure). ``vectors`` holds the chunks of all documents,
    in manifest order then chunk order; ``summaries`` theirs (``chunk_summaries``); ``neighbours``:
    ``related(vectors, related_k)`` when already computed (``context.related_update``).

    Returns the contexts per document, and for each question the global chunk rows it went to.
    """
    refs = [(m, c) for m in manifests for c in m["chunks"]]
    if neighbours is None:
        neighbours = related(vectors, related_k)
    attached = attach(similarities(vectors, question_vectors), policy) if questions else [[] for _ in refs]
    rows_of_question: list[list[int]] = [[] for _ in questions]
    for row, qs in enumerate(attached):
        for q in qs:
            rows_of_question[q].append(row)
    out: list[list[ChunkContext]] = []
    row = 0
    for m in manifests:
        count = len(m["chunks"])
        contexts = []
        for i in range(count):
            contexts.append(
                ChunkContext(
                    position=position(i, count),
                    prev_summary=summaries[row - 1] if i > 0 else None,
                    next_summary=summaries[row + 1] if i + 1 < count else None,
                    related=[
                        {"href": refs[j][1]["href"], "title": refs[j][1]["title"], "similarity": sim}
                        for j, sim in neighbours[row]
                    ],
                    prompt_hashes=[questions[q].hash for q in attached[row]],
                )
            )
            row += 1
        out.append(contexts)
    return out, rows_of_question
