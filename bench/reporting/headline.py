"""The report's first table: one row per headline figure, ours beside the anchor measured in the same
run (or the issue's target where there is no anchor), with the step whose result it comes from.

``headline_rows(data)`` -> ``[(step, what, ours, anchor, ratio)]``; ``bench/report.py`` adds the step's
run date and command. A missing result gives no row (its section says "not run")."""

from __future__ import annotations

from bench.reporting.inputs import DEFAULT_OURS, DEFAULT_STRATEGY, anchor_names, by_name, metric

Row = tuple[str, str, str, str, str]


def _retrieval(result: dict | None, step: str, label: str) -> list[Row]:
    rs = by_name(result)
    ours, anchors = rs.get(DEFAULT_OURS), [rs[a] for a in anchor_names() if a in rs]
    if not ours or not anchors:
        return []
    best = max(anchors, key=lambda r: metric(r, "recall"))
    r, i, ar, ai = metric(ours, "recall"), metric(ours, "iou"), metric(best, "recall"), metric(best, "iou")
    return [(step, f"Retrieval R@5 / IoU@5, {label}", f"{r:.1f} / {i:.1f}", f"{best['name']} {ar:.1f} / {ai:.1f}",
             f"{r - ar:+.1f} / {i - ai:+.1f} pts")]


def _chunking(ch: dict | None) -> list[Row]:
    md = (ch or {}).get("corpora", {}).get("markdown")
    if not md:
        return []
    rows = {r["chunker"]: r for r in md["rows"]}
    a = md["fastest_anchor"]
    return [("chunking", "Chunking MB/s, exact token counts (markdown corpus)", f"{rows[DEFAULT_STRATEGY]['mb_per_s']:.2f}",
             f"{a} {rows[a]['mb_per_s']:.2f}", f"×{md['median_ratio_markdown_vs_fastest_anchor']:.2f}")]


def _encoding(b: dict | None) -> list[Row]:
    if not b:
        return []
    row = next(r for r in b["rows"] if r["backend"] == b["auto_chooses"])
    base = next((r for r in b["rows"] if r["backend"] == "torch"), None)
    return [("encoding", "Encoding texts/s (`auto` backend vs torch fp32)", f"{row['texts_per_s']:.0f} ({b['auto_chooses']})",
             f"torch fp32 {base['texts_per_s']:.0f}" if base else "torch fp32", f"×{row['speedup_vs_torch_fp32']:.2f}")]


def _builds(b: dict | None, scale: dict | None) -> list[Row]:
    out = []
    noop = {n["documents"]: n for n in (b or {}).get("noop", [])}
    if 1000 in noop:
        out.append(("builds", "No-op rebuild, 1,000 documents (s)", f"{noop[1000]['build_seconds']:.2f}", "target < 1", "–"))
    rows = {r["documents"]: r for r in (scale or {}).get("rows", [])}
    if 10000 in rows:
        out.append(("scale", "No-op rebuild, 10,000 documents (s)", f"{rows[10000]['noop']['build_seconds']:.2f}", "target ≤ 3", "–"))
    big = [r for r in rows.values() if r["chunks"] >= 100_000]
    if big:
        r = big[0]
        out.append(("scale", f"Peak RSS, cold build of {r['chunks']:,} chunks (MB)", f"{r['cold']['maxrss_mb']:.0f}", "target < 2,048",
                    f"×{r['cold']['maxrss_mb'] / 2048:.2f}"))
    return out


def _index_sizes(result: dict | None) -> list[Row]:
    rows = [r for r in (result or {}).get("rows", []) if r["site"] == "fastapi"]
    if not rows:
        return []
    largest = rows[0]["files"]["index_json"]["largest"]
    before = [r for r in (result.get("baseline") or []) if r["site"] == "fastapi"]
    anchor = f"budget {result['budget'] / 1024:.0f} kB" + (
        f"; format 1 {before[0]['files']['index_json']['largest'] / 1000:,.0f} kB" if before else "")
    return [("index_sizes", "Largest `index.json`, FastAPI's docs (kB)", f"{largest / 1000:.1f}", anchor,
             f"×{largest / result['budget']:.2f} of budget")]


def _edits(result: dict | None) -> list[Row]:
    sites = {s["site"]: s for s in (result or {}).get("sites", [])}
    site = sites.get("FastAPI's docs")  # the name bench.speed.edits gives the site
    if not site:
        return []
    share = site["edits"][0]["share"]
    return [("edits", "Bytes one edit rewrites, FastAPI's docs (share of site)", f"{100 * share:.1f} %", "target ≤ 10 %",
             f"×{share / 0.10:.2f} of target")]


