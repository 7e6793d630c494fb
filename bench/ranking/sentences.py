"""Sentence evidence: the site ranking's first 10 (``-d5``, ``-d7``, ``-d15``, ``-d20``: that many)
re-ordered with the best cosine between the query and one of their sentences (each sentence
embedded once, cached by text); ``sent-site`` is ``rank.sentence_rerank``, what the clients do
with ``sentences=True``. ``sentlex-*``: its lexical twin (the best sentence's share of the
query's idf); ``sent-borda``: the Borda form with the sentence signal.
"""

from __future__ import annotations

import sys

import numpy as np

from bench import chroma_eval as ce
from bench import quality
from bench import search_eval as se
from bench.ranking.base import Context, Variant, full, ids, load_cached, save_cached, v_lexical, v_score, vector_of
from pipeline.search import rank

_HEADS = {"score": v_score, "lexical": v_lexical}  # the rankings whose head ``sentence_term_shares`` reads


def sentences(text: str) -> list[str]:
    return rank.sentences(text)


def sentence_cosines(name: str, contexts: list[Context], depth: int = 10) -> list[list[dict[int, float]]]:
    """Per context, per question: for each chunk among the site ranking's first ``depth``, the
    best cosine between the query and one of its sentences (MiniLM, embedded once and cached by
    text like every other vector of the bench). A chunk without a sentence long enough: its own
    cosine."""
    cache = ce.WORK_DIR / f"ranking_sentences2_{name}_{depth}_{len(contexts)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "cosines")
    if saved is not None:
        return saved
    firsts = [[v_score(ctx, qi)[:depth] for qi in range(len(ctx.questions))] for ctx in contexts]
    texts = sorted({s for ctx, per_q in zip(contexts, firsts) for first in per_q for n in first for s in sentences(ctx.chunks.texts[n])})
    vecs, computed, seconds = quality.embed_cached(texts, progress=True)
    print(f"{name}: {len(texts)} sentences ({computed} embedded in {seconds:.0f} s)", file=sys.stderr)
    row = {t: i for i, t in enumerate(texts)}
    out = []
    for ctx, per_q in zip(contexts, firsts):
        per = []
        for qi, first in enumerate(per_q):
            q = ctx.qvecs[qi].astype(np.float64)
            q /= np.linalg.norm(q)
            best = {}
            for n in first:
                rows = [row[s] for s in sentences(ctx.chunks.texts[n])]
                best[n] = float((vecs[rows].astype(np.float64) @ q).max()) if rows else float(ctx.sims[qi, n])
            per.append(best)
        out.append(per)
    save_cached(cache, dataset, "cosines", out)
    return out


def make_sentence(weight: float, how: str = "add") -> Variant:
    """Re-rank the site ranking's first 10 with the best sentence cosine (``sentence_cosines``):
    ``add``: fused + weight * best sentence cosine; ``max``: the vector term uses
    max(chunk cosine, best sentence cosine); ``mix``: it uses (1 - weight) * chunk cosine +
    weight * best sentence cosine. The rest of the ranking unchanged."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        fused = rank.fuse(lex, vec, "score")
        best = ctx.sentences[qi]
        top = lex[0][1] if lex else 0
        lscore = dict(lex[:rank.FUSION_DEPTH])
        head = [n for n, _ in fused[:len(best)]]
        fscore = dict(fused)

        def new(n):
            if how == "add":
                return fscore[n] + weight * best[n]
            cos = max(ctx.sims[qi, n], 0.0)
            s = max(cos, best[n]) if how == "max" else (1 - weight) * cos + weight * max(best[n], 0.0)
            return 0.5 * (lscore.get(n, 0) / top if top else 0.0) + 0.5 * s
        head = sorted(head, key=lambda n: (-new(n), n))
        return full(head + [n for n, _ in fused[len(best):]], ctx, qi)
    return run


def v_sentences(ctx, qi):
    """What the clients do with ``sentences=True``: ``rank.sentence_rerank``."""
    lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
    return full(ids(rank.sentence_rerank(rank.fuse(lex, vec, "score"), lex, vec, ctx.sentences[qi])), ctx, qi)


def make_sentences_depth(depth: int) -> Variant:
    """``v_sentences`` re-ordering only the first ``depth`` (fewer sentences to embed)."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        return full(ids(rank.sentence_rerank(rank.fuse(lex, vec, "score"), lex, vec, ctx.sentences[qi], depth=depth)), ctx, qi)
    return run


