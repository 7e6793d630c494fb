"""Embedding over HTTP: Ollama (``/api/embed``) and OpenAI-compatible (``/v1/embeddings``) servers.

These models' tokenizers are not on disk, so chunks are sized with the default model's
tokenizer (a BERT word-piece count, close to but not exactly the server's count).

A server's answer is checked before it is used: anything but one vector of numbers per text,
all of one length (a 200 with an ``error`` object and no ``data``, a short list, a string for a
vector), is a one-line PipelineError naming the endpoint and what it answered, never a traceback.
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
                answer = json.loads(response.read())
        except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts and resets; bad JSON or UTF-8
            raise PipelineError(f"embedding server {self.url}{endpoint} failed: {exc}") from None
        if not isinstance(answer, dict):
            raise self._bad_answer(endpoint, f"a JSON {type(answer).__name__}, not an object")
        return answer

    def _bad_answer(self, endpoint: str, what: str, answer: dict | None = None) -> PipelineError:
        """``embedding server URL answered <what>``, with the server's own error message if it sent one."""
        said = ""
        if isinstance(answer, dict):
            error = answer.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            if isinstance(message, str) and message.strip():
                said = f": {' '.join(message.split())[:200]}"
            else:
                said = f" (keys: {', '.join(sorted(map(str, answer))[:8]) or 'none'})"
        return PipelineError(f"embedding server {self.url}{endpoint} answered {what}{said}")

    def _rows(self, endpoint: str, answer: dict, rows, texts: list[str]) -> list[list[float]]:
        """``rows`` when they are one vector of numbers per text, all of one length."""
        if not isinstance(rows, list):
            return self._fail_rows(endpoint, answer, "no list of vectors")
        if len(rows) != len(texts):
            return self._fail_rows(endpoint, answer, f"{len(rows)} vectors for {len(texts)} texts")
        width = None
        for row in rows:
            if not isinstance(row, list) or not row or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row):
                return self._fail_rows(endpoint, answer, "a vector that is not a list of numbers")
            if width is not None and len(row) != width:
                return self._fail_rows(endpoint, answer, f"vectors of {width} and {len(row)} numbers")
            width = len(row)
        return rows

    def _fail_rows(self, endpoint: str, answer: dict, what: str) -> list[list[float]]:
        raise self._bad_answer(endpoint, what, answer)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError


class OllamaEmbedder(_HttpEmbedder):
    """``ollama:mxbai-embed-large`` (1024-d, reads 512 tokens) against a local Ollama."""

    def __init__(self, model: str, url: str = "http://localhost:11434", **kwargs):
        super().__init__(model, url, max_tokens=kwargs.pop("max_tokens", 512), **kwargs)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        answer = self._post("/api/embed", {"model": self.model_id, "input": texts})
        return self._rows("/api/embed", answer, answer.get("embeddings"), texts)


class OpenAIEmbedder(_HttpEmbedder):
    """Any OpenAI-compatible ``/v1/embeddings`` server; the key comes from ``OPENAI_API_KEY``."""

    def __init__(self, model: str, url: str = "https://api.openai.com", **kwargs):
        super().__init__(model, url, max_tokens=kwargs.pop("max_tokens", 8191), **kwargs)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        key = os.environ.get("OPENAI_API_KEY", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        answer = self._post("/v1/embeddings", {"model": self.model_id, "input": texts}, headers)
        data = answer.get("data")
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise self._bad_answer("/v1/embeddings", "200 without a `data` list of embeddings", answer)
        if not all(type(item.get("index", 0)) is int for item in data):
            raise self._bad_answer("/v1/embeddings", "an embedding whose `index` is not a whole number", answer)
        ordered = sorted(data, key=lambda item: item.get("index", 0))  # "index" is optional on some servers
        return self._rows("/v1/embeddings", answer, [item.get("embedding") for item in ordered], texts)
