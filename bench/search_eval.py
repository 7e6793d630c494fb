"""Search methods compared on the same chunks: vector, lexical (the site's BM25F index), hybrid.

For each question set (Chroma's, the markdown set, the realdocs set) and each of three nearby chunk
budgets (``ours-markdown-192/224/256``: at 50-250 questions a gap of a few points at one budget is
mostly where the cuts fell), every method ranks all pooled chunks; the metrics are Chroma's
(``chroma_eval``: R@5, IoU@5, recall at 1,000 word pieces), each question's averaged over the
budgets, then methods compared paired per question (``quality.paired``). Methods:

* ``vector``: MiniLM cosine, exact; ``lexical``: ``pipeline.search``'s BM25F levels over the
  fields the site indexes (``site_fields``), ranked as the clients rank; ``bm25``: plain BM25
  (bm25s, PyStemmer, its English stop words), the library anchor for the lexical side;
* ``hybrid-rrf`` / ``hybrid-score``: the clients' two fusions; ``hybrid-sentences``: the
  ``sentences`` option (``rank.sentence_rerank`` of the fused first ``rank.RERANK_DEPTH``);
* ``hybrid-score-lexdocs5``: vectors of the first lexical hits' documents only, as the clients
  fetch them; ``-budget``: within the clients' request budget too (``ClientRule``).

What-ifs measured once and dropped (the closest topics' or folders' vectors, fixed shard counts,
other budgets): docs/decisions/search.md. Chunks a method does not rank follow its ranking (in
vector order; lexical: corpus order), so every method delivers a full reading order.

    .venv/bin/python -m bench.search_eval realdocs markdown        # writes bench/.work/search_results.json
    .venv/bin/python -m bench.search_eval --chunkers ours-markdown-256 realdocs
"""
from __future__ import annotations

import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from bench import BENCH_DIR, WORK, arguments, write_json
from bench import chroma_eval as ce
from bench import quality
from bench import site_eval
from bench.chunkers import OURS_EXTRA
from bench.metrics import retrieval_scores
from pipeline.siteformat import searchrank as rank
from pipeline.search.index import impacts, quantise
from pipeline.siteformat.searchtext import chunk_fields, terms

OUT = WORK / "search_results.json"
CHUNKERS = ("ours-markdown-192", "ours-markdown-224", "ours-markdown-256")
LEX_DOCUMENTS = 5
"""``hybrid-score-lexdocs5``: the documents of the first lexical hits whose vectors a client fetches."""
BUDGET_CAP = 6
"""The ``request_budget`` ``-lexdocs5-budget`` models (the clients' default ``REQUEST_BUDGET``)."""
LEXDOC_METHODS = ("hybrid-score-lexdocs5", "hybrid-score-lexdocs5-budget")
METHODS = ("vector", "lexical", "bm25", "hybrid-rrf", "hybrid-score", "hybrid-sentences", *LEXDOC_METHODS)
METRICS = ("recall", "iou", "recall_at_budget")
SETS = ("chroma", "markdown", "realdocs")
RERANK_DEPTH = 10
"""Candidates of the re-ranking ceiling: the fused ranking's first 10 (twice k)."""


def load(name: str) -> ce.Dataset:
    if name == "chroma":
        return ce.load_dataset()
    if name == "markdown":
        return ce.load_dir_dataset(BENCH_DIR / "markdown_set")
    if name == "realdocs":
        return load_realdocs()
    raise ValueError(f"unknown set {name!r}; one of {', '.join(SETS)}")


def load_realdocs() -> ce.Dataset:
    """The realdocs set: corpora read from ../shared/realdocs, questions from bench/realdocs_set."""
    from bench.realdocs_set.build_questions import corpus_id, load_corpora

    corpora = {corpus_id(rel): text for rel, text in load_corpora().items()}
    return ce.read_dataset(corpora, BENCH_DIR / "realdocs_set" / "questions.csv")


# --------------------------------------------------------------------------- rankings


def site_fields(dataset: ce.Dataset, chunks: ce.ChunkSet) -> tuple[list[dict[str, Counter]], list[dict[str, int]]]:
    """Per chunk, the BM25F fields the site indexes (``chunk_fields``) and their lengths: title: the
    corpus's first H1; header path: the chunk's heading context without the title line; body: the
    chunk file, i.e. heading context + span (what the bench embeds)."""
    titles = {}
    for cid, text in dataset.corpora.items():
        titles[cid] = next((line[2:] for line in text.splitlines() if line.startswith("# ")), "")
    fields, lengths = [], []
    for cid, s, e, text in zip(chunks.corpus_ids, chunks.starts.tolist(), chunks.ends.tolist(), chunks.texts):
        lines = [line for line in text[: len(text) - (e - s)].split("\n") if line.strip()]
        if lines and titles[cid] and lines[0] == f"# {titles[cid]}":
            lines = lines[1:]
        per_field = chunk_fields(titles[cid], " > ".join(lines), titles[cid], Counter(terms(text)))
        fields.append(per_field)
        lengths.append({f: sum(c.values()) for f, c in per_field.items()})
    return fields, lengths


