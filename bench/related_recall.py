"""Related chunks of a big topic: the inverted file (``topicspec/relatedivf.py``) against exact.

Builds the synthetic corpus (``bench/synthetic.py``) in one folder with the ``hashing`` embedder,
reads the chunk vectors back from the embedding cache (site order: documents by path, chunks by
index), and computes ``context.related`` exactly and with the inverted file (threshold lowered
to 0) on one BLAS thread, as a build does, for each ``--probes``. Reports each method's seconds,
the recall of the exact k best within the approximate k best, and the share of rows whose list
is identical.

    PYTHONPATH=$PWD .venv/bin/python -m bench.related_recall --docs 10000 --probes 8,16,32
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np

from bench import WORK, arguments, log, synthetic, write_json
from bench.speed import cli_build


def cached_vectors(cache: Path) -> np.ndarray:
    """Every chunk vector of a cache of one strategy and model, documents by source path."""
    docs = []
    for meta in cache.glob("*/*/*/metadata.json"):
        entry = json.loads(meta.read_text(encoding="utf-8"))
        rows = [np.fromfile(meta.parent / f"chunk-{i}.bin", dtype="<f4") for i in range(entry["chunk_count"])]
        docs.append((entry["source"], rows))
    docs.sort(key=lambda doc: doc[0])
    return np.stack([row for _, rows in docs for row in rows])


def compare(vectors: np.ndarray, probes: list[int], k: int = 3) -> dict:
    import pipeline.topicspec.relatedivf as relatedivf
    from pipeline.blas import one_thread
    from pipeline.topicspec.context import related

    exact_rows = np.asarray(vectors, dtype=np.float64)
    threshold, default_probes = relatedivf.APPROXIMATE_ROWS, relatedivf.PROBES
    out = {"chunks": len(vectors), "k": k, "approximate": []}
    with one_thread():
        relatedivf.APPROXIMATE_ROWS = len(vectors) + 1
        t = time.perf_counter()
        exact = related(exact_rows, k)
        out["exact_seconds"] = time.perf_counter() - t
        log(f"exact: {out['exact_seconds']:.1f} s, {len(vectors):,} chunks")
        relatedivf.APPROXIMATE_ROWS = 0
        try:
            for p in probes:
                relatedivf.PROBES = p
                t = time.perf_counter()
                approx = related(exact_rows, k)
                seconds = time.perf_counter() - t
                found = sum(len({j for j, _ in a} & {j for j, _ in e}) for a, e in zip(approx, exact))
                row = {"probes": p, "seconds": seconds, "recall": found / sum(len(e) for e in exact),
                       "identical_rows": sum(a == e for a, e in zip(approx, exact)) / len(exact)}
                out["approximate"].append(row)
                log(f"probes {p}: {seconds:.1f} s, recall@{k} {row['recall']:.4f}, rows identical {row['identical_rows']:.4f}")
        finally:
            relatedivf.APPROXIMATE_ROWS, relatedivf.PROBES = threshold, default_probes
    return out


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, WORK / "related_recall.json")
    ap.add_argument("--docs", type=int, default=10_000, help="synthetic documents in one folder")
    ap.add_argument("--probes", default="8,16,32", help="lists probed, comma-separated")
    ap.add_argument("--work", type=Path, default=WORK / "related-recall", help="scratch folder (removed after)")
    ap.add_argument("--cache", type=Path, help="the embedding cache of a build already made: its vectors, no build")
    args = ap.parse_args(argv)
    probes = [int(p) for p in args.probes.split(",") if p]
    if args.cache is not None:
        write_json(args.out, {"documents": None, **compare(cached_vectors(args.cache), probes)})
        return 0
    content, site, cache = args.work / "content", args.work / "site", args.work / "cache"
    try:
        synthetic.generate(content, args.docs, folder="notes")
        log(f"built in {cli_build(content, site, cache, '--embedder', 'hashing'):.0f} s")
        result = compare(cached_vectors(cache), probes)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)
    write_json(args.out, {"documents": args.docs, **result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
