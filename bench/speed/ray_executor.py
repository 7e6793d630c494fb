"""The Ray executor's overhead: the same real chunk texts embedded by a local build's embedder
and by ``RayEmbedder`` on a local Ray with 2 workers, each end to end as a build does it once
(local: model load + encode; Ray: ``ray.init`` + actors + one model per actor + encode).

    .venv/bin/python -m bench.speed.ray_executor [--sample 256] [--rounds 2]

Rounds alternate local / Ray; each reports texts/s; the ratio is taken within a round, then
the median. The default embedder (``auto`` backend) runs in both; Ray's actors get one CPU each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.speed import SPEED_DIR, median


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "ray_executor.json")
    args = ap.parse_args(argv)

    import numpy as np
    import ray

    from bench.speed.encoding import sample_texts
    from pipeline.embedding.distributed import RayEmbedder
    from pipeline.embedding.registry import make_embedder

    texts = sample_texts(args.sample)
    rows = []
    for r in range(args.rounds):
        t = time.perf_counter()
        local = make_embedder("minilm").embed(texts)
        local_s = time.perf_counter() - t
        t = time.perf_counter()
        distributed = RayEmbedder(make_embedder("minilm"), workers=args.workers).embed(texts)
        ray_s = time.perf_counter() - t
        ray.shutdown()
        cos = float(np.sum(local * distributed, axis=1).min())
        rows.append({"local_seconds": local_s, "ray_seconds": ray_s, "ratio_ray_over_local_throughput": local_s / ray_s,
                     "cosine_min": cos})
        print(f"  round {r + 1}: local {len(texts) / local_s:.1f}/s, ray {len(texts) / ray_s:.1f}/s, cos min {cos:.6f}",
              file=sys.stderr, flush=True)
    payload = {"texts": len(texts), "workers": args.workers, "rounds": rows,
               "median_ratio": median([r["ratio_ray_over_local_throughput"] for r in rows])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print(f"Ray throughput / local: x{payload['median_ratio']:.2f}; wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
