"""Character-range arithmetic and the per-question metrics of Chroma's chunking evaluation.

Everything here is pure Python on half-open character ranges ``(start, end)``; no model, no I/O,
so ``tests/test_bench_metrics.py`` can check it on hand-computed toy cases.

Definitions (one question; ``refs`` = its reference ranges, all in the question's corpus;
``retrieved`` = the k retrieved chunks as ``(corpus_id, start, end)``, from any corpus):

* ``I``      = |union(retrieved chunks of the question's corpus) ∩ union(refs)|  (characters)
* ``L``      = sum of the lengths of the k retrieved chunks (every corpus; overlapping chunks
               counted once each, i.e. a plain sum, not a union)
* ``R``      = |union(refs)|
* recall     = I / R
* precision  = I / L
* IoU        = I / (L + R - I)           (the report's "sum of retrieved + unretrieved reference")
* PrecisionΩ = |union(O) ∩ union(refs)| / |union(O) ∪ union(refs)|, O = every chunk of the
               question's corpus that shares at least one character with a reference
               (the precision of a perfect retriever that returns exactly the chunks needed).

These follow the definitions of the Chroma report (Smith & Troynikov, July 2024); see
``bench/README.md`` for the derivation and the one deliberate deviation (strict overlap for Ω).
"""

from __future__ import annotations

from typing import Iterable, Sequence

Range = tuple[int, int]


def merge(ranges: Iterable[Range]) -> list[Range]:
    """Sorted, disjoint union of ``ranges``; empty ranges are dropped, touching ones joined."""
    out: list[Range] = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def total(ranges: Iterable[Range]) -> int:
    """Summed length of ``ranges`` (no union: overlaps count twice)."""
    return sum(end - start for start, end in ranges)


def intersection_length(a: Sequence[Range], b: Sequence[Range]) -> int:
    """|a ∩ b| for two *merged* range lists (see ``merge``)."""
    i = j = 0
    size = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            size += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return size


def overlaps(a: Range, b: Range, *, touching: bool = False) -> bool:
    """True when ``a`` and ``b`` share a character (or, with ``touching``, merely touch)."""
    if touching:
        return max(a[0], b[0]) <= min(a[1], b[1])
    return max(a[0], b[0]) < min(a[1], b[1])


def retrieval_scores(
    retrieved: Sequence[tuple[str, int, int]], refs: Sequence[Range], corpus_id: str
) -> dict[str, float]:
    """recall, precision and IoU of one question's retrieved chunks (fractions, not percent)."""
    ref_union = merge(refs)
    ref_size = total(ref_union)
    if ref_size == 0:
        raise ValueError("a question needs at least one non-empty reference")
    same = merge((s, e) for c, s, e in retrieved if c == corpus_id)
    inter = intersection_length(same, ref_union)
    retrieved_size = sum(e - s for _, s, e in retrieved)
    return {
        "recall": inter / ref_size,
        "precision": inter / retrieved_size if retrieved_size else 0.0,
        "iou": inter / (retrieved_size + ref_size - inter) if retrieved_size + ref_size - inter else 0.0,
    }


def precision_omega(chunks: Sequence[Range], refs: Sequence[Range], *, touching: bool = False) -> float:
    """PrecisionΩ of one question; ``chunks`` are all chunks of the question's corpus.

    ``touching=True`` reproduces a quirk of the reference implementation, where a chunk that
    ends exactly where a reference starts (zero shared characters) also counts as needed.
    """
    ref_union = merge(refs)
    needed = [c for c in chunks if any(overlaps(c, r, touching=touching) for r in ref_union)]
    if not needed:
        return 0.0
    needed_union = merge(needed)
    inter = intersection_length(needed_union, ref_union)
    return inter / total(merge(needed_union + ref_union))


def count_chunks_needed(chunks: Sequence[Range], refs: Sequence[Range]) -> int:
    """How many chunks share at least one character with a reference."""
    ref_union = merge(refs)
    return sum(1 for c in chunks if any(overlaps(c, r) for r in ref_union))
