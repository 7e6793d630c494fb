"""sentence-transformers on the CPU, loaded lazily: nothing imports torch until a text needs embedding."""

from __future__ import annotations

import os
import sys

import numpy as np

from pipeline.embedding.base import normalize
from pipeline.embedding.models import LocalModel
from pipeline.parsing.tokens import TokenCounter


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; ``embed`` loads it on first use (~10 s with torch)."""

    def __init__(self, model: LocalModel, *, batch_size: int = 32):
        self.model = model
        self.name = model.name
        self.batch_size = batch_size
        self._model = None

    def counter(self) -> TokenCounter:
        return self.model.counter()

    def _load(self):
        if self._model is None:
            # The model ships on disk; a hub lookup would hang for a minute offline.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            print(f"loading embedding model {self.name} ...", file=sys.stderr, flush=True)
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model.directory()), device="cpu")
        return self._model

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return normalize(vectors)
