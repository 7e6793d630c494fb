"""A topic's ``topic-spec.md`` data block, computed from its gathered inputs, and the digest of those inputs.

One job, no I/O: ``topic_data`` turns a ``Topic`` (documents with their vectors, questions) and
its keyword table into the data block IndexTool reads (per document its spec, per chunk its
keywords, prompt hashes and context: ``topicspec/records.py``, ``topicspec/context.py``); ``topic_text``
is the part that needs no vector (a build computes it while the encoding runs);
``topic_digest`` names every input, so an unchanged topic's page is not computed again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from pipeline import __version__
from pipeline.reuse.state import Digest
from pipeline.topicspec.keywords import Keyword, keywords_in
from pipeline.topicspec.prompts import DEFAULT_POLICY, PromptPolicy
from pipeline.topicspec.records import chunk_summaries, document_spec, topic_context
from pipeline.topicspec.topicinputs import Topic


def topic_digest(
    topic: Topic, table: tuple[str, list[Keyword]], model: str, related_k: int, policy: PromptPolicy = DEFAULT_POLICY
) -> str:
    """Digest of every input of ``topic_data`` (and so of ``topic-spec.md``)."""
    origin, keywords = table
    d = Digest(topic.dir_rel, model, related_k, type(policy).__name__, dataclasses.asdict(policy), origin)
    d.add([[k.name, k.score] for k in keywords], [[q.text, q.line, q.hash] for q in topic.questions])
    for vector in topic.question_vectors:
        d.add(_vector_bytes(vector))
    for doc in topic.docs:
        # The manifest names each chunk's text by its content hash; the cache names the vectors.
        d.add(doc.manifest_digest, doc.vectors_digest)
    return d.hex()


def _vector_bytes(vector: np.ndarray | None) -> bytes:
    if vector is None:
        return b"none"
    array = np.ascontiguousarray(vector)
    return array.dtype.str.encode() + str(array.shape).encode() + array.tobytes()


@dataclass
class TopicText:
    """What ``topic_data`` computes from a topic's chunk spans alone, not its vectors: a build
    computes it for the topics being encoded while the encoding runs (``finish_spec``)."""

    summaries: list[str]  # ``chunk_summaries``: per chunk, in manifest then chunk order
    keywords: list[list[list[Keyword]]]  # per document, per chunk: the table's keywords in its span


def topic_text(topic: Topic, table: tuple[str, list[Keyword]]) -> TopicText:
    keywords = table[1]
    manifests = [doc.manifest for doc in topic.docs]
    spans = [doc.spans for doc in topic.docs]
    return TopicText(chunk_summaries(manifests, spans), [[keywords_in(s, keywords) for s in doc_spans] for doc_spans in spans])


def unvectored_specs(topic: Topic, text: TopicText) -> list[dict]:
    """The topic's document specs as ``topic_data`` makes them, less what needs its vectors:
    every similarity 0 and no context (position, neighbours' summaries, related chunks, prompt
    hashes). What a build drafts the search index's share of the topic from while it encodes."""
    return [
        document_spec(doc.manifest, np.zeros((len(doc.manifest["chunks"]), 1), np.float32), keywords)
        for doc, keywords in zip(topic.docs, text.keywords)
    ]


def topic_data(
    topic: Topic, table: tuple[str, list[Keyword]], model: str, related_k: int, policy: PromptPolicy = DEFAULT_POLICY,
    text: TopicText | None = None, related_of: Callable[[np.ndarray], list[list[tuple[int, float]]]] | None = None,
    authored: dict[str, dict] | None = None,
) -> dict:
    """The data block of one topic (everything IndexTool and readers of topic-spec.md need).
    ``text``: ``topic_text(topic, table)``, when already computed; ``related_of``: a function
    giving ``context.related(vectors, related_k)`` of the topic's chunk vectors (a build's, which
    updates the lists of an earlier build: ``topicspec._related_memo``); ``authored``: the links
    and backlinks of the topic's vault notes by site path (``vault/graph.py``)."""
    origin, keywords = table
    manifests = [doc.manifest for doc in topic.docs]
    text = text if text is not None else topic_text(topic, table)
    vectors = np.vstack([v for doc in topic.docs for v in doc.vectors]).astype(np.float32)
    qvectors = (
        np.vstack(topic.question_vectors).astype(np.float32) if topic.questions else np.zeros((0, vectors.shape[1]), np.float32)
    )
    contexts, rows_of_question = topic_context(
        manifests, text.summaries, vectors, qvectors, topic.questions, related_k=related_k, policy=policy,
        neighbours=related_of(vectors) if related_of is not None else None,
    )
    specs = []
    row = 0
    for doc, doc_keywords, ctx in zip(topic.docs, text.keywords, contexts):
        n = len(doc.manifest["chunks"])
        specs.append(document_spec(doc.manifest, vectors[row : row + n], doc_keywords, ctx, (authored or {}).get(doc.source)))
        row += n
    refs = [c["href"] for m in manifests for c in m["chunks"]]
    data = {
        "topic": topic.dir_rel,
        "model": model,
        "pipeline_version": __version__,
        "keywords": {"origin": origin, "table": [k.to_dict() for k in keywords]},
        "prompt_matching": policy.describe(),
        "questions": [
            {"text": q.text, "line": q.line, "hash": q.hash, "hash_hex": q.hex, "chunks": [refs[r] for r in rows]}
            for q, rows in zip(topic.questions, rows_of_question)
        ],
        "documents": specs,
    }
    return data
