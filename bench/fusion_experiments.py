"""Ranking experiments for issue 11's search targets, paired per question and budget-averaged.

Same protocol and inputs as ``bench/search_eval.py`` (its chunks, cached embeddings, metrics and
lexical index), but each *variant* is a function from one question's lexical and vector
rankings to a reading order, so a new fusion costs no embedding. Variants are prototypes of
principled changes (score normalisation, query-dependent weights, BM25F field weights, neighbour
evidence); what helps on every set moves into ``pipeline/search/rank.py`` and
``pipeline/assets/lexical.js``.

Also reports the *oracle* of two methods: per question, per budget, the better R@5 of the two,
an upper bound for any fusion that only picks between them.

    .venv/bin/python -m bench.fusion_experiments markdown realdocs chroma
    .venv/bin/python -m bench.fusion_experiments --variants score mm-score markdown
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
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
from pipeline.search import scoring  # noqa: E402
from pipeline.search import rank  # noqa: E402
from pipeline.search.text import clean_heading, terms  # noqa: E402

OUT = ce.WORK_DIR / "fusion_experiments.json"


@dataclass
class Context:
    """One set at one chunk budget: everything a variant may look at."""

    dataset: ce.Dataset
    chunks: ce.ChunkSet
    sims: np.ndarray  # questions x chunks cosine
    fields: list[dict[str, Counter]]
    lengths: list[dict[str, int]]
    indexes: dict[str, dict[str, list[tuple[int, int]]]]  # BM25F variant name -> quantised impacts
    bm25: list[list[tuple[int, float]]]
    costs: list[int]


FIELD_VARIANTS = {
    "f-site": ({"title": (2.0, 0.5), "heading": (3.0, 0.5), "body": (1.0, 0.75)}, 1.2),
    "f-flat": ({"title": (1.0, 0.5), "heading": (1.0, 0.5), "body": (1.0, 0.75)}, 1.2),
    "f-head2": ({"title": (2.0, 0.5), "heading": (2.0, 0.5), "body": (1.0, 0.75)}, 1.2),
    "f-k15": ({"title": (2.0, 0.5), "heading": (3.0, 0.5), "body": (1.0, 0.75)}, 1.5),
    "f-b1": ({"title": (2.0, 0.5), "heading": (3.0, 0.5), "body": (1.0, 1.0)}, 1.2),
    "f-body": ({"title": (0.0, 0.5), "heading": (0.0, 0.5), "body": (1.0, 0.75)}, 1.2),
    "f-body15": ({"title": (0.0, 0.5), "heading": (0.0, 0.5), "body": (1.0, 0.75)}, 1.5),
    "f-half": ({"title": (0.5, 0.5), "heading": (0.5, 0.5), "body": (1.0, 0.75)}, 1.2),
    "f-notitle": ({"title": (0.0, 0.5), "heading": (3.0, 0.5), "body": (1.0, 0.75)}, 1.2),
}


def fields_of(dataset: ce.Dataset, chunks: ce.ChunkSet, mode: str = "bench") -> tuple[list[dict[str, Counter]], list[dict[str, int]]]:
    """``bench``: what ``search_eval.lexical_index`` puts in the fields (heading = the whole
    heading context, title line included; body = the span). ``site``: what the site's index
    (``pipeline.search.index.build_search_index``) does: heading = the header path (no title
    line; the title for a chunk without one), body = the chunk file, i.e. context + span."""
    if mode == "site":
        return site_fields(dataset, chunks)
    titles = {}
    for cid, text in dataset.corpora.items():
        first = next((line[2:] for line in text.splitlines() if line.startswith("# ")), "")
        titles[cid] = clean_heading(first)
    fields, lengths = [], []
    for cid, s, e, text in zip(chunks.corpus_ids, chunks.starts.tolist(), chunks.ends.tolist(), chunks.texts):
        prefix = text[: len(text) - (e - s)]
        per_field = {
            "title": Counter(terms(titles[cid])),
            "heading": Counter(terms(clean_heading(prefix.replace("\n", " > ")))),
            "body": Counter(terms(dataset.corpora[cid][s:e])),
        }
        fields.append(per_field)
        lengths.append({f: sum(c.values()) for f, c in per_field.items()})
    return fields, lengths


def site_fields(dataset: ce.Dataset, chunks: ce.ChunkSet):
    return se.site_fields(dataset, chunks)


def build_index(fields, lengths, spec) -> dict[str, list[tuple[int, int]]]:
    weights, k1 = spec
    saved = scoring.FIELDS, scoring.K1
    scoring.FIELDS, scoring.K1 = weights, k1
    try:
        return scoring.quantise(scoring.impacts(fields, lengths))[0]
    finally:
        scoring.FIELDS, scoring.K1 = saved


def prepare(name: str, chunker_names: Sequence[str], *, lexical_only: bool = False) -> list[Context]:
    """``lexical_only``: no embeddings (cosines all 0), for the lexical variants alone."""
    dataset = se.load(name)
    qvecs = np.zeros((len(dataset.questions), quality.DIM), np.float32) if lexical_only else quality.question_vectors(dataset)
    out = []
    for cname in chunker_names:
        chunks = quality.build_chunks(OURS_EXTRA[cname](), dataset)
        if lexical_only:
            vecs, computed = np.zeros((len(chunks), quality.DIM), np.float32), 0
        else:
            vecs, computed, _ = quality.embed_cached(chunks.texts, progress=True)
        fields, lengths = fields_of(dataset, chunks)
        indexes = {k: build_index(fields, lengths, spec) for k, spec in FIELD_VARIANTS.items()}
        sfields, slengths = fields_of(dataset, chunks, "site")
        indexes.update({"s-" + k: build_index(sfields, slengths, spec) for k, spec in FIELD_VARIANTS.items()})
        out.append(Context(dataset, chunks, qvecs @ vecs.T, fields, lengths, indexes,
                           se.bm25_rankings(chunks, dataset.questions), ce.count_tokens_many(chunks.texts, special=False)))
        print(f"{name} {cname}: {len(chunks)} chunks ({computed} embedded)", file=sys.stderr)
    return out


# --------------------------------------------------------------------------- variants

Variant = Callable[[Context, int], list[int]]


def lexical_of(ctx: Context, qi: int, index: str = "f-site") -> list[tuple[int, int]]:
    return se.lexical_ranking(ctx.indexes[index], ctx.dataset.questions[qi].text)


def vector_of(ctx: Context, qi: int) -> list[tuple[int, float]]:
    s = ctx.sims[qi]
    order = np.argsort(-s, kind="stable")
    return [(int(i), float(s[i])) for i in order]


def natural(ctx: Context) -> list[int]:
    return list(range(len(ctx.chunks)))


def convex(lex: Sequence[tuple[int, float]], vec: Sequence[tuple[int, float]], alpha: float, norm: str, depth: int = 100) -> list[tuple[int, float]]:
    """alpha * N(lexical) + (1 - alpha) * N(vector) over each list's first ``depth`` entries."""
    lex, vec = list(lex[:depth]), list(vec[:depth])

    def normalise(xs, kind, floor):
        if not xs:
            return {}
        vals = np.array([s for _, s in xs], dtype=float)
        if kind == "max":  # divide by the best (lexical today)
            top = vals[0]
            return {n: (s / top if top else 0.0) for n, s in xs}
        if kind == "raw":
            return {n: max(s, 0.0) for n, s in xs}
        if kind == "minmax":  # best -> 1, last of the list -> 0
            lo, hi = vals[-1], vals[0]
            return {n: ((s - lo) / (hi - lo) if hi > lo else 1.0) for n, s in xs}
        if kind == "tmm":  # theoretical minimum (0 lexical, floor cosine) to best
            hi = vals[0]
            return {n: (max(s - floor, 0.0) / (hi - floor) if hi > floor else 0.0) for n, s in xs}
        if kind == "z":
            mu, sd = vals.mean(), vals.std()
            return {n: ((s - mu) / sd if sd else 0.0) for n, s in xs}
        raise ValueError(kind)

    if norm == "site":
        a, b = normalise(lex, "max", 0), normalise(vec, "raw", 0)
    elif norm == "max-max":
        a, b = normalise(lex, "max", 0), normalise(vec, "max", 0)
    elif norm == "tmm":
        a, b = normalise(lex, "max", 0), normalise(vec, "tmm", 0.0)
    elif norm == "minmax":
        a, b = normalise(lex, "minmax", 0), normalise(vec, "minmax", 0)
    elif norm == "z":
        a, b = normalise(lex, "z", 0), normalise(vec, "z", 0)
        lo = min(min(a.values(), default=0), min(b.values(), default=0))
        a = {n: s - lo for n, s in a.items()}
        b = {n: s - lo for n, s in b.items()}
    else:
        raise ValueError(norm)
    scores: dict[int, float] = {}
    for n, s in a.items():
        scores[n] = alpha * s
    for n, s in b.items():
        scores[n] = scores.get(n, 0.0) + (1 - alpha) * s
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def ids(xs) -> list[int]:
    return [n for n, _ in xs]


