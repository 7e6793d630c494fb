"""One build in this (fresh) process, timed; prints one JSON line on stdout.

    python -m bench.speed.build_worker CONTENT SITE CACHE [--raw-encode] [--raw-first TEXTS.json]
                                       [--save-texts TEXTS.json]

Runs ``pipeline.site.build.build`` as ``pipeline build`` does (MiniLM, markdown strategy at 256
pieces), with the embedder's ``embed`` and model load wrapped in timers; the stages' times are the build
report's ``stage_seconds``. Reports: import time of the pipeline, build wall time, per-stage times,
model load time (a load ahead of the first ``embed``, ``embedding/warmup.py``, overlaps the
planning: overlapping load calls count once), the build's CPU time (all threads), time inside
``embed``, chunks embedded / from cache, whether torch was imported, peak RSS (``ru_maxrss``).
``--raw-encode`` then encodes the exact texts the build embedded with a bare encode of the same
backend (torch's ``SentenceTransformer.encode``, same batch size, normalized) in the same process;
``--raw-first`` does the same *before* the build, on texts saved by an earlier identical run
(with both, ``raw_encode_seconds`` is the mean of the two: the CPU is shared, so a reference
measured on both sides of the build is less exposed to a change of load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("content")
    ap.add_argument("site")
    ap.add_argument("cache")
    ap.add_argument("--raw-encode", action="store_true")
    ap.add_argument("--raw-first", default=None, help="JSON list of texts to raw-encode before the build")
    ap.add_argument("--save-texts", default=None)
    ap.add_argument("--embedder", default="minilm", help="e.g. hashing: no model, pipeline work only")
    args = ap.parse_args(argv)

    out: dict = {}
    t0 = time.perf_counter()
    import pipeline.site.build as build_mod
    from pipeline.config import SiteConfig
    from pipeline.embedding.registry import make_embedder

    out["import_seconds"] = time.perf_counter() - t0

    config = SiteConfig(
        title="Synthetic benchmark corpus",
        embedder=args.embedder,
        strategy="markdown",
        cache_dir=__import__("pathlib").Path(args.cache),
    )
    embedder = make_embedder(args.embedder)
    timing = {"embed_seconds": 0.0, "embed_calls": 0, "load_seconds": 0.0, "texts": []}
    # (start, end) of every model load: a build may load its model in another thread while it
    # plans (embedding/warmup.py), and the encode's own call then waits for that load, so the
    # load's time is the union of these intervals, not a sum
    intervals: dict[str, list[tuple[float, float]]] = {"load": []}

    def loading(call):
        """``call`` timed into ``load_seconds``; calls that overlap (one thread waiting for another's load) count once."""

        def timed():
            t = time.perf_counter()
            try:
                return call()
            finally:
                end = time.perf_counter()
                timing["load_seconds"] += union_seconds(intervals["load"] + [(t, end)]) - union_seconds(intervals["load"])
                intervals["load"].append((t, end))

        return timed

    def timed_first(load, loaded):
        """``load`` timed when it does the work (``loaded()`` is still None)."""
        timed = loading(load)
        return lambda: loaded() if loaded() is not None else timed()

    if hasattr(embedder, "_load"):  # sentence-transformers (torch)
        embedder._load = timed_first(embedder._load, lambda: getattr(embedder, "_model", None))
    elif hasattr(embedder, "session"):  # ONNX Runtime / OpenVINO (embedding/onnx.py): the session is the load
        embedder.session = timed_first(embedder.session, lambda: getattr(embedder, "_session", None))
    if hasattr(embedder, "warm"):  # a cold build's load ahead (embedding/warmup.py): the whole warm-up is
        embedder.warm = loading(embedder.warm)  # the load, also finding the cached export (``session`` nests in it)

    inner_embed = embedder.embed

    def timed_embed(texts, **kw):
        t = time.perf_counter()
        vectors = inner_embed(texts, **kw)
        timing["embed_seconds"] += time.perf_counter() - t
        timing["embed_calls"] += 1
        timing["texts"].extend(texts)
        return vectors

    embedder.embed = timed_embed

    def raw_encode(texts):
        """The same texts encoded by the same backend outside the pipeline: torch's
        ``model.encode``, or the ONNX/OpenVINO embedder's own batched run (its session loaded first)."""
        if hasattr(embedder, "_load"):
            model = embedder._load()
            t = time.perf_counter()
            model.encode(list(texts), batch_size=getattr(embedder, "batch_size", 32), show_progress_bar=False,
                         convert_to_numpy=True, normalize_embeddings=True)
            return time.perf_counter() - t
        embedder.session()
        t = time.perf_counter()
        inner_embed(list(texts))
        return time.perf_counter() - t

    if args.raw_first:
        with open(args.raw_first, encoding="utf-8") as fh:
            first_texts = json.load(fh)
        out["raw_before_seconds"] = raw_encode(first_texts)

    load_before_build = timing["load_seconds"]
    intervals["load"].clear()
    t, t_cpu = time.perf_counter(), time.process_time()
    report = build_mod.build(
        __import__("pathlib").Path(args.content), __import__("pathlib").Path(args.site), config,
        embedder=embedder, progress=False,
    )
    out["build_seconds"] = time.perf_counter() - t
    # CPU seconds of every thread of the build: on shared cores the wall time also counts the
    # waits for a core, this does not
    out["build_cpu_seconds"] = time.process_time() - t_cpu
    out["stage_seconds"] = report.stage_seconds
    out["torch_imported"] = "torch" in sys.modules
    out["documents"] = report.chunk.documents
    out["chunks"] = report.chunk.chunks
    out["embedded"] = report.spec.embedded
    out["cached"] = report.spec.cached
    out["summary"] = report.summary()
    out["load_seconds"] = timing["load_seconds"]
    out["load_seconds_in_build"] = timing["load_seconds"] - load_before_build
    out["embed_seconds"] = timing["embed_seconds"]
    out["embed_calls"] = timing["embed_calls"]
    out["embedded_texts"] = len(timing["texts"])
    if args.save_texts and timing["texts"]:
        with open(args.save_texts, "w", encoding="utf-8") as fh:
            json.dump(timing["texts"], fh)
    if args.raw_encode and timing["texts"]:
        out["raw_after_seconds"] = raw_encode(timing["texts"])
    raws = [out[k] for k in ("raw_before_seconds", "raw_after_seconds") if k in out]
    if raws:
        # the mean of a raw encode just before and just after the build brackets it in time
        out["raw_encode_seconds"] = sum(raws) / len(raws)
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))
    return 0


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` intervals (overlaps counted once)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


if __name__ == "__main__":
    raise SystemExit(main())
