"""Speed benchmarks: chunking MB/s vs the anchors, builds (cold, no-op, incremental, memory),
encoding backends. Entry points: ``bench.speed.chunking``, ``bench.speed.builds``,
``bench.speed.backends`` (each ``main(argv)`` writes a JSON under ``bench/.work/speed/``);
``bench.speed.build_worker`` is the one-build subprocess the build benchmarks time.
"""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

from bench import REPO_ROOT, WORK

SPEED_DIR = WORK / "speed"
__all__ = ["REPO_ROOT", "SPEED_DIR", "build_in_process", "median", "remove_site"]


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