def v_vector(ctx, qi):
    return ids(vector_of(ctx, qi))


def make_lexical(index: str) -> Variant:
    return lambda ctx, qi: se.full_order(ids(lexical_of(ctx, qi, index)), natural(ctx))


def v_bm25(ctx, qi):
    return se.full_order(ids(ctx.bm25[qi]), natural(ctx))


def make_convex(alpha: float, norm: str, index: str = "f-site", depth: int = 100) -> Variant:
    def run(ctx, qi):
        vec = vector_of(ctx, qi)
        lex = lexical_of(ctx, qi, index)
        if not lex:
            return ids(vec)
        return se.full_order(ids(convex(lex, vec, alpha, norm, depth)), ids(vec))
    return run


def make_rrf(index: str = "f-site") -> Variant:
    def run(ctx, qi):
        vec = vector_of(ctx, qi)
        lex = lexical_of(ctx, qi, index)
        return se.full_order(ids(rank.fuse(lex, vec, "rrf")), ids(vec))
    return run


def make_coverage_alpha(norm: str, index: str = "f-site") -> Variant:
    """alpha = 0.5 scaled by the share of query terms the index knows (no lexical evidence for
    unknown words, so the vector side should carry more)."""
    def run(ctx, qi):
        vec = vector_of(ctx, qi)
        q = rank.query_terms(ctx.dataset.questions[qi].text)
        idx = ctx.indexes[index]
        known = sum(1 for t in q if t in idx)
        lex = lexical_of(ctx, qi, index)
        if not lex:
            return ids(vec)
        alpha = 0.5 * known / len(q) if q else 0.0
        return se.full_order(ids(convex(lex, vec, alpha, norm)), ids(vec))
    return run