def lexical_index(dataset: ce.Dataset, chunks: ce.ChunkSet) -> dict[str, list[tuple[int, int]]]:
    """The site's BM25F impacts over ``chunks`` (fields: ``site_fields``)."""
    quantised, _ = quantise(impacts(*site_fields(dataset, chunks)))
    return quantised


def lexical_ranking(index: dict[str, list[tuple[int, int]]], query: str, chunks: int) -> list[tuple[int, int]]:
    """The clients' ranking: each query term's idf over the ``chunks`` chunks times its levels."""
    return rank.lexical_ranking({t: index.get(t, []) for t in rank.query_terms(query)}, chunks=chunks)


def bm25_rankings(chunks: ce.ChunkSet, questions: Sequence[ce.Question]) -> list[list[tuple[int, float]]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(chunks.texts), stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    out = []
    for q in questions:
        tokens = bm25s.tokenize([q.text], stopwords="en", stemmer=stemmer, show_progress=False)
        k = len(chunks)
        docs, scores = retriever.retrieve(tokens, k=k, show_progress=False)
        out.append([(int(d), float(s)) for d, s in zip(docs[0], scores[0]) if s > 0])
    return out


def full_order(ranked: Sequence[int], fallback: Sequence[int]) -> list[int]:
    seen = set(ranked)
    return list(ranked) + [i for i in fallback if i not in seen]


def method_orders(dataset: ce.Dataset, chunks: ce.ChunkSet, vecs: np.ndarray, qvecs: np.ndarray) -> dict[str, list[list[int]]]:
    """Per method, per question, a reading order over all chunks."""
    index = lexical_index(dataset, chunks)
    bm25 = bm25_rankings(chunks, dataset.questions)
    sims = qvecs @ vecs.T
    natural = list(range(len(chunks)))
    rule = ClientRule(dataset, chunks)
    out: dict[str, list[list[int]]] = defaultdict(list)
    fused = []
    for qi, q in enumerate(dataset.questions):
        vector_order = np.argsort(-sims[qi], kind="stable").tolist()
        vector = [(i, float(sims[qi, i])) for i in vector_order]
        lexical = lexical_ranking(index, q.text, len(chunks))
        out["hybrid-score-lexdocs5"].append(full_order([n for n, _ in rule.fuse(lexical, vector)], vector_order))
        out["hybrid-score-lexdocs5-budget"].append(full_order([n for n, _ in rule.fuse(lexical, vector, qi)], vector_order))
        out["vector"].append(vector_order)
        out["lexical"].append(full_order([n for n, _ in lexical], natural))
        out["bm25"].append(full_order([n for n, _ in bm25[qi]], natural))
        out["hybrid-rrf"].append(full_order([n for n, _ in rank.fuse(lexical, vector, "rrf")], vector_order))
        out["hybrid-score"].append(full_order([n for n, _ in rank.fuse(lexical, vector, "score")], vector_order))
        fused.append((lexical, vector, rank.fuse(lexical, vector, "score")))
    # sentence re-ranking: every sentence of every question's fused first RERANK_DEPTH, embedded once
    heads = [[n for n, _ in f[: rank.RERANK_DEPTH]] for _, _, f in fused]
    texts = sorted({t for head in heads for n in head for t in rank.sentences(chunks.texts[n])})
    svecs, _, _ = quality.embed_cached(texts)
    row = {t: i for i, t in enumerate(texts)}
    for qi, ((lexical, vector, f), head) in enumerate(zip(fused, heads)):
        best = {}
        for n in head:
            rows = [row[t] for t in rank.sentences(chunks.texts[n])]
            if rows:
                best[n] = rank.vector_ranking(range(len(rows)), svecs[rows], qvecs[qi])[0][1]
        out["hybrid-sentences"].append(full_order([n for n, _ in rank.sentence_rerank(f, lexical, vector, best)], out["vector"][qi]))
    return out


class ClientRule:
    """The clients' vector candidates over a set's chunks: the rows of the first lexical hits'
    documents (at most ``LEX_DOCUMENTS`` and ``VECTOR_ROWS`` rows), and, for question ``qi``, only
    those in the first B vector shards in hit order, B = max(1, ``BUDGET_CAP`` - the requests
    spent before the vectors, ``measured_spent``); when that leaves documents out, the fused order
    re-orders only the chunks with a vector within their lexical places (``rank.within_slots``)."""

    def __init__(self, dataset: ce.Dataset, chunks: ce.ChunkSet):
        cids = np.array(chunks.corpus_ids)
        self.corpus_ids = chunks.corpus_ids
        self.rows_of = {c: np.flatnonzero(cids == c) for c in sorted(set(chunks.corpus_ids))}
        self.shard_of_doc = _document_shards(list(self.rows_of), self.rows_of)
        self.spent = measured_spent(dataset)

    def fuse(self, lexical: list[tuple[int, int]], vector: list[tuple[int, float]], qi: int | None = None) -> list[tuple[int, float]]:
        """Score fusion with the vectors the clients fetch (``qi`` None: no request budget)."""
        from pipeline.client.searchindex import VECTOR_ROWS

        docs = _lexical_document_ids(lexical, self.corpus_ids, self.rows_of, LEX_DOCUMENTS, VECTOR_ROWS)
        kept = docs if qi is None else _within_shards(docs, self.shard_of_doc, max(1, BUDGET_CAP - self.spent[qi]))
        rows = {int(r) for d in kept for r in self.rows_of[d]}
        fused = rank.fuse(lexical, [(i, s) for i, s in vector if i in rows], "score")
        return rank.within_slots(lexical, fused, rows) if len(kept) < len(docs) else fused


_SPENT: dict[str, list[int]] = {}


def measured_spent(dataset: ce.Dataset) -> list[int]:
    """Per question, the requests a cold unscoped query of the Python client makes before its
    vectors (records.json and the term shards of its terms) on a site built from the set's
    documents with default settings and the hashing embedder (the lexical index does not
    depend on the embedder). Built once per set (seconds); realdocs ids become their paths."""
    key = f"{getattr(dataset, 'digest', None) or id(dataset)}"
    if key in _SPENT:
        return _SPENT[key]
    import tempfile

    from bench.speed import build_in_process
    from pipeline.client import open_site
    from pipeline.client.searchindex import Filters

    with tempfile.TemporaryDirectory() as tmp:
        content = Path(tmp) / "content"
        site_eval.write_content(dataset, content)
        site = Path(tmp) / "site"
        build_in_process(content, site, Path(tmp) / "cache", title="eval")
        index = open_site(site).search_index(records=True)
        _SPENT[key] = [1 + len(index.lexical_files(q.text, Filters())) for q in dataset.questions]
    return _SPENT[key]


def _document_shards(corpora: list[str], rows_of: dict) -> dict[str, int]:
    """Each document's vector shard as ``_search/`` lays them out (``search.groups.shard_groups``):
    content-defined groups of whole documents of one folder, (folder, id) order."""
    from pipeline.search.groups import shard_groups

    by_folder: dict[str, list[str]] = defaultdict(list)
    for c in sorted(corpora, key=lambda c: (folder(c), c)):
        by_folder[folder(c)].append(c)
    out, shard = {}, 0
    for f in sorted(by_folder):
        docs = by_folder[f]
        for first, n in shard_groups([f"{f}/{c}" for c in docs], [len(rows_of[c]) for c in docs]):
            out.update((c, shard) for c in docs[first:first + n])
            shard += 1
    return out


def _within_shards(documents: list[str], shard_of_doc: dict[str, int], shards: int) -> list[str]:
    """The ``documents`` (in hit order) whose shards are among the first ``shards`` in that order
    (the clients' ``document_shards``)."""
    kept, taken = [], []
    for d in documents:
        s = shard_of_doc[d]
        if s not in taken:
            if len(taken) >= shards:
                continue
            taken.append(s)
        kept.append(d)
    return kept


def _lexical_document_ids(lexical, corpus_ids, rows_of: dict, documents: int, rows_max: int) -> list[str]:
    """The documents holding the first lexical hits, in hit order: at most ``documents`` of them
    and ``rows_max`` rows, the first always (none without hits)."""
    chosen, taken, seen = [], 0, set()
    for n, _ in lexical:
        doc = corpus_ids[n]
        if doc in seen:
            continue
        seen.add(doc)
        if len(chosen) == documents or (chosen and taken + len(rows_of[doc]) > rows_max):
            break
        chosen.append(doc)
        taken += len(rows_of[doc])
    return chosen


def folder(corpus: str) -> str:
    """The folder of a realdocs corpus id (its path with ``/`` as ``__``: ``fastapi__tutorial__x``,
    ``fastapi___llm-test`` for ``fastapi/_llm-test``), or "" for an id without one."""
    runs = list(re.finditer("_{2,}", corpus))
    return corpus[: runs[-1].start()] if runs else ""


def score_orders(dataset: ce.Dataset, chunks: ce.ChunkSet, orders: list[list[int]], *, k: int, budget: int) -> dict[str, list[float]]:
    return ce.score_orders(dataset, chunks, orders, k=k, budget=budget, metrics=METRICS)


def rerank_ceiling(dataset: ce.Dataset, chunks: ce.ChunkSet, orders: list[list[int]], *, depth: int, k: int) -> list[float]:
    """Per question, R@k of the best re-ordering of ``order[:depth]``: a ceiling for any re-ranker
    of those candidates (a cross-encoder, a learned fusion), not a method. Our chunks' spans are
    disjoint, so the chunks sharing the most characters with the gold, first, are that order."""
    out = []
    for q, order in zip(dataset.questions, orders):
        def shared(i: int) -> int:
            if chunks.corpus_ids[i] != q.corpus_id:
                return 0
            s, e = int(chunks.starts[i]), int(chunks.ends[i])
            return sum(max(0, min(e, re) - max(s, rs)) for rs, re in q.refs)
        best = sorted(order[:depth], key=lambda i: -shared(i))
        top = [(chunks.corpus_ids[i], int(chunks.starts[i]), int(chunks.ends[i])) for i in best[:k]]
        out.append(retrieval_scores(top, q.refs, q.corpus_id)["recall"])
    return out


# --------------------------------------------------------------------------- run


def run_set(name: str, chunker_names: Sequence[str], *, k: int = 5, budget: int = 1000, progress: bool = True) -> dict[str, Any]:
    dataset = load(name)
    qvecs = quality.question_vectors(dataset)
    per_budget: dict[str, dict[str, dict[str, list[float]]]] = {}
    ceiling: dict[str, list[float]] = {}
    chunk_counts = {}
    for cname in chunker_names:
        t0 = time.perf_counter()
        chunker = OURS_EXTRA[cname]()
        chunks = ce.build_chunks(chunker, dataset)
        vecs, computed, _ = quality.embed_cached(chunks.texts, progress=progress)
        orders = method_orders(dataset, chunks, vecs, qvecs)
        per_budget[cname] = {m: score_orders(dataset, chunks, orders[m], k=k, budget=budget) for m in METHODS}
        ceiling[cname] = rerank_ceiling(dataset, chunks, orders["hybrid-score"], depth=RERANK_DEPTH, k=k)
        chunk_counts[cname] = len(chunks)
        if progress:
            print(f"{name} {cname}: {len(chunks)} chunks ({computed} embedded) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    averaged = quality.budget_averaged(per_budget)  # per question, each metric averaged over the budgets
    # Ceiling of a fusion that, per question and budget, could only choose between the two
    # single methods: the better R@5 of lexical and vector (a fusion may pass it, rarely by much).
    oracle = np.mean([np.maximum(per_budget[c]["lexical"]["recall"], per_budget[c]["vector"]["recall"]) for c in chunker_names], axis=0)
    pairs = [(hybrid, other) for hybrid in METHODS[3:] for other in ("vector", "lexical", "bm25")]
    # what restricting the vector candidates costs, against exhaustive and without the request budget
    pairs += [("hybrid-rrf", "hybrid-score"), ("hybrid-score-lexdocs5", "hybrid-score"), ("hybrid-score-lexdocs5-budget", "hybrid-score"),
              ("hybrid-score-lexdocs5-budget", "hybrid-score-lexdocs5"), ("hybrid-sentences", "hybrid-score")]
    # what a reader of the set built as a site finds, by the product's own evaluation (`pipeline eval`)
    site = site_eval.site_figures(name, dataset) if name in site_eval.SETS else None
    return {
        "set": name,
        "site": site,
        "questions": len(dataset.questions),
        "documents": len(dataset.corpora),
        "chunkers": list(chunker_names),
        "chunks": chunk_counts,
        "k": k,
        "budget": budget,
        "summary": quality.summarise(averaged),
        "oracle_recall": 100 * float(np.mean(oracle)),
        "rerank_depth": RERANK_DEPTH,
        "spent_before_vectors": measured_spent(dataset),
        "rerank_ceiling_recall": 100 * float(np.mean([ceiling[c] for c in chunker_names])),
        "by_budget": {c: quality.summarise(per_budget[c]) for c in chunker_names},
        "paired": quality.paired_methods(averaged, pairs),
        "per_question": averaged,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = arguments(__doc__, OUT)
    parser.add_argument("sets", nargs="*", default=list(SETS))
    parser.add_argument("--chunkers", nargs="+", default=list(CHUNKERS))
    args = parser.parse_args(argv)
    result = {"results": [run_set(name, args.chunkers) for name in args.sets]}
    write_json(args.out, result)
    from bench.reporting.sections import evaluation, search

    print(search(result) + "\n" + evaluation(result, None))


if __name__ == "__main__":
    main()
