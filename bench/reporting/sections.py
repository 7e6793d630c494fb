"""The report's per-benchmark sections, as markdown: a sentence of protocol (the bench module's docstring
has the rest) and the tables. Each takes its loaded results (None: the section says "Not run") and is
short on purpose: the history of a figure is in git, its decision in docs/DECISIONS.md. The benches'
own tables are imported only when there is a result to show."""

from __future__ import annotations

from statistics import median

from bench.reporting.formatting import f1, pct, table
from bench.reporting.inputs import DEFAULT_OURS, DEFAULT_STRATEGY, anchor_names
from bench.reporting.targets import best_case_overhead, search_targets

NOT_RUN = "Not run.\n"
SEARCH_METHODS = ("vector", "lexical", "bm25", "hybrid-rrf", "hybrid-score", "hybrid-sentences", "hybrid-score-lexdocs5-budget")
"""The rows of the search table: the anchors, the defaults and the options (the result holds more)."""


def quality(results: dict | None, label: str) -> str:
    """Every chunker's recall / IoU on one set (Chroma's or the markdown set), anchors and ours at one budget."""
    if not results:
        return f"**{label}**: not run.\n"
    anchors, p = set(anchor_names()), results.get("protocol", {})
    rows = [[f"**{r['name']}**" if r["name"] == DEFAULT_OURS else r["name"],
             "anchor" if r["name"] in anchors else "ours", r["n_chunks"], f"{r['mean_tokens']:.0f}"]
            + [f"{r['metrics'][k]['mean']:.1f}" for k in ("recall", "precision", "iou", "recall_at_budget")] for r in results["results"]]
    return (f"**{label}**: {p.get('questions', '?')} questions, k = {p.get('k', 5)}, mean over questions, in %.\n\n"
            + table(["chunker", "kind", "chunks", "mean size (pieces)", "recall@5", "precision@5", "IoU@5",
                     f"recall@{p.get('token_budget', 1000)} tokens"], rows) + "\n")


def chunking(ch: dict | None) -> str:
    if not ch:
        return NOT_RUN
    parts = [f"Input MB/s at {ch['budget_tokens']} MiniLM pieces counting exact model tokens, chunkers interleaved within each "
             "repeat, ratio = ours / fastest anchor per repeat, then the median (`bench/speed/chunking.py`)."]
    for name, c in ch["corpora"].items():
        rows = [[f"**{r['chunker']}**" if r["chunker"] == DEFAULT_STRATEGY else r["chunker"], r["kind"], r["chunks"],
                 f"{r['mb_per_s']:.3f}", f"×{r['ratio_vs_fastest_anchor']:.2f}"] for r in sorted(c["rows"], key=lambda r: -r["mb_per_s"])]
        parts.append(f"**{name}** ({c['documents']} documents, {c['bytes'] / 1e6:.2f} MB): `{DEFAULT_STRATEGY}` / "
                     f"{c['fastest_anchor']} **×{f1(c.get('median_ratio_markdown_vs_fastest_anchor'), 2)}**.\n\n"
                     + table(["chunker", "kind", "chunks", "MB/s", "vs fastest anchor"], rows))
    return "\n\n".join(parts) + "\n"


def builds(b: dict | None) -> str:
    if not b:
        return NOT_RUN
    parts = ["Synthetic corpus (`bench/synthetic.py`), every build a fresh process (`bench/speed/build_worker.py`), medians "
             "of the runs. *overhead* = time outside the model's encode / build; *best case* judges the target."]
    rows = []
    for x in b.get("cold", []):
        build = median(r["build_seconds"] - r["load_seconds_in_build"] for r in x["runs"])
        rows.append([x["documents"], x["chunks"], f1(build), f1(x["raw_encode_seconds"]), f1(x["chunks"] / build if build else None),
                     pct(x.get("overhead_share_direct")), pct(best_case_overhead(x)[2]), f"{x['maxrss_mb']:.0f}"])
    if rows:
        parts.append("**Cold builds**\n\n" + table(["docs", "chunks", "build s (w/o load)", "raw encode s", "chunks/s", "overhead",
                                                    "best case", "peak RSS MB"], rows))
    rows = [[n["documents"], n["chunks"], f1(n["build_seconds"], 2), f1(n["wall_seconds"], 2), "yes" if n["torch_imported"] else "no",
             n["files_written"]] for n in b.get("noop", [])]
    if rows:
        parts.append("**No-op rebuilds**\n\n" + table(["docs", "chunks", "build() s", "process s", "torch imported", "files written"], rows))
    inc = b.get("incremental")
    if inc:
        parts.append(f"**One edited section** ({inc['documents']} documents): chunks re-embedded per edit {inc['embedded']}, "
                     f"rebuild {inc['build_seconds']:.1f} s (model load {inc['load_seconds_in_build']:.1f} s).")
    return "\n\n".join(parts) + "\n"


