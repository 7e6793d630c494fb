"""The report's speed sections, as markdown: chunking MB/s, builds (cold, no-op, incremental), encoding
variants and backends, query latency, and a real documentation tree built with the model. Each takes its loaded
result (None: "Not run") and says how it was measured; the verdicts are ``bench.reporting.targets``'."""

from __future__ import annotations

from bench.reporting.formatting import f1, pct, table
from bench.reporting.inputs import DEFAULT_STRATEGY
from bench.reporting.targets import best_case_overhead, encoding_verdict


def chunking_section(ch: dict | None) -> str:
    if not ch:
        return "Not run.\n"
    parts = [
        f"Input MB/s (UTF-8 bytes / 10⁶ / median seconds over {ch['corpora']['markdown']['repeats']} repeats), every chunker at "
        f"{ch['budget_tokens']} MiniLM pieces including [CLS]/[SEP], counting exact model tokens. Timed: the library call "
        "(ours: `chunk_text` → chunk records with offsets and heading context; LangChain: `split_text`; Chonkie: "
        "`chunk`; semchunk: `chunk(..., offsets=True)`). The chunkers run interleaved within each repeat; the "
        "ratio is per repeat (ours / fastest anchor of that repeat), then the median. Caches that would survive "
        "between repeats are cleared (Chonkie's token-count lru_cache, semchunk's memoized counter, our counter's "
        "memo of tokenized words and heading-prefix cache); within a repeat every chunker keeps what it memoizes "
        "across documents, as in a build. `TOKENIZERS_PARALLELISM=false` for everyone. Rows of kind *reference* are "
        "not chunkers: our markdown parse alone, as it runs (block rules of markdown-it-pyrs, markdown-it-py where "
        "`pipeline/parsing/rsblocks.py` declines) and with markdown-it-py for every document (block rules only: "
        "nothing reads inline tokens), and one pass of the MiniLM tokenizer over each document, the straightforward "
        "way to count exact tokens (ours tokenizes each distinct whitespace-separated word once instead).",
    ]
    for name, label in (("markdown", "Markdown corpus"), ("chroma", "Chroma corpora (plain text)")):
        c = ch["corpora"].get(name)
        if not c:
            continue
        rows = []
        for r in sorted(c["rows"], key=lambda r: -r["mb_per_s"]):
            chunker = f"**{r['chunker']}**" if r["chunker"] == DEFAULT_STRATEGY else r["chunker"]
            rows.append([chunker, r["kind"], r["chunks"], f"{r['mb_per_s']:.3f}", f"{r['median_seconds']:.2f}",
                         f"×{r['ratio_vs_fastest_anchor']:.2f}"])
        parts.append(
            f"**{label}**: {c['documents']} documents, {c['bytes'] / 1e6:.3f} MB. Fastest anchor: {c['fastest_anchor']}. "
            f"Default strategy `{DEFAULT_STRATEGY}` / fastest anchor, median of per-repeat ratios: "
            f"**×{f1(c.get('median_ratio_markdown_vs_fastest_anchor'), 2)}** (per repeat: "
            + ", ".join(f"{x:.2f}" for x in c.get("per_repeat_ratio_markdown_vs_fastest_anchor", [])) + "); fastest of ours: "
            f"×{f1(c.get('median_ratio_fastest_ours_vs_fastest_anchor'), 2)}."
            + (f" On CPU time of the process (less disturbed by other load on a shared machine): ×"
               f"{f1(c.get('median_ratio_markdown_vs_fastest_anchor_cpu'), 2)} (per repeat: "
               + ", ".join(f"{x:.2f}" for x in c["per_repeat_ratio_markdown_vs_fastest_anchor_cpu"]) + ")."
               if c.get("per_repeat_ratio_markdown_vs_fastest_anchor_cpu") else "")
            + "\n\n"
            + table(["chunker", "kind", "chunks", "MB/s (median)", "seconds (median)", "vs fastest anchor"], rows)
        )
    sem = ch.get("semantic")
    notes = [f"`{k}`: {v}" for k, v in ch.get("skipped_strategies", {}).items()]
    if ch.get("entry_input"):
        notes.append(f"`entry`: {ch['entry_input']}")
    if sem and "mb_per_s" in sem:
        notes.append(f"`semantic` on the markdown corpus (one run, after a warm-up document that loads the model in "
                     f"{sem['warmup_seconds']:.1f} s): **{sem['mb_per_s']:.3f} MB/s**, {sem['chunks']} chunks, "
                     f"{sem['seconds']:.1f} s — it embeds every sentence, so it is bound by the model, not the splitter.")
    elif sem:
        notes.append(f"`semantic`: failed ({sem.get('error')})")
    parts.append("Not in the tables:\n\n" + "\n".join(f"- {n}" for n in notes))
    skipped = ch.get("markdown_files_skipped", [])
    files = ch.get("markdown_files", [])
    parts.append(
        f"<details><summary>Markdown corpus: {len(files)} files (digest {ch.get('markdown_digest')}); "
        f"{len(skipped)} skipped</summary>\n\n"
        + "\n".join(f"- `{f}`" for f in files)
        + ("\n\nSkipped (our parser rejects them):\n\n" + "\n".join(f"- `{s['file']}`: {s['reason']}" for s in skipped) if skipped else "")
        + "\n\n</details>"
    )
    return "\n\n".join(parts) + "\n"


