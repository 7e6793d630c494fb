"""The benchmark suite ``make bench`` runs (``python -m bench.run_all``, bench/README.md): result files
under ``bench/.work/``, the report ``docs/BENCHMARKS.md``. Here: the paths and the few helpers
every benchmark shares."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
WORK = BENCH_DIR / ".work"


def shared(*parts: str) -> Path:
    """``../shared/<parts>`` beside the checkout (evaluation data, the realdocs trees), else
    ``/work/shared/<parts>``, where these machines keep it for a worktree or a clone elsewhere."""
    near = REPO_ROOT.parent.joinpath("shared", *parts)
    return near if near.exists() else Path("/work/shared").joinpath(*parts)


FASTAPI = shared("realdocs", "fastapi")
"""FastAPI's documentation (~150 documents), the real tree most benchmarks build."""


def fastapi_questions(n: int = 10) -> list[str]:
    """The realdocs set's first ``n`` questions (all about FastAPI's docs): what the benchmarks ask of that site."""
    with open(BENCH_DIR / "realdocs_set" / "questions.csv", newline="", encoding="utf-8") as fh:
        return [row["question"] for row in csv.DictReader(fh)][:n]


def arguments(doc: str, out: Path | None, quick: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring as help, ``--out`` (its result file, default
    ``out``) and, when ``quick`` says what it does, ``--quick`` (run_all's smoke run)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=out, help="the result file" + (" (default: %(default)s)" if out else ""))
    if quick:
        ap.add_argument("--quick", action="store_true", help=quick)
    return ap


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_json(path: Path, data) -> None:
    """``data`` as indented JSON at ``path``, its folder made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
