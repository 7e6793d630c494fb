"""Write ``docs/BENCHMARKS.md`` and its plots (``docs/bench/*.png``) from the results of the runs.

    .venv/bin/python -m bench.report            # from bench/.work/ results -> docs/
    .venv/bin/python -m bench.report --quick    # from the --quick results -> bench/.work/quick/

Reads (whatever exists; a missing part is reported as not run): ``bench/.work/chroma_results.json``,
``bench/.work/markdown_results.json``, ``bench/.work/speed/{chunking,builds,encoding}.json`` and
``bench/.work/run_all.json`` (step times). Nothing is measured here.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.reporting.formatting import f1, table
from bench.reporting.inputs import (DEFAULT_OURS, anchor_names, load, machine, markdown_default, newest_backends,
                                    paths)
from bench.reporting.plots import plot_builds, plot_quality
from bench.reporting.speed import (builds_section, chunking_section, encoding_section, query_section,
                                   realdocs_section)
from bench.reporting.search import page_section, pagefind_section, search_section
from bench.reporting.targets import PAPER, engine_targets, targets
from bench.speed.executors import report_section as executors_section
from bench.speed.scale import plot as plot_scale, report_section as scale_section

# --------------------------------------------------------------------------- sections


def quality_section(results: dict | None, title: str, note: str) -> str:
    if not results:
        return f"### {title}\n\nNot run (no results file).\n"
    anchors = set(anchor_names())
    rows = []
    for r in results["results"]:
        m = r["metrics"]
        kind = "anchor" if r["name"] in anchors else "ours" if r["name"].startswith("ours") else "variant"
        rows.append([f"**{r['name']}**" if r["name"] == DEFAULT_OURS else r["name"], kind, r["n_chunks"], f"{r['mean_tokens']:.0f}"]
                    + [f"{m[k]['mean']:.1f} ± {m[k]['std']:.1f}" for k in ("recall", "precision", "precision_omega", "iou", "recall_at_budget")])
    p = results.get("protocol", {})
    head = ["chunker", "kind", "chunks", "mean size (pieces)", "recall@5", "precision@5", "PrecisionΩ", "IoU@5",
            f"recall@{p.get('token_budget', 1000)} tokens"]
    skipped = results.get("skipped") or []
    return (f"### {title}\n\n{note}\n\n{p.get('questions', '?')} questions, k = {p.get('k', 5)}, "
            f"model {p.get('model', 'all-MiniLM-L6-v2')}; mean ± std over questions, in %.\n\n"
            + table(head, rows) + ("\n\nSkipped: " + "; ".join(skipped) if skipped else "") + "\n")


def prompts_section(text: str | None) -> str:
    """The experiment's own tables (``python -m pipeline.spec.experiment``), verbatim."""
    if not text:
        return "Not run (step `prompts`).\n"
    return ("The threshold / Hamming-distance experiment of issue 4 on `content/` and the queries of "
            "`tests/fixtures/prompt_queries.json`; method and the decision it supports: `docs/INTELLIGENCE.md`.\n\n"
            + text.rstrip() + "\n")


def fuzz_section(fz: dict | None) -> str:
    """Counts of the fuzz campaign (``python -m bench.fuzz``, issue 15)."""
    if not fz:
        return "Not run (step `fuzz`).\n"
    if "failed" in fz:
        return f"**Failed**: {fz['failed']}\n"
    return (f"`python -m bench.fuzz`: {fz['cases']:,} generated cases (markdown with any line endings, front matter "
            f"and YAML/JSON entries including hostile YAML, file names) in {fz['seconds'] / 60:.1f} min: no traceback, "
            "every invariant held (spans exact, fences uncut, coverage, JSON-safe records, hrefs RFC 3986).\n\n"
            + table(["outcome", "cases"], [[k, f"{v:,}"] for k, v in fz["outcomes"].items()]) + "\n")