def encoding(backends: dict | None) -> str:
    """Every encoding backend beside torch fp32 (``bench.speed.backends``)."""
    if not backends:
        return NOT_RUN
    rows = [[r["backend"], f"{r['texts_per_s']:.1f}", f"×{r['speedup_vs_torch_fp32']:.2f}", f"{r['cosine_min']:.6f}"]
            for r in backends["rows"]]
    return (f"**Backends** ({backends['texts']} texts, {backends['rounds']} rounds; native bf16: "
            f"{'yes' if backends['native_bf16'] else 'no'}; `auto` chose **{backends['auto_chooses']}**).\n\n"
            + table(["backend", "texts/s", "vs torch fp32", "min cosine"], rows) + "\n")


def query(q: dict | None) -> str:
    if not q:
        return NOT_RUN
    from bench.speed.query import table as query_table

    return (f"`pipeline search SITE QUERY --method hybrid` on {q['documents']} FastAPI documents built with the default model, "
            "whole process (`bench/speed/query.py`):\n\n" + query_table(q) + "\n")


def fuzz(fz: dict | None) -> str:
    if not fz:
        return NOT_RUN
    if "failed" in fz:
        return f"**Failed**: {fz['failed']}\n"
    return (f"{fz['cases']:,} generated cases in {fz['seconds'] / 60:.1f} min: no traceback, every invariant held.\n\n"
            + table(["outcome", "cases"], [[k, f"{v:,}"] for k, v in fz["outcomes"].items()]) + "\n")


def stress(st: dict | None) -> str:
    if not st:
        return NOT_RUN
    race, kill, slow = st["race"], st["kills"], st["slow"]
    rows = [["symlink race during builds", f"{race['builds']} builds", f"**{race['leaks']} leaks**, {race['tracebacks']} tracebacks, "
             f"{race['refused']} refused naming the file"],
            ["SIGKILL during a rebuild", f"{kill['trials']} builds", f"**{kill['broken']} broken sites**, {kill['not_repaired']} not repaired"],
            *([f"{r['slow_clients']} slow-{kind} clients", f"{r['requests']} requests",
               f"{r['unanswered']} unanswered, max {r['max_ms']:.1f} ms"]
              for kind, r in (("header", slow), ("body", st.get("slow_body"))) if r)]
    rows += [[f"{r['clients']} keep-alive clients", f"{r['requests']:,} requests", f"**{r['silent']} silent closes**, median "
              f"{r['median_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms"] for r in (st.get("keepalive_100"), st.get("keepalive_200")) if r]
    return "Hashing embedder, loopback (`bench/stress.py`).\n\n" + table(["experiment", "runs", "outcome"], rows) + "\n"


def _by_set(results: list[dict], methods: list[str], cell) -> str:
    """One row per method, one column per set."""
    head = ["method"] + [f"{r['set']} ({r['questions']} q)" for r in results]
    return table(head, [[m] + [cell(r, m) for r in results] for m in methods if any(m in r["summary"] for r in results)])


def search(quality_: dict | None) -> str:
    if not quality_:
        return NOT_RUN
    parts = ["Methods paired per question, each metric averaged over three chunk budgets (`bench/search_eval.py`)."]
    t = search_targets(quality_)
    if t:
        parts.append(table(["target (issue 11)", "verdict", "evidence"], [[a, f"**{b}**", c] for a, b, c in t]))
    results = (quality_ or {}).get("results", [])
    if results:
        methods = [m for m in SEARCH_METHODS if any(m in r["summary"] for r in results)]
        parts.append("R@5 / IoU@5:\n\n" + _by_set(results, methods, lambda r, m: (
            f"{r['summary'][m]['recall']:.1f} / {r['summary'][m]['iou']:.1f}" if m in r["summary"] else "–")))
        pairs = ["hybrid-score vs lexical", "hybrid-score vs bm25", "hybrid-score vs vector", "hybrid-sentences vs hybrid-score",
                 "hybrid-score-lexdocs5-budget vs hybrid-score-lexdocs5"]
        rows = [[p] + [(lambda d: f"{d['mean_diff']:+.1f} [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}]")(r["paired"][p]["recall"])
                       if p in r["paired"] else "–" for r in results] for p in pairs]
        parts.append("Paired ΔR@5 [95 % CI]:\n\n" + table(["pair"] + [r["set"] for r in results], rows))
    return "\n\n".join(parts) + "\n"


