"""A cold build's model load (or its Ray connection), started before the chunks are planned:
the two overlap.

A build loads its model in the thread that encodes, on the first ``embed``, once every chunk
is planned. When nothing of the model is cached (``cache.holds_vectors_of`` is False), every
chunk the build plans will be embedded, so the load cannot be wasted on a build that embeds
nothing (but an empty CONTENT) and may start at once, beside the planning on the main thread:
the model's native load releases the GIL. Guarantees: only a local executor's embedder that can
load ahead without torch (``warm``: an ONNX Runtime or OpenVINO session from a cached export) is
warmed, in a daemon thread, and the embedder makes its session once whichever thread asks
first (``OnnxEmbedder``), so the vectors and everything else a build writes are those of a build
that loads in its encode. An error in the warm-up is not raised there: the encode's own load
raises it, where a build without a warm-up would.

With the Ray executor the models load in Ray's workers; what a cold build starts ahead is its
connection to Ray (``RayExecutor.connect``: Ray's import and ``ray.init``, which starts a local
Ray: 2–3 s here), which the encode would otherwise wait for after the planning. Unless the
documents are too small for Ray: texts of fewer than ``RayExecutor.min_tokens`` tokens are
encoded in the build's process, so when the markdown under CONTENT holds fewer bytes than that
many tokens take (``BYTES_PER_TOKEN``), the local model is loaded ahead instead. The estimate
only chooses what to start; the encode decides on the texts' own counts.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path

from pipeline.background import Background
from pipeline.embedding.cache import holds_vectors_of


# Bytes of markdown a model token takes (MiniLM's word pieces): 4.1 on the synthetic benchmark
# corpus, 4.3 on the sample content, 3.4 on FastAPI's code-heavy pages. Too few tokens guessed only
# delays Ray's connection past the planning; too many starts a Ray the build waits for, unused.
BYTES_PER_TOKEN = 4


def start_warmup(embedder, executor, cache_dir: Path, content: Path | None = None) -> Background | None:
    """The embedder's model loading (a Ray executor: its connection, or the local model's load
    when the markdown under ``content`` is too small for Ray) in a background thread (``join``
    it before the build returns, so no load outlives a build), or None when this build should
    not start ahead: a local executor's embedder without ``warm``, another executor, or a cache
    that may hold some of the vectors (the build may embed nothing: a no-op rebuild)."""
    from pipeline.embedding.executor import LocalExecutor

    ray = sys.modules.get("pipeline.embedding.ray_executor")  # loaded by whoever made a Ray executor
    if ray is not None and isinstance(executor, ray.RayExecutor):
        warm = partial(_ray_or_model, embedder, executor, content)
    elif isinstance(executor, LocalExecutor):
        warm = getattr(embedder, "warm", None)
    else:
        warm = None
    if warm is None or holds_vectors_of(Path(cache_dir), embedder.name):
        return None
    return Background(warm, name="pipeline-warmup")


def _ray_or_model(embedder, executor, content: Path | None) -> None:
    """Connect to Ray, unless the markdown under ``content`` is too little for Ray: then load the
    local model (if it loads ahead), which will encode it."""
    enough = executor.min_tokens * BYTES_PER_TOKEN
    if content is None or markdown_bytes(content, enough) >= enough:
        executor.connect()
        return
    warm = getattr(embedder, "warm", None)
    if warm is not None:
        warm()


def markdown_bytes(root: Path, enough: int) -> int:
    """Bytes of the ``*.md`` files under ``root`` (hidden folders skipped), counted until they
    reach ``enough``: an estimate of what a build embeds, which stops early on a large tree."""
    total = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".md"):
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:  # gone meanwhile: the planning reports what it finds
                    continue
                if total >= enough:
                    return total
    return total
