"""Chunking speed (MB/s of UTF-8 input) of our strategies vs the anchors, on the same corpora.

Corpora:
* ``markdown``: every ``*.md`` shipped inside the installed packages (``site-packages/**``) whose
  front matter our parser accepts (invalid YAML front matter is an error for us: those files are
  listed as skipped), plus this repository's ``content/**/*.md``. The file list is recorded.
* ``chroma``: the five corpora of Chroma's chunking evaluation (plain text).

Every chunker counts exact MiniLM word pieces (ours: the pipeline's ``TokenCounter``; anchors:
``bench.chroma_eval.count_tokens``) at the same budget, 250 pieces including [CLS]/[SEP]. Timed is
the library call itself (ours: ``chunk_text`` -> Chunk records with offsets; the anchors: their
``bench.anchors.LIBRARY_CALLS``, the calls the quality runs make), not the harness's span
location. Chunkers are built once, outside the timing.

Fairness: within one repeat every chunker runs once over the whole corpus, interleaved, so they
share the machine's load; the ratio ours/fastest-anchor is taken per repeat and its median
reported (as well as the ratio of medians). Caches that would carry over between repeats are
reset before each one (Chonkie's ``_estimate_token_count`` lru_cache; semchunk memoizes per
counter function, so each repeat gets a new one; ours: the counter's memo of tokenized words and
the heading-prefix cache); memoization *within* a repeat is kept, for every chunker. The CPU time
of the process is recorded beside wall time, and the default strategy's ratio on it too: on a
machine shared with other work, wall time mostly measures the scheduler.

Not timed: ``semantic`` (it embeds every sentence: model time, not chunking). ``entry`` runs on the
same documents, each made a how-to entry by ``type: how_to`` in its front matter.
"""

from __future__ import annotations

import gc
import hashlib
import platform
import time
import warnings
from pathlib import Path

from bench import arguments, log, write_json
from bench.speed import REPO_ROOT, SPEED_DIR, median

BUDGET = 250  # MiniLM pieces including [CLS]/[SEP], for every chunker
SKIPPED_STRATEGIES = {"semantic": "embeds every sentence with the model: its time is the model's"}
# ``entry`` reads knowledge-base entries: it is timed on the same documents, each given this
# front matter (so sections named like a how-to's become its chunks, the rest is split by size).
ENTRY_FRONT_MATTER = "type: how_to\n"


def site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def markdown_corpus(limit: int | None = None) -> tuple[list[tuple[str, str]], list[dict]]:
    """([(label, text)], skipped) — package markdown our parser accepts, plus content/**/*.md."""
    from pipeline.errors import PipelineError
    from pipeline.parsing.markdown import parse_markdown

    sp = site_packages()
    files = [(f"site-packages/{p.relative_to(sp).as_posix()}", p) for p in sorted(sp.rglob("*.md"))]
    files += [(p.relative_to(REPO_ROOT).as_posix(), p) for p in sorted((REPO_ROOT / "content").rglob("*.md"))]
    docs, skipped = [], []
    for label, path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            skipped.append({"file": label, "reason": f"unreadable: {exc}"})
            continue
        if not text.strip():
            skipped.append({"file": label, "reason": "empty"})
            continue
        try:
            parse_markdown(text, label)
        except PipelineError as exc:
            skipped.append({"file": label, "reason": str(exc).split(": ", 1)[-1][:120]})
            continue
        docs.append((label, text))
    if limit:
        docs = docs[:limit]
    return docs, skipped


def chroma_corpus(limit_chars: int | None = None) -> list[tuple[str, str]]:
    from bench.chroma_eval import CORPUS_IDS, data_dir

    root = data_dir() / "corpora"
    docs = [(f"chroma/{cid}.md", (root / f"{cid}.md").read_text(encoding="utf-8")) for cid in CORPUS_IDS]
    if limit_chars:
        docs = [(label, text[:limit_chars]) for label, text in docs]
    return docs


# --------------------------------------------------------------------------- chunkers
# Each entry: name -> (kind, make) where make() returns (split(text, path), reset()).


def ours(strategy: str):
    def make():
        from pipeline.chunking import chunk_text
        from pipeline.embedding.models import default_counter

        counter = default_counter()

        def split(text, path):
            if strategy == "entry":  # every document as a how-to entry (its front matter says so)
                body = text.removeprefix("---\n")
                text = f"---\n{ENTRY_FRONT_MATTER}{body}" if body != text else f"---\n{ENTRY_FRONT_MATTER}---\n{text}"
            return chunk_text(text, path=path, strategy=strategy, counter=counter, max_tokens=BUDGET)

        def reset():
            # as cold as the anchors: the counter's memo of tokenized words and the heading-prefix cache
            from pipeline.chunking.sections import _prefix

            counter.forget()
            _prefix.cache_clear()

        return split, reset

    return make


def anchor(name: str):
    def make():
        from bench.anchors import LIBRARY_CALLS

        call, reset = LIBRARY_CALLS[name](BUDGET)
        return (lambda text, path: call(text)), reset

    return make


ANCHORS = {f"{name}-{BUDGET}": anchor(name) for name in ("langchain-recursive", "langchain-mdheader-recursive", "chonkie-recursive-md", "semchunk")}


def our_strategies() -> list[str]:
    from pipeline.chunking.registry import strategy_names

    return [s for s in strategy_names() if s not in SKIPPED_STRATEGIES]


