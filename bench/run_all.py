"""``make bench``: every benchmark, offline, then ``docs/BENCHMARKS.md`` regenerated.

    .venv/bin/python -m bench.run_all            # full run (1.5-2 hours; caches make reruns faster)
    .venv/bin/python -m bench.run_all --quick    # smoke run: small slices, report to bench/.work/quick/
    .venv/bin/python -m bench.run_all --only chunking,report   # a subset (the report uses whatever results exist)

``STEPS``, in order: each step's module, its arguments in the full and the quick run, and the
result it writes (``bench.reporting.inputs.RESULTS``; the quick run passes that file under
``bench/.work/quick/`` as ``--out``). Each bench module's docstring says what it measures. Each step
is a subprocess logging to ``bench/.work/logs/<step>.log``; a failed step is recorded and the
others still run (exit status 1 at the end). The last step, ``report``, writes
``docs/BENCHMARKS.md`` and ``docs/bench/*.png``, each section dated by its step's record in
``bench/.work/run_all.json`` (finish time, commit, command, the machine's load average).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import FASTAPI, REPO_ROOT, WORK


@dataclass(frozen=True)
class Step:
    module: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] = ("--quick",)
    result: str | None = None  # its result in bench.reporting.inputs.RESULTS: the file the section shows


SMALL = ("--chunkers", "ours-markdown-224")  # the quick runs' one chunk budget
STEPS = {
    "chroma": Step("bench.retrieval", ("--quiet",), ("--quiet", "langchain-recursive-250", "ours-markdown"), "chroma"),
    "markdown": Step("bench.retrieval", ("--set", "markdown", "--quiet"),
                     ("--set", "markdown", "--quiet", "langchain-recursive-250", "ours-markdown"), "markdown"),
    "chunking": Step("bench.speed.chunking", result="chunking"),
    "builds": Step("bench.speed.builds", result="builds"),
    "encoding": Step("bench.speed.backends", result="backends"),
    "query": Step("bench.speed.query", result="query"),
    "executor_builds": Step("bench.speed.executor_builds", result="executor_builds"),
    "scale": Step("bench.speed.scale", result="scale"),
    "index_sizes": Step("bench.index_sizes", result="index_sizes"),
    "edits": Step("bench.speed.edits", result="edits"),
    "fuzz": Step("bench.fuzz", ("--cases", "100000"), ("--cases", "2000"), "fuzz"),
    "stress": Step("bench.stress", result="stress"),
    "search": Step("bench.search_eval", (), ("markdown", "realdocs", *SMALL), "search"),
    # `pipeline eval` on FastAPI's docs (one probe per section), the whole process, median of 3
    "eval_speed": Step("bench.site_eval", ("--speed",), ("--speed", "--repeats", "1"), "eval_speed"),
    # Pagefind ($PAGEFIND or npx; skipped with a message when absent) on the same questions and
    # chunks as "search", whose vector and hybrid scores it pairs with: after it
    "pagefind": Step("bench.pagefind_eval", (), ("markdown", *SMALL), "pagefind"),
    # what an agent reads per MCP tool call, default arguments: FastAPI's docs and 10,000 documents
    "mcp": Step("bench.mcp_sizes", ("--model", "--fastapi", str(FASTAPI)), ("--docs", "300"), "mcp_sizes"),
    # the static query encoder (issue 31): quality on the three sets; a hybrid query's bytes in the browser
    "encoder": Step("bench.static_encoder", (), ("realdocs", "--variants", "packaged", *SMALL), "static_encoder"),
    "encoder_page": Step("bench.encoder_page", ("--synthetic", "2500", "25000"), ("--synthetic", "--repeats", "1", "--no-pagefind"),
                         "encoder_page"),
    # a generated Obsidian vault of 1,000 notes: builds, link check, the vault syntax's cost
    "vault": Step("bench.vault", (), ("--notes", "200"), "vault"),
    "report": Step("bench.report"),
}


def command(step: str, quick: bool) -> list[str]:
    s = STEPS[step]
    if not quick:
        return [sys.executable, "-m", s.module, *s.args]
    from bench.reporting.inputs import paths

    return [sys.executable, "-m", s.module, *s.quick, *(("--out", str(paths(True)[s.result])) if s.result else ())]


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated subset of: " + ", ".join(STEPS))
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else list(STEPS)
    unknown = set(only) - set(STEPS)
    if unknown:
        ap.error(f"unknown steps: {', '.join(sorted(unknown))}")

    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    logs = WORK / ("quick/logs" if args.quick else "logs")
    logs.mkdir(parents=True, exist_ok=True)
    state_path = WORK / ("quick/run_all.json" if args.quick else "run_all.json")
    previous = json.loads(state_path.read_text()) if state_path.exists() else {}
    state = {
        "quick": args.quick,
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": "make bench" if not args.quick else f"{Path(sys.executable).name} -m bench.run_all --quick",
        "only": only,
        "steps": {},
        # keep earlier step records when running a subset (also those an earlier subset run kept),
        # so the report can still cite every step
        "previous_steps": {
            k: v for k, v in {**previous.get("previous_steps", {}), **previous.get("steps", {})}.items() if k not in only
        },
    }
    # the code each step ran on, for the report's per-section run lines ("+" when pipeline/ had local changes)
    git = lambda *a: subprocess.run(["git", *a], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()  # noqa: E731
    commit = git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain", "--", "pipeline", "bench") else "")
    t_all = time.perf_counter()
    failed = []
    for step in (s for s in STEPS if s in only):
        if step == "report":
            state["seconds_before_report"] = time.perf_counter() - t_all
            state_path.write_text(json.dumps(state, indent=1))
        cmd = command(step, args.quick)
        shown = " ".join(str(c).replace(str(REPO_ROOT) + "/", "") for c in cmd).replace(sys.executable, "python")
        print(f"[{step}] {shown}", file=sys.stderr, flush=True)
        record = {"command": shown, "load_before": loadavg()}
        t = time.perf_counter()
        with open(logs / f"{step}.log", "w", encoding="utf-8") as log:
            proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        record.update(seconds=time.perf_counter() - t, status="ok" if proc.returncode == 0 else f"failed ({proc.returncode})",
                      load_after=loadavg(), log=str((logs / f"{step}.log").relative_to(REPO_ROOT)),
                      finished=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), commit=commit)
        state["steps"][step] = record
        if proc.returncode != 0:
            failed.append(step)
            tail = (logs / f"{step}.log").read_text(encoding="utf-8", errors="replace")[-1500:]
            print(f"[{step}] FAILED ({proc.returncode}); log tail:\n{tail}", file=sys.stderr, flush=True)
        else:
            print(f"[{step}] ok in {record['seconds']:.0f} s", file=sys.stderr, flush=True)
        state_path.write_text(json.dumps(state, indent=1))
    state["seconds"] = time.perf_counter() - t_all
    state["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    state["failed"] = failed
    state_path.write_text(json.dumps(state, indent=1))
    print(f"bench: {len(state['steps'])} steps in {state['seconds'] / 60:.1f} min"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
