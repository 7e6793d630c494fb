"""BM25F scoring: the posting table of a site's (term, chunk) frequencies per field and the integer
term-frequency levels 1..63 the index stores (docs/ARCHITECTURE.md).

Job: turn term counts per field (title, heading, body) into each (term, chunk)'s BM25F
term-frequency part ``tf~ (k1 + 1) / (k1 + tf~)``, quantised to an integer level. The index stores
these levels, not whole scores: the idf, the one factor that depends on the other chunks holding
the term, is the reader's (``rank.idf_level``, from the postings it reads), so that a file holding
some chunks' postings changes only when those chunks do. The only site-wide inputs are the
average field lengths, put on a grid (``grid``) so that an edit almost never moves them.

Guarantees: pure and deterministic; ``PostingTable.quantised`` / ``sorted_postings`` give
exactly ``quantise(impacts(fields, lengths))``, bit for bit (``tests/test_search_index.py``).
``FIELDS`` and ``K1`` are read at call time (the benches swap them here).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from itertools import chain

import numpy as np

K1 = 1.2
FIELDS = {"title": (0.5, 0.5), "heading": (0.5, 0.5), "body": (1.0, 0.75)}
"""Field: (weight, length normalisation b). The body is the chunk file, which already holds the
title and header path (the heading context), so these fields only add to them: a title or heading
term counts 1.5 body occurrences. Weights 2/3 (4x-5x) ranked a document's every chunk by its title
and lost 4.8 points R@5 on the realdocs set (docs/decisions/search.md, "BM25F field weights")."""
MAX_IMPACT = 63
"""Levels of the term-frequency part: level = round(63 * tf part / (k1 + 1)), at least 1. Lexical
R@5 against the whole-score impacts of 255 levels (``_search/`` version 5), paired per question
and averaged over three chunk budgets: +0.0 realdocs, +0.0 markdown, +0.2 Chroma (CI across 0);
15 levels lost 0.8 on markdown (docs/decisions/search.md). Two digits a posting instead of three."""
GRID_STEPS = 16
"""Average field lengths are rounded to the nearest of 16 steps an octave (4.4 % apart): an edit
moves an average by a few parts in 10,000 at most, so it crosses a step (and every chunk's levels
change) about once in a few hundred edits, at a cost of at most 2.2 % in a length's weight."""


LENGTH_STEPS = 4
"""A chunk's field lengths are rounded to the nearest of 4 steps an octave (19 % apart) before
they normalise its term frequencies: one sentence changed in a chunk moves its length by a few
percent, which with exact lengths moved the levels of most of its terms (and so rewrote the term
shard of each: issue 30). Two words added to a chunk moved some level of 94 % of chunks, 37 % on
this grid (but when a step is crossed, every term's level moves; docs/decisions/search.md).
0: exact lengths."""


def grid(value: float, steps: int = GRID_STEPS) -> float:
    """``value`` (> 0) rounded to the nearest ``2 ** (k / steps)``."""
    return 2.0 ** (round(math.log2(value) * steps) / steps)


def chunk_length(length: int) -> float:
    """The length a chunk's field counts as when it normalises term frequencies: on the grid of
    LENGTH_STEPS steps an octave (0 stays 0)."""
    return grid(length, LENGTH_STEPS) if length > 0 and LENGTH_STEPS else float(length)


def average_lengths(lengths: dict[str, float], n: int) -> dict[str, float]:
    """The gridded average length of each field from its total over ``n`` chunks (1 when empty)."""
    return {f: grid(lengths[f] / n) if n and lengths[f] else 1.0 for f in FIELDS}


def impacts(fields: list[dict[str, Counter]], lengths: list[dict[str, int]]) -> dict[str, list[tuple[int, float]]]:
    """The BM25F term-frequency part of every (term, chunk): {term: [(chunk number, part)]} (pure).

    tf~ = sum_f w_f * tf_f / (1 - b_f + b_f * len_f / avglen_f) with ``avglen`` on the grid
    (``average_lengths``) and ``len_f`` on a coarser one (``chunk_length``); part = tf~ (k1 + 1) / (k1 + tf~). A reader multiplies it by the idf.
    """
    n = len(fields)
    avg = average_lengths({f: sum(le[f] for le in lengths) for f in FIELDS}, n)
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for number, (per_field, length) in enumerate(zip(fields, lengths)):
        weighted: dict[str, float] = defaultdict(float)
        for f, (weight, b) in FIELDS.items():
            norm = 1 - b + b * chunk_length(length[f]) / avg[f]
            for term, tf in per_field[f].items():
                weighted[term] += weight * tf / norm
        for term, tf in weighted.items():
            out[term].append((number, tf * (K1 + 1) / (K1 + tf)))
    return out


def level(part: float) -> int:
    """The stored level of a term-frequency part (as ``PostingTable.sorted_postings``)."""
    return max(1, min(MAX_IMPACT, math.floor(part * MAX_IMPACT / (K1 + 1) + 0.5)))


def quantise(scores: dict[str, list[tuple[int, float]]]) -> tuple[dict[str, list[tuple[int, int]]], float]:
    """Term-frequency parts as levels 1..MAX_IMPACT, and the scale back to BM25F units of a score
    (a sum of idf level times tf level: ``rank.idf_level``)."""
    return {t: [(c, level(s)) for c, s in postings] for t, postings in scores.items()}, score_scale()


