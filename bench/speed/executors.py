"""The Ray executor's overhead: the same real chunks embedded by the local and the Ray executor.

    .venv/bin/python -m bench.speed.executors [--sample 384] [--rounds 3] [--larger 768] [--workers 2] [--quick]

Texts: the seeded sample of real chunks ``bench.speed.encoding`` uses (Chroma's corpora chunked
by our default strategy), embedded with the default embedder (``minilm``: the backend ``auto``
picks on this CPU). Each round times, in rotating order:

* ``local``: the local executor, one process, the runtime's default threads (one per core);
* ``ray``: the Ray executor with ``--workers`` actors (one CPU, one compute thread and one model
  each), Ray already running, as when a build joins a cluster (``--ray-address``): the actors'
  start and model loads count, Ray's own start does not;
* ``ray cold``: the same with a fresh local Ray started inside the timing, as a plain
  ``pipeline build --executor ray`` does;
* ``ray before``: as ``ray``, with the executor's first settings (``BEFORE``), for comparison;
* ``ray big blocks``: the first settings but one thread per actor (the blocks' share of the change).

Then (``--larger``) local against ``ray cold`` on more texts, into ``executors_large.json``: Ray's
start is a fixed cost, and this shows how much of it a larger build amortises.

Every run builds its embedder(s) afresh: model loads are inside every timing. Throughput is
texts / seconds; a ratio is Ray's throughput over local's in the same round, then the median over
rounds. ``identical`` says whether all runs gave bit-identical vectors (they must: same blocks,
same embed calls).
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

SPEC = "minilm"


def backend_of(spec: str) -> str:
    from pipeline.embedding.backends import choose_backend
    from pipeline.embedding.registry import split_backend

    backend = split_backend(spec)[1]
    return choose_backend() if backend == "auto" else backend
TARGET = 0.85  # issue 14: Ray on 2 local workers within 15 % of the local build's throughput
RUNS = ("local", "ray", "ray_cold", "ray_before", "ray_big_blocks")
EXTRA_RUNS = ("ray_one_queued",)
# The Ray executor as first written: blocks of 256, the runtime's default threads in every actor
# (one per core), Ray Data's default queue of blocks per actor; and the same with one thread per
# actor, which separates the blocks' effect from the threads'. Their blocks differ, so their
# vectors are compared with nothing (the byte-identity guarantee holds per block plan).
TUNINGS = {
    "ray_before": {"block_size": 256, "threads": None, "in_flight": None},
    "ray_big_blocks": {"block_size": 256, "threads": 1, "in_flight": None},
    "ray_one_queued": {"block_size": 64, "threads": 1, "in_flight": 1},  # not a default run: --runs
}
BEFORE = TUNINGS["ray_before"]


def _time_local(texts: list[str]) -> tuple[float, np.ndarray]:
    from pipeline.embedding.executor import LocalExecutor
    from pipeline.embedding.registry import make_embedder

    start = time.perf_counter()
    vectors = LocalExecutor().embed(make_embedder(SPEC), texts)  # model load inside the timing, as in Ray
    return time.perf_counter() - start, vectors


def _start_ray(workers: int) -> float:
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=workers, object_store_memory=256 * 1024 * 1024, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    return time.perf_counter() - start


def _time_ray(texts: list[str], workers: int, *, cold: bool, tuning: dict | None = None) -> tuple[float, np.ndarray, float | None]:
    """(seconds, vectors, seconds of ray.init when ``cold``). Ray is shut down afterwards either way."""
    import ray

    from pipeline.embedding.ray_executor import RayExecutor
    from pipeline.embedding.registry import make_embedder

    init = None
    if not cold:
        _start_ray(workers)  # outside the timing: the cluster exists
    start = time.perf_counter()
    if cold:
        init = _start_ray(workers)
    vectors = RayExecutor(SPEC, workers=workers, min_tokens=0, **(tuning or {})).embed(make_embedder(SPEC), texts)  # always Ray
    elapsed = time.perf_counter() - start
    ray.shutdown()
    return elapsed, vectors, init


LABELS = {
    "ray": "Ray, running already ({w} actors × {t}, blocks of 64, 2 queued per actor: the current settings)",
    "ray_cold": "Ray, local Ray started in the run ({w} actors × {t})",
    "ray_before": "Ray as first written, running already (blocks of 256, the runtime's default threads per actor, "
                  "Ray Data's default queue)",
    "ray_big_blocks": "the same, one thread per actor",
    "ray_one_queued": "Ray, running already, one block at a time per actor",
}


def threads_label(threads: int | None) -> str:
    """``1 thread``, ``2 threads``; None: the runtime's default."""
    return "the runtime's default threads" if threads is None else f"{threads} thread{'' if threads == 1 else 's'}"


