"""Build benchmarks on the synthetic corpus (``bench/synthetic.py``), each build in a fresh process.

1. **cold** builds (empty site, empty cache) of 50 / 100 / 200 documents, 3 repeats (5 for the
   largest): chunks/s, model load, time inside ``embed``, and a raw ``SentenceTransformer.encode``
   of the exact texts the build embedded, in the same process, just after the build and (from the
   second repeat, with the texts the first saved) just before it. Pipeline overhead, measured
   directly = build time outside the embedder's ``embed`` call, as a share of build − model load
   (the model load is a fixed cost a raw encode pays too); also given: (build − model load − raw
   encode) / (build − model load), which is exposed to load changes between the two encodes.
2. **seed**: the 1,000-document corpus is built once into a kept cache (only what is missing is
   embedded: the first run on a machine is a cold build of ~4,000 chunks, later runs are quick).
3. **no-op** rebuilds of 250 / 500 / 1,000 documents (5 each): nothing changed; in-process build
   time, whole-process wall time, whether torch was imported, files written, peak RSS. The
   smaller corpora are the first N documents with a copy of the 1,000-document cache, built once
   into a fresh site first (a *warm* build: empty site, full cache). The real CLI
   (``pipeline build``) is timed the same way on 1,000 documents.
4. **incremental**: one sentence of one section of one document edited (3 different edits),
   rebuilt: chunks re-embedded (must be 1) and times; the document is restored afterwards.

Peak memory: ``ru_maxrss`` of each build process. Results: ``bench/.work/speed/builds.json``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import arguments, log, synthetic, write_json
from bench.speed import REPO_ROOT, SPEED_DIR, cli_build, env, median, remove_site

SITE_TOML = """# written by bench/speed/builds.py: what the build worker uses, for the CLI timing
title = "Synthetic benchmark corpus"
embedder = "minilm"

