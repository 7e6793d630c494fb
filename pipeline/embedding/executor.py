"""Where the texts a build must embed are encoded: in this process, or on a Ray cluster.

Both executors split the texts into the same blocks (``plan_blocks``) and encode each block with
one ``embed`` call of the same embedder, so a block's vectors do not depend on where it ran:
a Ray build writes the same cache entries and the same site bytes as a local one. Ray is imported
only by ``RayExecutor``; the local path never needs it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pipeline.embedding.base import Embedder
from pipeline.errors import PipelineError

EXECUTORS = ("local", "ray")
BLOCK_SIZE = 256  # texts per embed call: a multiple of the local model's batch size (32)


def plan_blocks(texts: list[str], block_size: int = BLOCK_SIZE) -> list[list[int]]:
    """Indices of ``texts`` in blocks of at most ``block_size``, longest texts first (ties in
    input order), so each block's batches pad to similar lengths. Every index appears exactly
    once; the plan depends only on the texts' lengths and order."""
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
    return [order[start : start + block_size] for start in range(0, len(order), block_size)]


def assemble(blocks: list[list[int]], vectors: list[np.ndarray], count: int) -> np.ndarray:
    """One row per text in input order from per-block vectors (``vectors[b][j]`` is the vector
    of text ``blocks[b][j]``)."""
    if count == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dimension = next(v.shape[1] for v in vectors if len(v))
    out = np.zeros((count, dimension), dtype=np.float32)
    for block, rows in zip(blocks, vectors):
        if len(rows) != len(block):
            raise PipelineError(f"the embedder returned {len(rows)} vectors for {len(block)} texts")
        out[block] = rows
    return out


class Executor(Protocol):
    def embed(self, embedder: Embedder, texts: list[str], *, progress: bool = False) -> np.ndarray:
        """L2-normalised float32 vectors of ``texts``, one row per text, in input order."""
        ...


class LocalExecutor:
    """Encodes every block in this process, one after another."""

    def embed(self, embedder: Embedder, texts: list[str], *, progress: bool = False) -> np.ndarray:
        blocks = plan_blocks(texts)
        bar = _progress(len(texts)) if progress and len(blocks) > 1 else None
        vectors = []
        for block in blocks:
            vectors.append(np.asarray(embedder.embed([texts[i] for i in block], progress=progress and bar is None)))
            if bar is not None:
                bar.update(len(block))
        if bar is not None:
            bar.close()
        return assemble(blocks, vectors, len(texts))


@dataclass(frozen=True)
class RayExecutor:
    """Encodes blocks with Ray Data's ``map_batches``: one embedder per worker actor, loaded once.

    ``address`` None starts a local Ray with ``workers`` CPUs; otherwise it joins that cluster
    (``ray://host:10001`` or ``auto``), as ``ray.init(address=...)`` does. ``spec`` is the
    embedder's spec string (embedding/registry.py), rebuilt inside each actor.
    """

    spec: str
    workers: int = 2
    address: str | None = None

    def embed(self, embedder: Embedder, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        from pipeline.embedding.registry import make_embedder

        if make_embedder(self.spec).name != embedder.name:  # models load lazily: this is cheap
            raise PipelineError(f"the ray executor rebuilds the embedder from {self.spec!r}, which is not {embedder.name}")
        ray = _import_ray()
        blocks = plan_blocks(texts)
        if not ray.is_initialized():
            local = {"num_cpus": self.workers, "object_store_memory": 256 * 1024 * 1024} if self.address is None else {}
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False, **local)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = progress
        if not progress:  # without bars Ray Data logs its progress at INFO every few seconds
            import logging

            logging.getLogger("ray.data").setLevel(logging.ERROR)
        context.execution_options.preserve_order = True
        items = [{"block": b, "texts": [texts[i] for i in block]} for b, block in enumerate(blocks)]
        dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _EmbedActor,
            fn_constructor_kwargs={"spec": self.spec},
            batch_size=1,  # one plan block per call: the same embed() inputs as a local build
            compute=ray.data.ActorPoolStrategy(size=min(self.workers, len(items))),
            num_cpus=1,
            batch_format="numpy",
        )
        vectors: list[np.ndarray | None] = [None] * len(blocks)
        for row in dataset.iter_rows():
            rows, dimension = int(row["rows"]), int(row["dimension"])
            vectors[int(row["block"])] = np.frombuffer(row["vectors"], dtype="<f4").reshape(rows, dimension)
        if any(v is None for v in vectors):
            raise PipelineError("the Ray executor lost a block of texts; no vectors were cached")
        return assemble(blocks, vectors, len(texts))  # type: ignore[arg-type]


class _EmbedActor:
    """A Ray worker: builds the embedder once, then encodes one plan block per call."""

    def __init__(self, spec: str):
        from pipeline.embedding.registry import make_embedder

        _one_thread_per_worker()
        self.embedder = make_embedder(spec)

    def __call__(self, batch: dict) -> dict:
        out = {"block": [], "vectors": [], "rows": [], "dimension": []}
        for block, texts in zip(batch["block"], batch["texts"]):
            vectors = np.ascontiguousarray(self.embedder.embed(list(texts)), dtype="<f4")
            out["block"].append(int(block))
            out["vectors"].append(vectors.tobytes())
            out["rows"].append(vectors.shape[0])
            out["dimension"].append(vectors.shape[1])
        return {"block": np.array(out["block"]), "vectors": np.array(out["vectors"], dtype=object),
                "rows": np.array(out["rows"]), "dimension": np.array(out["dimension"])}


def make_executor(name: str, spec: str, *, workers: int = 2, address: str | None = None) -> Executor:
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        if workers < 1:
            raise PipelineError(f"--workers must be at least 1, not {workers}")
        return RayExecutor(spec, workers=workers, address=address)
    raise PipelineError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise PipelineError("the ray executor needs Ray Data: pip install 'pipeline[ray]' (ray[data])") from None
    return ray


def _one_thread_per_worker() -> None:
    """Each actor owns one CPU: torch's default of one thread per core would oversubscribe."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    else:
        import os

        os.environ.setdefault("OMP_NUM_THREADS", "1")


def _progress(total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc="embedding", unit="chunk", file=sys.stderr)
