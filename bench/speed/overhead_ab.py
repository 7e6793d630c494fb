"""Cold builds of this checkout against another, interleaved: the pipeline's overhead side by side.

    .venv/bin/python -m bench.speed.overhead_ab OTHER_CHECKOUT [--rounds 5] [--documents 200]
                                                [--content DIR] [--embedder minilm] [--raw] [--work DIR]

Each round builds the same synthetic corpus (``bench/synthetic.py``) once with each checkout, in
a fresh process (``bench.speed.build_worker`` of that checkout, its own ``PYTHONPATH``), into a
fresh site with a fresh, EMPTY embedding cache (a cold build); the order alternates between
rounds, so a change of load on the shared cores hits both alike. Per build: build time, time
inside the embedder's ``embed`` (the model load included), *outside* = build − the wall time in
which the model loaded or encoded (``build_worker``'s ``model_seconds``; a worker without it:
build − embed, the same when the load is inside the first ``embed``): the part of the build
that neither the encode nor the load covers, the overhead
share outside / (build − model load) (the Targets row's measure), peak RSS and stage times; ``--raw`` adds the worker's bare encode of the same texts, and the share
(build − load − raw) / (build − load). After the first round the two sites are compared whole
(every file but ``.pipeline-state.json``, which records each checkout's code digest): they must
be byte-identical. Prints medians and the per-round ratios (build, outside, overhead share); JSON
to ``bench/.work/speed/overhead_ab.json``. ``--content DIR`` builds DIR (e.g. a realdocs tree)
instead of the synthetic corpus; ``--work DIR`` puts the corpus, sites and caches in DIR (default
``bench/.work/speed/overhead-ab``): on this VM a file's creation takes 0.02-0.8 ms on disk from
one minute to the next, and a cold build creates thousands, so a tmpfs there compares the
pipelines' own work without the disk's stalls.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import synthetic
from bench.speed import REPO_ROOT, SPEED_DIR, median, remove_site

STATE_FILE = ".pipeline-state.json"  # the build state: holds the code digest, so it differs by checkout
# The search index's files that record its ``inputs`` digest, which covers the search package's
# code (pipeline/search/index.py ``inputs_digest``): compared with that one field left out.
SEARCH_DIGESTED = ("_search/meta.json", "_search/records.json")


def build_once(checkout: Path, content: Path, site: Path, cache: Path, embedder: str, raw: bool) -> dict:
    remove_site(site)  # and its memo: a memo left by the last round made the next one's search index warm
    shutil.rmtree(cache, ignore_errors=True)
    python = checkout / ".venv" / "bin" / "python"
    cmd = [str(python if python.exists() else sys.executable), "-m", "bench.speed.build_worker",
           str(content), str(site), str(cache), "--embedder", embedder, *(["--raw-encode"] if raw else [])]
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    load_average = os.getloadavg()[0]  # the shared machine's load when the build started
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"build in {checkout} failed: {err[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["wall_seconds"] = wall
    res["load_average"] = load_average
    without_load = res["build_seconds"] - res["load_seconds_in_build"]
    # the wall time in which the model neither loaded nor encoded; a worker that predates
    # ``model_seconds`` always loaded inside the first ``embed``, where the two are the same
    res["outside_seconds"] = res["build_seconds"] - res.get("model_seconds", res["embed_seconds"])
    res["overhead_share"] = res["outside_seconds"] / without_load
    if res.get("raw_encode_seconds"):
        res["overhead_share_raw"] = (without_load - res["raw_encode_seconds"]) / without_load
    shutil.rmtree(cache, ignore_errors=True)
    return res


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
    import re

    left, right = a.read_bytes(), b.read_bytes()
    pattern = re.compile(rb'"inputs":"[0-9a-f]*"')
    found = pattern.search(left)
    return left == (pattern.sub(lambda _: found.group(0), right) if found else right)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("other", type=Path, help="the checkout to compare with (e.g. a worktree of main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--documents", type=int, default=200)
    ap.add_argument("--content", type=Path, default=None, help="build this folder instead of the synthetic corpus")
    ap.add_argument("--embedder", default="minilm", help="minilm: the default model; hashing: pipeline work only")
    ap.add_argument("--raw", action="store_true", help="also a bare encode of the same texts after each build")
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "overhead_ab.json")
    ap.add_argument("--work", type=Path, default=SPEED_DIR / "overhead-ab",
                    help="where the corpus, sites and caches go; e.g. a tmpfs (/dev/shm/...) takes the disk's "
                         "stalls out of the comparison, leaving the pipeline's own work")
    args = ap.parse_args(argv)
    checkouts = {"other": args.other.resolve(), "this": REPO_ROOT}
    work = args.work.resolve()
    content = work / "content"
    if args.content is not None:
        content = args.content.resolve()
    else:
        synthetic.generate(content, args.documents)
    runs: dict[str, list[dict]] = {name: [] for name in checkouts}
    identical = None
    for r in range(args.rounds):
        for name in (list(checkouts) if r % 2 == 0 else list(checkouts)[::-1]):
            res = build_once(checkouts[name], content, work / f"site-{name}", work / f"cache-{name}", args.embedder, args.raw)
            runs[name].append(res)
            print(f"round {r + 1} {name}: build {res['build_seconds']:.2f} s, embed {res['embed_seconds']:.2f} s "
                  f"(load {res['load_seconds_in_build']:.2f}), outside {res['outside_seconds']:.2f} s = "
                  f"{100 * res['overhead_share']:.1f} %", file=sys.stderr, flush=True)
        if identical is None:
            diff = differing_files(work / "site-other", work / "site-this")
            identical = not diff
            print("sites byte-identical" if identical else f"sites DIFFER: {diff[:20]}", file=sys.stderr, flush=True)
    keys = ("build_seconds", "embed_seconds", "load_seconds_in_build", "outside_seconds", "overhead_share",
            "overhead_share_raw", "raw_encode_seconds", "wall_seconds", "maxrss_mb", "load_average")
    summary = {name: {k: median([x.get(k) for x in rs]) for k in keys} for name, rs in runs.items()}
    for name, rs in runs.items():
        summary[name]["stage_seconds"] = {k: median([x["stage_seconds"].get(k) for x in rs])
                                          for k in sorted({k for x in rs for k in x["stage_seconds"]})}
    ratios = {k: median([t[k] / o[k] for o, t in zip(runs["other"], runs["this"]) if o.get(k) and t.get(k) is not None])
              for k in ("build_seconds", "outside_seconds", "overhead_share")}
    result = {"documents": args.documents if args.content is None else runs["this"][0]["documents"],
              "content": str(args.content) if args.content is not None else "synthetic",
              "chunks": runs["this"][0]["chunks"],
              "embedder": args.embedder, "rounds": args.rounds, "sites_identical": identical,
              "checkouts": {k: str(v) for k, v in checkouts.items()}, "summary": summary,
              "this_over_other": ratios, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for name in checkouts:
        s = summary[name]
        print(f"{name}: build {s['build_seconds']:.2f} s, embed {s['embed_seconds']:.2f} s, outside {s['outside_seconds']:.2f} s "
              f"= {100 * s['overhead_share']:.1f} % (medians); stages "
              + ", ".join(f"{k} {v:.2f}" for k, v in s["stage_seconds"].items()))
    print(f"this / other, median of per-round ratios: build ×{ratios['build_seconds']:.3f}, outside ×{ratios['outside_seconds']:.3f}, "
          f"overhead share ×{ratios['overhead_share']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
