"""The static query encoder against the full model: query-vector agreement and hybrid search quality.

    .venv/bin/python -m bench.static_encoder          # writes bench/.work/static_encoder.json

For each question set (Chroma's, the markdown set, realdocs; ``bench.search_eval``'s loaders) and
each of the nearby chunk budgets ``ours-markdown-192/224/256``:

* **cosine** of each question's static vector (the site's table as a site holds it: int8 rows,
  ``statictable``) with its full-model vector;
* R@5, IoU@5 and recall@1000 tokens of ``lexical``, ``hybrid-full`` and ``hybrid-static`` (the
  clients' score fusion over every chunk), and of ``client-full`` / ``client-static``: the
  clients' own rule (vectors of the first lexical hits' <= 5 documents within the default request
  budget, ``bench.search_eval``'s ``hybrid-score-lexdocs5-budget``).

Per question each metric is averaged over the budgets, then compared paired (``quality.paired``).
``retained``: (static - lexical) / (full - lexical) of mean R@5, the share of the full model's gain
over lexical the static encoder keeps (the target: >= 2/3 on every set, never below lexical).

Tables compared (``--variants``): ``packaged`` (the shipped fit: prior + regression on the
packages' corpus, ``staticfit.static_table``; every question set held out; ``packaged@int4``:
the same rows stored at 4 bits, what quantising further would cost), ``prior`` (the
tokens' own vectors alone, Model2Vec's distillation without the regression), and ``site:<set>``
(the prior regressed on that set's own chunks and headings instead: held out on the other two
sets) -- which corpus generalises better.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import quality  # noqa: E402
from bench import search_eval as se  # noqa: E402
from bench import chroma_eval  # noqa: E402
from bench.chroma_eval import WORK_DIR  # noqa: E402

SETS = ("chroma", "markdown", "realdocs")
CHUNKERS = ("ours-markdown-192", "ours-markdown-224", "ours-markdown-256")
METRICS = se.METRICS


def static_vectors(rows: np.ndarray, tokens: list[str], texts: list[str], dtype: str = "int8") -> np.ndarray:
    """Each text's static vector over ``rows`` (stored as ``dtype``, int8 as a site stores them),
    pieces from the model tokenizer."""
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx import OnnxEmbedder
    from pipeline.embedding.statictable import decode_rows, encode_rows, query_vector

    stored = decode_rows(encode_rows(rows, dtype), dtype, rows.shape[1])
    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    index = {t: i for i, t in enumerate(tokens)}
    out = []
    for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False):
        out.append(query_vector(stored, [index[p] for p in encoding.tokens[:254] if p in index]))
    return np.vstack(out)


def site_table(name: str, prior: np.ndarray, tokens: list[str]) -> np.ndarray:
    """The prior regressed on set ``name``'s own chunks (ours-markdown-256; their cached vectors)
    and their distinct header paths' headings (embedded once, cached)."""
    from pipeline.embedding import staticfit
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx import OnnxEmbedder

    dataset = se.load(name)
    chunks = chroma_eval.build_chunks(se.OURS_EXTRA["ours-markdown-256"](), dataset, progress=False)
    vecs, _, _ = quality.embed_cached(chunks.texts)
    headings = sorted({line.lstrip("#").strip() for t in chunks.texts for line in t.splitlines()
                       if line.startswith("#") and len(line.lstrip("#").strip().split()) >= 2})
    hvecs, _, _ = quality.embed_cached(headings)
    corpus = list(chunks.texts) + headings
    targets = np.vstack([vecs, hvecs]).astype(np.float64)
    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    saved = staticfit.MAX_PIECES
    staticfit.MAX_PIECES = 256  # chunks are long: the model read up to 256 pieces of each
    try:
        a = staticfit.corpus_matrix(corpus, tokens, tokenizer)
    finally:
        staticfit.MAX_PIECES = saved
    rows = prior.astype(np.float64)
    return (rows + staticfit.ridge_solve(a, targets - a @ rows, staticfit.RIDGE, staticfit.ITERATIONS)).astype(np.float32)