def _table(result: dict) -> str:
    w, t = result["workers"], threads_label(result.get("threads", 1))
    rows = [["local executor (one process, the runtime's default threads)", f"{result['local_texts_per_s']:.1f}", "×1.00", ""]]
    for name in (RUNS + EXTRA_RUNS)[1:]:
        if f"{name}_over_local" in result:
            ratio = result[f"{name}_over_local"]
            rows.append([LABELS[name].format(w=w, t=t), f"{result[f'{name}_texts_per_s']:.1f}", f"×{ratio:.2f}",
                         "yes" if ratio >= TARGET else "no"])
    head = "| run | texts/s (median) | throughput vs local (median of rounds) | within 15 % |\n|---|---|---|---|\n"
    return head + "".join("| " + " | ".join(r) + " |\n" for r in rows)


def _about(result: dict) -> str:
    init = (f" Starting the local Ray (`ray.init`) took {result['ray_init_seconds']:.1f} s (median)."
            if result.get("ray_init_seconds") is not None else "")
    ratios = [v for r in result["rounds"] for k, v in r.items() if k.startswith("ratio_")]
    spread = f" Single-round ratios ranged ×{min(ratios):.2f}–×{max(ratios):.2f} (the load of the moment)." if ratios else ""
    return (f"{result['texts']} real chunks, {len(result['rounds'])} rounds in rotating order.{init}{spread} Vectors "
            f"bit-identical across the runs with the current settings: {'yes' if result['identical'] else 'NO'}.")


def report_section(result: dict | None, larger: dict | None = None) -> str:
    """The BENCHMARKS.md section for a result of ``main`` (and, optionally, a run on more texts)."""
    if result is None:
        return "Not measured in this run (`python -m bench.speed.executors`).\n"
    if "spec" not in result:  # a result of the first version (one Ray run per round)
        ratio = result["ray_over_local"]
        return (
            f"{result['texts']} real chunks, {len(result['rounds'])} alternating rounds, medians: local executor "
            f"{result['local_texts_per_s']:.1f} texts/s, Ray executor with {result['workers']} workers "
            f"{result['ray_texts_per_s']:.1f} texts/s (x{ratio:.2f} of local, start-up and model loads included). "
            f"Vectors bit-identical to the local executor's: {'yes' if result['identical'] else 'NO'}.\n"
        )
    parts = [
        f"The sample of real chunks `bench.speed.encoding` uses, default embedder (`{result['spec']}`: backend "
        f"`{result['backend']}` here); every run builds its embedder(s) and loads its model(s) inside the timing; a "
        f"ratio is local's time over the run's in the same round, then the median (`bench.speed.executors`). Target: "
        f"Ray on {result['workers']} local workers within 15 % of the local build's throughput (×{TARGET:.2f} or more). "
        "A build that joins a running cluster (`--ray-address`) does not pay Ray's start; a plain `--executor ray` "
        "build does.",
        _about(result) + "\n\n" + _table(result).rstrip("\n"),
    ]
    if "ray_before_over_local" in result:
        parts.append(
            "The first settings ran each actor's model on the runtime's default threads, one per core: 2 actors × 2 "
            "threads on 2 cores, twice the local executor's threads. On cores shared with other work more threads win "
            "more of the machine, so that run is not a like-for-like comparison with local"
            + ("; the row after it keeps its blocks and queue with one thread per actor" if "ray_big_blocks_over_local" in result
               else " (not measured apart)")
            + ". The current settings give each actor the one CPU it reserves (`RayExecutor.threads`); on an idle "
            "machine that ran at half the local speed until OpenVINO stopped pinning threads (every actor had pinned "
            "its thread to the same first core: docs/decisions/embedding.md)."
        )
    if larger:
        parts.append(_about(larger) + "\n\n" + _table(larger).rstrip("\n"))
    return "\n\n".join(parts)