def time_corpus(split, reset, docs) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process, chunks) of one pass over ``docs``."""
    reset()
    gc.collect()
    n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, cpu = time.perf_counter(), time.process_time()
        for label, text in docs:
            n += len(split(text, label))
        return time.perf_counter() - t, time.process_time() - cpu, n


def run_corpus(name: str, docs, chunkers: dict, repeats: int, log) -> dict:
    nbytes = sum(len(t.encode("utf-8")) for _, t in docs)
    built = {}
    for cname, (kind, make) in chunkers.items():
        try:
            split, reset = make()
        except ImportError as exc:
            log(f"  {cname}: skipped ({exc})")
            continue
        # warm-up (imports, lazy parsers, first-call costs); not timed
        time_corpus(split, reset, docs[:3])
        built[cname] = (kind, split, reset)
    times: dict[str, list[float]] = {c: [] for c in built}
    cpu_times: dict[str, list[float]] = {c: [] for c in built}
    counts: dict[str, int] = {}
    ratios: list[float] = []
    ratios_default: list[float] = []
    ratios_default_cpu: list[float] = []
    for r in range(repeats):
        order = list(built) if r % 2 == 0 else list(reversed(built))  # alternate order: no position bias
        this, this_cpu = {}, {}
        for cname in order:
            kind, split, reset = built[cname]
            seconds, cpu, n = time_corpus(split, reset, docs)
            times[cname].append(seconds)
            cpu_times[cname].append(cpu)
            counts[cname] = n
            this[cname] = seconds
            this_cpu[cname] = cpu
        anchor_t = [this[c] for c in this if built[c][0] == "anchor"]
        ours_t = [this[c] for c in this if built[c][0] == "ours"]
        if anchor_t and ours_t:
            ratios.append(min(anchor_t) / min(ours_t))
            if "markdown" in this:
                ratios_default.append(min(anchor_t) / this["markdown"])
                anchor_cpu = min(this_cpu[c] for c in this if built[c][0] == "anchor")
                if this_cpu["markdown"] > 0:
                    ratios_default_cpu.append(anchor_cpu / this_cpu["markdown"])
        log(f"  {name} repeat {r + 1}/{repeats}: " + ", ".join(f"{c} {nbytes / this[c] / 1e6:.2f}" for c in built) + " MB/s")
    rows = []
    for cname, (kind, _, _) in built.items():
        med = median(times[cname])
        rows.append({
            "chunker": cname, "kind": kind, "chunks": counts.get(cname),
            "seconds": times[cname], "median_seconds": med, "mb_per_s": nbytes / med / 1e6,
            "cpu_seconds": cpu_times[cname], "median_cpu_seconds": median(cpu_times[cname]),
        })
    anchors_rows = [r for r in rows if r["kind"] == "anchor"]
    fastest = max(anchors_rows, key=lambda r: r["mb_per_s"]) if anchors_rows else None
    for row in rows:
        row["ratio_vs_fastest_anchor"] = row["mb_per_s"] / fastest["mb_per_s"] if fastest else None
    return {
        "corpus": name, "documents": len(docs), "bytes": nbytes, "repeats": repeats,
        "rows": rows,
        "fastest_anchor": fastest["chunker"] if fastest else None,
        "per_repeat_ratio_fastest_ours_vs_fastest_anchor": ratios,
        "median_ratio_fastest_ours_vs_fastest_anchor": median(ratios),
        "per_repeat_ratio_markdown_vs_fastest_anchor": ratios_default,
        "median_ratio_markdown_vs_fastest_anchor": median(ratios_default),
        # CPU time of the process (every thread): on a shared machine, other load stretches wall
        # time by whatever the scheduler gives each run; CPU time mostly not
        "per_repeat_ratio_markdown_vs_fastest_anchor_cpu": ratios_default_cpu,
        "median_ratio_markdown_vs_fastest_anchor_cpu": median(ratios_default_cpu),
    }


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, SPEED_DIR / "chunking.json", quick="2 repeats on small slices")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    repeats = 2 if args.quick else args.repeats
    md_docs, md_skipped = markdown_corpus(limit=12 if args.quick else None)
    chroma_docs = chroma_corpus(limit_chars=40_000 if args.quick else None)
    chunkers = {s: ("ours", ours(s)) for s in our_strategies()}
    chunkers.update({a: ("anchor", make) for a, make in ANCHORS.items()})

    t0 = time.perf_counter()
    results = {}
    for name, docs in (("markdown", md_docs), ("chroma", chroma_docs)):
        log(f"chunking speed on {name}: {len(docs)} documents")
        results[name] = run_corpus(name, docs, chunkers, repeats, log)
    h = hashlib.sha256()
    for label, text in md_docs:
        h.update(label.encode() + b"\0" + text.encode() + b"\0")
    payload = {
        "budget_tokens": BUDGET,
        "quick": args.quick,
        "python": platform.python_version(),
        "skipped_strategies": SKIPPED_STRATEGIES,
        "entry_input": f"every document made a how-to entry: `{ENTRY_FRONT_MATTER.strip()}` added to its front matter",
        "markdown_files": [label for label, _ in md_docs],
        "markdown_files_skipped": md_skipped,
        "markdown_digest": h.hexdigest()[:16],
        "corpora": results,
        "seconds": time.perf_counter() - t0,
    }
    write_json(args.out, payload)
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
