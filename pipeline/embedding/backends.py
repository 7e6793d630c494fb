"""Which runtime encodes with a local model: chosen at run time by what the CPU can do.

Backends (a spec string's suffix, ``minilm+onnx``; see ``registry``):

=================  ============================================================  ===========
``torch``          sentence-transformers, float32                                 torch
``bf16``           sentence-transformers under bfloat16 autocast                  torch
``onnx``           ONNX Runtime, float32, on the exported graph                   no torch
``openvino``       OpenVINO, float32 inference precision, same graph              no torch
``openvino-bf16``  OpenVINO, bf16 inference precision, same graph                 no torch
=================  ============================================================  ===========

``auto`` (a spec without a suffix) is ``choose_backend``: ``openvino-bf16`` on CPUs with native
bf16 (AVX512-BF16 or AMX), else ``openvino`` (fp32); ``onnx`` when OpenVINO is not installed,
``torch``/``bf16`` when neither runtime is. Side by side on 512 real chunks
(``bench.speed.backends``, docs/BENCHMARKS.md) that is the fastest choice on both kinds of CPU
this project measured. Every backend's vectors agree with torch fp32 to cosine ≥ 0.999 (min over real
chunks): they share the model's name, so caches and sites mix them (docs/decisions/embedding.md).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pipeline.embedding.models import LocalModel
from pipeline.errors import PipelineError

BACKENDS = ("torch", "bf16", "onnx", "openvino", "openvino-bf16")
TORCH_FREE = ("onnx", "openvino", "openvino-bf16")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def choose_backend(*, native_bf16: bool | None = None, installed=_installed) -> str:
    """The backend ``auto`` means here (see the module docstring). Reads /proc/cpuinfo once."""
    if native_bf16 is None:
        from pipeline.embedding.local import cpu_has_native_bf16

        native_bf16 = cpu_has_native_bf16()
    if installed("openvino"):
        return "openvino-bf16" if native_bf16 else "openvino"
    if installed("onnxruntime"):
        return "onnx" if not native_bf16 or not installed("torch") else "bf16"
    return "bf16" if native_bf16 else "torch"


def make_local(model: LocalModel, backend: str = "auto", *, batch_size: int = 32, threads: int | None = None):
    """An embedder for ``model`` on ``backend`` (one of ``BACKENDS`` or ``auto``). ``threads``
    caps the runtime's compute threads (None: the runtime's default, one per core); threads
    change speed only, never a vector's bytes."""
    if backend == "auto":
        backend = choose_backend()
    if backend in ("torch", "bf16"):
        from pipeline.embedding.local import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model, batch_size=batch_size, precision="bf16" if backend == "bf16" else "fp32",
                                           threads=threads)
    if backend == "onnx":
        from pipeline.embedding.onnx import OnnxEmbedder

        return OnnxEmbedder(model, batch_size=batch_size, threads=threads)
    if backend in ("openvino", "openvino-bf16"):
        from pipeline.embedding.onnx import OpenVinoEmbedder

        return OpenVinoEmbedder(model, batch_size=batch_size, precision="bf16" if backend.endswith("bf16") else "fp32",
                                threads=threads)
    raise PipelineError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)} or auto")
