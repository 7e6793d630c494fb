"""The static query encoder against the full model: query-vector agreement and hybrid search quality.

For each question set (Chroma's, the markdown set, realdocs; ``bench.search_eval``'s loaders) and
each of the nearby chunk budgets ``ours-markdown-192/224/256``:

* **cosine** of each question's static vector (the site's table as a site holds it: int8 rows,
  ``statictable``; a word the set's documents lack whose term they hold takes the mean of its
  term's words' rows, as a client reading word rows does) with its full-model vector;
* R@5, IoU@5 and recall@1000 tokens of ``lexical``, ``hybrid-full`` and ``hybrid-static`` (the
  clients' score fusion over every chunk; the chunks' vectors as vector shards hold them, 4 bits
  a value), and of ``client-full`` / ``client-static``: the
  clients' own rule (vectors of the first lexical hits' <= 5 documents within the default request
  budget, ``bench.search_eval``'s ``hybrid-score-lexdocs5-budget``).

Per question each metric is averaged over the budgets, then compared paired (``quality.paired``).
``retained``: (static - lexical) / (full - lexical) of mean R@5, the share of the full model's gain
over lexical the static encoder keeps (the target: >= 2/3 on every set, never below lexical).

The table is the shipped fit (prior + regression on the packages' corpus,
``staticfit.static_table``; every question set held out), stored as a site stores it
(``packaged``: int8) or, with ``--variants``, otherwise (``packaged@int4``: what quantising
further would cost; ``packaged@float32``). The prior alone and fits on a set's own chunks were
compared once (docs/decisions/search.md, "A static query encoder").
"""

from __future__ import annotations

import sys
import time

import numpy as np

from bench import WORK, arguments, chroma_eval, quality, write_json
from bench import search_eval as se


def static_vectors(rows: np.ndarray, tokens: list[str], texts: list[str], dtype: str = "int8",
                   site_words: set[str] | None = None) -> np.ndarray:
    """Each text's static vector over ``rows`` (stored as ``dtype``, int8 as a site stores them),
    pieces from the model tokenizer. With ``site_words`` (the words of the set's documents), as a
    client reads a site with word rows: each word's row as the site stores it (its pieces' rows
    summed, 4 bits a value), and a word the site lacks whose index term it holds takes the mean of
    the rows of the site's words of that term (``staticembed.same_term_row``)."""
    from pipeline.client.staticembed import same_term_row
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx import OnnxEmbedder
    from pipeline.embedding.statictable import decode_rows, encode_rows, query_vector
    from pipeline.search.wordrows import WORD_DTYPE
    from pipeline.siteformat import vectorshards
    from pipeline.siteformat.searchlayout import WHOLE_WORD
    from pipeline.siteformat.searchtext import word_term

    stored = decode_rows(encode_rows(rows, dtype), dtype, rows.shape[1])
    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    index = {t: i for i, t in enumerate(tokens)}
    by_term: dict[str, list[str]] = {}
    for w in site_words or ():
        if (term := word_term(w)) is not None:
            by_term.setdefault(term, []).append(w)

    def pieces(text: str) -> list[int]:
        return [index[p] for p in tokenizer.encode(text, add_special_tokens=False).tokens if p in index]

    def word_row(word: str) -> np.ndarray:  # as a term shard or word file stores it (``wordrows``)
        total = stored[pieces(word)].sum(axis=0, keepdims=True)
        return decode_rows(vectorshards.encode_rows(total, np.ones(1, bool)), WORD_DTYPE, total.shape[1])[0]

    out = []
    for text, encoding in zip(texts, tokenizer.encode_batch(list(texts), add_special_tokens=False)):
        ids = [index[p] for p in encoding.tokens[:254] if p in index]
        if site_words is None or len(encoding.tokens) > 254:
            out.append(query_vector(stored, ids))
            continue
        words = [w for w, _ in tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(text))]
        held = []
        for w in words:
            term = word_term(w) if WHOLE_WORD.fullmatch(w) else None
            if w not in site_words and term in by_term:
                held.append(same_term_row({v: word_row(v) for v in by_term[term]}, term))
            else:
                held.append(word_row(w))
        out.append(query_vector(np.vstack(held), list(range(len(held)))))
    return np.vstack(out)


def stored_vectors(vecs: np.ndarray) -> np.ndarray:
    """The chunks' vectors as a site's vector shards hold them (``vectorshards``: 4 bits a value)."""
    from pipeline.siteformat.vectorshards import decode_rows, encode_rows

    return decode_rows(encode_rows(vecs, np.ones(len(vecs), bool)), vecs.shape[1])[0]


