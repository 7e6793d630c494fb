"""Query latency of embedding search with the torch-free query path (ONNX Runtime).

    .venv/bin/python -m bench.speed.query [--docs 12] [--runs 5] [--quick]

Builds a small site from the first ``--docs`` markdown files of ``../shared/realdocs/fastapi``
(sorted by path) with the default embedder (the build's backend is ``auto``), then times:

* ``pipeline search SITE QUERY --method embedding`` as a whole process (``.venv/bin/pipeline``),
  once after clearing nothing (the first call of the run) and ``--runs`` more times: the median
  of those is the *warm* whole-process latency (interpreter start, imports, index reads, ONNX
  session load from the cached export, one query);
* in one process, ``Site.search(..., method="embedding")``: the first call (session load) and
  the median of the following calls (the *warm in-process* latency);
* whether torch was imported by the in-process search.

The ONNX export is made (or found) before any timing: its one-off cost is not a query's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.speed import REPO_ROOT, SPEED_DIR

# Beside the checkout (``../shared``), else where these machines keep it (as bench/chroma_eval.py)
REALDOCS = next((p for p in (REPO_ROOT.parent / "shared" / "realdocs" / "fastapi", Path("/work/shared/realdocs/fastapi"))
                 if p.is_dir()), Path("/work/shared/realdocs/fastapi"))
QUERIES = ["how do I declare a path parameter?", "return a custom response status code",
           "dependency injection with yield", "run the app with uvicorn", "validate query string length"]


def build_site(content: Path, site: Path, cache: Path) -> float:
    t = time.perf_counter()
    done = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "pipeline"), "build", str(content), "--out", str(site),
                           "--cache-dir", str(cache)], capture_output=True, text=True, cwd=REPO_ROOT)
    if done.returncode != 0:
        raise SystemExit(f"build failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - t


def cli_seconds(site: Path, query: str) -> float:
    t = time.perf_counter()
    done = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "pipeline"), "search", str(site), query,
                           "--method", "embedding", "-k", "5"], capture_output=True, text=True, cwd=REPO_ROOT)
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"search failed:\n{done.stderr[-3000:]}")
    return seconds


def in_process(site: Path, runs: int) -> dict:
    code = f"""
import json, statistics, sys, time
t0 = time.perf_counter()
from pipeline.client import open_site
site = open_site({str(site)!r})
queries = {QUERIES!r}
t = time.perf_counter(); site.search(queries[0], 5, method="embedding"); first = time.perf_counter() - t
warm = []
for i in range({runs}):
    t = time.perf_counter(); site.search(queries[(i + 1) % len(queries)], 5, method="embedding"); warm.append(time.perf_counter() - t)
print(json.dumps({{"first_query_seconds": first, "warm_query_seconds_median": statistics.median(warm),
                  "warm_query_seconds": warm, "torch_imported": "torch" in sys.modules,
                  "process_seconds": time.perf_counter() - t0}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="4 documents, 3 runs")
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "query.json")
    args = ap.parse_args(argv)
    docs, runs = (4, 3) if args.quick else (args.docs, args.runs)

    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx_export import export_onnx

    export_onnx(DEFAULT_MODEL)  # once per machine; not part of a query
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = sorted(p for p in REALDOCS.rglob("*.md") if not p.name.startswith("_"))[:docs]
        for path in sources:
            target = root / "content" / path.relative_to(REALDOCS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        build = build_site(root / "content", root / "site", root / "cache")
        first = cli_seconds(root / "site", QUERIES[0])
        warm = [cli_seconds(root / "site", QUERIES[(i + 1) % len(QUERIES)]) for i in range(runs)]
        process = in_process(root / "site", runs)
    payload = {
        "documents": len(sources), "build_seconds": build,
        "cli_first_seconds": first, "cli_warm_seconds": warm, "cli_warm_seconds_median": statistics.median(warm),
        "in_process": process,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print(f"pipeline search (whole process): first {first:.2f} s, warm median {payload['cli_warm_seconds_median']:.2f} s; "
          f"in process: first {process['first_query_seconds']:.2f} s, warm {process['warm_query_seconds_median'] * 1000:.0f} ms, "
          f"torch imported: {process['torch_imported']}", file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
