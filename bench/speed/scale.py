"""How the pipeline's own work grows with the size of a knowledge base (no model).

For each size N, the first N documents of the synthetic corpus (``bench/synthetic.py``, ~4
chunks a document), each build in a fresh process (``bench.speed.build_worker``) with the
``hashing`` embedder, so every second measured is pipeline work (chunking, cache, spec, index,
publish), none is model time:

1. **cold**: empty site, empty cache.
2. **no-op**: the same tree rebuilt, nothing changed (``--repeats`` runs, median), after one
   settling rebuild that is not counted: the first rebuild after files were written verifies them
   by content and records their stamps (``pipeline/reuse/stamps.py``); later ones trust the stamps.
3. **one edit**: one sentence of one section edited, rebuilt (must re-embed exactly one chunk).

Each row: build seconds (in process), whole-process wall seconds, chunks, chunks embedded, peak
RSS (``ru_maxrss``) of the build process. Growth: the ratio of seconds per document between
consecutive sizes (1.0 = linear); ``bench.report`` draws them in ``docs/bench/scale.png``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bench import arguments, log, synthetic, write_json
from bench.speed import SPEED_DIR, median
from bench.speed.builds import corpus, worker

HASHING = ("--embedder", "hashing")


def measure(work: Path, n: int, repeats: int) -> dict:
    root = work / f"scale-{n}"
    if root.exists():
        shutil.rmtree(root)
    content = corpus(root, n)
    site, cache = root / "site", root / "cache"
    cold = worker(content, site, cache, *HASHING)
    log(f"  {n} docs cold: {cold['chunks']} chunks, {cold['build_seconds']:.1f} s, {cold['maxrss_mb']:.0f} MB")
    settle = worker(content, site, cache, *HASHING)  # records the stamps of the files the cold build wrote
    log(f"  {n} docs settling rebuild: {settle['build_seconds']:.2f} s")
    noops = [worker(content, site, cache, *HASHING) for _ in range(repeats)]
    log(f"  {n} docs no-op: {median([r['build_seconds'] for r in noops]):.2f} s")
    target = sorted(content.rglob("*.md"))[len(list(content.rglob("*.md"))) // 2]
    synthetic.edit_section(target, 1)
    edit = worker(content, site, cache, *HASHING)
    log(f"  {n} docs one edit: {edit['build_seconds']:.2f} s, {edit['embedded']} embedded")
    shutil.rmtree(root)  # 100k documents are a few GB of site and cache
    return {
        "documents": n,
        "chunks": cold["chunks"],
        "cold": {k: cold[k] for k in ("build_seconds", "wall_seconds", "maxrss_mb", "embedded")},
        "settle": {k: settle[k] for k in ("build_seconds", "wall_seconds", "maxrss_mb")},
        "noop": {
            "build_seconds": median([r["build_seconds"] for r in noops]),
            "wall_seconds": median([r["wall_seconds"] for r in noops]),
            "maxrss_mb": max(r["maxrss_mb"] for r in noops),
            "embedded": max(r["embedded"] for r in noops),
        },
        "edit": {k: edit[k] for k in ("build_seconds", "wall_seconds", "maxrss_mb", "embedded")},
    }


def growth(rows: list[dict], phase: str) -> list[float]:
    """Seconds per document at each size over the previous size's (1.0 = linear)."""
    per_doc = [r[phase]["build_seconds"] / r["documents"] for r in rows]
    return [b / a for a, b in zip(per_doc, per_doc[1:])]


def report_section(result: dict | None) -> str:
    """The BENCHMARKS.md section for a result of ``main``."""
    if not result:
        return "Not measured in this run (`python -m bench.speed.scale`).\n"
    lines = [
        "Synthetic corpus, `hashing` embedder (pipeline work only, no model), each build a fresh process; "
        f"no-op: median of {result['repeats']}, after one settling rebuild (it verifies the files the cold build "
        "wrote by content and records their stamps, `pipeline/reuse/stamps.py`).",
        "",
        "| documents | chunks | cold s | cold peak RSS MB | no-op s | no-op process s | one edit s | re-embedded |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['documents']:,} | {r['chunks']:,} | {r['cold']['build_seconds']:.1f} | {r['cold']['maxrss_mb']:.0f} | "
            f"{r['noop']['build_seconds']:.2f} | {r['noop']['wall_seconds']:.2f} | {r['edit']['build_seconds']:.2f} | "
            f"{r['edit']['embedded']} |"
        )
    for phase in ("cold", "noop"):
        ratios = growth(result["rows"], phase)
        if ratios:
            lines.append(f"\nSeconds per document, {phase}, each size over the previous: "
                         + ", ".join(f"x{x:.2f}" for x in ratios) + " (1.00 = linear).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, SPEED_DIR / "scale.json", quick="sizes 100,1000, one no-op")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sizes, repeats = ([100, 1000], 1) if args.quick else ([int(s) for s in args.sizes.split(",")], args.repeats)
    work = args.out.parent / "scale-work"
    rows = [measure(work, n, repeats) for n in sizes]
    result = {"sizes": sizes, "repeats": repeats, "rows": rows}
    write_json(args.out, result)
    print(report_section(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
