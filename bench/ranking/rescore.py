"""Re-scorings of the site's fused list, no other input needed:

* ``doc-*``: document evidence. Questions are usually about one document; a chunk's fused
  score is raised by its document's best fused score (the chunks of a document rise together,
  their order inside the document unchanged).
* ``prf-*``: vector-side pseudo-relevance feedback (Rocchio): the query vector plus the mean of
  the vectors of the first fused (or lexical) hits, re-normalised; cosines recomputed with it and
  fused again with the same lexical list. Both clients hold the vectors of the chunks they rank.
* ``short-*``: among near-equal fused scores, the shorter chunk first (an IoU experiment).
"""

from __future__ import annotations

import numpy as np

from bench.ranking.base import Variant, full, ids, vector_of
from pipeline.search import rank


def make_doc(beta: float, how: str = "max") -> Variant:
    """fused(c) + beta * D(document of c), D = the best fused score in the document (``max``) or
    the mean of its two best (``top2``)."""
    def run(ctx, qi):
        fused = rank.fuse(ctx.lexical[qi], vector_of(ctx, qi), "score")
        best: dict[int, list[float]] = {}
        for n, s in fused:  # best first, so each document's list is sorted
            lst = best.setdefault(int(ctx.doc[n]), [])
            if len(lst) < 2:
                lst.append(s)
        def ev(d):
            xs = best[d]
            return xs[0] if how == "max" else sum(xs) / 2 if len(xs) == 2 else xs[0] / 2
        out = [(n, s + beta * ev(int(ctx.doc[n]))) for n, s in fused]
        return full(ids(sorted(out, key=lambda t: (-t[1], t[0]))), ctx, qi)
    return run


def make_prf(m: int, gamma: float, source: str = "fused") -> Variant:
    """Rocchio on the vector side: q' = q/|q| + gamma * mean(first m hits' vectors), renormalised;
    fuse the site's way with the cosines to q'. ``source``: the hits of the fused ranking
    (``fused``) or of the lexical one (``lexical``)."""
    def run(ctx, qi):
        vec = vector_of(ctx, qi)
        lex = ctx.lexical[qi]
        if not lex:
            return ids(vec)
        first = rank.fuse(lex, vec, "score") if source == "fused" else lex
        top = [n for n, _ in first[:m]]
        q = ctx.qvecs[qi].astype(np.float64)
        q = q / np.linalg.norm(q) + gamma * ctx.vecs[top].astype(np.float64).mean(axis=0)
        q /= np.linalg.norm(q)
        sims = ctx.vecs.astype(np.float64) @ q
        return full(ids(rank.fuse(lex, vector_of(ctx, qi, sims), "score")), ctx, qi)
    return run


def make_short(eps: float) -> Variant:
    """Fused scores within ``eps`` of each other compare by chunk length (shorter first)."""
    def run(ctx, qi):
        fused = rank.fuse(ctx.lexical[qi], vector_of(ctx, qi), "score")
        length = lambda n: ctx.ends[n] - ctx.starts[n]  # noqa: E731
        out = [(n, s - eps * length(n) / 1000.0) for n, s in fused]
        return full(ids(sorted(out, key=lambda t: (-t[1], t[0]))), ctx, qi)
    return run


VARIANTS: dict[str, Variant] = {
    "doc-max.1": make_doc(0.1),
    "doc-max.2": make_doc(0.2),
    "doc-max.3": make_doc(0.3),
    "doc-top2.2": make_doc(0.2, "top2"),
    "prf-f3-0.5": make_prf(3, 0.5),
    "prf-f3-1": make_prf(3, 1.0),
    "prf-f5-1": make_prf(5, 1.0),
    "prf-l3-0.5": make_prf(3, 0.5, "lexical"),
    "prf-l3-1": make_prf(3, 1.0, "lexical"),
    "prf-l5-1": make_prf(5, 1.0, "lexical"),
    "short.02": make_short(0.02),
    "short.05": make_short(0.05),
}