def score_scale() -> float:
    """BM25F units per unit of a lexical score (idf level x tf level)."""
    from pipeline.siteformat.searchrank import IDF_SCALE

    return (K1 + 1) / (MAX_IMPACT * IDF_SCALE)


class PostingTable:
    """Every (term, chunk) of a site with its term frequency per field, in flat typed arrays
    (about 20 bytes a posting; a Counter per chunk and field, as ``impacts`` takes, costs ten
    times that, the largest structure of a big build). ``quantised`` gives exactly
    ``quantise(impacts(fields, lengths))`` (``tests/test_search_index.py`` checks it)."""

    def __init__(self) -> None:
        self.term_ids: dict[str, int] = {}
        self.chunk = array("i")  # chunk number of each posting; postings are added in chunk order
        self.term = array("i")  # term id of each posting
        self.tf = {f: array("i") for f in FIELDS}  # its term frequency in each field (0: absent)
        self.lengths = {f: array("q") for f in FIELDS}  # terms in each field of each chunk

    @property
    def chunks(self) -> int:
        return len(self.lengths["body"])

    def add(self, per_field: dict[str, Counter]) -> None:
        """The next chunk's term counts per field (the ``fields`` item ``impacts`` takes)."""
        number = self.chunks
        counts = [per_field[f] for f in FIELDS]
        # the chunk's terms first seen in field order, as ``impacts``; a term id is given as a
        # term is first met (the same ids, in the same order, as a loop over the fields)
        seen = list(dict.fromkeys(chain.from_iterable(counts)))
        ids = self.term_ids
        self.term.extend([ids.setdefault(term, len(ids)) for term in seen])
        self.chunk.extend([number] * len(seen))
        for f, field_counts in zip(FIELDS, counts):
            self.lengths[f].append(sum(field_counts.values()))
            self.tf[f].extend([field_counts.get(term, 0) for term in seen])  # 0: absent from the field

    def to_part(self) -> tuple:
        """This table as plain values (``reuse/memo.py`` stores them): its terms in id order,
        then the bytes of every array."""
        return (list(self.term_ids), self.chunk.tobytes(), self.term.tobytes(),
                [self.tf[f].tobytes() for f in FIELDS], [self.lengths[f].tobytes() for f in FIELDS])

    def extend(self, part: tuple) -> None:
        """Append the chunks of a table given by ``to_part``, as if each had been ``add``-ed
        here in order: its chunk numbers follow this table's, its terms take this table's ids
        (a term new here gets the next id, in the order the part first met it, as ``add``)."""
        names, chunk, term, tfs, lengths = part
        offset = self.chunks
        ids = np.array([self.term_ids.setdefault(name, len(self.term_ids)) for name in names], dtype=np.int32)
        self.chunk.frombytes((np.frombuffer(chunk, dtype=np.int32) + offset).astype(np.int32).tobytes())
        self.term.frombytes(ids[np.frombuffer(term, dtype=np.int32)].tobytes())
        for f, data in zip(FIELDS, tfs):
            self.tf[f].frombytes(data)
        for f, data in zip(FIELDS, lengths):
            self.lengths[f].frombytes(data)

    def quantised(self) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], float]:
        """({term: (chunk numbers ascending, levels 1..MAX_IMPACT)}, scale): ``impacts`` then ``quantise``
        with the same float operations in the same order, element by element, so the same bits."""
        chunks, levels, bounds = self.sorted_postings()
        return {name: (chunks[bounds[tid] : bounds[tid + 1]], levels[bounds[tid] : bounds[tid + 1]])
                for name, tid in self.term_ids.items()}, score_scale()

    def average_lengths(self) -> dict[str, float]:
        """Each field's gridded average length (``average_lengths``), as ``sorted_postings`` uses."""
        return average_lengths({f: int(np.frombuffer(self.lengths[f], dtype=np.int64).sum()) for f in FIELDS}, self.chunks)

    def sorted_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``quantised`` as flat arrays: (chunk numbers, levels, bounds), the postings sorted by
        term id and then chunk number, term id ``t``'s at ``bounds[t]:bounds[t + 1]``."""
        chunk = np.frombuffer(self.chunk, dtype=np.int32)
        term = np.frombuffer(self.term, dtype=np.int32)
        avg = self.average_lengths()
        weighted = np.zeros(len(chunk), dtype=np.float64)
        for f, (weight, b) in FIELDS.items():
            length = np.frombuffer(self.lengths[f], dtype=np.int64)
            values, where = np.unique(length, return_inverse=True)  # ``chunk_length`` once a distinct length
            gridded = np.array([chunk_length(int(v)) for v in values], dtype=np.float64)[where.reshape(-1)]
            norm = 1 - b + b * gridded / avg[f]  # per chunk, as ``impacts``
            tf = np.frombuffer(self.tf[f], dtype=np.int32).astype(np.float64)
            # ``impacts`` adds only the fields a term occurs in; adding 0.0 changes no bit
            weighted += weight * tf / norm[chunk]
        parts = weighted * (K1 + 1) / (K1 + weighted)
        levels = np.clip(np.floor(parts * MAX_IMPACT / (K1 + 1) + 0.5), 1, MAX_IMPACT).astype(np.int32)
        df = np.bincount(term, minlength=len(self.term_ids))
        order = np.argsort(term, kind="stable")  # stable: each term's postings stay in chunk order
        bounds = np.concatenate(([0], np.cumsum(df)))
        return chunk[order], levels[order], bounds