def make_neighbour(norm: str, beta: float, index: str = "f-site", same_doc: bool = True, how: str = "max") -> Variant:
    """Re-score the fused top by adding beta * the best fused score of an adjacent chunk in the
    same document (evidence that the answer's section continues there)."""
    def run(ctx, qi):
        vec = vector_of(ctx, qi)
        lex = lexical_of(ctx, qi, index)
        if not lex:
            return ids(vec)
        fused = dict(convex(lex, vec, 0.5, norm))
        cids = ctx.chunks.corpus_ids
        out = {}
        for n, s in fused.items():
            near = [fused.get(m, 0.0) for m in (n - 1, n + 1) if 0 <= m < len(cids) and (not same_doc or cids[m] == cids[n])]
            nb = (max(near, default=0.0) if how == "max" else sum(near))
            out[n] = s + beta * nb
        return se.full_order([n for n, _ in sorted(out.items(), key=lambda t: (-t[1], t[0]))], ids(vec))
    return run


VARIANTS: dict[str, Variant] = {
    "vector": v_vector,
    "lexical": make_lexical("f-site"),
    "bm25": v_bm25,
    "lex-flat": make_lexical("f-flat"),
    "lex-head2": make_lexical("f-head2"),
    "lex-k15": make_lexical("f-k15"),
    "lex-notitle": make_lexical("f-notitle"),
    "lex-b1": make_lexical("f-b1"),
    "b1-maxmax": make_convex(0.5, "max-max", "f-b1"),
    "b1-nb-maxmax": make_neighbour("max-max", 0.1, "f-b1"),
    "S-lexical": make_lexical("s-f-site"),
    "S-lex-flat": make_lexical("s-f-flat"),
    "S-lex-notitle": make_lexical("s-f-notitle"),
    "S-lex-head2": make_lexical("s-f-head2"),
    "S-lex-b1": make_lexical("s-f-b1"),
    "S-lex-body": make_lexical("s-f-body"),
    "S-lex-body15": make_lexical("s-f-body15"),
    "S-lex-half": make_lexical("s-f-half"),
    "S-score": make_convex(0.5, "site", "s-f-site"),
    "S-maxmax": make_convex(0.5, "max-max", "s-f-site"),
    "S-minmax": make_convex(0.5, "minmax", "s-f-site"),
    "S-rrf": make_rrf("s-f-site"),
    "H-score": make_convex(0.5, "site", "s-f-half"),
    "H-maxmax": make_convex(0.5, "max-max", "s-f-half"),
    "H-minmax": make_convex(0.5, "minmax", "s-f-half"),
    "H-z": make_convex(0.5, "z", "s-f-half"),
    "H-rrf": make_rrf("s-f-half"),
    "H-nb-maxmax": make_neighbour("max-max", 0.1, "s-f-half"),
    "rrf": make_rrf(),
    "score": make_convex(0.5, "site"),
    "score-a.4": make_convex(0.4, "site"),
    "score-a.6": make_convex(0.6, "site"),
    "maxmax": make_convex(0.5, "max-max"),
    "tmm": make_convex(0.5, "tmm"),
    "minmax": make_convex(0.5, "minmax"),
    "z": make_convex(0.5, "z"),
    "score-d50": make_convex(0.5, "site", depth=50),
    "score-d200": make_convex(0.5, "site", depth=200),
    "cov-score": make_coverage_alpha("site"),
    "cov-maxmax": make_coverage_alpha("max-max"),
    "nb-maxmax": make_neighbour("max-max", 0.1),
    "nb-maxmax.2": make_neighbour("max-max", 0.2),
    "nb-minmax": make_neighbour("minmax", 0.1),
    "nb-site": make_neighbour("site", 0.1),
    "nb-nodoc": make_neighbour("max-max", 0.1, same_doc=False),
    "nb-sum": make_neighbour("max-max", 0.1, how="sum"),
    "nb-minmax-nodoc": make_neighbour("minmax", 0.1, same_doc=False),
    "h2-maxmax": make_convex(0.5, "max-max", "f-head2"),
    "h2-nb-maxmax": make_neighbour("max-max", 0.1, "f-head2"),
}


