"""Real documentation built with the real model: FastAPI's or MkDocs' docs from ``../shared/realdocs``.

    .venv/bin/python -m bench.speed.realdocs [--tree mkdocs|fastapi] [--quick]

A **cold** build (empty site, empty cache) with the default settings (``minilm``), in a fresh
process, then a **no-op** rebuild in another: wall time, chunks, chunks/s, oversize warnings,
and the link check of the result (site/linkcheck.py: broken links must be 0). ``--quick``
builds two pages of MkDocs' docs only (a smoke run: seconds plus the model load).
Results: ``bench/.work/speed/realdocs.json``. Skips with a message when the trees are absent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.speed import REPO_ROOT, SPEED_DIR

WORKER = """
import json, sys, time, warnings
from pathlib import Path
from pipeline.config import SiteConfig
from pipeline.site.build import build
content, site, cache = map(Path, sys.argv[1:4])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    t = time.perf_counter()
    report = build(content, site, SiteConfig(cache_dir=cache), progress=False)
    seconds = time.perf_counter() - t
oversize = sum("the model reads only its first" in str(w.message) for w in caught)
print(json.dumps({"seconds": round(seconds, 2), "documents": report.chunk.documents, "chunks": report.chunk.chunks,
                  "embedded": report.spec.embedded, "oversize_warnings": oversize}))
"""


def realdocs_root() -> Path | None:
    for candidate in (os.environ.get("PIPELINE_REALDOCS"), REPO_ROOT.parent / "shared" / "realdocs"):
        if candidate and (Path(candidate) / "mkdocs").is_dir():
            return Path(candidate)
    return None


def run_build(content: Path, site: Path, cache: Path) -> dict:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", WORKER, str(content), str(site), str(cache)], capture_output=True, text=True, cwd=REPO_ROOT
    )
    if result.returncode != 0:
        raise SystemExit(f"build of {content} failed:\n{result.stderr[-2000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    data["process_seconds"] = round(time.perf_counter() - start, 2)
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", choices=["mkdocs", "fastapi"], default="mkdocs")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=SPEED_DIR / "realdocs.json")
    args = ap.parse_args(argv)
    root = realdocs_root()
    if root is None:
        print("realdocs: ../shared/realdocs not found (set PIPELINE_REALDOCS); skipped")
        return 0
    from pipeline.site.linkcheck import check_site

    with tempfile.TemporaryDirectory(prefix="bench-realdocs-") as tmp:
        work = Path(tmp)
        content = root / args.tree
        if args.quick:
            content = work / "content"
            content.mkdir()
            for rel in ("index.md", "getting-started.md"):
                shutil.copyfile(root / "mkdocs" / rel, content / rel)
        cold = run_build(content, work / "site", work / "cache")
        noop = run_build(content, work / "site", work / "cache")
        links = check_site(work / "site")
    result = {
        "tree": "mkdocs (2 pages)" if args.quick else args.tree,
        "cold": {**cold, "chunks_per_second": round(cold["chunks"] / cold["seconds"], 1) if cold["seconds"] else None},
        "noop": noop,
        "links": {"checked": links.checked, "broken": len(links.broken), "missing_in_source": len(links.missing_in_source)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 1 if links.broken else 0


if __name__ == "__main__":
    sys.exit(main())
