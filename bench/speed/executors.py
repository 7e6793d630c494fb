"""The Ray executor's overhead: the same real chunks embedded by the local and the Ray executor.

    .venv/bin/python -m bench.speed.executors [--sample 512] [--rounds 3] [--workers 2] [--quick]

Texts: the seeded sample of real chunks ``bench.speed.encoding`` uses (Chroma's corpora chunked
by our default strategy). Each round embeds them with the local executor (one process, torch's
default threads) and with the Ray executor (``--workers`` actors, one CPU and one model each;
a fresh local Ray per round, started inside the timing, so its start-up and model loads count),
in alternating order. Throughput is texts / seconds; the ratio is Ray's over local's per round,
then the median. ``identical`` says whether both gave bit-identical vectors (they must: same
blocks, same embed calls).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.speed import SPEED_DIR, median
from bench.speed.encoding import sample_texts


def _time_local(texts: list[str]) -> tuple[float, np.ndarray]:
    from pipeline.embedding.executor import LocalExecutor
    from pipeline.embedding.registry import make_embedder

    start = time.perf_counter()
    vectors = LocalExecutor().embed(make_embedder("minilm"), texts)  # model load inside the timing, as in Ray
    return time.perf_counter() - start, vectors


def _time_ray(texts: list[str], workers: int) -> tuple[float, np.ndarray]:
    import ray

    from pipeline.embedding.executor import RayExecutor
    from pipeline.embedding.registry import make_embedder

    start = time.perf_counter()
    vectors = RayExecutor("minilm", workers=workers).embed(make_embedder("minilm"), texts)
    elapsed = time.perf_counter() - start
    ray.shutdown()
    return elapsed, vectors


def report_section(result: dict | None) -> str:
    """The BENCHMARKS.md section for a result of ``main``."""
    if result is None:
        return "Not measured in this run (`python -m bench.speed.executors`).\n"
    ratio = result["ray_over_local"]
    return (
        f"{result['texts']} real chunks, {len(result['rounds'])} alternating rounds, medians: local executor "
        f"{result['local_texts_per_s']:.1f} texts/s, Ray executor with {result['workers']} workers "
        f"{result['ray_texts_per_s']:.1f} texts/s (x{ratio:.2f} of local, start-up and model loads included; "
        f"target: within 15 %, i.e. x0.85 or more: {'met' if ratio >= 0.85 else 'not met'}). "
        f"Vectors bit-identical to the local executor's: {'yes' if result['identical'] else 'NO'}.\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="64 texts, one round")
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "executors.json")
    args = ap.parse_args(argv)
    n, rounds = (64, 1) if args.quick else (args.sample, args.rounds)
    texts = sample_texts(n)
    rows = []
    identical = True
    for r in range(rounds):
        order = ("local", "ray") if r % 2 == 0 else ("ray", "local")
        times, vectors = {}, {}
        for name in order:
            times[name], vectors[name] = _time_local(texts) if name == "local" else _time_ray(texts, args.workers)
            print(f"round {r + 1}: {name} {len(texts) / times[name]:.1f} texts/s", file=sys.stderr, flush=True)
        identical &= bool(np.array_equal(vectors["local"], vectors["ray"]))
        rows.append({"local_s": times["local"], "ray_s": times["ray"], "ratio": times["local"] / times["ray"]})
    result = {
        "texts": len(texts),
        "workers": args.workers,
        "rounds": rows,
        "local_texts_per_s": len(texts) / median([r["local_s"] for r in rows]),
        "ray_texts_per_s": len(texts) / median([r["ray_s"] for r in rows]),
        "ray_over_local": median([r["ratio"] for r in rows]),
        "identical": identical,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
