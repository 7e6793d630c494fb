"""Findability figures from ranks (pure): recall@k, MRR, per document and topic, unreached sections.

A question's rank is the 1-based place of the first hit lying in one of its targets among the
first k, or None. ``recall`` = share of questions with a rank; ``mrr`` = mean of 1/rank (0 for
None): MRR@k. Both are fractions in [0, 1]; ``Score.percent`` for display.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Score:
    questions: int
    found: int
    recall: float  # found / questions
    mrr: float

    def to_dict(self) -> dict:
        return {"questions": self.questions, "found": self.found, "recall": round(self.recall, 6), "mrr": round(self.mrr, 6)}


def score(ranks: Iterable[int | None]) -> Score:
    """recall@k and MRR@k of ``ranks`` (an empty list scores 0 of 0)."""
    ranks = list(ranks)
    if any(r is not None and r < 1 for r in ranks):
        raise ValueError("ranks start at 1")
    found = sum(r is not None for r in ranks)
    n = len(ranks)
    return Score(n, found, found / n if n else 0.0, sum(1 / r for r in ranks if r is not None) / n if n else 0.0)


def grouped(items: Sequence, rank: Callable[[object], int | None], key: Callable[[object], str]) -> dict[str, Score]:
    """``score`` per ``key(item)``, keys in first-seen order."""
    groups: dict[str, list[int | None]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(rank(item))
    return {name: score(ranks) for name, ranks in groups.items()}


def worst(scores: dict[str, Score], n: int) -> list[tuple[str, Score]]:
    """The ``n`` lowest by recall, then MRR, then most questions first, then name."""
    return sorted(scores.items(), key=lambda kv: (kv[1].recall, kv[1].mrr, -kv[1].questions, kv[0]))[:n]


def unreached(sections: Sequence[tuple[str, str]], returned: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``sections`` (source, header path) none of ``returned`` is in, in their order."""
    seen = set(returned)
    return [s for s in sections if s not in seen]


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation of paired values (average ranks for ties), None when either
    side is constant or there are fewer than 3 pairs."""
    if len(a) != len(b):
        raise ValueError("paired values needed")
    if len(a) < 3:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else None


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for t in range(i, j + 1):
            out[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return out
