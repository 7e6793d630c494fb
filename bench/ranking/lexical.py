"""Other lexical rankings than the site's BM25F, alone (``lex-*``) and fused (``score-*``): a
bigram field (``bi``), the body's length normalisation (``b``), RM3-lite expansion (``rm3``);
and ``qmax*``: the lexical score divided by a query-dependent ceiling. The rankings are computed
once per set and cached under ``bench/.work/`` (``Context.alt``, ``Context.term_max``).
"""

from __future__ import annotations

from typing import Sequence

from bench import chroma_eval as ce
from bench import search_eval as se
from bench.ranking.base import Context, Variant, full, ids, load_cached, save_cached, vector_of
from pipeline.search import rank


def make_alt(alt: str, fused: bool = True) -> Variant:
    """The site's ranking (``fused``) or the lexical ranking alone, with lexical ranking ``alt``."""
    def run(ctx, qi):
        lex = ctx.alt[alt][qi]
        if not fused:
            return se.full_order(ids(lex), list(range(len(ctx))))
        return full(ids(rank.fuse(lex, vector_of(ctx, qi), "score")), ctx, qi)
    return run


def make_qmax(mix: float, alpha: float = 0.5) -> Variant:
    """Score fusion with the lexical score divided by a query-dependent ceiling instead of the best
    hit's: ``mix`` * (sum over the query's known terms of their largest impact) + (1 - mix) * best.
    A best hit that matches few of the query's terms then counts less than one that matches all."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        if not lex:
            return ids(vec)
        ceiling = mix * sum(ctx.term_max[qi]) + (1 - mix) * lex[0][1]
        scores: dict[int, float] = {}
        for n, s in lex[:rank.FUSION_DEPTH]:
            scores[n] = alpha * s / ceiling
        for n, c in vec[:rank.FUSION_DEPTH]:
            scores[n] = scores.get(n, 0.0) + (1 - alpha) * max(c, 0.0)
        return full(ids(sorted(scores.items(), key=lambda t: (-t[1], t[0]))), ctx, qi)
    return run


def bigrams(ts: Sequence[str]) -> list[str]:
    """Adjacent index terms joined by a space (no unigram term holds one)."""
    return [f"{a} {b}" for a, b in zip(ts, ts[1:])]


def bigram_lexical(name: str, contexts: list[Context], weight: float, body_b: float | None = None) -> list[list[list[tuple[int, int]]]]:
    """Per context, per question: the site's BM25F with a fourth field, the body's term bigrams
    (weight ``weight``, b = 0.75), queried with the query's unigrams and bigrams. Weight 0: no
    bigrams, only the body's length normalisation ``body_b`` changed."""
    from collections import Counter

    from pipeline.search import scoring
    from pipeline.search.text import terms

    cache = ce.WORK_DIR / f"ranking_bigram_{name}_{weight}_{body_b}_{len(contexts)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "rankings")
    if saved is not None:
        return saved
    out = []
    for ctx in contexts:
        fields, lengths = se.site_fields(dataset, ctx.chunks)
        for per_field, length, text in zip(fields, lengths, ctx.chunks.texts):
            per_field["bigram"] = Counter(bigrams(terms(text)))
            length["bigram"] = sum(per_field["bigram"].values())
        saved_fields = scoring.FIELDS
        scoring.FIELDS = {**saved_fields, "bigram": (weight, 0.75)}
        if body_b is not None:
            scoring.FIELDS["body"] = (scoring.FIELDS["body"][0], body_b)
        try:
            index, _ = scoring.quantise(scoring.impacts(fields, lengths))
        finally:
            scoring.FIELDS = saved_fields
        rankings = []
        for q in ctx.questions:
            qt = rank.query_terms(q.text)
            keys = list(dict.fromkeys(qt + (bigrams(terms(q.text)) if weight else [])))
            rankings.append(rank.lexical_ranking({t: index.get(t, []) for t in keys}))
        out.append(rankings)
    save_cached(cache, dataset, "rankings", out)
    return out


def query_term_maxima(name: str, contexts: list[Context]) -> list[list[list[int]]]:
    """Per context, per question: for each query term the index knows, its largest impact (what
    a client reads from the term's postings)."""
    cache = ce.WORK_DIR / f"ranking_termmax_{name}_{len(contexts)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "maxima")
    if saved is not None:
        return saved
    out = []
    for ctx in contexts:
        index = se.lexical_index(dataset, ctx.chunks)
        out.append([[max(i for _, i in index[t]) for t in rank.query_terms(q.text) if t in index] for q in ctx.questions])
    save_cached(cache, dataset, "maxima", out)
    return out


def rm3_lexical(name: str, contexts: list[Context], m: int, e: int, w: float, per_chunk: int = 10) -> list[list[list[tuple[int, float]]]]:
    """Per context, per question: RM3-lite. Each of the first ``m`` fused hits contributes its
    ``per_chunk`` best terms by BM25F impact (a stand-in for the keywords the build extracts),
    weighted by the hit's fused score; the ``e`` heaviest terms not in the query are added to the
    query, their impacts scaled by ``w`` * weight / heaviest weight."""
    from collections import defaultdict

    dataset = se.load(name)
    out = []
    for ctx in contexts:
        index = se.lexical_index(dataset, ctx.chunks)
        by_chunk: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for t, postings in index.items():
            for n, i in postings:
                by_chunk[n].append((i, t))
        top_terms = {n: [t for _, t in sorted(v, key=lambda x: (-x[0], x[1]))[:per_chunk]] for n, v in by_chunk.items()}
        rankings = []
        for qi, q in enumerate(ctx.questions):
            lex = ctx.lexical[qi]
            fused = rank.fuse(lex, vector_of(ctx, qi), "score")
            qt = set(rank.query_terms(q.text))
            weight: dict[str, float] = defaultdict(float)
            for n, s in fused[:m]:
                for t in top_terms.get(n, []):
                    if t not in qt:
                        weight[t] += s
            chosen = sorted(weight.items(), key=lambda x: (-x[1], x[0]))[:e]
            scores = dict(lex)
            if chosen:
                heaviest = chosen[0][1]
                for t, wt in chosen:
                    for n, i in index.get(t, []):
                        scores[n] = scores.get(n, 0) + w * wt / heaviest * i
            rankings.append(sorted(scores.items(), key=lambda x: (-x[1], x[0])))
        out.append(rankings)
    return out


VARIANTS: dict[str, Variant] = {"qmax1": make_qmax(1.0), "qmax.5": make_qmax(0.5), "qmax1-a.6": make_qmax(1.0, 0.6),
                                "qmax1-a.7": make_qmax(1.0, 0.7)}
BODY_B = (0.5, 0.9, 1.0)
for _b in BODY_B:
    VARIANTS[f"lex-b{_b}"] = make_alt(f"b{_b}", fused=False)
    VARIANTS[f"score-b{_b}"] = make_alt(f"b{_b}")
RM3 = {"rm3-3-5-.3": (3, 5, 0.3), "rm3-3-10-.2": (3, 10, 0.2), "rm3-5-10-.5": (5, 10, 0.5)}
for _k in RM3:
    VARIANTS[f"lex-{_k}"] = make_alt(_k, fused=False)
    VARIANTS[f"score-{_k}"] = make_alt(_k)
BIGRAM_WEIGHTS = (0.5, 1.0)
for _w in BIGRAM_WEIGHTS:
    VARIANTS[f"lex-bi{_w}"] = make_alt(f"bi{_w}", fused=False)
    VARIANTS[f"score-bi{_w}"] = make_alt(f"bi{_w}")