def orders(dataset, chunks, vecs: np.ndarray, qvecs: dict[str, np.ndarray], spent: list[int]) -> dict[str, list[list[int]]]:
    """Per method, per question, a reading order over all chunks (as ``search_eval.method_orders``)."""
    from pipeline.search import rank

    index = se.lexical_index(dataset, chunks)
    cids = np.array(chunks.corpus_ids)
    corpora = sorted(set(chunks.corpus_ids))
    rows_of = {c: np.flatnonzero(cids == c) for c in corpora}
    shard_of_doc = se._document_shards(corpora, rows_of)
    from pipeline.client.searchindex import VECTOR_ROWS

    natural = list(range(len(chunks)))
    out: dict[str, list[list[int]]] = {"lexical": []}
    for qi, q in enumerate(dataset.questions):
        lexical = se.lexical_ranking(index, q.text)
        out["lexical"].append(se.full_order([n for n, _ in lexical], natural))
        docs5 = se._lexical_document_ids(lexical, chunks.corpus_ids, rows_of, 5, VECTOR_ROWS)
        kept = se._within_shards(docs5, shard_of_doc, max(1, se.BUDGET_CAP - spent[qi]))
        rows = np.concatenate([rows_of[d] for d in kept]) if kept else np.array([], dtype=np.int64)
        for label, qv in qvecs.items():
            sims = vecs @ qv[qi]
            vorder = np.argsort(-sims, kind="stable").tolist()
            vector = [(i, float(sims[i])) for i in vorder]
            out.setdefault(f"hybrid-{label}", []).append(se.full_order([n for n, _ in rank.fuse(lexical, vector, "score")], vorder))
            capped = rank.fuse(lexical, se._within(vector, rows), "score")
            if len(kept) < len(docs5):
                capped = rank.within_slots(lexical, capped, set(rows.tolist()))
            out.setdefault(f"client-{label}", []).append(se.full_order([n for n, _ in capped], vorder))
    return out


