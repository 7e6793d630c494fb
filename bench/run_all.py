"""``make bench``: every benchmark, offline, then ``docs/BENCHMARKS.md`` regenerated.

    .venv/bin/python -m bench.run_all            # full run (tens of minutes; caches make reruns faster)
    .venv/bin/python -m bench.run_all --quick    # smoke run: small slices, report to bench/.work/quick/

Each step is a subprocess; its log goes to ``bench/.work/logs/<step>.log``; a failed step is
recorded and the others still run; the exit status is 1 if any step failed. The steps, in order, are ``STEPS``; ``commands()`` gives each one's command (full and ``--quick``), and
each bench module's docstring says what it measures and which result file it writes. The last step,
``report`` (``bench.report``), writes ``docs/BENCHMARKS.md`` and ``docs/bench/*.png`` from those files,
each section dated by its step's record here (finish time, commit, command).

``--only chunking,report`` runs a subset (the report uses whatever results exist).
Step times, commands and the machine's load average go to ``bench/.work/run_all.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import FASTAPI, REPO_ROOT, WORK
STEPS = ("chroma", "markdown", "chunking", "builds", "encoding", "query", "executor_builds", "scale", "index_sizes", "edits", "fuzz", "stress", "search",
         "eval_speed", "pagefind", "mcp", "encoder", "encoder_page", "vault", "report")


def commands(quick: bool) -> dict[str, list[str] | None]:
    py = sys.executable
    q = WORK / "quick"
    if quick:
        return {
            "chroma": [py, "-m", "bench.retrieval", "--quiet", "langchain-recursive-250", "ours-markdown",
                       "--out", str(q / "chroma_results.json")],
            "markdown": [py, "-m", "bench.retrieval", "--set", "markdown", "--quiet", "langchain-recursive-250", "ours-markdown",
                         "--out", str(q / "markdown_results.json")],
            "chunking": [py, "-m", "bench.speed.chunking", "--quick", "--out", str(q / "chunking.json")],
            "builds": [py, "-m", "bench.speed.builds", "--quick"],
            "encoding": [py, "-m", "bench.speed.backends", "--quick", "--out", str(q / "backends.json")],
            "query": [py, "-m", "bench.speed.query", "--quick", "--out", str(q / "query.json")],
            "executor_builds": [py, "-m", "bench.speed.executor_builds", "--quick", "--out", str(q / "executor_builds.json")],
            "scale": [py, "-m", "bench.speed.scale", "--quick", "--out", str(q / "scale.json")],
            "index_sizes": [py, "-m", "bench.index_sizes", "--quick", "--out", str(q / "index_sizes.json")],
            "edits": [py, "-m", "bench.speed.edits", "--quick", "--out", str(q / "edits.json")],
            "fuzz": [py, "-m", "bench.fuzz", "--cases", "2000", "--out", str(q / "fuzz.json")],
            "stress": [py, "-m", "bench.stress", "--quick", "--out", str(q / "stress.json")],
            "search": [py, "-m", "bench.search_eval", "markdown", "realdocs", "--chunkers", "ours-markdown-224",
                       "--out", str(q / "search_results.json")],
            "eval_speed": [py, "-m", "bench.site_eval", "--speed", "--repeats", "1", "--out", str(q / "eval_speed.json")],
            "pagefind": [py, "-m", "bench.pagefind_eval", "markdown", "--chunkers", "ours-markdown-224",
                         "--out", str(q / "pagefind_results.json")],
            "mcp": [py, "-m", "bench.mcp_sizes", "--docs", "300", "--out", str(q / "mcp_sizes.json")],
            "encoder": [py, "-m", "bench.static_encoder", "realdocs", "--variants", "packaged", "--chunkers", "ours-markdown-224",
                        "--out", str(q / "static_encoder.json")],
            "encoder_page": [py, "-m", "bench.encoder_page", "--synthetic", "--repeats", "1", "--no-pagefind",
                             "--out", str(q / "encoder_page.json")],
            "vault": [py, "-m", "bench.vault", "--notes", "200", "--out", str(q / "vault.json")],
            "report": [py, "-m", "bench.report", "--quick"],
        }
    return {
        "chroma": [py, "-m", "bench.retrieval", "--quiet"],
        "markdown": [py, "-m", "bench.retrieval", "--set", "markdown", "--quiet"],
        "chunking": [py, "-m", "bench.speed.chunking"],
        "builds": [py, "-m", "bench.speed.builds"],
        "encoding": [py, "-m", "bench.speed.backends"],
        "query": [py, "-m", "bench.speed.query"],
        "executor_builds": [py, "-m", "bench.speed.executor_builds"],
        "scale": [py, "-m", "bench.speed.scale"],
        "index_sizes": [py, "-m", "bench.index_sizes"],
        "edits": [py, "-m", "bench.speed.edits"],
        "fuzz": [py, "-m", "bench.fuzz", "--cases", "100000", "--out", str(WORK / "fuzz.json")],
        "stress": [py, "-m", "bench.stress", "--out", str(WORK / "stress.json")],
        "search": [py, "-m", "bench.search_eval"],
        # `pipeline eval` on FastAPI's docs (one probe per section), the whole process, median of 3
        "eval_speed": [py, "-m", "bench.site_eval", "--speed", "--out", str(WORK / "eval_speed.json")],
        # Pagefind (not a dependency: $PAGEFIND or npx; skipped with a message when absent) on the
        # same questions and chunks as "search", paired with ours; after "search", whose vector and
        # hybrid scores it pairs with
        "pagefind": [py, "-m", "bench.pagefind_eval"],
        # what an agent reads per MCP tool call, default arguments: FastAPI's docs and 10,000 documents
        "mcp": [py, "-m", "bench.mcp_sizes", "--model", "--fastapi", str(FASTAPI)],
        # the static query encoder (issue 31): agreement with the full model and hybrid quality on the
        # three sets; a hybrid query's bytes in the browser
        "encoder": [py, "-m", "bench.static_encoder"],
        "encoder_page": [py, "-m", "bench.encoder_page", "--synthetic", "2500", "25000"],
        # a generated Obsidian vault of 1,000 notes: builds, link check, the vault syntax's cost
        "vault": [py, "-m", "bench.vault"],
        "report": [py, "-m", "bench.report"],
    }


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
    for step, cmd in commands(args.quick).items():
        if step not in only:
            continue
        if step == "report":
            state["seconds_before_report"] = time.perf_counter() - t_all
            state_path.write_text(json.dumps(state, indent=1))
        if cmd is None:
            note = "not part of the quick run"
            state["steps"][step] = {"status": "skipped", "note": note}
            print(f"[{step}] skipped: {note}", file=sys.stderr, flush=True)
            continue
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