def evaluation(quality_: dict | None, speed: dict | None) -> str:
    sites = [r["site"] for r in (quality_ or {}).get("results", []) if r.get("site")]
    if not sites and not speed:
        return NOT_RUN
    parts = []
    if sites:
        from bench.site_eval import table as site_table

        parts += ["`pipeline eval` on the sets built as sites (`bench/site_eval.py`): sections found at the build's budget, not R@5."]
        parts += [f"**{s['set']}**: `{s['command']}`\n\n" + site_table(s).split("\n\n", 1)[1] for s in sites]
    if speed and "median_seconds" in speed:
        parts.append(f"`{speed['command']}` on FastAPI's docs ({speed['documents']} documents, {speed['questions']:,} "
                     f"{speed['questions_from']}s): median **{speed['median_seconds']:.1f} s** over {len(speed['seconds'])} runs.")
    return "\n\n".join(parts) + "\n"


def pagefind(pf: dict | None) -> str:
    if not pf or "skipped" in pf:
        return (f"Skipped: {pf['skipped']}\n" if pf else NOT_RUN)
    results = pf.get("results", [])
    methods = list(results[0]["summary"]) if results else []
    return (f"{pf.get('pagefind', 'Pagefind')} on the same questions and chunks, one HTML page per chunk, its own `pagefind.js` in "
            "headless Chromium; `pagefind` = the question as typed (AND), `-keywords` without stop words, `-or` each keyword "
            "alone, scores summed (`bench/pagefind_eval.py`). R@5:\n\n"
            + _by_set(results, methods, lambda r, m: f"{r['summary'][m]['recall']:.1f}" if m in r["summary"] else "–") + "\n")


def encoder(quality_: dict | None, page_: dict | None) -> str:
    if not quality_ and not page_:
        return NOT_RUN
    parts = ["The query embedded by the site's static encoder instead of the full model; *kept* = (static − lexical) / "
             "(full − lexical) of R@5 (`bench/static_encoder.py`, `bench/encoder_page.py`)."]
    if quality_:
        from bench.static_encoder import quality_table

        shown = [v for v in quality_.get("variants", []) if v == "packaged"] or quality_.get("variants", [])
        parts.append(quality_table({**quality_, "variants": shown}))  # the shipped table; the rest are in the result
    if page_ and page_.get("results"):
        from bench.encoder_page import bytes_table

        shown = {**page_, "results": [{**r, "summary": {k: {"cold": v["cold"]} if k == "lexical" else v  # lexical warm: in the result file
                                                         for k, v in r["summary"].items() if k != "pagefind-keywords"}}
                                      for r in page_["results"]]}
        parts.append(f"A hybrid query in headless Chromium, beside {page_.get('pagefind') or 'Pagefind'}:\n\n" + bytes_table(shown))
    return "\n\n".join(parts) + "\n"


def mcp(result: dict | None) -> str:
    """Characters of each MCP tool's answer (``bench.mcp_sizes``), one column per site."""
    sites = (result or {}).get("sites", [])
    if not sites:
        return NOT_RUN
    tools = list(dict.fromkeys(t for site in sites for t in site["tools"]))
    rows = [[f"`{t}`"] + [f"{x['median']:,.0f} / {x['max']:,}" if (x := site["tools"].get(t)) else "–" for site in sites] for t in tools]
    rows.append(["`tools/list`"] + [f"{site['tools_list_chars']:,}" for site in sites])
    return (f"Characters of each answer an agent reads (budget {result['limit_chars']:,}, ~{result['limit_chars'] // result['chars_per_token']:,} "
            "tokens), default arguments, through the SDK's in-process client (`bench/mcp_sizes.py`); median / max over the calls.\n\n"
            + table(["answer"] + [f"{site['name']} ({site['documents']:,} documents, {site['embedder']})" for site in sites], rows)
            + "".join(f"\n\n{site['name']}: {len(site['errors'])} errors." for site in sites if site["errors"]) + "\n")
