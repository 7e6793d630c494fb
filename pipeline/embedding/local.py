"""sentence-transformers on the CPU, loaded lazily: nothing imports torch until a text needs embedding."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from pipeline.embedding.base import normalize
from pipeline.errors import PipelineError
from pipeline.quiet import info
from pipeline.embedding.models import LocalModel
from pipeline.parsing.tokens import TokenCounter


PRECISIONS = ("fp32", "bf16")


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; ``embed`` loads it on first use (~10 s with torch).

    ``precision="bf16"`` encodes under bfloat16 autocast: about twice as fast on CPUs with native
    bf16 (AVX512-BF16, AMX), vectors within cosine 0.9999 of fp32 (docs/BENCHMARKS.md, Encoding).
    The vectors count as the same model's: ``name`` is unchanged, so caches and sites mix them.
    """

    def __init__(self, model: LocalModel, *, batch_size: int = 32, precision: str = "fp32", threads: int | None = None):
        if precision not in PRECISIONS:
            raise PipelineError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
        self.model = model
        self.name = model.name
        self.batch_size = batch_size
        self.precision = precision
        self.threads = threads  # torch's intra-op threads when set (process-wide); None: torch's default
        self._model = None

    def counter(self) -> TokenCounter:
        return self.model.counter()

    def _load(self):
        if self._model is None:
            # The model ships on disk; a hub lookup would hang for a minute offline.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            info(f"loading embedding model {self.name} ...")
            from sentence_transformers import SentenceTransformer

            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            self._model = SentenceTransformer(str(self.model.directory()), device="cpu")
            if self.precision == "bf16" and not cpu_has_native_bf16():
                print("warning: this CPU has no native bf16 (avx512_bf16 / amx_bf16): bf16 encoding may be slower than fp32",
                      file=sys.stderr, flush=True)
        return self._model

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self._load()
        with self._autocast():
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                show_progress_bar=progress,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
        return normalize(vectors)

    def _autocast(self):
        import contextlib

        if self.precision != "bf16":
            return contextlib.nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)


def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU flags list avx512_bf16 or amx_bf16 (Linux); False when unknown."""
    try:
        flags = cpuinfo.read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
