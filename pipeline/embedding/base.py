"""The one interface every embedding backend implements."""

from __future__ import annotations

import sys
from typing import Protocol

import numpy as np

from pipeline.parsing.tokens import TokenCounter


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text, in input order."""

    name: str  # model identifier: a path component of the cache and a field of index.json

    def counter(self) -> TokenCounter:
        """The tokenizer used to size chunks for this model (exact for local models)."""
        ...

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray: ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        vectors = vectors.reshape(len(vectors), -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


def progress_bar(total: int):
    """The CLI's embedding progress: one tqdm bar on stderr ("embedding: 40%|... | 64/161
    [...chunk/s]"), redrawn in place on a terminal and ended with a newline. Disabled with ``-q``
    or ``TQDM_DISABLE`` set now (tqdm reads its ``TQDM_*`` settings once, when first imported:
    a process that was quiet then would otherwise stay quiet)."""
    import os

    from tqdm import tqdm

    from pipeline.quiet import is_quiet

    disable = is_quiet() or os.environ.get("TQDM_DISABLE", "").lower() not in ("", "0", "false")
    return tqdm(total=total, desc="embedding", unit="chunk", file=sys.stderr, disable=disable)
