"""Where the texts a build must embed are encoded: in this process, or on a Ray cluster
(``embedding/ray_executor.py``).

Both executors split the texts into the same blocks (``plan_blocks``) and encode each block with
one ``embed`` call of the same embedder, so a block's vectors do not depend on where it ran:
a Ray build writes the same cache entries and the same site bytes as a local one. Ray is imported
only by ``RayExecutor``; the local path never needs it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from pipeline.background import Background
from pipeline.config import RAY_MIN_TOKENS
from pipeline.embedding.base import Embedder, progress_bar
from pipeline.errors import PipelineError

EXECUTORS = ("local", "ray")
# Texts per embed call: two of the local model's batches (32). Small blocks keep Ray's actors
# evenly loaded to the end: blocks go out longest first, to the actors with room in their queue,
# so the last one to finish waits for about one short block (with 256, 384 texts made one block
# of 256 and one of 128: one actor had three quarters of the work). Locally the size only sets
# how many embed calls the same batches of 32 take. Measured: docs/decisions/embedding.md (Ray Data).
BLOCK_SIZE = 64


def plan_blocks(lengths: list[int], block_size: int = BLOCK_SIZE) -> list[list[int]]:
    """Indices of the texts whose lengths are ``lengths`` in blocks of at most ``block_size``,
    longest first (ties in input order), so each block's batches pad to similar lengths. Every
    index appears exactly once; the plan depends only on ``lengths``."""
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[start : start + block_size] for start in range(0, len(order), block_size)]


def text_lengths(embedder: Embedder, texts: list[str]) -> list[int]:
    """Each text's length in the model's tokens, which the blocks are planned by: a batch runs
    as long as its longest text's tokens, and characters predict them badly (code and prose
    differ). Planned by characters, a 1,000-document build's batches held 9 % more tokens than
    the same texts sorted by tokens, and encoded 19 % slower (docs/decisions/embedding.md "OpenVINO: two streams")."""
    return embedder.counter().count_many(texts)


def assemble(blocks: list[list[int]], vectors: list[np.ndarray], count: int) -> np.ndarray:
    """One row per text in input order from per-block vectors (``vectors[b][j]`` is the vector
    of text ``blocks[b][j]``)."""
    if count == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dimension = next(v.shape[1] for v in vectors if len(v))
    out = np.zeros((count, dimension), dtype=np.float32)
    for block, rows in zip(blocks, vectors):
        check_rows(block, rows)
        out[block] = rows
    return out


def check_rows(block: list[int], rows: np.ndarray) -> None:
    if len(rows) != len(block):
        raise PipelineError(f"the embedder returned {len(rows)} vectors for {len(block)} texts")


BlockDone = Callable[[list[int], np.ndarray], None]
"""Called with a block's text indices and its float32 rows (row ``j`` is the vector of text
``block[j]``; the values ``embed`` returns for those texts) as soon as the block is encoded."""


class Executor(Protocol):
    def embed(self, embedder: Embedder, texts: list[str], *, progress: bool = False,
              on_block: BlockDone | None = None, stop: threading.Event | None = None) -> np.ndarray:
        """L2-normalised float32 vectors of ``texts``, one row per text, in input order.
        ``on_block`` (in the calling thread) after each block, in plan order; once ``stop`` is
        set, EncodingCancelled is raised before the next block's vectors are taken."""
        ...


class EncodingCancelled(Exception):
    """Raised inside an abandoned ``Encoding`` to stop it between two blocks."""


def check_stop(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise EncodingCancelled()


@dataclass(frozen=True)
class LocalExecutor:
    """Encodes every block in this process, one after another."""

    block_size: int = BLOCK_SIZE

    def embed(self, embedder: Embedder, texts: list[str], *, progress: bool = False,
              on_block: BlockDone | None = None, stop: threading.Event | None = None) -> np.ndarray:
        """``Executor.embed``: a set ``stop`` ends it within one block."""
        blocks = plan_blocks(text_lengths(embedder, texts), self.block_size)
        return encode_blocks(embedder, texts, blocks, progress=progress, on_block=on_block, stop=stop)


def encode_blocks(embedder: Embedder, texts: list[str], blocks: list[list[int]], *, progress: bool = False,
                  on_block: BlockDone | None = None, stop: threading.Event | None = None) -> np.ndarray:
    """``Executor.embed`` of a plan ``blocks``, in this process: one ``embed`` call a block, in
    plan order (the local executor, and the Ray executor's texts too few to pay for Ray)."""
    bar = progress_bar(len(texts)) if progress and len(blocks) > 1 else None
    vectors = []
    for block in blocks:
        check_stop(stop)
        vectors.append(np.asarray(embedder.embed([texts[i] for i in block], progress=progress and bar is None)))
        if on_block is not None:
            check_rows(block, vectors[-1])
            # the same float32 values ``assemble`` puts in the result's rows
            on_block(block, vectors[-1].astype(np.float32, copy=False))
        if bar is not None:
            bar.update(len(block))
    if bar is not None:
        bar.close()
    return assemble(blocks, vectors, len(texts))


class Encoding:
    """``executor.embed(embedder, texts)`` in a background thread: the local model runs in
    native code that releases the GIL, and a Ray driver mostly waits for its actors, so a build
    writes its files and extracts keywords meanwhile (``result`` waits). The same call as in the
    foreground, so the same vectors (same blocks, same batches). An error in the thread is raised
    by ``result``.

    ``on_block``: called in the encoding's thread as each block is done (``BlockDone``), so what
    needs some of the vectors can start before the last one (an error it raises ends the
    encoding and is raised by ``result``)."""

    def __init__(self, executor: Executor, embedder: Embedder, texts: list[str], *, progress: bool = False,
                 on_block: BlockDone | None = None):
        self._stop = threading.Event()
        self._task: Background[np.ndarray] = Background(
            lambda: executor.embed(embedder, texts, progress=progress, on_block=on_block, stop=self._stop),
            name="pipeline-encode")

    def result(self) -> np.ndarray:
        """The vectors, one row per text in input order (waits for the thread)."""
        return self._task.wait()

    def cancel(self) -> None:
        """Stop after the block being encoded and wait for that (nothing is returned)."""
        self._stop.set()
        self._task.join()


def make_executor(name: str, spec: str, *, workers: int = 2, address: str | None = None,
                  min_tokens: int = RAY_MIN_TOKENS) -> Executor:
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        if workers < 1:
            raise PipelineError(f"--workers must be at least 1, not {workers}")
        from pipeline.embedding.ray_executor import RayExecutor

        return RayExecutor(spec, workers=workers, address=address, min_tokens=min_tokens)
    raise PipelineError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