def measure(texts: list[str], runs: tuple[str, ...], rounds: int, workers: int) -> dict:
    """Every run of ``runs`` (``local`` first in the tuple) on ``texts``, ``rounds`` times in rotating order."""
    rows = []
    reference = None
    identical = True
    for r in range(rounds):
        order = runs[r % len(runs):] + runs[: r % len(runs)]
        times, init = {}, None
        for name in order:
            if name == "local":
                times[name], vectors = _time_local(texts)
            else:
                times[name], vectors, cold_init = _time_ray(texts, workers, cold=name == "ray_cold", tuning=TUNINGS.get(name))
                init = cold_init if cold_init is not None else init
            if name not in TUNINGS:
                reference = vectors if reference is None else reference
                identical &= bool(np.array_equal(reference, vectors))
            print(f"{len(texts)} texts, round {r + 1}: {name} {len(texts) / times[name]:.1f} texts/s", file=sys.stderr, flush=True)
        rows.append({**{f"{k}_s": times[k] for k in runs}, "ray_init_s": init,
                     **{f"ratio_{k}": times["local"] / times[k] for k in runs if k != "local"}})
    from pipeline.embedding.ray_executor import RayExecutor

    result = {"texts": len(texts), "spec": SPEC, "backend": backend_of(SPEC), "workers": workers, "rounds": rows,
              "threads": RayExecutor.threads,  # compute threads per actor in the current settings
              "local_texts_per_s": len(texts) / median([r["local_s"] for r in rows])}
    for name in runs[1:]:
        result[f"{name}_texts_per_s"] = len(texts) / median([r[f"{name}_s"] for r in rows])
        result[f"{name}_over_local"] = median([r[f"ratio_{name}"] for r in rows])
    result["tunings"] = {k: v for k, v in TUNINGS.items() if k in runs}
    if "ray_cold" in runs:
        result["ray_init_seconds"] = median([r["ray_init_s"] for r in rows])
    result["identical"] = identical
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=384)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default=",".join(RUNS), help=f"a subset of {','.join(RUNS)} (local is always run)")
    ap.add_argument("--larger", type=int, default=768,
                    help="then local vs Ray started in the run on this many texts (Ray's start amortised; 0: skip)")
    ap.add_argument("--only-larger", action="store_true", help="skip the main run (keep its result)")
    ap.add_argument("--quick", action="store_true", help="64 texts, one round, no larger run")
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "executors.json")
    args = ap.parse_args(argv)
    from pipeline.embedding.registry import make_embedder

    n, rounds = (64, 1) if args.quick else (args.sample, args.rounds)
    make_embedder(SPEC).embed(sample_texts(2))  # the ONNX export (once per machine) stays out of every timing
    jobs = [] if args.only_larger else [(args.out, n, tuple(r for r in RUNS + EXTRA_RUNS if r == "local" or r in args.runs.split(",")))]
    if args.larger and not args.quick:
        jobs.append((args.out.with_name(f"{args.out.stem}_large.json"), args.larger, ("local", "ray_cold")))
    ok = True
    for out, count, runs in jobs:
        result = measure(sample_texts(count), runs, rounds, args.workers)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k != "rounds"}, indent=2))
        ok &= result["identical"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
