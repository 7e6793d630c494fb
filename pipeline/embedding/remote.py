"""Embedding over HTTP: Ollama (``/api/embed``) and OpenAI-compatible (``/v1/embeddings``) servers.

These models' tokenizers are not on disk, so chunks are sized with the default model's
tokenizer (a BERT word-piece count, close to but not exactly the server's count).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import numpy as np

from pipeline.embedding.base import normalize
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.errors import PipelineError
from pipeline.parsing.tokens import TokenCounter, counter_for


class _HttpEmbedder:
    batch_size = 64

    def __init__(self, model: str, url: str, *, max_tokens: int | None, timeout: float = 120.0):
        self.model_id = model
        self.name = model.replace("/", "_").replace(":", "_")
        self.url = url.rstrip("/")
        self.max_tokens = max_tokens
        self.timeout = timeout

    def counter(self) -> TokenCounter:
        return counter_for(str(DEFAULT_MODEL.directory() / "tokenizer.json"), self.max_tokens)

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self._batch(texts[start : start + self.batch_size]))
        return normalize(np.array(rows, dtype=np.float32)) if rows else np.zeros((0, 0), np.float32)

    def _post(self, endpoint: str, payload: dict, headers: dict[str, str] | None = None) -> dict:
        request = urllib.request.Request(
            self.url + endpoint,
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise PipelineError(f"embedding server {self.url}{endpoint} failed: {exc}") from None

    def _batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError


class OllamaEmbedder(_HttpEmbedder):
    """``ollama:mxbai-embed-large`` (1024-d, reads 512 tokens) against a local Ollama."""

    def __init__(self, model: str, url: str = "http://localhost:11434", **kwargs):
        super().__init__(model, url, max_tokens=kwargs.pop("max_tokens", 512), **kwargs)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        return self._post("/api/embed", {"model": self.model_id, "input": texts})["embeddings"]


class OpenAIEmbedder(_HttpEmbedder):
    """Any OpenAI-compatible ``/v1/embeddings`` server; the key comes from ``OPENAI_API_KEY``."""

    def __init__(self, model: str, url: str = "https://api.openai.com", **kwargs):
        super().__init__(model, url, max_tokens=kwargs.pop("max_tokens", 8191), **kwargs)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        key = os.environ.get("OPENAI_API_KEY", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        data = self._post("/v1/embeddings", {"model": self.model_id, "input": texts}, headers)["data"]
        return [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]
