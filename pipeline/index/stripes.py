"""Stripe orders: build-time MMR (seed 001 §4).

Chunks other than the baseline are sorted by similarity to it (most similar first, ties by
index). With fewer than 8 of them that is the order. Otherwise, with
``factor = max(2, min(n // 2, ceil(sqrt(n))))``, the order is stripe 0 (``ordered[0::factor]``),
then stripe 1, ... so the first few entries sample the whole similarity range.

The seed writes ``round(sqrt(n))`` but its own examples (8 -> 3, 12 -> 4) need ``ceil``; we
follow the examples (docs/decisions/chunking.md). ``n`` counts the chunks being ordered.
"""

from __future__ import annotations

import math

MIN_STRIPED = 8


def stripe_factor(n: int) -> int:
    """1 below ``MIN_STRIPED`` chunks, else ``max(2, min(n // 2, ceil(sqrt(n))))``."""
    if n < MIN_STRIPED:
        return 1
    return max(2, min(n // 2, math.ceil(math.sqrt(n))))


def similarity_order(similarities: dict[int, float]) -> list[int]:
    """Chunk indices, most similar first; equal similarities keep document order."""
    return sorted(similarities, key=lambda index: (-similarities[index], index))


def stripe(ordered: list[int]) -> list[int]:
    """Interleave ``ordered`` into stripes: ``[ordered[k::factor] for k in range(factor)]``, flattened.

    A permutation of ``ordered``; ``stripe(list(range(1, 13)))`` is the seed's
    ``[1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12]``.
    """
    factor = stripe_factor(len(ordered))
    return [index for k in range(factor) for index in ordered[k::factor]]


def stripe_order(similarities: list[float], exclude: set[int]) -> list[int]:
    """The stripe order of all chunks but ``exclude`` (the baselines), from their similarities."""
    candidates = {i: s for i, s in enumerate(similarities) if i not in exclude}
    return stripe(similarity_order(candidates))
