"""Whole cold builds with the local and the Ray executor, side by side: the engine's overhead as a
user meets it.

A build plans, writes and indexes beside its encode, and the Ray executor's start (``ray.init``,
Ray Data's actors, one model per actor) lies in the build's path where the local model's load
overlaps the planning. Each round runs ``pipeline build CONTENT --executor local``, ``--executor
ray --workers N`` (a local Ray the build starts) and the same with ``--ray-address auto`` (joining
a local Ray head started and stopped outside the timing), each a fresh process with the default
embedder and an EMPTY cache (``--ray-min-tokens 0``: Ray even for the ``--quick`` corpus), in
rotating order so a change of load on the shared cores hits all alike. A round's ratio is local's
seconds over Ray's; the result is the median of rounds. The sites
of every round must be byte-identical. With two synthetic sizes, each run's seconds are split into
a fixed part and a rate (``marginal``). Corpora: every ``--content`` folder (default: the
realdocs FastAPI tree when it is there) and the synthetic corpus of ``--documents`` documents
(``bench/synthetic.py``; 0: none).
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench import FASTAPI, arguments, synthetic, write_json
from bench.speed import SPEED_DIR, cli_build, median, remove_site

TARGET = 0.85  # issue 14: Ray on 2 local workers within 15 % of the local build's throughput
STATE_FILE = ".pipeline-state.json"  # the build state: holds the code digest, so it differs by checkout
SEARCH_DIGESTED = ("_search/meta.json", "_search/records.json")


def differing_files(a: Path, b: Path) -> list[str]:
    """Paths (relative) whose bytes differ or that only one tree has, ``STATE_FILE`` left out and
    ``SEARCH_DIGESTED`` compared but for their ``inputs`` digest (the same bytes once it is
    replaced by the other tree's)."""
    out = []
    names = lambda root: {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}  # noqa: E731
    left, right = names(a), names(b)
    for rel in sorted(left | right):
        if rel == STATE_FILE:
            continue
        if rel not in left or rel not in right:
            out.append(rel)
        elif rel in SEARCH_DIGESTED:
            if not _same_but_inputs(a / rel, b / rel):
                out.append(rel)
        elif not filecmp.cmp(a / rel, b / rel, shallow=False):
            out.append(rel)
    return out


def _same_but_inputs(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` hold the same bytes once ``b``'s ``"inputs":"<digest>"`` (there is
    one: meta.json's, inline in records.json too) is replaced by ``a``'s."""
    left, right = a.read_bytes(), b.read_bytes()
    pattern = re.compile(rb'"inputs":"[0-9a-f]*"')
    found = pattern.search(left)
    return left == (pattern.sub(lambda _: found.group(0), right) if found else right)



RUNS = ("local", "ray", "ray_joined")
RUN_LABELS = {"ray": "started by the build", "ray_joined": "running (`--ray-address auto`)"}


def _ray_cli(*args: str) -> None:
    ray = Path(sys.executable).with_name("ray")
    subprocess.run([str(ray), *args], check=True, capture_output=True, text=True, timeout=300)


def build_seconds(content: Path, work: Path, run: str, workers: int) -> tuple[float, int]:
    """(wall seconds, chunks) of one cold CLI build of ``content`` into ``work/site-<run>``:
    ``ray_joined`` joins a local Ray head started (and stopped) outside the timing."""
    site, cache = work / f"site-{run}", work / f"cache-{run}"
    executor = "local" if run == "local" else "ray"
    remove_site(site)
    shutil.rmtree(cache, ignore_errors=True)
    flags = ["--executor", executor, *(["--workers", str(workers), "--ray-min-tokens", "0"] if executor == "ray" else []),
             *(["--ray-address", "auto"] if run == "ray_joined" else [])]
    if run == "ray_joined":
        _ray_cli("start", "--head", f"--num-cpus={workers}", "--include-dashboard=false", "--disable-usage-stats")
    try:
        seconds = cli_build(content, site, cache, *flags)
    finally:
        if run == "ray_joined":
            _ray_cli("stop")
    chunks = sum(1 for _ in site.rglob("_chunks/*.md"))
    shutil.rmtree(cache, ignore_errors=True)
    return seconds, chunks


def measure(name: str, content: Path, work: Path, rounds: int, workers: int, runs: tuple[str, ...] = RUNS) -> dict:
    """Every run of ``runs`` (``local`` first) on ``content``, ``rounds`` times in rotating order."""
    rows, identical = [], True
    for r in range(rounds):
        order = runs[r % len(runs):] + runs[: r % len(runs)]
        seconds = {}
        for run in order:
            load = os.getloadavg()[0]
            seconds[run], chunks = build_seconds(content, work, run, workers)
            print(f"{name}, round {r + 1}: {run} {seconds[run]:.2f} s (load {load:.1f})", file=sys.stderr, flush=True)
        differ = [f for run in runs[1:] for f in differing_files(work / "site-local", work / f"site-{run}")]
        identical &= not differ
        rows.append({**{f"{run}_s": seconds[run] for run in runs},
                     **{f"ratio_{run}": seconds["local"] / seconds[run] for run in runs[1:]}, "differing": differ[:5]})
    out = {"corpus": name, "chunks": chunks, "workers": workers, "rounds": rows, "identical": identical}
    for run in runs:
        out[f"{run}_seconds"] = median([r[f"{run}_s"] for r in rows])
    for run in runs[1:]:
        out[f"{run}_over_local"] = median([r[f"ratio_{run}"] for r in rows])
    return out


def marginal(small: dict, large: dict) -> dict:
    """Each executor's cost split into a fixed part and a rate, from two corpora of one kind:
    seconds = fixed + chunks / rate (medians). The rates' ratio is the engine's throughput once
    running; the fixed parts' difference is what starting it costs a build."""
    chunks = large["chunks"] - small["chunks"]
    out = {"from": small["corpus"], "to": large["corpus"]}
    for run in RUNS:
        slope = (large[f"{run}_seconds"] - small[f"{run}_seconds"]) / chunks
        out[f"{run}_chunks_per_s"] = 1 / slope
        out[f"{run}_fixed_seconds"] = small[f"{run}_seconds"] - small["chunks"] * slope
    for run in RUNS[1:]:
        out[f"{run}_over_local"] = out[f"{run}_chunks_per_s"] / out["local_chunks_per_s"]
        out[f"{run}_within_target_from"] = break_even(out["local_fixed_seconds"], out["local_chunks_per_s"],
                                                      out[f"{run}_fixed_seconds"], out[f"{run}_chunks_per_s"])
    return out


def break_even(local_fixed: float, local_rate: float, fixed: float, rate: float, target: float = TARGET) -> float | None:
    """The chunks from which ``local(n) / run(n) >= target`` on the fitted lines (0: at every size;
    None: at no size, the run's rate being too low)."""
    gain = 1 / local_rate - target / rate  # seconds per chunk the ratio gains
    need = target * fixed - local_fixed
    if need <= 0:
        return 0.0 if gain >= 0 else None
    return need / gain if gain > 0 else None


def report_section(result: dict | None) -> str:
    """The BENCHMARKS.md paragraph and table for a result of ``main``."""
    if not result:
        return "Whole builds not measured in this run (`python -m bench.speed.executor_builds`).\n"
    rows = "".join(
        f"| {c['corpus']} | {c['chunks']:,} | {RUN_LABELS[run]} | {c['local_seconds']:.1f} | {c[f'{run}_seconds']:.1f} | "
        f"×{c[f'{run}_over_local']:.2f} (×{min(r[f'ratio_{run}'] for r in c['rounds']):.2f}–"
        f"×{max(r[f'ratio_{run}'] for r in c['rounds']):.2f}) | {'yes' if c[f'{run}_over_local'] >= TARGET else 'no'} | "
        f"{'yes' if c['identical'] else 'NO'} |\n"
        for c in result["corpora"] for run in RUNS[1:] if f"{run}_seconds" in c)
    return (
        f"Whole cold builds, `pipeline build --executor local` against `--executor ray --workers {result['workers']}`, "
        "with a local Ray the build starts, and joining a local Ray head started (`ray start --head`) and stopped "
        f"outside the timing; each build a fresh process with an empty cache, {result['rounds']} rounds in rotating "
        "order, medians; the ratio is local's seconds over Ray's per round (`python -m bench.speed.executor_builds`).\n\n"
        "| corpus | chunks | Ray | local s | Ray s | Ray's throughput vs local (range) | within 15 % | sites identical |\n"
        "|---|---|---|---|---|---|---|---|\n" + rows + _marginal_text(result.get("marginal")))


def _marginal_text(m: dict | None) -> str:
    if not m:
        return ""
    return (
        f"\nFrom {m['from']} to {m['to']} (seconds = fixed + chunks / rate, from the two medians): the local build "
        f"runs at {m['local_chunks_per_s']:.1f} chunks/s past a fixed {m['local_fixed_seconds']:.1f} s; a build that "
        f"starts its Ray at {m['ray_chunks_per_s']:.1f} chunks/s (×{m['ray_over_local']:.2f}) past "
        f"{m['ray_fixed_seconds']:.1f} s; one that joins a running Ray at {m['ray_joined_chunks_per_s']:.1f} chunks/s "
        f"(×{m['ray_joined_over_local']:.2f}) past {m['ray_joined_fixed_seconds']:.1f} s. The fixed parts are Ray's "
        "start and its actors' (Python processes, their model loads) and what of Ray's stop outlasts the build's last "
        "writes (a build that starts its Ray stops it as its encode ends; one that joins only disconnects). On these lines a whole "
        f"build comes within 15 % of local from {_chunks(m['ray_within_target_from'])} (Ray started by the build) and "
        f"{_chunks(m['ray_joined_within_target_from'])} (Ray running).\n")


def _chunks(n: float | None) -> str:
    return "no size" if n is None else f"~{round(n, -2):,.0f} chunks"


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, SPEED_DIR / "executor_builds.json", quick="50 synthetic documents, one round, no realdocs tree")
    ap.add_argument("--content", type=Path, action="append", default=None, help="a folder to build (repeatable)")
    ap.add_argument("--documents", default="1000,3000", help="synthetic corpora's sizes in documents, comma-separated (0: none)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", type=Path, default=SPEED_DIR / "executor_builds")
    args = ap.parse_args(argv)
    if args.quick:
        args.content, args.documents, args.rounds = args.content or [], "50", 1
    folders = args.content if args.content is not None else [p for p in (FASTAPI,) if p.is_dir()]
    corpora = [(f"realdocs/{p.name}" if p.parent.name == "realdocs" else p.name, p.resolve()) for p in folders]
    sizes = [int(n) for n in str(args.documents).split(",") if int(n)]
    for n in sizes:
        synthetic.generate(args.work / f"synthetic-{n}", n)
        corpora.append((f"synthetic, {n:,} documents", args.work / f"synthetic-{n}"))
    result = {"workers": args.workers, "rounds": args.rounds,
              "corpora": [measure(name, path, args.work, args.rounds, args.workers) for name, path in corpora]}
    synthetic_runs = [c for c in result["corpora"] if c["corpus"].startswith("synthetic")]
    if len(synthetic_runs) >= 2:
        result["marginal"] = marginal(synthetic_runs[0], synthetic_runs[-1])
    write_json(args.out, result)
    print(report_section(result))
    return 0 if all(c["identical"] for c in result["corpora"]) else 1


if __name__ == "__main__":
    sys.exit(main())
