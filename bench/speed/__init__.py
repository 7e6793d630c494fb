"""Speed benchmarks (results under ``bench/.work/speed/``) and the ways they build a site: in this
process, as a ``pipeline build`` process, or timed by ``bench.speed.build_worker``."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import REPO_ROOT, WORK

SPEED_DIR = WORK / "speed"
__all__ = ["REPO_ROOT", "SPEED_DIR", "build_in_process", "cli_build", "env", "median", "remove_site"]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def remove_site(site: Path) -> None:
    """``site`` and everything a build keeps beside it (``.<name>.pipeline-*``: the previous
    generation, the file stamps, the per-topic memo, ...; pipeline/site/staging.py ``sibling``),
    so the next build of it is cold: a memo left behind hands a "cold" build its search index
    parts, keywords and llms pages."""
    for path in (site, *site.parent.glob(f".{site.name}.pipeline-*")):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def build_in_process(content: Path, site: Path, cache: Path, *, title: str, model: bool = False):
    """``pipeline.site.build.build`` of ``content`` into ``site`` in this process, default
    settings, with the default model or (``model=False``) the hashing embedder; its report."""
    from pipeline.config import SiteConfig
    from pipeline.site.build import build

    if model:
        return build(content, site, SiteConfig(title=title, cache_dir=cache), progress=False)
    from pipeline.embedding.hashing import HashingEmbedder

    return build(content, site, SiteConfig(title=title, cache_dir=cache, embedder="hashing"), embedder=HashingEmbedder(), progress=False)


def env() -> dict[str, str]:
    """A build process's environment: offline, this checkout's packages first."""
    out = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    return out


def cli_build(content: Path, site: Path, cache: Path, *flags: str) -> float:
    """Wall seconds of ``pipeline build CONTENT --out SITE --cache-dir CACHE -q *flags`` in a fresh process."""
    cmd = [sys.executable, "-m", "pipeline", "build", str(content), "--out", str(site), "--cache-dir", str(cache), "-q", *flags]
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pipeline build {content} {' '.join(flags)} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - t
