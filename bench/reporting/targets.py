"""The targets of issues 6, 11 and 14 and their verdicts: each ``*_targets`` function turns loaded results into
``[(target, verdict, evidence)]`` rows, the verdict *met*, *not met*, *partly measured* or *not measured* (a
missing result is never *met*). The thresholds are the constants below, stated once."""

from __future__ import annotations

from bench.reporting.formatting import f1, pct
from bench.reporting.inputs import DEFAULT_OURS, DEFAULT_STRATEGY, anchor_names, by_name, metric

PAPER = {"recall": 78.5, "iou": 5.4}  # Chroma's chunking paper, its MiniLM row for LangChain Recursive 250: a reference
TARGETS = {
    "chroma_recall": 85.0, "chroma_iou": 7.0, "overhead": 0.05, "noop_seconds": 1.0,
    "noop_docs": 1000, "reembedded": 1, "chunking_ratio": 2.0,
    # issue 14 (scale): no-op of 10k documents, its growth, peak RSS at 100k chunks
    "scale_noop_docs": 10000, "scale_noop_seconds": 3.0, "scale_growth": 1.2,
    "scale_rss_chunks": 100_000, "scale_rss_mb": 2048,
}
ENCODING_TARGET = {"speedup": 2.5, "cosine": 0.999, "texts": 500}
RAY_TARGET = 0.85  # Ray's throughput over the local build's: within 15 %


def best_case_overhead(cold: dict) -> tuple[float | None, float | None, float | None]:
    """(outside-embed s, raw encode s, share) from the least-disturbed measurements of the runs.

    Contention only ever slows a measurement down, so the minimum over runs of the time outside
    the encode and of a raw encode (before or after the build) estimates an unloaded machine; the
    share ``outside / (outside + raw)`` is then the overhead of a cold build there. A fast encode
    makes the share larger, so this is the harder test of the target."""
    runs = cold.get("runs", [])
    outside = [r["outside_embed_seconds"] for r in runs if r.get("outside_embed_seconds") is not None]
    raws = [r[k] for r in runs for k in ("raw_before_seconds", "raw_after_seconds") if r.get(k)]
    if not outside or not raws:
        return None, None, None
    o, w = min(outside), min(raws)
    return o, w, o / (o + w)


