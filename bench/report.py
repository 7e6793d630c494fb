"""Write ``docs/BENCHMARKS.md`` and its plots (``docs/bench/*.png``) from the result files of the runs.

    .venv/bin/python -m bench.report            # from bench/.work/ results -> docs/
    .venv/bin/python -m bench.report --quick    # from the --quick results -> bench/.work/quick/

Layout: the headline figures (ours beside the anchor of the same run), the targets and their verdicts, the
plots, then one short section per benchmark. Each section carries its own run date, commit and command (from
``bench/.work/run_all.json``; ``--only`` re-runs steps one at a time, so sections may come from different
runs); a missing result file is "not run". Nothing is measured here.
"""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

from bench import arguments
from bench.index_sizes import report_section as index_sizes_section
from bench.mcp_sizes import targets as mcp_targets
from bench.reporting import sections as s
from bench.reporting.formatting import table
from bench.reporting.headline import headline_rows
from bench.reporting.inputs import RESULTS, load, machine, paths
from bench.reporting.plots import plot_builds, plot_quality, plot_scale
from bench.reporting.targets import engine_targets, targets
from bench.run_all import STEPS
from bench.speed.edits import edit_targets, report_section as edits_section
from bench.speed.executor_builds import report_section as executor_builds_section
from bench.speed.scale import report_section as scale_section
from bench.vault import report_section as vault_section

MAX_LINE = 400
"""No line of the report is longer (issue 32); prose is wrapped at ``WRAP``, table rows are kept short."""
WRAP = 180

SECTIONS = [  # (title, the make bench steps whose results it shows, its markdown from the loaded results)
    ("Retrieval quality of the chunkers", ("chroma", "markdown"),
     lambda d, f: s.quality(d["chroma"], "Chroma's corpora") + "\n" + s.quality(d["markdown"], "Markdown set")),
    ("Chunking speed", ("chunking",), lambda d, f: s.chunking(d["chunking"])),
    ("Builds", ("builds",), lambda d, f: s.builds(d["builds"])),
    ("Scale", ("scale",), lambda d, f: scale_section(d["scale"])),
    ("Index files", ("index_sizes",), lambda d, f: index_sizes_section(d["index_sizes"])),
    ("What an edit rewrites", ("edits",), lambda d, f: edits_section(d["edits"])),
    ("Encoding", ("encoding",), lambda d, f: s.encoding(d["backends"])),
    ("Query latency", ("query",), lambda d, f: s.query(d["query"])),
    ("Ray executor", ("executor_builds",), lambda d, f: executor_builds_section(d["executor_builds"])),
    ("Obsidian vaults", ("vault",), lambda d, f: vault_section(d["vault"])),
    ("Fuzz", ("fuzz",), lambda d, f: s.fuzz(d["fuzz"])),
    ("Stress", ("stress",), lambda d, f: s.stress(d["stress"])),
    ("Search", ("search",), lambda d, f: s.search(d["search"])),
    ("`pipeline eval`", ("eval_speed",), lambda d, f: s.evaluation(d["search"], d["eval_speed"])),
    ("Pagefind on the same questions", ("pagefind",), lambda d, f: s.pagefind(d["pagefind"])),
    ("MCP answer sizes", ("mcp",), lambda d, f: s.mcp(d["mcp_sizes"])),
    ("Static query encoder", ("encoder", "encoder_page"), lambda d, f: s.encoder(d["static_encoder"], d["encoder_page"])),
]
STEP_RESULT = {step: st.result for step, st in STEPS.items() if st.result}
"""A step -> the result it writes, whose file time dates it when run_all.json has no record."""


def step_runs(run: dict | None, files: dict[str, Path]) -> dict[str, dict]:
    """Per step: its date, commit and command, from ``run_all.json`` (the newest record of the step) or,
    without one, the result file's modification time."""
    records = {**(run or {}).get("previous_steps", {}), **(run or {}).get("steps", {})}
    out = {}
    for step, key in STEP_RESULT.items():
        rec = records.get(step, {})
        date = rec.get("finished")
        if not date and key in files and files[key].exists():
            date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(files[key].stat().st_mtime))
        out[step] = {"date": (date or "–")[:16], "commit": rec.get("commit"), "command": rec.get("command")}
    return out