def _mcp(result: dict | None) -> list[Row]:
    sites = (result or {}).get("sites", [])
    if not sites:
        return []
    from bench.mcp_sizes import largest

    worst = max(largest(s) for s in sites)
    return [("mcp", "Largest MCP answer, default arguments (characters)", f"{worst:,} ({len(sites)} sites)",
             f"budget {result['limit_chars']:,}", f"×{worst / result['limit_chars']:.2f}")]


def _search(result: dict | None, pagefind: dict | None) -> list[Row]:
    out = []
    sets = (result or {}).get("results", [])
    if sets:
        names = " / ".join(r["set"] for r in sets)
        ours = " / ".join(f"{r['summary']['hybrid-score']['recall']:.1f}" for r in sets)
        bm25 = " / ".join(f"{r['summary']['bm25']['recall']:.1f}" for r in sets)
        gain = " / ".join(f"{r['summary']['hybrid-score']['recall'] - r['summary']['bm25']['recall']:+.1f}" for r in sets)
        out.append(("search", f"Search R@5, hybrid ({names})", ours, f"bm25s {bm25}", f"{gain} pts"))
    sets = [r for r in (pagefind or {}).get("results", []) if "pagefind-or" in r.get("summary", {})]
    if sets:
        ours = " / ".join(f"{r['summary'].get('hybrid-score', r['summary']['lexical'])['recall']:.1f}" for r in sets)
        pf = " / ".join(f"{r['summary']['pagefind-or']['recall']:.1f}" for r in sets)
        out.append(("pagefind", f"Search R@5 vs Pagefind ({' / '.join(r['set'] for r in sets)})", ours, f"Pagefind (OR) {pf}",
                    " / ".join(f"{r['summary'].get('hybrid-score', r['summary']['lexical'])['recall'] - r['summary']['pagefind-or']['recall']:+.1f}"
                               for r in sets) + " pts"))
    return out


def _encoder(quality: dict | None, page: dict | None) -> list[Row]:
    out = []
    for r in (quality or {}).get("results", []):
        s, kept = r["summary"], r["retained"].get("hybrid-packaged")
        if "hybrid-packaged" in s:
            out.append(("encoder", f"Static query encoder: hybrid R@5, {r['set']}", f"{s['hybrid-packaged']['recall']:.1f}",
                        f"full model {s['hybrid-full']['recall']:.1f}, lexical {s['lexical']['recall']:.1f}",
                        "–" if kept is None else f"{100 * kept:.0f} % of gain kept"))
    results = [r for r in (page or {}).get("results", []) if "pagefind" in r["summary"]]
    for r in results:
        ours, pf = r["summary"]["hybrid"]["cold"], r["summary"]["pagefind"]["cold"]
        out.append(("encoder_page", f"Cold hybrid query in the browser, {r['site']} ({r['chunks']:,} chunks, kB)",
                    f"{ours['kb_mean']:.0f} ({ours['requests_mean']:.0f} requests)",
                    f"Pagefind {pf['kb_mean']:.0f} ({pf['requests_mean']:.0f} requests)", f"×{ours['kb_mean'] / pf['kb_mean']:.2f}"))
    return out


def _checks(stress: dict | None, eval_speed: dict | None) -> list[Row]:
    out = []
    if stress:
        ka = stress.get("keepalive_200") or stress.get("keepalive_100")
        out.append(("stress", "Stress: symlink leaks / broken sites after kills / silent closes",
                    f"{stress['race']['leaks']} / {stress['kills']['broken']} / {ka['silent'] if ka else '–'}"
                    + (f" ({ka['requests']:,} requests, {ka['clients']} clients)" if ka else ""), "target 0 / 0 / 0", "–"))
    if eval_speed and "median_seconds" in eval_speed:
        out.append(("eval_speed", f"`pipeline eval`, FastAPI's docs, {eval_speed['questions']:,} probes (s)",
                    f"{eval_speed['median_seconds']:.1f}", "target < 60", f"×{eval_speed['median_seconds'] / 60:.2f}"))
    return out


def headline_rows(data: dict) -> list[Row]:
    return (_retrieval(data.get("chroma"), "chroma", "Chroma's corpora") + _retrieval(data.get("markdown"), "markdown", "markdown set")
            + _chunking(data.get("chunking")) + _encoding(data.get("backends")) + _builds(data.get("builds"), data.get("scale"))
            + _index_sizes(data.get("index_sizes")) + _edits(data.get("edits")) + _mcp(data.get("mcp_sizes"))
            + _search(data.get("search"), data.get("pagefind")) + _encoder(data.get("static_encoder"), data.get("encoder_page"))
            + _checks(data.get("stress"), data.get("eval_speed")))