def targets(data: dict) -> list[tuple[str, str, str]]:
    """[(target, verdict, evidence)]."""
    out = []
    anchors = anchor_names()

    def beats(res: dict | None, label: str):
        rs = by_name(res)
        ours = rs.get(DEFAULT_OURS)
        present = [a for a in anchors if a in rs]
        if not ours or not present:
            return None, f"{label}: not measured"
        r, i = metric(ours, "recall"), metric(ours, "iou")
        losing = [a for a in present if not (r > metric(rs[a], "recall") and i > metric(rs[a], "iou"))]
        best_r = max(metric(rs[a], "recall") for a in present)
        best_i = max(metric(rs[a], "iou") for a in present)
        ev = f"{label}: ours recall {r:.1f} / IoU {i:.1f} vs best anchor recall {best_r:.1f} / IoU {best_i:.1f}"
        if losing:
            ev += f" (not beaten on both: {', '.join(losing)})"
        return not losing, ev

    c_ok, c_ev = beats(data["chroma"], "Chroma")
    m_ok, m_ev = beats(data["markdown"], "markdown set")
    verdict = "not measured" if c_ok is None and m_ok is None else (
        "met" if c_ok and m_ok else "not met" if (c_ok is False or m_ok is False) else "partly measured")
    out.append(("Default strategy beats every anchor on recall@5 **and** IoU@5 at once, on both sets, same budget",
                verdict, "; ".join([c_ev, m_ev])))

    ours = by_name(data["chroma"]).get(DEFAULT_OURS)
    if ours:
        r, i = metric(ours, "recall"), metric(ours, "iou")
        ok = r >= TARGETS["chroma_recall"] and i >= TARGETS["chroma_iou"]
        out.append((f"Chroma: recall@5 ≥ {TARGETS['chroma_recall']:.0f} with IoU@5 ≥ {TARGETS['chroma_iou']:.0f}",
                    "met" if ok else "not met", f"{DEFAULT_OURS}: recall {r:.1f}, IoU {i:.1f} (mean size {ours['mean_tokens']:.0f} pieces)"))
    else:
        out.append((f"Chroma: recall@5 ≥ {TARGETS['chroma_recall']:.0f} with IoU@5 ≥ {TARGETS['chroma_iou']:.0f}", "not measured", "no Chroma result for " + DEFAULT_OURS))

    rs = by_name(data["markdown"])
    ours = rs.get(DEFAULT_OURS)
    others = [r for n, r in rs.items() if not n.startswith("ours")]
    name = "Markdown set: beat the anchors' recall@1000 tokens (issue: ~81–82 at 250 pieces) and their IoU (~4–5; 7.4 only at 128 pieces) at once"
    if ours and others:
        rb, ib = metric(ours, "recall_at_budget"), metric(ours, "iou")
        best_rb = max(others, key=lambda r: metric(r, "recall_at_budget") or 0)
        best_i = max(others, key=lambda r: metric(r, "iou") or 0)
        ok = rb > metric(best_rb, "recall_at_budget") and ib > metric(best_i, "iou")
        out.append((name, "met" if ok else "not met",
                    f"ours recall@1000 {rb:.1f}, IoU {ib:.1f}; best anchor recall@1000 {metric(best_rb, 'recall_at_budget'):.1f} "
                    f"({best_rb['name']}), best anchor IoU {metric(best_i, 'iou'):.1f} ({best_i['name']})"))
    else:
        out.append((name, "not measured", "no markdown-set results (python -m bench.retrieval --set markdown)"))

    b = data["builds"] or {}
    cold = (b.get("cold") or [None])[-1]
    if cold and cold.get("overhead_share_direct") is not None:
        o, w, share = best_case_overhead(cold)
        ok = share <= TARGETS["overhead"]
        out.append((f"Pipeline overhead ≤ {100 * TARGETS['overhead']:.0f} % of a cold build", "met" if ok else "not met",
                    f"{cold['documents']} documents / {cold['chunks']} chunks, {len(cold['runs'])} runs: least-disturbed time outside "
                    f"the model's encode {f1(o, 2)} s vs raw `model.encode` of the same chunks {f1(w, 1)} s → overhead "
                    f"**{pct(share)}**; medians under the load of the moment: outside-embed {pct(cold['overhead_share_direct'])} of "
                    f"build − model load, (build − load − raw encode) {pct(cold.get('overhead_share'))}; model load "
                    f"(~{f1(max(r.get('load_seconds', 0) for r in cold['runs']))} s) not counted"))
    else:
        out.append((f"Pipeline overhead ≤ {100 * TARGETS['overhead']:.0f} % of a cold build", "not measured", ""))

    noop = {n["documents"]: n for n in b.get("noop", [])}
    big = noop.get(TARGETS["noop_docs"])
    if big:
        cli = b.get("noop_cli", {}).get("wall_seconds")
        ok = big["build_seconds"] < TARGETS["noop_seconds"]
        out.append(("No-op rebuild of 1,000 documents < 1 s", "met" if ok else "not met",
                    f"build() {big['build_seconds']:.2f} s in-process (median of {len(big['runs'])}); whole process "
                    f"{big['wall_seconds']:.2f} s; `pipeline build` CLI {f1(cli, 2)} s; torch imported: "
                    f"{'yes' if big['torch_imported'] else 'no'}"))
    else:
        out.append(("No-op rebuild of 1,000 documents < 1 s", "not measured", "quick run: no 1,000-document corpus" if b else ""))

    inc = b.get("incremental")
    if inc:
        ok = all(e == TARGETS["reembedded"] for e in inc["embedded"])
        out.append(("One edited section → one chunk re-embedded", "met" if ok else "not met",
                    f"chunks re-embedded per edit: {inc['embedded']}; rebuild {inc['build_seconds']:.1f} s "
                    f"(of which model load {inc['load_seconds_in_build']:.1f} s), whole process {inc['wall_seconds']:.1f} s"))
    else:
        out.append(("One edited section → one chunk re-embedded", "not measured", ""))

    out += scale_targets(data.get("scale"))

    ch = data["chunking"]
    if ch and "markdown" in ch["corpora"]:
        md = ch["corpora"]["markdown"]
        ratio = md.get("median_ratio_markdown_vs_fastest_anchor")
        cr = ch["corpora"].get("chroma", {})
        rows = {r["chunker"]: r for r in md["rows"]}
        ok = ratio is not None and ratio >= TARGETS["chunking_ratio"]
        out.append(("Chunking with exact model-token counting ≥ 2× the fastest anchor", "met" if ok else "not met",
                    f"markdown corpus: `{DEFAULT_STRATEGY}` {f1(rows.get(DEFAULT_STRATEGY, {}).get('mb_per_s'), 3)} MB/s vs "
                    f"{md['fastest_anchor']} {f1(rows.get(md['fastest_anchor'], {}).get('mb_per_s'), 3)} MB/s: "
                    f"×{f1(ratio, 2)} (median of per-repeat ratios"
                    + (f"; on CPU time ×{f1(md['median_ratio_markdown_vs_fastest_anchor_cpu'], 2)}"
                       if md.get("median_ratio_markdown_vs_fastest_anchor_cpu") is not None else "")
                    + f"); Chroma corpora: ×{f1(cr.get('median_ratio_markdown_vs_fastest_anchor'), 2)}"))
    else:
        out.append(("Chunking with exact model-token counting ≥ 2× the fastest anchor", "not measured", ""))
    return out


