"""What-ifs for hybrid search with the static query encoder (issue 31: Chroma kept -11 % of the full
model's gain). Measured once, none adopted (docs/decisions/search.md); kept in history only.

Per set (Chroma, markdown, realdocs) and chunk budget (``ours-markdown-192/224/256``), each question
ranked by score fusion (``rank.fuse``) of the site's lexical ranking with the cosines of:

* ``full`` / ``static``: the full model's / the static encoder's query vector (int8 rows, as a
  site stores them; ``bench.static_encoder``);
* ``-prf3``: pseudo-relevance feedback from the lexical side, q' = unit(q + 0.5 unit(mean of the
  first 3 lexical hits' chunk vectors)) (vectors a client already holds: the hits' documents);
* ``-vprf3`` / ``-fprf3``: the same from the first 3 vector hits / fused hits (a second pass);
* ``-bestnorm``: cosines divided by the best one, as the lexical side is by its best;
* ``-agree10``: the vector side's weight 0.5 x min(1, 2 x overlap of the two first 10s);
* ``-fitted``: weight 0.5 x the share of the query's pieces with rows the regression moved (tokens
  of the packaged fit corpus; mean 0.77 on Chroma, ~1.0 on markdown and realdocs).

``hybrid-*``: vectors of every chunk (``bench.static_encoder``'s headline); ``client-*``: only the
rows the clients fetch (``search_eval.ClientRule``, request budget included). Each question's R@5
averaged over the budgets, then compared paired (``quality.paired``).

    python -m bench.static_fusion_experiments chroma markdown realdocs
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from bench import chroma_eval, quality
from bench import search_eval as se
from pipeline.search import rank

PRF_K, PRF_A = 3, 0.5


def unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def vector_list(vecs: np.ndarray, q: np.ndarray, rows, depth: int = rank.FUSION_DEPTH) -> list[tuple[int, float]]:
    """The first ``depth`` (chunk, cosine), best first, ties to the lower chunk, over ``rows`` (None: all)."""
    idx = np.arange(len(vecs)) if rows is None else np.array(sorted(rows))
    sims = vecs[idx] @ q
    part = np.argpartition(-sims, depth)[:depth] if len(idx) > depth else np.arange(len(idx))
    return [(int(idx[r]), float(sims[r])) for r in sorted(part.tolist(), key=lambda r: (-sims[r], idx[r]))]


def feedback(q: np.ndarray, vecs: np.ndarray, hits: list[int]) -> np.ndarray:
    return q if not hits else unit(q + PRF_A * unit(vecs[hits[:PRF_K]].mean(axis=0)))


def overlap(a, b, depth: int = 10) -> float:
    return len({n for n, _ in a[:depth]} & {n for n, _ in b[:depth]}) / depth


def variants(c: dict) -> dict[str, list[tuple[int, float]]]:
    """Per variant, the fused ranking of one question (``c``: vecs, lexical, rows, full, static, share)."""
    vecs, lexical, rows = c["vecs"], c["lexical"], c["rows"]
    held = [n for n, _ in lexical if rows is None or n in rows]
    out = {}
    for label in ("full", "static"):
        vec = vector_list(vecs, c[label], rows)
        out[label] = rank.fuse(lexical, vec)
        out[f"{label}-prf3"] = rank.fuse(lexical, vector_list(vecs, feedback(c[label], vecs, held), rows))
        top = vec[0][1] if vec and vec[0][1] > 0 else 1.0
        out[f"{label}-bestnorm"] = rank.fuse(lexical, [(n, s / top) for n, s in vec])
    vec = vector_list(vecs, c["static"], rows)
    out["static-vprf3"] = rank.fuse(lexical, vector_list(vecs, feedback(c["static"], vecs, [n for n, _ in vec]), rows))
    out["static-fprf3"] = rank.fuse(lexical, vector_list(vecs, feedback(c["static"], vecs, [n for n, _ in out["static"]]), rows))
    out["static-agree10"] = rank.score_fusion(lexical, vec, alpha=1 - 0.5 * min(1.0, 2 * overlap(lexical, vec)))
    out["static-fitted"] = rank.score_fusion(lexical, vec, alpha=1 - 0.5 * c["share"])
    return out


def client_rows(rule: se.ClientRule, lexical, qi: int) -> tuple[set[int], bool]:
    """The rows the clients fetch for question ``qi`` (``ClientRule.fuse``), and whether the budget cut some."""
    from pipeline.client.searchindex import VECTOR_ROWS

    docs = se._lexical_document_ids(lexical, rule.corpus_ids, rule.rows_of, se.LEX_DOCUMENTS, VECTOR_ROWS)
    kept = se._within_shards(docs, rule.shard_of_doc, max(1, se.BUDGET_CAP - rule.spent[qi]))
    return {int(r) for d in kept for r in rule.rows_of[d]}, len(kept) < len(docs)


def fitted_shares(texts: list[str], tokens: list[str], rows: np.ndarray) -> np.ndarray:
    """Per text, the share of its non-zero pieces that occur in the packaged fit corpus."""
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx import OnnxEmbedder
    from pipeline.embedding.staticcorpus import packaged_corpus
    from pipeline.embedding.staticfit import MAX_PIECES

    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    index = {t: i for i, t in enumerate(tokens)}
    seen = np.zeros(len(tokens), dtype=bool)
    for enc in tokenizer.encode_batch(packaged_corpus(), add_special_tokens=False):
        seen[[index[p] for p in enc.tokens[:MAX_PIECES] if p in index]] = True
    nonzero = np.linalg.norm(rows, axis=1) > 0
    out = []
    for enc in tokenizer.encode_batch(texts, add_special_tokens=False):
        ids = [index[p] for p in enc.tokens[:254] if p in index and nonzero[index[p]]]
        out.append(float(seen[ids].mean()) if ids else 0.0)
    return np.array(out)


def run_set(name: str, table) -> dict:
    from bench.static_encoder import static_vectors

    dataset = se.load(name)
    texts = [q.text for q in dataset.questions]
    full = quality.question_vectors(dataset)
    static = static_vectors(table.rows, table.tokens, texts, "int8")
    share = fitted_shares(texts, table.tokens, table.rows)
    print(f"{name}: fitted share mean {share.mean():.3f}, below 1 for {int((share < 1).sum())} of {len(share)} questions", file=sys.stderr)
    per_budget = {}
    for cname in se.CHUNKERS:
        chunks = chroma_eval.build_chunks(se.OURS_EXTRA[cname](), dataset)
        vecs, _, _ = quality.embed_cached(chunks.texts)
        index = se.lexical_index(dataset, chunks)
        rule = se.ClientRule(dataset, chunks)
        natural = list(range(len(chunks)))
        orders: dict[str, list[list[int]]] = {"lexical": []}
        for qi, q in enumerate(dataset.questions):
            lexical = se.lexical_ranking(index, q.text, len(chunks))
            orders["lexical"].append(se.full_order([n for n, _ in lexical], natural))
            fallback = np.argsort(-(vecs @ static[qi]), kind="stable").tolist()
            for mode in ("hybrid", "client"):
                rows, partial = (None, False) if mode == "hybrid" else client_rows(rule, lexical, qi)
                c = dict(vecs=vecs, lexical=lexical, rows=rows, full=full[qi], static=static[qi], share=share[qi])
                for v, fused in variants(c).items():
                    if partial:
                        fused = rank.within_slots(lexical, fused, rows)
                    orders.setdefault(f"{mode}-{v}", []).append(se.full_order([n for n, _ in fused], fallback))
        per_budget[cname] = {m: se.score_orders(dataset, chunks, o, k=5, budget=1000) for m, o in orders.items()}
        print(f"{name} {cname}: {len(chunks)} chunks", file=sys.stderr, flush=True)
    averaged = {m: {"recall": v["recall"]} for m, v in quality.budget_averaged(per_budget).items()}
    pairs = [(m, o) for m in averaged if m != "lexical"
             for o in ("lexical", f"{m.split('-')[0]}-full", f"{m.split('-')[0]}-static") if o != m]
    return {"set": name, "summary": quality.summarise(averaged), "paired": quality.paired_methods(averaged, pairs)}


def report(r: dict) -> str:
    s, p = r["summary"], r["paired"]
    lines = [f"{r['set']}: lexical R@5 {s['lexical']['recall']:.1f}"]
    for m in s:
        if m == "lexical":
            continue
        cells = [f"{m:22s} {s[m]['recall']:.1f}"]
        for other in ("lexical", f"{m.split('-')[0]}-full", f"{m.split('-')[0]}-static"):
            if f"{m} vs {other}" in p:
                d = p[f"{m} vs {other}"]["recall"]
                cells.append(f"vs {other.split('-')[-1]} {d['mean_diff']:+.1f} ({d['ci_low']:+.1f}, {d['ci_high']:+.1f})")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.staticfit import static_table

    warnings.filterwarnings("ignore")
    table = static_table(DEFAULT_MODEL)
    for name in (argv if argv is not None else sys.argv[1:]) or list(se.SETS):
        print(report(run_set(name, table)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