def run_line(steps: tuple[str, ...], runs: dict[str, dict]) -> str:
    """The line under a section's title: when, on which code and by which command each of its steps ran."""
    parts = []
    for step in steps:
        r = runs.get(step, {})
        if r.get("date", "–") == "–":
            continue
        parts.append(f"{step} {r['date']}" + (f" on `{r['commit']}`" if r.get("commit") else "")
                     + (f": `{r['command']}`" if r.get("command") else ""))
    return "*Ran " + "; ".join(parts) + ".*" if parts else ""


def wrap(markdown: str) -> str:
    """Prose lines wrapped at ``WRAP`` characters; table rows, list items and code left as they are."""
    out, code = [], False
    for line in markdown.split("\n"):
        code ^= line.startswith("```")
        if code or len(line) <= WRAP or line.startswith(("|", "```", "#", "- ", "!", "<")):
            out.append(line)
        else:
            out += textwrap.wrap(line, WRAP, break_long_words=False, break_on_hyphens=False)
    return "\n".join(out)


def render(data: dict, info: dict, figures: dict[str, str], quick: bool, runs: dict[str, dict]) -> str:
    """The whole report. ``runs``: per step, its date / commit / command (``step_runs``)."""
    head = [[what, ours, anchor, ratio, runs.get(step, {}).get("date", "–")[:10], f"`{step}`"]
            for step, what, ours, anchor, ratio in headline_rows(data)]
    verdicts = (targets(data) + engine_targets(data.get("backends"), data.get("executor_builds"))
                + [tuple(r) for r in mcp_targets(data.get("mcp_sizes"))] + edit_targets(data.get("edits")))
    lines = [
        "# Benchmarks", "",
        "<!-- generated by `python -m bench.report` (run by `make bench`) from bench/.work/; edits here are overwritten -->", "",
        ("**QUICK SMOKE RUN: small slices, not the benchmark.**\n\n" if quick else "")
        + f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit `{info.get('commit')}` on {info.get('cpu')}, "
        f"{info.get('cores')} shared cores. Sections carry their own run dates: steps are re-run one at a time "
        "(`python -m bench.run_all --only STEP`; a full `make bench` takes 1.5–2 hours), so they may come from different runs "
        "and code. Ratios are taken within one run; timings are medians.", "",
        "## Headline figures", "",
        "The anchor is measured in the same run as ours (or, where there is none, the issue's target). "
        "*step*: the section below and `python -m bench.run_all --only STEP`.", "",
        table(["what", "ours", "anchor (same run) or target", "ratio / difference", "date", "step"], head), "",
        "## Targets", "",
        table(["target", "verdict", "evidence"], [[a, f"**{b}**", c] for a, b, c in verdicts]), "",
        "## Plots", "",
    ]
    lines.append(" ".join(f"![{name}]({path})" for name, path in figures.items()) or "No plots (no results to draw).")
    for title, steps, body in SECTIONS:
        ran = run_line(steps, runs)
        lines += ["", f"## {title}", ""] + ([ran, ""] if ran else []) + [body(data, figures).rstrip()]
    lines += ["", "## Machine", "", f"{info.get('cpu')}, {info.get('cores')} cores ({info.get('isa', '')}), RAM {info.get('ram_gb')} GB; "
              f"Python {info['python']}; " + ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v != "not installed") + "."]
    return wrap("\n".join(lines)).rstrip() + "\n"


def load_all(p: dict[str, Path]) -> dict:
    data = {k: load(v) for k, v in p.items() if k not in ("out", "png")}
    return {**{k: None for k in RESULTS}, **data}


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, None, quick="a smoke run")
    args = ap.parse_args(argv)
    p = paths(args.quick)
    out = args.out or p["out"]
    data = load_all(p)
    figures, rel = {}, os.path.relpath(p["png"], out.parent)
    for name, file, draw in (("retrieval quality vs chunk size", "quality_vs_chunk_size.png", lambda f: plot_quality(data, f)),
                             ("build time vs corpus size", "build_time_vs_corpus_size.png", lambda f: plot_builds(data["builds"], f)),
                             ("scale", "scale.png", lambda f: plot_scale(data["scale"], f))):
        try:
            if draw(p["png"] / file):
                figures[name] = f"{rel}/{file}"
        except ImportError as missing:  # matplotlib: pip install -e '.[bench]'
            print(f"no plot {file}: {missing}", flush=True)
    text = render(data, machine(), figures, args.quick, step_runs(data["run_all"], p))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
