"""Prompt hashes (seed 001 §6): which questions' SimHashes a chunk carries, and how readers match.

A topic's questions (``qa-pairs.md``) and chunks are embedded with the same model. Question
``q`` is attached to chunk ``c`` when ``c`` is among the ``per_question`` chunks of the topic
most similar to ``q`` AND ``cos(q, c) >= threshold`` (similarities rounded to 4 decimals
first, so the choice is stable across platforms). The chunk then stores ``simhash64(q)``.

A reader hashes the user's query with ``pipeline.simhash.simhash64`` (or its JS twin) and
takes every chunk holding a hash within ``max_distance`` bits (Hamming distance).

``DEFAULT_POLICY``'s numbers come from the issue-4 experiment on the sample content with
paraphrased queries; docs/DECISIONS.md ("Prompt hashes") records the rule and the figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.simhash import ALGORITHM, hamming, to_hex
from pipeline.siteformat.indexnames import DEFAULT_MAX_DISTANCE


@dataclass(frozen=True)
class PromptPolicy:
    """How questions are attached to chunks, and the Hamming radius published for readers.

    ``per_question``: each question goes to at most this many chunks (None: no limit);
    ``threshold``: minimum cosine similarity (question, chunk);
    ``max_distance``: the largest Hamming distance at which a query matches a stored hash.
    """

    threshold: float = 0.3
    per_question: int | None = 2
    max_distance: int = DEFAULT_MAX_DISTANCE

    def describe(self) -> dict:
        """The policy as published in ``index.json`` (``prompt_matching``)."""
        return {
            "algorithm": ALGORITHM,
            "max_distance": self.max_distance,
            "threshold": self.threshold,
            "per_question": self.per_question,
        }


DEFAULT_POLICY = PromptPolicy()


def similarities(chunk_vectors: np.ndarray, question_vectors: np.ndarray) -> np.ndarray:
    """Cosine similarities (rows: chunks, columns: questions) of unit vectors, 4 decimals."""
    if len(chunk_vectors) == 0 or len(question_vectors) == 0:
        return np.zeros((len(chunk_vectors), len(question_vectors)))
    sims = np.asarray(chunk_vectors, dtype=np.float64) @ np.asarray(question_vectors, dtype=np.float64).T
    return np.round(sims, 4)


def attach(sims: np.ndarray, policy: PromptPolicy) -> list[list[int]]:
    """For each chunk (row of ``sims``), the questions (columns) attached to it, in column order.

    A question's candidate chunks are ranked by similarity, ties to the lower row; it takes
    the first ``per_question`` of those whose similarity is at least ``threshold``.
    """
    rows, cols = sims.shape
    attached: list[list[int]] = [[] for _ in range(rows)]
    for q in range(cols):
        ranked = sorted(range(rows), key=lambda c: (-sims[c, q], c))
        if policy.per_question is not None:
            ranked = ranked[: policy.per_question]
        for c in ranked:
            if sims[c, q] >= policy.threshold:
                attached[c].append(q)
    return [sorted(qs) for qs in attached]


def hash_fields(hashes: list[int]) -> dict:
    """``prompt_hashes`` (integers, seed 001) and ``prompt_hashes_hex`` (16 hex digits each, the
    exact 64 bits for JavaScript, whose ``JSON.parse`` rounds integers above 2**53), parallel
    lists; duplicates dropped, first occurrence kept."""
    unique = list(dict.fromkeys(hashes))
    return {"prompt_hashes": unique, "prompt_hashes_hex": [to_hex(h) for h in unique]}


def matches(query_hash: int, stored: list[int], max_distance: int) -> bool:
    """True when some stored hash is within ``max_distance`` bits of ``query_hash`` (0 never matches)."""
    return query_hash != 0 and any(h != 0 and hamming(query_hash, h) <= max_distance for h in stored)
