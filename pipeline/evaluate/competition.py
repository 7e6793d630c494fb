"""Sections of different documents that compete for the same queries: near-identical vectors or text.

Two chunks of different documents compete when their vectors' cosine is at least
``VECTOR_THRESHOLD`` or their texts (without heading context) share at least ``TEXT_THRESHOLD``
of their word 3-shingles (Jaccard). Chunk pairs are reported as pairs of sections, each pair once,
with the highest figures of its chunks. Pure functions of vectors and texts:

- vectors: every pair compared exactly, in blocks (at most ``VECTOR_LIMIT`` chunks; above that
  the vector side is skipped and said so);
- texts: MinHash signatures (``PERMUTATIONS``) banded for candidates (``BANDS``; a pair at
  Jaccard 0.8 is a candidate with probability > 0.999), then each candidate's exact Jaccard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xxhash

from pipeline.simhash import words

VECTOR_THRESHOLD = 0.95
TEXT_THRESHOLD = 0.8
VECTOR_LIMIT = 20_000
MIN_SHINGLES = 5
"""Texts with fewer shingles (seven words) never pair: a lone ``</div>`` is no competition."""
PERMUTATIONS = 64
BANDS = 16
_PRIME = (1 << 31) - 1
_BLOCK = 512

SectionKey = tuple[str, str]  # (source, header path)


@dataclass(frozen=True)
class Competing:
    """Two sections of different documents and how alike their closest chunks are."""

    a: SectionKey
    b: SectionKey
    cosine: float | None  # of their closest chunks' vectors, when at or above the threshold
    jaccard: float | None  # of their closest chunks' texts, when at or above the threshold

    @property
    def kind(self) -> str:
        return "+".join(k for k, v in (("vectors", self.cosine), ("text", self.jaccard)) if v is not None)

    def to_dict(self) -> dict:
        return {"a": {"source": self.a[0], "header_path": self.a[1]}, "b": {"source": self.b[0], "header_path": self.b[1]},
                "kind": self.kind, "cosine": self.cosine, "jaccard": self.jaccard}


def vector_pairs(vectors: np.ndarray, sources: Sequence[str], threshold: float = VECTOR_THRESHOLD) -> list[tuple[int, int, float]]:
    """(i, j, cosine) for i < j of different sources whose rows' cosine is >= ``threshold``."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    codes = np.unique(np.asarray(sources), return_inverse=True)[1]
    out = []
    for start in range(0, len(v), _BLOCK):
        block = v[start : start + _BLOCK] @ v[start:].T
        rows, cols = np.nonzero(block >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i, j = start + r, start + c
            if i < j and codes[i] != codes[j]:
                out.append((i, j, float(block[r, c])))
    return out


def shingles(text: str) -> set[int]:
    """The 64-bit hashes of the word 3-shingles of ``text`` (its words, when fewer than three)."""
    w = words(text)
    grams = [" ".join(w[i : i + 3]) for i in range(len(w) - 2)] if len(w) >= 3 else w
    return {xxhash.xxh64_intdigest(g.encode("utf-8")) for g in grams}


def text_pairs(texts: Sequence[str], sources: Sequence[str], threshold: float = TEXT_THRESHOLD) -> list[tuple[int, int, float]]:
    """(i, j, Jaccard) for i < j of different sources whose texts' shingle sets are at least
    ``threshold`` alike (module docstring); texts of fewer than ``MIN_SHINGLES`` shingles never pair."""
    sets = [shingles(t) for t in texts]
    rng = np.random.default_rng(0)
    a = rng.integers(1, _PRIME, PERMUTATIONS, dtype=np.uint64)
    b = rng.integers(0, _PRIME, PERMUTATIONS, dtype=np.uint64)
    rows = PERMUTATIONS // BANDS
    buckets: dict[tuple, list[int]] = {}
    for i, s in enumerate(sets):
        if len(s) < MIN_SHINGLES:
            continue
        x = np.fromiter(s, dtype=np.uint64, count=len(s)) & np.uint64(0xFFFFFFFF)
        signature = ((x[:, None] * a[None, :] + b[None, :]) % np.uint64(_PRIME)).min(axis=0)
        for band in range(BANDS):
            buckets.setdefault((band, signature[band * rows : (band + 1) * rows].tobytes()), []).append(i)
    candidates = set()
    for members in buckets.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                i, j = members[x], members[y]
                if sources[i] != sources[j]:
                    candidates.add((i, j))
    out = []
    for i, j in sorted(candidates):
        jaccard = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
        if jaccard >= threshold:
            out.append((i, j, jaccard))
    return out


def competing(keys: Sequence[SectionKey], vectors: np.ndarray | None, texts: Sequence[str] | None) -> list[Competing]:
    """Pairs of sections (``keys[i]``: chunk i's) of different documents that compete, most alike
    first; ``vectors`` (rows as ``keys``) or ``texts`` may be None to leave that side out."""
    sources = [k[0] for k in keys]
    best: dict[tuple[SectionKey, SectionKey], dict[str, float]] = {}
    sides = []
    if vectors is not None and len(keys) <= VECTOR_LIMIT:
        sides.append(("cosine", vector_pairs(vectors, sources)))
    if texts is not None:
        sides.append(("jaccard", text_pairs(texts, sources)))
    for name, pairs in sides:
        for i, j, value in pairs:
            pair = tuple(sorted((keys[i], keys[j])))
            entry = best.setdefault(pair, {})
            entry[name] = max(entry.get(name, 0.0), value)
    out = [Competing(a, b, _r(e.get("cosine")), _r(e.get("jaccard"))) for (a, b), e in best.items()]
    return sorted(out, key=lambda c: (-max(c.cosine or 0, c.jaccard or 0), c.a, c.b))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
