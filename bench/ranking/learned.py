"""A linear fusion learned from features a client can compute (``FEATURES``), by L2-regularised
logistic regression: ``--loso`` fits it on two sets and tests it on the third (``--in-sample``:
fitted on the set itself, a ceiling, not a method), paired against the site's fusion.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from bench import chroma_eval as ce
from bench import quality
from bench import search_eval as se
from bench.ranking.base import Context, full, load_cached, prepare, save_cached, score, v_score, vector_of
from pipeline.search import rank

LOSO_FEATURES = {"site": (0, 1), "ranks": (0, 1, 3, 4), "relcos": (0, 1, 2), "cov": (0, 1, 5), "all": tuple(range(7))}


def coverage(name: str, contexts: list[Context]) -> list[list[dict[int, float]]]:
    """Per context, per question: chunk -> share of the query's distinct terms it holds (what a
    client can count from the postings it already reads)."""
    cache = ce.WORK_DIR / f"ranking_coverage_{name}_{len(contexts)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "coverage")
    if saved is not None:
        return saved
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
    save_cached(cache, dataset, "coverage", out)
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