def _cumulative_table(profile: dict) -> str:
    """The first 14 functions of a cProfile result (``bench/speed/builds.py``) by cumulative time."""
    rows = [[f"`{r['function']}`", r["calls"], f"{r['cumtime']:.2f}", f"{r['tottime']:.2f}"] for r in profile["cumulative"][:14]]
    return table(["function (cumulative)", "calls", "cum s", "own s"], rows)


def builds_section(b: dict | None) -> str:
    if not b:
        return "Not run.\n"
    parts = []
    c = b.get("corpus", {})
    parts.append(
        f"Synthetic corpus (`bench/synthetic.py`, seed 0): {c.get('documents')} documents, {c.get('chunks')} chunks "
        f"with `markdown` at {c.get('max_tokens', 256)} pieces (its default), {c.get('bytes', 0) / 1e6:.1f} MB over nested topic directories "
        "(front matter, headings, paragraphs, lists, fenced code). The first N documents form the N-document corpus. "
        "Every build runs in a fresh process (`bench/speed/build_worker.py`: the library's `build()` with the stages "
        "wrapped in timers)."
    )
    cold = b.get("cold", [])
    if cold:
        from statistics import median

        def med(runs, fn):
            vals = [fn(r) for r in runs]
            vals = [v for v in vals if v is not None]
            return median(vals) if vals else None

        rows = []
        for x in cold:
            runs = x["runs"]
            load = med(runs, lambda r: r.get("load_seconds"))
            wo = med(runs, lambda r: r["build_seconds"] - r["load_seconds_in_build"])
            enc = med(runs, lambda r: r["embed_seconds"] - r["load_seconds_in_build"])
            bo, bw, bs = best_case_overhead(x)
            rows.append([
                x["documents"], x["chunks"], len(runs), f1(load), f1(wo), f1(enc), f1(x["raw_encode_seconds"]),
                f1(x.get("outside_embed_seconds"), 2), f1(x["chunks"] / wo if wo else None),
                f1(x["chunks"] / (wo + load) if wo and load else None), f1(x.get("raw_chunks_per_s")),
                pct(x["encode_share"]), pct(x.get("overhead_share_direct")), pct(x.get("overhead_share")),
                f"{f1(bo, 2)} / {f1(bw, 1)} → **{pct(bs)}**", f"{x['maxrss_mb']:.0f}",
            ])
        parts.append(
            "**Cold builds** (empty site and cache; each column is the median over the runs). The model is loaded "
            "inside the build on the first run and before it (for the raw encode) on the others, so the build "
            "column leaves the load out; *chunks/s incl. load* adds it back. *encode* = time inside the embedder's "
            "`embed` minus the model load; *raw encode* = a bare `SentenceTransformer.encode` of exactly the texts the "
            "build embedded, same batch size, same process, just after the build (and from the second run also just "
            "before it: the mean of both); *outside embed* = build − time inside `embed`: chunking, files, cache, "
            "keywords, context, index, publish; *encode share* = encode / build; *overhead* = outside embed / build, "
            "measured directly; *overhead vs raw* = (build − raw encode) / build, exposed to load changes between "
            "the encodes; *best case* = the minimum over runs of the time outside embed and of a raw encode "
            "(contention only slows things down, so this estimates an unloaded machine, where the encode is fastest "
            "and the overhead share largest: the target is judged on it).\n\n"
            + table(["docs", "chunks", "runs", "model load s", "build s (w/o load)", "encode s", "raw encode s",
                     "outside embed s", "chunks/s", "chunks/s incl. load", "raw chunks/s", "encode share", "overhead",
                     "overhead vs raw", "best case: outside / raw s → overhead", "peak RSS MB"], rows)
        )
        stage = cold[-1]["runs"][0].get("stage_seconds", {})
        if stage:
            parts.append(f"Stages of one {cold[-1]['documents']}-document cold build (s): "
                         + ", ".join(f"{k} {v:.2f}" for k, v in stage.items()))
    bf = (b.get("cold_bf16") or [None])[-1]
    fp = next((x for x in cold if bf and x["documents"] == bf["documents"]), None)
    if bf and fp:
        def speed(x):
            wo = x["build_seconds"] - x["load_seconds_in_build"]
            return x["chunks"] / wo if wo else None

        sp_bf, sp_fp = speed(bf), speed(fp)
        parts.append(
            f"**Cold builds with bf16 encoding** (`embedder = \"minilm+bf16\"`, opt-in; {bf['documents']} documents, "
            f"median of {len(bf['runs'])}): build w/o load {f1(bf['build_seconds'] - bf['load_seconds_in_build'])} s, "
            f"**{f1(sp_bf)} chunks/s** vs {f1(sp_fp)} with fp32 in the table above (×{f1(sp_bf / sp_fp if sp_bf and sp_fp else None, 2)}); "
            f"outside embed {f1(bf.get('outside_embed_seconds'), 2)} s = {pct(bf.get('overhead_share_direct'))} of the build. "
            "Agreement of bf16 with fp32 vectors: the Encoding section."
        )
    cp = b.get("cold_profile")
    if cp:
        parts.append(
            f"Where a cold build's time outside the model goes: the same {cp['documents']}-document cold build with the "
            f"`hashing` test embedder (no model) took {cp['build_seconds']:.2f} s under cProfile (stages: "
            + ", ".join(f"{k} {v:.2f}" for k, v in cp["stage_seconds"].items()) + " s).\n\n"
            + _cumulative_table(cp)
        )
    seed = b.get("seed")
    if seed:
        parts.append(f"**Seed build** of the {seed['documents']}-document cache (kept between runs; only missing chunks are "
                     f"embedded): {seed['embedded']} chunks embedded, {seed['build_seconds']:.1f} s, peak RSS {seed['maxrss_mb']:.0f} MB.")
    noop = b.get("noop", [])
    if noop:
        rows = []
        for n in noop:
            st = n.get("stage_seconds", {})
            rows.append([n["documents"], n["chunks"], f1(n["build_seconds"], 2), f1(n["wall_seconds"], 2),
                         f1(n["import_seconds"], 2), "yes" if n["torch_imported"] else "no", n["embedded"],
                         n["files_written"], f"{n['maxrss_mb']:.0f}",
                         f1(n["warm"]["build_seconds"], 2) if n.get("warm") else "–",
                         ", ".join(f"{k.replace('_chunks', '').replace('run_', '').replace('_sources', '').replace('_site', '')} {v:.2f}" for k, v in st.items())])
        parts.append(
            f"**No-op rebuilds** (nothing changed; medians of {len(noop[0]['runs'])} fresh processes). *process* = the whole "
            "`python -m bench.speed.build_worker` process (interpreter start, imports, build); *warm* = the first build "
            "of that corpus into an empty site with a full cache.\n\n"
            + table(["docs", "chunks", "build() s", "process s", "import s", "torch imported", "embedded", "files",
                     "peak RSS MB", "warm build s", "stages (s)"], rows)
        )
    cli = b.get("noop_cli")
    if cli:
        parts.append(f"The CLI, `{cli['command']}`, on the same {cli['documents']} documents with nothing changed: "
                     f"**{cli['wall_seconds']:.2f} s** wall (median of {len(cli['runs'])}).")
    prof = b.get("noop_profile")
    if prof:
        rows2 = [[f"`{r['function']}`", r["calls"], f"{r['tottime']:.2f}"] for r in prof["tottime"][:10]]
        parts.append(
            f"Where a no-op rebuild of {c.get('documents')} documents spends its time (cProfile, {prof['total_seconds']:.1f} s "
            "under the profiler):\n\n"
            + _cumulative_table(prof)
            + "\n\n" + table(["function (own time)", "calls", "own s"], rows2)
        )
    inc = b.get("incremental")
    if inc:
        rows = [[i + 1, r["embedded"], f1(r["build_seconds"]), f1(r["load_seconds_in_build"]),
                 f1(r["embed_seconds"] - r["load_seconds_in_build"], 2), f1(r["wall_seconds"]),
                 "yes" if r["torch_imported"] else "no", f"{r['maxrss_mb']:.0f}"] for i, r in enumerate(inc["runs"])]
        parts.append(
            f"**Incremental rebuilds** ({inc['documents']} documents; one sentence of one section of `{inc['edited']}` "
            "changed, a different edit each time; the document is restored afterwards, which re-embeds "
            f"{inc['restore_embedded']} chunk).\n\n"
            + table(["edit", "chunks re-embedded", "build s", "model load s", "encode s", "process s", "torch imported",
                     "peak RSS MB"], rows)
        )
    return "\n\n".join(parts) + "\n"