def evaluate(contexts: list[Context], names: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """Per variant, per metric, per question, averaged over the contexts (budgets)."""
    per: dict[str, list[dict[str, list[float]]]] = {n: [] for n in names}
    for ctx in contexts:
        for n in names:
            orders = [VARIANTS[n](ctx, qi) for qi in range(len(ctx.dataset.questions))]
            per[n].append(se.score_orders(ctx.dataset, ctx.chunks, orders, k=5, budget=1000))
    return {n: {m: np.mean([p[m] for p in per[n]], axis=0).tolist() for m in se.METRICS} for n in names}


def oracle(contexts, a: str, b: str) -> list[float]:
    """Per question, budget-averaged R@5 of the better of ``a`` and ``b`` at each budget."""
    vals = []
    for ctx in contexts:
        ra = se.score_orders(ctx.dataset, ctx.chunks, [VARIANTS[a](ctx, qi) for qi in range(len(ctx.dataset.questions))], k=5, budget=1000)["recall"]
        rb = se.score_orders(ctx.dataset, ctx.chunks, [VARIANTS[b](ctx, qi) for qi in range(len(ctx.dataset.questions))], k=5, budget=1000)["recall"]
        vals.append(np.maximum(ra, rb))
    return np.mean(vals, axis=0).tolist()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", default=list(se.SETS))
    parser.add_argument("--chunkers", nargs="+", default=list(se.CHUNKERS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--lexical-only", action="store_true", help="no embeddings: only lexical variants mean anything")
    args = parser.parse_args(argv)
    report = {}
    for name in args.sets:
        contexts = prepare(name, args.chunkers, lexical_only=args.lexical_only)
        res = evaluate(contexts, args.variants)
        orc = oracle(contexts, "lexical", "vector")
        print(f"\n## {name}: {len(contexts[0].dataset.questions)} questions; oracle(lexical, vector) R@5 {100 * np.mean(orc):.1f}")
        best_single = max(("lexical", "vector"), key=lambda m: np.mean(res[m]["recall"]) if m in res else -1)
        print(f"{'variant':14s} {'R@5':>6s} {'IoU':>5s} {'r@1k':>6s}   vs {best_single} dR@5 [CI]        vs vector dIoU")
        for n in args.variants:
            s = {m: 100 * np.mean(res[n][m]) for m in se.METRICS}
            line = f"{n:14s} {s['recall']:6.1f} {s['iou']:5.2f} {s['recall_at_budget']:6.1f}"
            if best_single in res and "vector" in res:
                p = quality.paired(res[n]["recall"], res[best_single]["recall"], n_boot=2000)
                pi = quality.paired(res[n]["iou"], res["vector"]["iou"], n_boot=2000)
                line += f"   {p['mean_diff']:+5.1f} [{p['ci_low']:+.1f}, {p['ci_high']:+.1f}]   {pi['mean_diff']:+.2f}"
            print(line, flush=True)
        report[name] = {"oracle_lexical_vector": orc, "per_question": res}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