def scale_targets(scale: dict | None) -> list[tuple[str, str, str]]:
    """Issue 14's pipeline-side targets from ``bench.speed.scale``'s result (hashing embedder)."""
    docs, secs = TARGETS["scale_noop_docs"], TARGETS["scale_noop_seconds"]
    name_noop = f"No-op rebuild of {docs:,} documents ≤ {secs:.0f} s, growth linear or better"
    name_rss = f"Peak RSS < {TARGETS['scale_rss_mb'] / 1024:.0f} GB at {TARGETS['scale_rss_chunks']:,} chunks (cold and no-op)"
    rows = (scale or {}).get("rows", [])
    if not rows:
        return [(name_noop, "not measured", "no scale run"), (name_rss, "not measured", "no scale run")]
    out = []
    by_docs = {r["documents"]: r for r in rows}
    growth = [b["noop"]["build_seconds"] / b["documents"] / (a["noop"]["build_seconds"] / a["documents"])
              for a, b in zip(rows, rows[1:])]
    trend = ", ".join(f"{a['documents']:,}→{b['documents']:,} ×{g:.2f}" for a, b, g in zip(rows, rows[1:], growth))
    row = by_docs.get(docs)
    if row:
        ok = row["noop"]["build_seconds"] <= secs and all(g <= TARGETS["scale_growth"] for g in growth)
        out.append((name_noop, "met" if ok else "not met",
                    f"build() {row['noop']['build_seconds']:.2f} s in process (median of {scale['repeats']}), whole process "
                    f"{row['noop']['wall_seconds']:.2f} s; seconds per document, each size over the previous: {trend or '–'} "
                    f"(linear = ×1.00; met up to ×{TARGETS['scale_growth']:.2f}, the noise of the shared cores)"))
    else:
        out.append((name_noop, "not measured", f"sizes run: {', '.join(f'{d:,}' for d in by_docs)}"))
    big = [r for r in rows if r["chunks"] >= TARGETS["scale_rss_chunks"]]
    if big:
        r = big[0]
        peak = max(r["cold"]["maxrss_mb"], r["noop"]["maxrss_mb"])
        ok = peak < TARGETS["scale_rss_mb"]
        out.append((name_rss, "met" if ok else "not met",
                    f"{r['documents']:,} documents / {r['chunks']:,} chunks: cold {r['cold']['maxrss_mb']:.0f} MB, "
                    f"no-op {r['noop']['maxrss_mb']:.0f} MB, one edit {r['edit']['maxrss_mb']:.0f} MB"))
    else:
        r = rows[-1]
        out.append((name_rss, "not measured",
                    f"largest run {r['documents']:,} documents / {r['chunks']:,} chunks: cold {r['cold']['maxrss_mb']:.0f} MB"))
    return out


def encoding_verdict(b: dict) -> tuple[str, str]:
    """Issue 14: ``auto`` ≥ 2.5× torch fp32 at min cosine ≥ 0.999 over ≥ 500 real chunks where the CPU
    has native bf16; never slower than torch fp32 where it has not."""
    row = next(r for r in b["rows"] if r["backend"] == b["auto_chooses"])
    x, cos = row["speedup_vs_torch_fp32"], row["cosine_min"]
    if b["native_bf16"]:
        ok = x >= ENCODING_TARGET["speedup"] and cos >= ENCODING_TARGET["cosine"]
        verdict = "met" if ok and b["texts"] >= ENCODING_TARGET["texts"] else "not met" if not ok else "partly measured"
    else:
        verdict = "met" if x >= 1.0 else "not met"
    evidence = (f"native bf16: {'yes' if b['native_bf16'] else 'no'}; `auto` chooses **{b['auto_chooses']}**: "
                f"×{x:.2f} torch fp32 (median of {b['rounds']} within-round ratios), min cosine {cos:.6f} over "
                f"{b['texts']} real chunks; fastest backend with min cosine ≥ {b['cosine_floor']}: {b['fastest_eligible']}")
    other = next((r for r in b["rows"] if r["backend"] == b.get("auto_on_other_cpu")), None)
    if other:
        evidence += (f"; on a CPU {'without' if b['native_bf16'] else 'with'} native bf16 `auto` picks `{other['backend']}`, "
                     f"×{other['speedup_vs_torch_fp32']:.2f} here (measured on this CPU, not on one of that kind)")
    return verdict, evidence