def encoding_section(e: dict | None, backends: dict | None = None) -> str:
    """``bench.speed.encoding`` and, after it, ``bench.speed.backends`` (run alone or inside it)."""
    backends = backends or (e or {}).get("backends")
    if not e:
        return (backends_section(backends) + "\n") if backends else "Not run.\n"
    rows = []
    for r in e["rows"]:
        best = (e.get("block") or e["texts"]) / min(r["seconds"]) if r.get("seconds") else None
        rows.append([r["variant"], f"{r['texts_per_s']:.1f}", f1(best), f"×{r['speedup_vs_baseline']:.2f}", f"{r['cosine_min']:.6f}",
                     f"{r['cosine_mean']:.6f}", f"{1 - r['cosine_min']:.1e}"])
    parts = [
        f"{e['texts']} chunk texts (our `markdown` chunks of Chroma's corpora, heading context included; mean "
        f"{e['mean_tokens']:.0f}, max {e['max_tokens']} pieces) in blocks of {e.get('block', e['texts'])}; in each of "
        f"{e.get('rounds', e['repeats'])} rounds every variant encodes the same block back to back (rotating order) and "
        "its speed-up is the baseline's time over its own in that round, then the median over rounds; *best round* "
        "is the fastest round (the least disturbed by other work on the shared cores); "
        f"{e['torch_threads']} torch threads unless stated; CPU capability {e['bf16_cpu_capability']}. "
        f"sentence-transformers sorts inputs by length before batching: "
        f"{'confirmed in its source (`length_sorted_idx`)' if e['st_sorts_by_length'] else 'NOT found in its source'}. "
        "Cosine = agreement of each vector with the fp32 batch-32 vector of the same text.",
        table(["variant", "texts/s (all rounds)", "texts/s (best round)", "speed-up vs baseline (median of rounds)", "min cosine", "mean cosine", "max 1 − cosine"], rows),
    ]
    rc = e.get("retrieval")
    if rc and "skipped" not in rc:
        parts.append(
            f"Retrieval with bf16 autocast vs fp32 on Chroma's {rc['questions']} questions against the "
            f"{rc['collection']} collection ({rc['chunks']} chunks): chunk cosine min {rc['chunk_cosine_min']:.6f} / mean "
            f"{rc['chunk_cosine_mean']:.6f}, question cosine min {rc['question_cosine_min']:.6f}; top-5 **set** changed "
            f"for {rc['top5_set_changed']} of {rc['questions']} questions, top-5 order for {rc['top5_order_changed']}; "
            f"recall@5 {rc['fp32']['recall']:.2f} → {rc['bf16']['recall']:.2f}, IoU@5 {rc['fp32']['iou']:.2f} → "
            f"{rc['bf16']['iou']:.2f}, recall@1000 tokens {rc['fp32']['recall_at_budget']:.2f} → {rc['bf16']['recall_at_budget']:.2f}. "
            f"bf16 autocast encoded {rc['bf16_texts_per_s']:.1f} texts/s on the whole collection."
        )
    elif rc:
        parts.append(f"Retrieval check skipped: {rc['skipped']}")
    if backends:
        parts.append(backends_section(backends))
    return "\n\n".join(parts) + "\n"