def runtime_section(run: dict | None) -> str:
    if not run:
        return "No `bench/.work/run_all.json` (the report was generated on its own).\n"
    rows = []
    steps = {**run.get("previous_steps", {}), **run.get("steps", {})}
    every = sum(s.get("seconds", 0) for name, s in steps.items() if name != "report")
    for name, s in steps.items():
        if name == "report":
            continue
        rows.append([name, f"`{s.get('command', '')}`", s.get("status"), f1(s.get("seconds", 0) / 60, 1) if s.get("seconds") else "–",
                     " / ".join(f"{x:.1f}" for x in (s.get("load_before") or [])[:1] + (s.get("load_after") or [])[:1])])
    total = run.get("seconds_before_report")
    return (f"Run started {run.get('started')}; steps {', '.join(run.get('only', []))}. Every step before this report "
            f"took **{f1(total / 60 if total else None, 1)} min** in total (the report itself takes seconds; "
            "`pip install -e '.[test,bench]'` adds a few seconds when everything is installed)"
            + (f"; every step below, as a full `make bench` runs them: **{every / 60:.1f} min**" if run.get("previous_steps") else "")
            + ".\n\n"
            + table(["step", "command", "status", "minutes", "load avg before / after"], rows) + "\n")


def render(data: dict, info: dict, figures: dict[str, str], quick: bool) -> str:
    t = targets(data) + engine_targets(newest_backends(data), data.get("executors"), data.get("executors_large"))
    lines = [
        "# Benchmarks",
        "",
        "<!-- generated by `python -m bench.report` (run by `make bench`); edits here are overwritten -->",
        "",
        ("**QUICK SMOKE RUN — small slices, not the benchmark.**\n\n" if quick else "")
        + f"Generated {time.strftime('%Y-%m-%d %H:%M %Z')} by `make bench` "
        f"(`python -m bench.run_all`) at commit `{info.get('commit')}`"
        + (" with uncommitted changes under `pipeline/`" if info.get("pipeline_dirty") else "") + ".",
        "",
        "## Targets",
        "",
        "From issues 6 and 14. *met* / *not met* is computed from the numbers below by `bench/report.py`.",
        "",
        table(["target", "verdict", "evidence"], [[a, f"**{b}**", c] for a, b, c in t]),
        "",
        "## Machine",
        "",
        f"- CPU: {info.get('cpu')}, {info.get('cores')} cores ({info.get('isa', '')}); RAM {info.get('ram_gb')} GB; "
        f"{info.get('platform')}. The cores are shared with other work: timings are medians of repeats and every "
        "ratio is taken within one run.",
        f"- Python {info['python']}; " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()),
        "",
        "## Commands",
        "",
        "```bash",
        "make bench                                   # = pip install -e '.[test,bench]' && python -m bench.run_all",
        ".venv/bin/python -m bench.run_all --quick    # smoke run (minutes); report in bench/.work/quick/",
        ".venv/bin/python -m bench.run_all --only chunking,report   # any subset of: chroma markdown chunking builds encoding executors scale prompts fuzz search search_bytes search_bytes_real pagefind page page_10k report",
        ".venv/bin/python bench/run_chroma.py         # retrieval quality, Chroma",
        ".venv/bin/python bench/markdown_eval.py      # retrieval quality, markdown set",
        ".venv/bin/python -m bench.speed.chunking     # chunking MB/s",
        ".venv/bin/python -m bench.speed.builds       # cold / no-op / incremental builds",
        ".venv/bin/python -m bench.speed.encoding     # encoding variants",
        ".venv/bin/python -m bench.speed.executors    # local vs Ray executor",
        ".venv/bin/python -m bench.speed.scale        # 1k / 10k / 100k documents, no model",
        ".venv/bin/python -m pipeline.spec.experiment # prompt-hash threshold and Hamming distance (issue 4)",
        ".venv/bin/python -m bench.fuzz --cases 100000 # fuzz: generated documents, front matter, file names (issue 15)",
        ".venv/bin/python -m bench.search_eval        # search methods, paired (issue 11)",
        ".venv/bin/python -m bench.search_bytes       # bytes and requests per search query (issue 11)",
        "PAGEFIND=path/to/pagefind .venv/bin/python -m bench.pagefind_eval   # Pagefind on the same questions (else npx)",
        ".venv/bin/python -m bench.search_page --model  # the search page in headless Chromium, beside Pagefind",
        ".venv/bin/python -m bench.report             # this file and docs/bench/*.png from the results",
        "```",
        "",
        "## Run time",
        "",
        runtime_section(data["run_all"]),
        "## Retrieval quality",
        "",
        "Protocol and calibration: `bench/README.md`. Anchors and ours at the same budget (250 MiniLM pieces; "
        f"ours `markdown` at its default {markdown_default()}). Paper's MiniLM row for LangChain Recursive 250: recall {PAPER['recall']}, IoU {PAPER['iou']}.",
        "",
        quality_section(data["chroma"], "Chroma's chunking evaluation", "Five plain-text corpora, pooled."),
        quality_section(data["markdown"], "Markdown set", "Real markdown shipped in packages (`bench/markdown_set/PROVENANCE.md`), pooled."),
    ]
    if "quality" in figures:
        lines += [f"![quality vs chunk size]({figures['quality']})", ""]
    lines += ["## Chunking speed", "", chunking_section(data["chunking"]), "## Builds", "", builds_section(data["builds"])]
    if "builds" in figures:
        lines += [f"![build time vs corpus size]({figures['builds']})", ""]
    lines += ["## Scale", "", scale_section(data["scale"], figures.get("scale"))]
    lines += ["## Encoding", "", encoding_section(data["encoding"], newest_backends(data))]
    lines += ["## Query latency (torch-free)", "", query_section(data.get("query"))]
    lines += ["## Ray executor", "", executors_section(data["executors"], data.get("executors_large"))]
    lines += ["## Real documentation", "", realdocs_section(data.get("realdocs"))]
    lines += ["## Prompt hashes", "", prompts_section(data["prompts"])]
    lines += ["## Fuzz", "", fuzz_section(data.get("fuzz"))]
    lines += ["## Search", "", search_section(data.get("search"), data.get("search_bytes"), data.get("search_bytes_real"))]
    lines += ["### Pagefind on the same questions (the lexical anchor)", "", pagefind_section(data.get("pagefind"))]
    lines += ["### The search page in the browser (latency, bytes per query)", "",
              page_section(data.get("search_page"), data.get("search_page_10k"))]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    p = paths(args.quick)
    out = args.out or p["out"]
    data = {k: load(p[k]) for k in ("chroma", "markdown", "chunking", "builds", "encoding", "executors", "executors_large", "backends", "scale", "realdocs", "query", "run_all", "fuzz", "search", "search_bytes")}
    data["search_bytes_real"] = load(p["search_bytes_real"]) if "search_bytes_real" in p else None
    data["pagefind"] = load(p["pagefind"])
    data["search_page"] = load(p["search_page"])
    data["search_page_10k"] = load(p["search_page_10k"]) if "search_page_10k" in p else None
    data["prompts"] = p["prompts"].read_text(encoding="utf-8") if p["prompts"].exists() else None
    figures = {}
    rel = os.path.relpath(p["png"], out.parent)
    if plot_quality(data, p["png"] / "quality_vs_chunk_size.png"):
        figures["quality"] = f"{rel}/quality_vs_chunk_size.png"
    if plot_builds(data["builds"], p["png"] / "build_time_vs_corpus_size.png"):
        figures["builds"] = f"{rel}/build_time_vs_corpus_size.png"
    if data["scale"] and plot_scale(data["scale"]["rows"], p["png"] / "scale.png"):
        figures["scale"] = f"{rel}/scale.png"
    text = render(data, machine(), figures, args.quick)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
