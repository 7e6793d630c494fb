"""A deterministic bag-of-words embedder: no model, for tests and quick offline previews.

Not a semantic model: texts sharing words get similar vectors. Never the default.
"""

from __future__ import annotations

import re

import numpy as np
import xxhash

from pipeline.embedding.base import normalize
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.parsing.tokens import TokenCounter

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    def __init__(self, dimension: int = 384):
        self.dimension = dimension
        self.name = f"hashing-{dimension}"
        self.calls = 0  # texts embedded so far; tests use it to prove cache hits

    def counter(self) -> TokenCounter:
        return DEFAULT_MODEL.counter()

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = xxhash.xxh64_intdigest(word.encode("utf-8"))
                out[row, h % self.dimension] += 1.0 if (h >> 32) & 1 else -1.0
        return normalize(out)