def query_section(q: dict | None) -> str:
    """``bench.speed.query``: ``pipeline search`` as a whole process, and in-process queries."""
    if not q:
        return "Not run (step `query`).\n"
    p = q["in_process"]
    return (
        f"A site of {q['documents']} FastAPI documents built with the default embedder; queries embedded with ONNX "
        f"Runtime from the cached export (`bench.speed.query`). `pipeline search SITE QUERY --method embedding` as a "
        f"whole process: first call of the run {q['cli_first_seconds']:.2f} s, warm median "
        f"**{q['cli_warm_seconds_median']:.2f} s** over {len(q['cli_warm_seconds'])} calls. In one process "
        f"(`Site.search`): first query {p['first_query_seconds']:.2f} s (session load), then median "
        f"{p['warm_query_seconds_median'] * 1000:.0f} ms; torch imported: {'yes' if p['torch_imported'] else 'no'}.\n"
    )


def backends_section(b: dict) -> str:
    """``bench.speed.backends``: every encoding backend vs torch fp32, and what ``auto`` chose."""
    rows = [[r["backend"], f"{r['texts_per_s']:.1f}", f"×{r['speedup_vs_torch_fp32']:.2f}", f"{r['cosine_min']:.6f}",
             f"{r['cosine_mean']:.6f}"] for r in b["rows"]]
    return "\n\n".join([
        f"**Backends** (`bench.speed.backends`): {b['texts']} of the same chunk texts in blocks of {b['block']}, "
        f"{b['rounds']} rounds, each backend the pipeline's own embedder class (length-bucketed batches of 32); "
        f"speed-up = torch fp32's time over the backend's in the same round, median of rounds; cosine to torch fp32. "
        f"Native bf16 on this CPU: {'yes' if b['native_bf16'] else 'no'}. `auto` chose **{b['auto_chooses']}**; the "
        f"fastest backend with min cosine ≥ {b['cosine_floor']} was **{b['fastest_eligible']}**. Target (issue 14): "
        f"**{encoding_verdict(b)[0]}** — {encoding_verdict(b)[1]}.",
        table(["backend", "texts/s", "speed-up vs torch fp32 (median of rounds)", "min cosine", "mean cosine"], rows),
    ] + [f"`{r['backend']}` is measured only to show why it is not offered: min cosine {r['cosine_min']:.3f}, below 0.99."
         for r in b["rows"] if r["backend"].endswith("int8-dynamic") and r["cosine_min"] < 0.99])


def realdocs_section(r: dict | None) -> str:
    """``bench.speed.realdocs``: a real tree built cold and no-op with the model, link-checked."""
    if not r:
        return "No `realdocs.json` (`python -m bench.speed.realdocs`; needs `../shared/realdocs`).\n"
    cold, noop, links = r["cold"], r["noop"], r["links"]
    return "\n".join([
        f"`{r['tree']}` from `../shared/realdocs`, default settings (`minilm`), empty site and cache, each build in a fresh process.",
        "",
        "| build | documents | chunks | embedded | build s | process s | oversize warnings |",
        "|---|---|---|---|---|---|---|",
        f"| cold | {cold['documents']} | {cold['chunks']} | {cold['embedded']} | {cold['seconds']} | {cold['process_seconds']} | {cold['oversize_warnings']} |",
        f"| no-op | {noop['documents']} | {noop['chunks']} | {noop['embedded']} | {noop['seconds']} | {noop['process_seconds']} | {noop['oversize_warnings']} |",
        "",
        f"Link check of the result: {links['checked']} links, {links['broken']} broken, "
        f"{links['missing_in_source']} missing in the source tree too (left out of the copy).",
        "",
    ])
