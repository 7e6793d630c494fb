"""Run chunkers through Chroma's chunking evaluation with MiniLM; print a markdown table.

    .venv/bin/python bench/run_chroma.py                       # anchors + ours
    .venv/bin/python bench/run_chroma.py langchain-recursive-250 semchunk-250
    .venv/bin/python bench/run_chroma.py --list

Results (summary + per-question scores) go to bench/.work/chroma_results.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench.chunkers import DEFAULT, REGISTRY, available  # noqa: E402

# The report's all-MiniLM-L6-v2 row for LangChain Recursive 250/0 (research.trychroma.com).
PAPER_MINILM_RECURSIVE_250 = {"recall": 78.5, "precision": 5.4, "precision_omega": 26.7, "iou": 5.4}


def table(results: list[ce.Result], *, k: int, budget: int) -> str:
    head = (
        f"| chunker | chunks | mean size (pieces) | recall@{k} | precision@{k} | PrecisionΩ | IoU@{k} "
        f"| recall@{budget} tokens | chunk s | embed s |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in results:
        s = r.summary()
        cells = [f"{s[m]['mean']:.1f} ± {s[m]['std']:.1f}" for m in ce.METRICS]
        embed_s = "cached" if r.from_cache.get("embeddings") else f"{r.embed_seconds:.0f}"
        chunk_s = f"{r.chunk_seconds:.1f}" + (" (cached)" if r.from_cache.get("spans") else "")
        lines.append(
            f"| {r.name} | {r.n_chunks} | {r.mean_tokens:.0f} | "
            + " | ".join(cells)
            + f" | {chunk_s} | {embed_s} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chunkers", nargs="*", help="names from the registry (default: anchors + ours)")
    ap.add_argument("--list", action="store_true", help="list registered chunkers and exit")
    ap.add_argument("-k", type=int, default=5, help="chunks retrieved per question (default 5)")
    ap.add_argument("--budget", type=int, default=1000, help="word-piece budget for recall@budget")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rechunk", action="store_true", help="ignore the span cache")
    ap.add_argument("--out", type=Path, default=ce.WORK_DIR / "chroma_results.json")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)

    if args.list:
        for name in REGISTRY:
            print(name + ("" if name in DEFAULT else "  (extra)"))
        return 0

    chunkers, skipped = available(args.chunkers or DEFAULT)
    for note in skipped:
        print(note, file=sys.stderr)
    progress = not args.quiet
    dataset = ce.load_dataset()
    print(f"data: {ce.data_dir()} ({len(dataset.questions)} questions, digest {dataset.digest})", file=sys.stderr)
    qvecs = ce.question_embeddings(dataset, batch_size=args.batch_size, progress=progress)

    results = []
    for chunker in chunkers:
        t0 = time.perf_counter()
        r = ce.evaluate(
            chunker, dataset, qvecs, k=args.k, budget=args.budget, batch_size=args.batch_size,
            rechunk=args.rechunk, progress=progress,
        )
        wall = time.perf_counter() - t0
        rate = f", {r.chunks_per_second:.1f} chunks/s" if r.chunks_per_second else ""
        print(
            f"{r.name}: {r.n_chunks} chunks, chunking {r.chunk_seconds:.1f}s, embedding {r.embed_seconds:.1f}s{rate}, "
            f"total {wall:.1f}s", file=sys.stderr,
        )
        results.append(r)

    print(table(results, k=args.k, budget=args.budget))
    payload = {
        "protocol": {
            "data": str(ce.data_dir()),
            "data_digest": dataset.digest,
            "model": ce.MODEL_ID,
            "k": args.k,
            "token_budget": args.budget,
            "precision_omega_touching": "PrecisionΩ counting chunks that merely touch a reference, as the reference code did",
            "questions": len(dataset.questions),
            "units": "percent, mean and population std over questions",
        },
        "paper_minilm_recursive_250": PAPER_MINILM_RECURSIVE_250,
        "skipped": skipped,
        "results": [r.to_json() for r in results],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