def sentence_term_shares(name: str, contexts: list[Context], depth: int = 10, head_of: str = "score") -> list[list[dict[int, float]]]:
    """Per context, per question: for each of the site ranking's first ``depth``, the largest
    share of the query's idf mass (BM25 idf of each distinct known query term) that one of its
    sentences holds: lexical evidence that the query's words meet in one sentence."""
    import math

    from pipeline.search.text import terms

    cache = ce.WORK_DIR / f"ranking_sentterms_{name}_{depth}_{head_of}_{len(contexts)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "shares")
    if saved is not None:
        return saved
    out = []
    for ctx in contexts:
        index = se.lexical_index(dataset, ctx.chunks)
        n_chunks = len(ctx)
        per = []
        for qi, q in enumerate(ctx.questions):
            idf = {t: math.log(1 + (n_chunks - len(index[t]) + 0.5) / (len(index[t]) + 0.5)) for t in rank.query_terms(q.text) if t in index}
            mass = sum(idf.values())
            best = {}
            for n in _HEADS[head_of](ctx, qi)[:depth]:
                shares = [sum(idf[t] for t in set(terms(sn)) if t in idf) / mass for sn in rank.sentences(ctx.chunks.texts[n])] if mass else []
                if shares:
                    best[n] = max(shares)
            per.append(best)
        out.append(per)
    save_cached(cache, dataset, "shares", out)
    return out


def make_sentence_lex(vector_side: bool) -> Variant:
    """The first 10 re-scored with the lexical term = (lexical/best + best sentence's share of the
    query's idf) / 2, the lexical twin of sentence evidence; ``vector_side``: with the clients'
    sentence vector term too."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        fused = rank.fuse(lex, vec, "score")
        top = lex[0][1] if lex else 0
        lscore = dict(lex[:rank.FUSION_DEPTH])
        cos = dict(vec[:rank.FUSION_DEPTH])
        share = ctx.sentence_terms[qi]
        best = ctx.sentences[qi]
        head = []
        for n, _ in fused[:10]:
            lx = lscore.get(n, 0) / top if top else 0.0
            lx = (lx + share.get(n, lx)) / 2
            c = max(cos.get(n, 0.0), 0.0)
            v = (c + max(best.get(n, c), 0.0)) / 2 if vector_side else c
            head.append((n, 0.5 * lx + 0.5 * v))
        return full(ids(sorted(head, key=lambda t: (-t[1], t[0])) + list(fused[10:])), ctx, qi)
    return run


def v_sentence_lex_lexical(ctx, qi):
    """The lexical ranking alone (the page before its model), its first 10 re-scored with
    (lexical/best + best sentence's share of the query's idf) / 2. The shares were computed for
    the fused first 10, so chunks outside it keep their own lexical score (a lower bound of the
    effect)."""
    lex = ctx.lexical[qi]
    if not lex:
        return v_lexical(ctx, qi)
    top = lex[0][1]
    share = ctx.sentence_terms[qi]
    head = [(n, (s / top + share.get(n, s / top)) / 2) for n, s in lex[:10]]
    return se.full_order(ids(sorted(head, key=lambda t: (-t[1], t[0]))) + ids(lex[10:]), list(range(len(ctx))))


def v_sentence_borda(ctx, qi):
    """The fused first 10 by the sum of their fused rank and their rank by best sentence cosine
    (the Borda form of ``e5-borda-d10`` with the sentence signal, to tell the form from the model)."""
    fused = rank.fuse(ctx.lexical[qi], vector_of(ctx, qi), "score")
    best = ctx.sentences[qi]
    head = [n for n, _ in fused[:10]]
    by_s = {n: r for r, n in enumerate(sorted(head, key=lambda n: (-best.get(n, ctx.sims[qi, n]), n)))}
    key = {n: r + by_s[n] for r, n in enumerate(head)}
    return full(sorted(head, key=lambda n: (key[n], n)) + [n for n, _ in fused[10:]], ctx, qi)


VARIANTS: dict[str, Variant] = {}
VARIANTS["sent-site"] = v_sentences
VARIANTS["sent-site-d5"] = make_sentences_depth(5)
VARIANTS["sent-site-d7"] = make_sentences_depth(7)
VARIANTS["sent-site-d15"] = make_sentences_depth(15)
VARIANTS["sent-site-d20"] = make_sentences_depth(20)
VARIANTS.update({"sent-add.25": make_sentence(0.25), "sent-add.5": make_sentence(0.5), "sent-max": make_sentence(0, "max"),
                 "sent-mix.5": make_sentence(0.5, "mix"), "sent-mix1": make_sentence(1.0, "mix")})
VARIANTS["sentlex-only"] = make_sentence_lex(False)
VARIANTS["sentlex-both"] = make_sentence_lex(True)
VARIANTS["sentlex-lexical"] = v_sentence_lex_lexical
