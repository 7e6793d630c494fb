"""BM25F impact scoring: the posting table of a site's (term, chunk) frequencies per field and the
integer impacts 1..255 the index stores (docs/CLIENTS.md).

Job: turn term counts per field (title, heading, body) into every (term, chunk) contribution,
precomputed and quantised, so a query's score is an integer sum and both clients rank alike.

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
and lost 4.8 points R@5 on the realdocs set (docs/QUALITY.md, "Search: BM25F field weights")."""
MAX_IMPACT = 255


def impacts(fields: list[dict[str, Counter]], lengths: list[dict[str, int]]) -> dict[str, list[tuple[int, float]]]:
    """BM25F contribution of every (term, chunk): {term: [(chunk number, score)]} (pure).

    tf~ = sum_f w_f * tf_f / (1 - b_f + b_f * len_f / avglen_f); score = idf * tf~ (k1 + 1) / (k1 + tf~),
    idf = ln(1 + (N - df + 0.5) / (df + 0.5)).
    """
    n = len(fields)
    avg = {f: (sum(le[f] for le in lengths) / n if n else 0.0) or 1.0 for f in FIELDS}
    df: Counter = Counter()
    for per_field in fields:
        df.update(set().union(*(c.keys() for c in per_field.values())))
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for number, (per_field, length) in enumerate(zip(fields, lengths)):
        weighted: dict[str, float] = defaultdict(float)
        for f, (weight, b) in FIELDS.items():
            norm = 1 - b + b * length[f] / avg[f]
            for term, tf in per_field[f].items():
                weighted[term] += weight * tf / norm
        for term, tf in weighted.items():
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            out[term].append((number, idf * tf * (K1 + 1) / (K1 + tf)))
    return out


def quantise(scores: dict[str, list[tuple[int, float]]]) -> tuple[dict[str, list[tuple[int, int]]], float]:
    """Impacts as integers 1..255 of the largest one, and the scale back to BM25F units."""
    top = max((s for postings in scores.values() for _, s in postings), default=0.0)
    scale = top / MAX_IMPACT if top > 0 else 1.0
    return (
        {t: [(c, max(1, min(MAX_IMPACT, round(s / scale)))) for c, s in postings] for t, postings in scores.items()},
        scale,
    )


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
        """This table as plain values (``site/memo.py`` stores them): its terms in id order,
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
        """({term: (chunk numbers ascending, impacts 1..255)}, scale): ``impacts`` then ``quantise``
        with the same float operations in the same order, element by element, so the same bits."""
        chunks, levels, bounds, scale = self.sorted_postings()
        return {name: (chunks[bounds[tid] : bounds[tid + 1]], levels[bounds[tid] : bounds[tid + 1]])
                for name, tid in self.term_ids.items()}, scale

    def sorted_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """``quantised`` as flat arrays: (chunk numbers, impacts, bounds, scale), the postings
        sorted by term id and then chunk number, term id ``t``'s at ``bounds[t]:bounds[t + 1]``."""
        n = self.chunks
        chunk = np.frombuffer(self.chunk, dtype=np.int32)
        term = np.frombuffer(self.term, dtype=np.int32)
        weighted = np.zeros(len(chunk), dtype=np.float64)
        for f, (weight, b) in FIELDS.items():
            length = np.frombuffer(self.lengths[f], dtype=np.int64)
            avg = (int(length.sum()) / n if n else 0.0) or 1.0
            norm = 1 - b + b * length.astype(np.float64) / avg  # per chunk, as ``impacts``
            tf = np.frombuffer(self.tf[f], dtype=np.int32).astype(np.float64)
            # ``impacts`` adds only the fields a term occurs in; adding 0.0 changes no bit
            weighted += weight * tf / norm[chunk]
        df = np.bincount(term, minlength=len(self.term_ids))
        # math.log per term, not np.log: numpy's vectorised log may differ in the last bit
        idf = np.array([math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float64)
        scores = idf[term] * weighted * (K1 + 1) / (K1 + weighted)
        top = float(scores.max()) if len(scores) else 0.0
        scale = top / MAX_IMPACT if top > 0 else 1.0
        # np.rint rounds half to even, as Python's round
        levels = np.clip(np.rint(scores / scale), 1, MAX_IMPACT).astype(np.int32)
        order = np.argsort(term, kind="stable")  # stable: each term's postings stay in chunk order
        bounds = np.concatenate(([0], np.cumsum(df)))
        return chunk[order], levels[order], bounds, scale
