"""Method experiments for the default chunker, on both sets, with paired comparisons.

Each experiment is a ``Chunker`` (prototype methods are written in ``bench/chunk_prototypes/`` as
wrappers around ``pipeline.chunking.chunk_text``; what works moves into the strategy). Results, with
per-question scores, go to ``bench/.work/experiments/<set>/<name>.json``; a rerun reuses them
unless ``--force``. Embeddings come from the per-text cache (``bench/quality.py``).

    .venv/bin/python bench/quality_experiments.py run md-256 md-160 ...   # evaluate on both sets
    .venv/bin/python bench/quality_experiments.py table md-256 md-160     # summary table
    .venv/bin/python bench/quality_experiments.py compare md-160 md-256   # paired: a - b
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import quality  # noqa: E402
from bench.chunk_prototypes.markdown import plain, with_context  # noqa: E402
from bench.chunk_prototypes.semantic import hybrid, semantic  # noqa: E402
from bench.chunk_prototypes.splitter import variant  # noqa: E402
from bench.chunkers import REGISTRY, source_digest  # noqa: E402

EXP_DIR = ce.WORK_DIR / "experiments"
SETS = ("chroma", "markdown")


@lru_cache(maxsize=None)
def dataset(name: str) -> ce.Dataset:
    if name == "chroma":
        return ce.load_dataset()
    from bench.markdown_eval import load_dataset

    return load_dataset()


@lru_cache(maxsize=None)
def qvecs(name: str):
    return quality.question_vectors(dataset(name))


def code() -> str:
    return source_digest("pipeline/chunking", "pipeline/parsing")


EXPERIMENTS: dict[str, Callable[[], ce.Chunker]] = {}


def exp(name: str, split_factory: Callable[[], Callable], **params):
    EXPERIMENTS[name] = lambda: ce.Chunker(name, split_factory(), params={"exp": name, **params, "code": code()})


for size in (96, 128, 160, 192, 224, 256):
    exp(f"md-{size}", lambda size=size: plain(max_tokens=size), max_tokens=size)
    exp(f"md-{size}-span", lambda size=size: plain(max_tokens=size, embed="span"), max_tokens=size, embed="span")
for h in (False, True):
    for t in (None, 0.5, 0.6, 0.75):
        if not h and t is None:
            continue
        tag = ("-h" if h else "") + (f"-t{t}" if t else "")
        for size in (192, 256):
            exp(f"md-{size}{tag}", lambda size=size, h=h, t=t: variant(h, t, max_tokens=size), max_tokens=size, hier=h, target=t)
for size in (192, 256):
    exp(f"md-{size}-h-loose", lambda size=size: variant(True, None, loose=True, max_tokens=size), max_tokens=size, hier=True, loose=True)
    exp(f"md-{size}-loose", lambda size=size: variant(False, None, loose=True, max_tokens=size), max_tokens=size, loose=True)
    exp(f"md-{size}-h-t0.6-loose", lambda size=size: variant(True, 0.6, loose=True, max_tokens=size), max_tokens=size, hier=True, target=0.6, loose=True)
for loose in (False, True):
    for opts in ({}, {"percentile": 90}, {"percentile": 80}, {"min_tokens": 64}, {"min_tokens": 64, "percentile": 90}, {"min_tokens": 48, "percentile": 90}):
        tag = "sem" + "".join(f"-{k[0]}{v}" for k, v in opts.items()) + ("-loose" if loose else "")
        exp(tag, lambda opts=opts, loose=loose: semantic(loose, max_tokens=256, **opts), strategy="semantic", loose=loose, max_tokens=256, **opts)
for opts in ({}, {"split_fitting": True}, {"window": 2}, {"min_tokens": 80}, {"min_tokens": 48}, {"min_tokens": 48, "split_fitting": True}, {"min_tokens": 32}, {"percentile": 80}, {"min_tokens": 48, "percentile": 80}):
    tag = "hyb" + "".join(f"-{k[0]}{v}" if not isinstance(v, bool) else f"-{k[:5]}" for k, v in opts.items())
    exp(tag, lambda opts=opts: hybrid(**opts), strategy="hybrid", **opts)
for opts in ({}, {"min_tokens": 48}, {"min_tokens": 48, "split_fitting": True}, {"min_tokens": 32}, {"window": 2}, {"window": 3}, {"min_tokens": 80}, {"window": 2, "min_tokens": 80}):
    tag = "hyblex" + "".join(f"-{k[0]}{v}" if not isinstance(v, bool) else f"-{k[:5]}" for k, v in opts.items())
    exp(tag, lambda opts=opts: hybrid(embedder="lexical", **opts), strategy="hybrid", embedder="lexical", **opts)
for size, ctx in ((96, 64), (128, 64), (128, 128), (160, 96), (192, 64)):
    exp(f"md-{size}-ctx{ctx}", lambda size=size, ctx=ctx: with_context(ctx, max_tokens=size), max_tokens=size, ctx=ctx)


# --------------------------------------------------------------------------- running


def result_path(set_name: str, name: str) -> Path:
    return EXP_DIR / set_name / f"{ce._safe(name)}.json"


def run(name: str, sets=SETS, *, force: bool = False) -> dict[str, dict]:
    out = {}
    for s in sets:
        path = result_path(s, name)
        factory = EXPERIMENTS.get(name) or REGISTRY.get(name)
        if factory is None:
            raise KeyError(name)
        chunker = factory()
        if path.exists() and not force:
            data = json.loads(path.read_text())
            if data.get("params") == chunker.params:
                out[s] = data
                continue
        t0 = time.perf_counter()
        r = quality.evaluate(chunker, dataset(s), qvecs(s), progress=True)
        data = r.to_json()
        data["wall_seconds"] = time.perf_counter() - t0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
        out[s] = data
        print(f"{s} {name}: {r.n_chunks} chunks, {data['wall_seconds']:.0f}s", file=sys.stderr)
    return out


def load(set_name: str, name: str) -> dict:
    return json.loads(result_path(set_name, name).read_text())


def table(names, sets=SETS) -> str:
    lines = []
    for s in sets:
        lines.append(f"\n{s}\n| run | chunks | size | recall@5 | IoU@5 | PrecΩ | recall@1000 |\n|---|---|---|---|---|---|---|")
        for n in names:
            try:
                r = load(s, n)
            except FileNotFoundError:
                continue
            m = r["metrics"]
            lines.append(
                f"| {n} | {r['n_chunks']} | {r['mean_tokens']:.0f} | {m['recall']['mean']:.1f} | {m['iou']['mean']:.2f} "
                f"| {m['precision_omega']['mean']:.1f} | {m['recall_at_budget']['mean']:.1f} |"
            )
    return "\n".join(lines)


def compare(a: str, b: str, sets=SETS, metrics=("recall", "iou", "recall_at_budget")) -> str:
    lines = []
    for s in sets:
        ra, rb = load(s, a), load(s, b)
        for m in metrics:
            p = quality.paired(ra["per_question"][m], rb["per_question"][m])
            lines.append(f"{s:8s} {m:17s} {a} - {b}: {quality.format_paired(p)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "table", "compare", "list"])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    sets = tuple(args.sets.split(","))
    if args.cmd == "list":
        print("\n".join(EXPERIMENTS))
    elif args.cmd == "run":
        for n in args.names:
            run(n, sets, force=args.force)
        print(table(args.names, sets))
    elif args.cmd == "table":
        print(table(args.names, sets))
    else:
        print(compare(args.names[0], args.names[1], sets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
