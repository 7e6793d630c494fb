"""A query embedded by the site's static encoder (``_search/encoder/``): its vocabulary and its own rows.

One job: ``SiteStaticEncoder.embed`` tokenises a query with the site's vocabulary (the model's
WordPiece, as the ``tokenizers`` library runs it: BertNormalizer, BertPreTokenizer, WordPiece;
``[CLS]``/``[SEP]`` left out), fetches the row shards of its distinct pieces (concurrently over
HTTP, each once per ``Site``), sums the rows and scales the sum to unit length
(``statictable.query_vector``): the same vector as ``staticencoder.js``
(tests/vectors/static_encoder.json). The vocabulary costs one request (``vocab.txt``; a query
with a non-ASCII character also ``other.txt``), a query as many as its pieces' distinct shards;
no model, no runtime, no torch.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pipeline.embedding.statictable import decode_rows, query_vector, row_bytes
from pipeline.siteformat.frontcode import front_decode
from pipeline.siteformat.readerrors import CorruptIndex
from pipeline.siteformat.searchlayout import SEARCH_DIR


class SiteStaticEncoder:
    """The static encoder a site's manifest names (its ``encoder`` entry), read through the
    site's transport. ``name`` is the model's: its vectors are in the model's space."""

    def __init__(self, transport, entry: dict):
        self.transport = transport
        self.entry = entry
        self.name = entry["model"]
        self.base = f"{SEARCH_DIR}/{entry['href']}"
        self.dimension = int(entry["dimension"])
        self.fetches = 0
        """Files fetched (vocabulary and row shards) since this encoder was made."""
        self._tokenizers: dict[bool, object] = {}
        self._zeros: dict[bool, frozenset[int]] = {}
        self._tokens: list[str] | None = None
        self._shards: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def _text(self, name: str) -> str:
        self.fetches += 1
        return self.transport.get(self.base + name).decode("utf-8")

    def tokens(self, *, other: bool) -> list[str]:
        """The table's tokens: the ASCII part, and with ``other`` the rest too."""
        with self._lock:
            if self._tokens is None:
                self._tokens = front_decode(self._text(self.entry["vocab"]))
                if len(self._tokens) != self.entry["ascii"]:
                    raise CorruptIndex(f"{len(self._tokens)} tokens, {self.entry['ascii']} announced",
                                       self.transport.locate(self.base + self.entry["vocab"]))
            if other and len(self._tokens) < self.entry["count"]:
                self._tokens = self._tokens + front_decode(self._text(self.entry["other"]))
            return self._tokens

    def tokenizer(self, *, other: bool):
        """A ``tokenizers`` WordPiece tokenizer over the table's tokens (ids: table rows)."""
        key = other and self.entry["count"] > self.entry["ascii"]
        if key not in self._tokenizers:
            from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

            settings = self.entry["tokenizer"]
            tokens = self.tokens(other=key)
            wordpiece = models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token=settings["unk_token"],
                                         max_input_chars_per_word=settings["max_input_chars_per_word"])
            wordpiece.continuing_subword_prefix = settings["continuing_subword_prefix"]
            tokenizer = Tokenizer(wordpiece)
            tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                              strip_accents=settings["strip_accents"], lowercase=settings["lowercase"])
            tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            # matched before normalisation, as the model's tokenizer does: "[SEP]" typed in a
            # query is that token (which has no row), not "[", "sep", "]"
            tokenizer.add_special_tokens(list(settings["special_tokens"]))
            self._tokenizers[key] = tokenizer
        return self._tokenizers[key]

    def pieces(self, text: str) -> list[int]:
        """The table rows of ``text``'s word pieces in order (special tokens but the unknown one
        dropped, and the ``zero`` tokens), cut where the model truncates (``max_tokens`` - 2)."""
        other = not text.isascii() and self.entry["count"] > self.entry["ascii"]
        tokenizer = self.tokenizer(other=other)
        count = self.entry["count"] if other else self.entry["ascii"]  # added special tokens come after
        ids = tokenizer.encode(text, add_special_tokens=False).ids[: self.entry["tokenizer"]["max_tokens"] - 2]
        return [i for i in ids if i < count and i not in self._zero(other)]

    def _zero(self, other: bool) -> frozenset[int]:
        """Rows of the manifest's ``zero`` tokens: they add nothing, so they are never fetched."""
        if other not in self._zeros:
            index = {t: i for i, t in enumerate(self.tokens(other=other))}
            self._zeros[other] = frozenset(index[t] for t in self.entry.get("zero", ()) if t in index)
        return self._zeros[other]

    def rows(self, ids: list[int]) -> dict[int, np.ndarray]:
        """{row id: its vector}, fetching the shards of ``ids`` not held yet (concurrently)."""
        per = self.entry["rows"]
        todo = sorted({i // per for i in ids} - set(self._shards))
        if len(todo) > 1:
            from pipeline.client.transport import HttpTransport

            if isinstance(self.transport, HttpTransport):
                with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
                    list(pool.map(self._shard, todo))
        for s in todo:
            self._shard(s)
        return {i: self._shards[i // per][i % per] for i in ids}

    def _shard(self, s: int) -> np.ndarray:
        with self._lock:
            if s in self._shards:
                return self._shards[s]
        rel = f"{self.base}{s}.bin"
        data = self.transport.get(rel)
        width = row_bytes(self.entry["dtype"], self.dimension)
        if len(data) % width or len(data) // width > self.entry["rows"]:
            raise CorruptIndex(f"static encoder shard of {len(data)} bytes; rebuild the site", self.transport.locate(rel))
        matrix = decode_rows(data, self.entry["dtype"], self.dimension)
        with self._lock:
            self.fetches += 1
            self._shards[s] = matrix
        return matrix

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = self.pieces(text)
            held = self.rows(ids)
            stacked = np.vstack([held[i] for i in ids]) if ids else np.zeros((0, self.dimension), dtype=np.float32)
            out[row] = query_vector(stacked, list(range(len(ids))))
        return out