def ray_builds_verdict(builds: dict) -> tuple[str, str]:
    """(verdict, evidence) of the Ray row from whole builds: met when every whole build is within
    15 % of local; else, when the fitted rate once running is, it says so and from what size."""
    from bench.speed.executor_builds import RUN_LABELS

    same = all(c["identical"] for c in builds["corpora"])
    ratios = [(c, run, c[f"{run}_over_local"]) for c in builds["corpora"] for run in RUN_LABELS if f"{run}_over_local" in c]
    m = builds.get("marginal")
    evidence = "; ".join(f"{c['corpus']} ({c['chunks']:,} chunks), Ray {RUN_LABELS[run]}: ×{r:.2f}" for c, run, r in ratios)
    if m:
        evidence += (f"; once running (rate past the fixed cost, {m['from']} → {m['to']}): Ray started by the build "
                     f"×{m['ray_over_local']:.2f}, joined ×{m['ray_joined_over_local']:.2f}; fixed cost {m['ray_fixed_seconds']:.1f} / "
                     f"{m['ray_joined_fixed_seconds']:.1f} s against local's {m['local_fixed_seconds']:.1f} s")
    evidence += f"; site bytes identical in every round: {'yes' if same else 'NO'} (`bench.speed.executor_builds`)"
    if same and all(r >= RAY_TARGET for _, _, r in ratios):
        return "met", evidence
    if same and m and min(m["ray_over_local"], m["ray_joined_over_local"]) >= RAY_TARGET:
        ends = [m["ray_within_target_from"], m["ray_joined_within_target_from"]]
        sizes = "" if None in ends else f" from ~{round(max(ends), -2):,.0f} chunks"
        return (f"met once running, and by whole builds{sizes}; not by smaller builds (Ray's start is a fixed "
                f"~{m['ray_fixed_seconds'] - m['local_fixed_seconds']:.0f} s more than local's)"), evidence
    return "not met", evidence


def engine_targets(backends: dict | None, builds: dict | None) -> list[tuple[str, str, str]]:
    """Issue 14's encoding and Ray targets: [(target, verdict, evidence)]; the Ray row is judged by
    whole builds (``bench.speed.executor_builds``)."""
    name = "Encoding ≥ 2.5× fp32 torch at cosine ≥ 0.999 (min over 500 real chunks) with native bf16; never slower than fp32 without"
    out = [(name, *encoding_verdict(backends)) if backends else (name, "not measured", "`python -m bench.speed.backends`")]
    name = "Ray executor: same site bytes as a local build; on 2 local workers, throughput within 15 % of the local build"
    out.append((name, *ray_builds_verdict(builds)) if builds and builds.get("corpora")
               else (name, "not measured", "`python -m bench.speed.executor_builds`"))
    return out


def _hybrid_beats_single(summary: dict, hybrid: str, single: str) -> tuple[bool, str]:
    """Issue 11's quality rule for one fusion row of a set's ``summary``: R@5 at least 3 points above the best
    single method's (``single``) with IoU@5 no lower than vector's; (met, evidence)."""
    h, s1, v = summary[hybrid], summary[single], summary["vector"]
    gain = h["recall"] - s1["recall"]
    return (gain >= 3 and h["iou"] >= v["iou"],
            f"{hybrid} {h['recall']:.1f} vs {single} {s1['recall']:.1f} ({gain:+.1f}); IoU {h['iou']:.1f} vs vector {v['iou']:.1f}")


def search_targets(quality: dict | None) -> list[tuple[str, str, str]]:
    """Issue 11's targets, judged from the search results (None: not measured)."""
    out = []
    if quality:
        for r in quality["results"]:
            s, single = r["summary"], max(("lexical", "vector"), key=lambda m: r["summary"][m]["recall"])
            h = "hybrid-score"  # the clients' default fusion
            ok, evidence = _hybrid_beats_single(s, h, single)
            out.append((f"{r['set']}: hybrid R@5 ≥ best single + 3 with IoU ≥ vector's", "met" if ok else "not met",
                        evidence
                        + (f"; ceilings: oracle of the two lists {r['oracle_recall']:.1f}" if "oracle_recall" in r else "")
                        + (f", re-ranking the fused first {r['rerank_depth']} {r['rerank_ceiling_recall']:.1f}"
                           if "rerank_ceiling_recall" in r else "")))
            ok = s["lexical"]["recall"] >= s["bm25"]["recall"]
            out.append((f"{r['set']}: lexical alone (the page before its model) at BM25's level", "met" if ok else "not met",
                        f"lexical {s['lexical']['recall']:.1f} vs bm25 {s['bm25']['recall']:.1f}"))
    return out
