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
Ray: 2–3 s here), which the encode would otherwise wait for after the planning.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.background import Background
from pipeline.embedding.cache import holds_vectors_of


def start_warmup(embedder, executor, cache_dir: Path) -> Background | None:
    """The embedder's model loading (a Ray executor: its connection) in a background thread
    (``join`` it before the build returns, so no load outlives a build), or None when this build
    should not start ahead: a local executor's embedder without ``warm``, another executor, or a
    cache that may hold some of the vectors (the build may embed nothing: a no-op rebuild)."""
    from pipeline.embedding.executor import LocalExecutor
    from pipeline.embedding.ray_executor import RayExecutor

    if isinstance(executor, RayExecutor):
        warm = executor.connect
    elif isinstance(executor, LocalExecutor):
        warm = getattr(embedder, "warm", None)
    else:
        warm = None
    if warm is None or holds_vectors_of(Path(cache_dir), embedder.name):
        return None
    return Background(warm, name="pipeline-warmup")