def orders(dataset, chunks, vecs: np.ndarray, qvecs: dict[str, np.ndarray]) -> dict[str, list[list[int]]]:
    """Per method, per question, a reading order over all chunks (as ``search_eval.method_orders``)."""
    from pipeline.siteformat import searchrank as rank

    index = se.lexical_index(dataset, chunks)
    rule = se.ClientRule(dataset, chunks)
    natural = list(range(len(chunks)))
    out: dict[str, list[list[int]]] = {"lexical": []}
    for qi, q in enumerate(dataset.questions):
        lexical = se.lexical_ranking(index, q.text, len(chunks))
        out["lexical"].append(se.full_order([n for n, _ in lexical], natural))
        for label, qv in qvecs.items():
            sims = vecs @ qv[qi]
            vorder = np.argsort(-sims, kind="stable").tolist()
            vector = [(i, float(sims[i])) for i in vorder]
            out.setdefault(f"hybrid-{label}", []).append(se.full_order([n for n, _ in rank.fuse(lexical, vector, "score")], vorder))
            out.setdefault(f"client-{label}", []).append(se.full_order([n for n, _ in rule.fuse(lexical, vector, qi)], vorder))
    return out


def run_set(name: str, tables: dict[str, np.ndarray], tokens: list[str], chunkers=se.CHUNKERS, progress: bool = True) -> dict:
    from pipeline.search.topicpart import text_words

    dataset = se.load(name)
    texts = [q.text for q in dataset.questions]
    full = quality.question_vectors(dataset)
    site_words = set().union(*(text_words(text) for text in dataset.corpora.values()))
    qvecs = {"full": full, **{label: static_vectors(rows, tokens, texts, label.partition("@")[2] or "int8", site_words)
                              for label, rows in tables.items()}}
    cosines = {label: np.sum(qvecs[label] * full, axis=1) for label in tables}
    per_budget = {}
    for cname in chunkers:
        t0 = time.perf_counter()
        chunks = chroma_eval.build_chunks(se.OURS_EXTRA[cname](), dataset)
        vecs, computed, _ = quality.embed_cached(chunks.texts, progress=progress)
        o = orders(dataset, chunks, stored_vectors(vecs), qvecs)
        per_budget[cname] = {m: se.score_orders(dataset, chunks, o[m], k=5, budget=1000) for m in o}
        if progress:
            print(f"{name} {cname}: {len(chunks)} chunks ({computed} embedded) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    averaged = quality.budget_averaged(per_budget)
    summary = quality.summarise(averaged)
    static = [f"{kind}-{label}" for label in tables for kind in ("hybrid", "client")]
    paired = quality.paired_methods(averaged, [(s, other) for s in static for other in (f"{s.split('-')[0]}-full", "lexical")])
    retained = {}
    for s in static:
        gain = summary[f"{s.split('-')[0]}-full"]["recall"] - summary["lexical"]["recall"]
        retained[s] = (summary[s]["recall"] - summary["lexical"]["recall"]) / gain if gain > 0 else None
    return {
        "set": name, "questions": len(texts), "chunkers": list(chunkers), "summary": summary, "paired": paired,
        "retained": retained,
        "cosine": {label: {"mean": float(c.mean()), "median": float(np.median(c)), "p5": float(np.percentile(c, 5)),
                           "min": float(c.min())} for label, c in cosines.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, WORK / "static_encoder.json")
    parser.add_argument("sets", nargs="*", default=list(se.SETS))
    parser.add_argument("--variants", default="packaged,packaged@int4",
                        help="the shipped table stored as: packaged (int8, as a site stores it), packaged@int4, packaged@float32")
    parser.add_argument("--chunkers", default=",".join(se.CHUNKERS))
    args = parser.parse_args(argv)
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.staticfit import static_table

    t0 = time.perf_counter()
    table = static_table(DEFAULT_MODEL, progress=True)
    fit_seconds = time.perf_counter() - t0
    if any(v.partition("@")[0] != "packaged" for v in args.variants.split(",")):
        parser.error(f"unknown variant in {args.variants}")
    tables = {variant: table.rows for variant in args.variants.split(",")}
    results = [run_set(name, tables, table.tokens, tuple(args.chunkers.split(","))) for name in args.sets]
    result = {"table": {"tokens": len(table.tokens), "source": table.source, "seconds_to_load_or_fit": fit_seconds},
              "variants": list(tables), "results": results}
    write_json(args.out, result)
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