def run_set(name: str, tables: dict[str, np.ndarray], tokens: list[str], chunkers=CHUNKERS, progress: bool = True) -> dict:
    dataset = se.load(name)
    texts = [q.text for q in dataset.questions]
    full = quality.question_vectors(dataset)
    qvecs = {"full": full, **{label: static_vectors(rows, tokens, texts, label.partition("@")[2] or "int8")
                              for label, rows in tables.items()}}
    cosines = {label: np.sum(qvecs[label] * full, axis=1) for label in tables}
    spent = se.measured_spent(dataset)
    per_budget = {}
    for cname in chunkers:
        t0 = time.perf_counter()
        chunks = chroma_eval.build_chunks(se.OURS_EXTRA[cname](), dataset, progress=False)
        vecs, computed, _ = quality.embed_cached(chunks.texts, progress=progress)
        o = orders(dataset, chunks, vecs, qvecs, spent)
        per_budget[cname] = {m: se.score_orders(dataset, chunks, o[m], k=5, budget=1000) for m in o}
        if progress:
            print(f"{name} {cname}: {len(chunks)} chunks ({computed} embedded) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    methods = list(per_budget[chunkers[0]])
    averaged = {m: {metric: np.mean([per_budget[c][m][metric] for c in chunkers], axis=0).tolist() for metric in METRICS} for m in methods}
    summary = {m: {metric: 100 * float(np.mean(v)) for metric, v in averaged[m].items()} for m in methods}
    paired, retained = {}, {}
    for label in tables:
        for kind in ("hybrid", "client"):
            s, f = f"{kind}-{label}", f"{kind}-full"
            paired[f"{s} vs {f}"] = {metric: quality.paired(averaged[s][metric], averaged[f][metric]) for metric in METRICS}
            paired[f"{s} vs lexical"] = {metric: quality.paired(averaged[s][metric], averaged["lexical"][metric]) for metric in METRICS}
            gain = summary[f]["recall"] - summary["lexical"]["recall"]
            retained[s] = (summary[s]["recall"] - summary["lexical"]["recall"]) / gain if gain > 0 else None
    return {
        "set": name, "questions": len(texts), "chunkers": list(chunkers), "summary": summary, "paired": paired,
        "retained": retained,
        "cosine": {label: {"mean": float(c.mean()), "median": float(np.median(c)), "p5": float(np.percentile(c, 5)),
                           "min": float(c.min())} for label, c in cosines.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", default=list(SETS))
    parser.add_argument("--variants", default="packaged,packaged@int4,prior,site:realdocs,site:chroma",
                        help="tables to compare: packaged (int8 as a site stores it; @int4, @float32: stored so), "
                             "prior, site:<set> (comma-separated)")
    parser.add_argument("--chunkers", default=",".join(CHUNKERS))
    parser.add_argument("--out", type=Path, default=WORK_DIR / "static_encoder.json")
    args = parser.parse_args(argv)
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.staticfit import onnx_token_vectors, static_table, tokenizer_json
    from pipeline.embedding.onnx import OnnxEmbedder

    # texts the bench's cache lacks (the site variants' headings) are embedded with the build's
    # backend, not torch: the same vectors to cosine >= 0.999, many times faster here
    from bench import chroma_eval
    from pipeline.embedding.backends import make_local

    backend = make_local(DEFAULT_MODEL, "auto")
    chroma_eval.embed = lambda texts, batch_size=32, progress=False: backend.embed(list(texts))

    t0 = time.perf_counter()
    table = static_table(DEFAULT_MODEL, progress=True)
    fit_seconds = time.perf_counter() - t0
    tables: dict[str, np.ndarray] = {}
    prior = None
    for variant in args.variants.split(","):
        if variant.partition("@")[0] == "packaged":  # packaged@int4: the same table stored as int4
            tables[variant] = table.rows
            continue
        if prior is None:
            prior = onnx_token_vectors(OnnxEmbedder(DEFAULT_MODEL), tokenizer_json(DEFAULT_MODEL), table.tokens)
        if variant == "prior":
            tables[variant] = prior
        elif variant.startswith("site:"):
            tables[variant] = site_table(variant[5:], prior, table.tokens)
        else:
            parser.error(f"unknown variant {variant}")
    results = [run_set(name, tables, table.tokens, tuple(args.chunkers.split(","))) for name in args.sets]
    result = {"table": {"tokens": len(table.tokens), "source": table.source, "seconds_to_load_or_fit": fit_seconds},
              "variants": list(tables), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(quality_table(result))
    return 0


def quality_table(result: dict) -> str:
    """Markdown: per set and table, cosine to the full model and R@5 / IoU@5 of each ranking, and
    the share of the full model's gain kept (also ``bench/reporting/sections.py``)."""
    lines = ["| set | questions | table | cosine to full: mean / p5 / min | R@5 lexical | R@5 hybrid full | R@5 hybrid static | kept | "
             "static − lexical (CI) | static − full (CI) | R@5 client rule: full / static | kept (client rule) | IoU@5 full / static |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["results"]:
        s = r["summary"]
        for label in result["variants"]:
            c = r["cosine"][label]
            vs_lex = r["paired"][f"hybrid-{label} vs lexical"]["recall"]
            vs_full = r["paired"][f"hybrid-{label} vs hybrid-full"]["recall"]
            kept = r["retained"][f"hybrid-{label}"]
            kept_client = r["retained"][f"client-{label}"]
            lines.append(
                f"| {r['set']} | {r['questions']} | {label} | {c['mean']:.3f} / {c['p5']:.3f} / {c['min']:.3f} "
                f"| {s['lexical']['recall']:.1f} | {s['hybrid-full']['recall']:.1f} | {s[f'hybrid-{label}']['recall']:.1f} "
                f"| {'—' if kept is None else f'{100 * kept:.0f} %'} "
                f"| {vs_lex['mean_diff']:+.1f} ({vs_lex['ci_low']:+.1f}, {vs_lex['ci_high']:+.1f}) "
                f"| {vs_full['mean_diff']:+.1f} ({vs_full['ci_low']:+.1f}, {vs_full['ci_high']:+.1f}) "
                f"| {s['client-full']['recall']:.1f} / {s[f'client-{label}']['recall']:.1f} "
                f"| {'—' if kept_client is None else f'{100 * kept_client:.0f} %'} "
                f"| {s['hybrid-full']['iou']:.2f} / {s[f'hybrid-{label}']['iou']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