[chunking]
strategy = "markdown"
"""


def worker(content: Path, site: Path, cache: Path, *extra: str, logfile: Path | None = None) -> dict:
    cmd = [sys.executable, "-m", "bench.speed.build_worker", str(content), str(site), str(cache), *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env(), capture_output=True, text=True)
    wall = time.perf_counter() - t
    if logfile:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        with open(logfile, "a", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(cmd)}\n{proc.stderr}\n")
    if proc.returncode != 0:
        raise RuntimeError(f"build worker failed ({proc.returncode}): {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_seconds"] = wall
    return out


def corpus(root: Path, n: int) -> Path:
    """(Re)write documents 0..n-1 under root/content: always pristine, same bytes every run."""
    content = root / "content"
    synthetic.generate(content, n)
    return content


def _fresh(*paths: Path) -> None:
    for p in paths:  # a site's earlier generation, stamps and memo beside it too (pipeline/site/staging.py)
        remove_site(p)


def cold(work: Path, sizes: list[int], repeats: int, last_repeats: int | None = None) -> list[dict]:
    """Cold builds, each run also timing a raw encode of the texts it embedded (module docstring)."""
    out = []
    for n in sizes:
        if n == sizes[-1] and last_repeats:
            repeats = last_repeats
        root = work / f"cold-{n}"
        content = corpus(root, n)
        texts = root / "texts.json"
        runs = []
        for r in range(repeats):
            site, cache = root / "site", root / "cache"
            _fresh(site, cache)
            extra = ["--raw-encode", "--save-texts", str(texts)] + (["--raw-first", str(texts)] if r > 0 and texts.exists() else [])
            res = worker(content, site, cache, *extra, logfile=root / "log.txt")
            build_wo_load = res["build_seconds"] - res["load_seconds_in_build"]
            # measured directly: build time outside the embedder's embed call (chunking, I/O, keywords,
            # context, index, publish); embed itself is model.encode + a normalize of the result
            res["outside_embed_seconds"] = res["build_seconds"] - res["embed_seconds"]
            res["overhead_share_direct"] = res["outside_embed_seconds"] / build_wo_load
            if res.get("raw_encode_seconds"):  # the same against a bare encode of the same texts
                res["overhead_share"] = (build_wo_load - res["raw_encode_seconds"]) / build_wo_load
            runs.append(res)
            log(f"  cold {n} docs #{r + 1}: {res['chunks']} chunks in {res['build_seconds']:.1f} s "
                f"(load {res['load_seconds_in_build']:.1f} s, embed {res['embed_seconds']:.1f} s, raw before "
                f"{res.get('raw_before_seconds', 0):.1f} / after {res.get('raw_after_seconds', 0):.1f} s), outside embed "
                f"{res['outside_embed_seconds']:.1f} s = {100 * res['overhead_share_direct']:.1f} %, "
                f"vs raw {100 * res.get('overhead_share', float('nan')):.1f} %, "
                f"peak {res['maxrss_mb']:.0f} MB")
        out.append(summarize(n, runs, ("build_seconds", "wall_seconds", "overhead_share", "load_seconds_in_build", "embed_seconds",
                                       "outside_embed_seconds", "overhead_share_direct", "raw_encode_seconds", "maxrss_mb")))
        _fresh(root / "site", root / "cache")
    return out


def summarize(n: int, runs: list[dict], keys) -> dict:
    s = {"documents": n, "runs": runs, "chunks": runs[0]["chunks"] if runs else None}
    for k in keys:
        s[k] = median([r.get(k) for r in runs])
    return s


def noop(work: Path, sizes: list[int], big: int, repeats: int, seed_cache: Path) -> list[dict]:
    out = []
    for n in sizes:
        root = work / f"corpus-{n}"
        if n == big:
            content, site, cache = root / "content", root / "site", root / "cache"
            warm = None
        else:
            content = corpus(root, n)
            site, cache = root / "site", root / "cache"
            _fresh(site, cache)
            shutil.copytree(seed_cache, cache)
            warm = worker(content, site, cache, logfile=root / "log.txt")
            log(f"  warm {n} docs (empty site, full cache): {warm['build_seconds']:.2f} s, {warm['embedded']} embedded")
        runs = [worker(content, site, cache, logfile=root / "log.txt") for _ in range(repeats)]
        s = summarize(n, runs, ("build_seconds", "wall_seconds", "maxrss_mb", "import_seconds"))
        s["torch_imported"] = any(r["torch_imported"] for r in runs)
        s["embedded"] = max(r["embedded"] for r in runs)
        s["files_written"] = [r["summary"].split("; ")[-1] for r in runs][-1]
        s["stage_seconds"] = {k: median([r["stage_seconds"].get(k) for r in runs]) for k in runs[0]["stage_seconds"]}
        s["warm"] = warm
        log(f"  no-op {n} docs: build {s['build_seconds']:.2f} s, process {s['wall_seconds']:.2f} s, "
            f"torch imported: {s['torch_imported']}, {s['files_written']}")
        out.append(s)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, None, quick="small corpora, fewer repeats")
    args = ap.parse_args(argv)
    if args.quick:
        work, cold_sizes, noop_sizes, cold_rep, noop_rep, inc_rep = SPEED_DIR / "quick", [10, 20], [25, 50, 100], 2, 2, 1
    else:
        work, cold_sizes, noop_sizes, cold_rep, noop_rep, inc_rep = SPEED_DIR, [50, 100, 200], [250, 500, 1000], 3, 5, 3
    out_path = args.out or work / "builds.json"
    big = max(noop_sizes)
    t0 = time.perf_counter()
    result: dict = {"quick": args.quick, "generator": "bench/synthetic.py seed 0"}

    # -- seed the big corpus's cache (only missing chunks get embedded)
    root = work / f"corpus-{big}"
    content = corpus(root, big)
    site, cache = root / "site", root / "cache"
    log(f"seed build: {big} documents into {root}")
    seed = worker(content, site, cache, logfile=root / "log.txt")
    result["seed"] = seed
    log(f"  seed: {seed['chunks']} chunks, {seed['embedded']} embedded in {seed['build_seconds']:.1f} s")
    from pipeline.chunking.strategies.markdown import MarkdownStrategy

    result["corpus"] = {"documents": big, "chunks": seed["chunks"], "topic_dirs": seed["summary"],
                        "max_tokens": MarkdownStrategy.max_tokens,
                        "bytes": sum(p.stat().st_size for p in content.rglob("*.md"))}

    log("no-op rebuilds")
    result["noop"] = noop(work, noop_sizes, big, noop_rep, cache)
    # the real CLI, same corpus and settings
    config = work / "site.toml"
    config.write_text(SITE_TOML)
    cli_build(content, site, cache, "--config", str(config))  # settles anything the CLI writes differently
    cli = [cli_build(content, site, cache, "--config", str(config)) for _ in range(noop_rep)]
    result["noop_cli"] = {"documents": big, "runs": cli, "wall_seconds": median(cli),
                          "command": f"pipeline build CONTENT --out SITE --config {config.name} --cache-dir CACHE -q"}
    log(f"  no-op via the CLI ({big} docs): {median(cli):.2f} s")

    log("incremental rebuilds")
    rel, original = synthetic.document(7)
    path = content / rel
    inc = []
    for v in range(1, inc_rep + 1):
        heading = synthetic.edit_section(path, v)
        res = worker(content, site, cache, logfile=root / "log.txt")
        res["edited"] = f"{rel} ({heading})"
        inc.append(res)
        log(f"  edit {v}: {res['embedded']} chunk(s) re-embedded, build {res['build_seconds']:.1f} s "
            f"(model load {res['load_seconds_in_build']:.1f} s), process {res['wall_seconds']:.1f} s")
    path.write_text(original, encoding="utf-8")
    restore = worker(content, site, cache, logfile=root / "log.txt")
    s = summarize(big, inc, ("build_seconds", "wall_seconds", "load_seconds_in_build", "embed_seconds", "maxrss_mb"))
    s["embedded"] = [r["embedded"] for r in inc]
    s["restore_embedded"] = restore["embedded"]
    s["edited"] = inc[0]["edited"] if inc else None
    result["incremental"] = s

    log("cold builds")
    result["cold"] = cold(work, cold_sizes, cold_rep, None if args.quick else 5)
    result["seconds"] = time.perf_counter() - t0
    write_json(out_path, result)
    log(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
