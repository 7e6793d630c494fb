"""Query latency: ``pipeline search SITE QUERY --method hybrid`` as a whole process, the query
embedded by the site's static encoder (the default) and by the full model (``--embedder full``).

The site: the first ``--docs`` markdown files of ``../shared/realdocs/fastapi`` (sorted by path),
built with the default model (its embedding cache kept in ``bench/.work/speed/query-cache``), asked
the realdocs set's first five questions. Per embedder, one first call, then the median of
``--runs`` warm calls (wall and CPU seconds: interpreter start, imports, index reads, the query's
embedding, one search), and which model runtimes each imported (the static encoder needs none).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import FASTAPI, arguments, fastapi_questions, write_json
from bench.speed import REPO_ROOT, SPEED_DIR, build_in_process

QUERIES = fastapi_questions(5)
SCRIPT = """
import sys
from pipeline.cli import app
sys.argv = ["pipeline", "search", *sys.argv[1:]]
try:
    app()
except SystemExit:
    pass
print("RUNTIMES", sorted(m for m in ("torch", "onnxruntime", "openvino", "sentence_transformers") if m in sys.modules), file=sys.stderr)
"""


def search_calls(site: Path, runs: int, extra: list[str]) -> dict:
    """The first call and ``runs`` warm ones of ``pipeline search SITE Q --method hybrid *extra``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    times, cpu, runtimes = [], [], None
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(site), QUERIES[i % len(QUERIES)], "--method", "hybrid", "-k", "5",
                               *extra], capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode != 0 or "hybrid" not in done.stdout:
            raise SystemExit(f"search failed ({extra}):\n{done.stdout[-1000:]}\n{done.stderr[-2000:]}")
        runtimes = next(line for line in done.stderr.splitlines() if line.startswith("RUNTIMES"))[len("RUNTIMES "):]
    return {"first": times[0], "warm_median": statistics.median(times[1:]), "warm": times[1:], "runtimes": runtimes,
            "cpu_warm_median": statistics.median(cpu[1:]), "cpu_warm": cpu[1:]}


def table(result: dict) -> str:
    """Markdown: per query embedder, the first and warm calls (also ``bench/reporting/sections.py``)."""
    lines = ["| query embedder | first call (s) | warm median (s) | warm CPU, user + system (s, median) | model runtimes imported |",
             "|---|---|---|---|---|"]
    for label in ("static", "full"):
        r = result[label]
        lines.append(f"| {label} | {r['first']:.2f} | **{r['warm_median']:.2f}** | {r['cpu_warm_median']:.2f} | {r['runtimes']} |")
    return "\n".join(lines) + f"\n\n{result['runs']} warm calls each, load average {result['loadavg'][0]:.1f} when done."


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, SPEED_DIR / "query.json", quick="4 documents, 1 warm call")
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    docs, runs = (4, 1) if args.quick else (args.docs, args.runs)
    result: dict = {"runs": runs}
    with tempfile.TemporaryDirectory(prefix="bench-query-") as tmp:
        content, site = Path(tmp) / "content", Path(tmp) / "site"
        for src in sorted(FASTAPI.rglob("*.md"))[:docs]:
            (content / src.relative_to(FASTAPI)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, content / src.relative_to(FASTAPI))
        t = time.perf_counter()
        result["documents"] = build_in_process(content, site, SPEED_DIR / "query-cache", title="FastAPI", model=True).chunk.documents
        result["build_seconds"] = time.perf_counter() - t
        for label, extra in (("static", []), ("full", ["--embedder", "full"])):
            result[label] = search_calls(site, runs, extra)
    result["loadavg"] = list(os.getloadavg())
    write_json(args.out, result)
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
