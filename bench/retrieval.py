"""Retrieval quality of chunkers, Chroma's protocol (``chroma_eval``) with MiniLM, on Chroma's
corpora or on the markdown set (``bench/markdown_set/PROVENANCE.md``); prints the report's table.

    .venv/bin/python -m bench.retrieval                          # Chroma, anchors + ours -> bench/.work/chroma_results.json
    .venv/bin/python -m bench.retrieval --set markdown           # the markdown set -> bench/.work/markdown_results.json
    .venv/bin/python -m bench.retrieval langchain-recursive-250 semchunk-250
    .venv/bin/python -m bench.retrieval --list

Vectors are cached per text (``quality.embed_cached``: chunkers sharing chunks embed them once).
The JSON holds each result's summary and per-question scores.
"""

from __future__ import annotations

import sys
import time

from bench import BENCH_DIR, REPO_ROOT, WORK, arguments, write_json
from bench import chroma_eval as ce
from bench import quality
from bench.chunkers import DEFAULT, REGISTRY, available

MARKDOWN_SET = BENCH_DIR / "markdown_set"
# The report's all-MiniLM-L6-v2 row for LangChain Recursive 250/0 (research.trychroma.com).
PAPER_MINILM_RECURSIVE_250 = {"recall": 78.5, "precision": 5.4, "precision_omega": 26.7, "iou": 5.4}


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, None)
    ap.add_argument("chunkers", nargs="*", help="names from the registry (default: anchors + ours)")
    ap.add_argument("--set", choices=("chroma", "markdown"), default="chroma")
    ap.add_argument("--list", action="store_true", help="list registered chunkers and exit")
    ap.add_argument("-k", type=int, default=5, help="chunks retrieved per question (default 5)")
    ap.add_argument("--budget", type=int, default=1000, help="word-piece budget for recall@budget")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rechunk", action="store_true", help="ignore the span cache")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    if args.list:
        for name in REGISTRY:
            print(name + ("" if name in DEFAULT else "  (extra)"))
        return 0

    chroma = args.set == "chroma"
    out = args.out or WORK / f"{args.set}_results.json"
    chunkers, skipped = available(args.chunkers or DEFAULT)
    for note in skipped:
        print(note, file=sys.stderr)
    progress = not args.quiet
    dataset = ce.load_dataset() if chroma else ce.load_dir_dataset(MARKDOWN_SET)
    print(f"data: {args.set} ({len(dataset.questions)} questions, digest {dataset.digest})", file=sys.stderr)
    qvecs = quality.question_vectors(dataset)
    results = []
    for chunker in chunkers:
        t0 = time.perf_counter()
        r = ce.evaluate(chunker, dataset, qvecs, k=args.k, budget=args.budget, batch_size=args.batch_size,
                        rechunk=args.rechunk, progress=progress)
        rate = f", {r.chunks_per_second:.1f} chunks/s" if r.chunks_per_second else ""
        print(f"{r.name}: {r.n_chunks} chunks, chunking {r.chunk_seconds:.1f}s, embedding {r.embed_seconds:.1f}s{rate}, "
              f"total {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        results.append(r)

    protocol = {
        "data": str(ce.data_dir()) if chroma else str(MARKDOWN_SET.relative_to(REPO_ROOT)),
        "data_digest": dataset.digest,
        "documents": len(dataset.corpora),
        "characters": sum(len(t) for t in dataset.corpora.values()),
        "questions": len(dataset.questions),
        "model": ce.MODEL_ID,
        "k": args.k,
        "token_budget": args.budget,
        "units": "percent, mean and population std over questions",
    }
    payload = {"protocol": protocol, "skipped": skipped, "results": [r.to_json() for r in results]}
    if chroma:
        protocol["precision_omega_touching"] = "PrecisionΩ counting chunks that merely touch a reference, as the reference code did"
        payload["paper_minilm_recursive_250"] = PAPER_MINILM_RECURSIVE_250
    write_json(out, payload)
    from bench.reporting.sections import quality as quality_section

    print(quality_section(payload, f"{args.set} set"))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
