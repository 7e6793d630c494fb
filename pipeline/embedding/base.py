"""The one interface every embedding backend implements."""

from __future__ import annotations

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
