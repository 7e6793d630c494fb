"""A query embedded by the site's static encoder (``_search/encoder/``): its vocabulary and its own rows.

One job: ``SiteStaticEncoder.embed`` tokenises a query with the site's vocabulary (the model's
WordPiece, as the ``tokenizers`` library runs it: BertNormalizer, BertPreTokenizer, WordPiece;
``[CLS]``/``[SEP]`` left out), fetches the row shards of its distinct pieces (concurrently over
HTTP, each once per ``Site``), sums the rows and scales the sum to unit length
(``statictable.query_vector``): the same vector as ``staticencoder.js``
(tests/vectors/static_encoder.json). The vocabulary costs one request (``vocab.txt``; a query
with a non-ASCII character also ``other.txt``), a query as many as its pieces' distinct shards;
no model, no runtime, no torch. Given the site's ``SearchIndex``, a word of the query the site
holds takes its row from its term's shard or word file instead (``word_rows``;
``pipeline.search.wordrows``), and a word the site lacks whose index term it holds ("configure"
on a site that says "configuration") the mean of the rows of its term's words there
(``same_term_row``): a query whose words or their terms the site holds reads no encoder file.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pipeline.embedding.statictable import decode_rows, query_vector, row_bytes
from pipeline.embedding.tokenizer_settings import word_splitter, wordpiece_model
from pipeline.siteformat.frontcode import front_decode
from pipeline.siteformat.searchtext import shard_of, word_term
from pipeline.siteformat.readerrors import CorruptIndex
from pipeline.siteformat.searchlayout import SEARCH_DIR, WHOLE_WORD, WORDS, content_path


def same_term_row(held: dict[str, np.ndarray], term: str) -> np.ndarray | None:
    """The mean of the rows in ``held`` ({word: float32 row}, a term shard's or word file's) of
    the words whose index term is ``term``, or None when there are none: summed in float32 in
    sorted word order, then divided by their number, as ``sameTermRow`` in ``staticencoder.js``
    (the same bits). A query word the site lacks gets its term's words' meaning: on the three
    question sets R@5 moves by at most 0.1 from the pieces' rows' (docs/decisions/search.md
    "Vector rows of four bits, shards of ~12 rows; a word's term's rows")."""
    rows = [held[w] for w in sorted(held) if word_term(w) == term]
    if not rows:
        return None
    total = np.array(rows[0], dtype=np.float32)
    for row in rows[1:]:
        total += row
    return total / np.float32(len(rows))


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
        self._splitter = None
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
            from tokenizers import Tokenizer

            settings = self.entry["tokenizer"]
            tokens = self.tokens(other=key)
            tokenizer = Tokenizer(wordpiece_model({t: i for i, t in enumerate(tokens)}, settings))
            tokenizer.normalizer, tokenizer.pre_tokenizer = word_splitter(settings)
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

    def words(self, text: str) -> list[str] | None:
        """``text`` split as the model's tokenizer splits it before WordPiece (BertNormalizer,
        BertPreTokenizer), or None when it holds a special token's text (matched whole there)."""
        settings = self.entry["tokenizer"]
        if any(t in text for t in settings["special_tokens"]):
            return None
        if self._splitter is None:
            self._splitter = word_splitter(settings)
        normalizer, pre_tokenizer = self._splitter
        return [w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]

    def word_rows(self, text: str, index) -> list[np.ndarray] | None:
        """The rows whose sum is ``text``'s vector, in order, reading the word rows of
        ``index``'s term shards (``searchlayout.WORD_ROWS``): per word of ``text`` (``words``),
        none for a zero token, its row there when its term's shard has one, else the mean of the
        rows there of its term's words (``same_term_row``), else its pieces' rows from the
        encoder's shards (fetched only for those words). None when the site's
        term shards carry no word rows, or ``text`` holds a special token or may be long enough
        for the model to truncate: the piece path embeds it whole then."""
        home = self._word_home(index)
        if home is None:
            return None
        words = self.words(text)
        # each word with a row is at most word_pieces pieces: below the truncation, as the piece path
        if words is None or len(words) * int(self.entry.get("word_pieces") or 1) > self.entry["tokenizer"]["max_tokens"] - 2:
            return None
        zero = frozenset(self.entry.get("zero", ()))
        terms = {}
        for word in words:
            term = word_term(word) if word not in zero and WHOLE_WORD.fullmatch(word) else None
            if term is not None:
                terms[word] = term
        before = index.fetches
        index.prefetch(list(dict.fromkeys(home(term) for term in terms.values())))
        found = {}
        for w, term in terms.items():
            held = index.term_rows(home(term))
            found[w] = held[w] if w in held else same_term_row(held, term)
        # a term shard the query's lexical side had not fetched is the encoder's: outside the
        # request budget, as its own files are (its lexical files are held by now)
        index.settled += index.fetches - before
        pieces = {w: self.pieces(w) for w in words if w not in zero and found.get(w) is None}
        fetched = self.rows([i for ids in pieces.values() for i in ids])
        rows: list[np.ndarray] = []
        for word in words:
            if found.get(word) is not None:
                rows.append(found[word])
            elif word in pieces:
                rows.extend(fetched[i] for i in pieces[word])
        return rows

    def _word_home(self, index):
        """term -> the file of ``index`` holding the rows of its words (the site-wide term
        shard, or a small site's word file), or None when the site has no word rows."""
        words = self.entry.get("words")
        if words == "terms" and index.meta.get("terms"):
            return index.term_shard
        if isinstance(words, list) and words:
            return lambda term: f"{SEARCH_DIR}/{content_path(WORDS, words[shard_of(term, len(words))])}"
        return None

    def embed(self, texts: list[str], *, progress: bool = False, index=None) -> np.ndarray:
        """Each text's unit vector (float32): its rows summed (``word_rows`` with ``index``, a
        ``SearchIndex``; else the pieces' rows, ``pieces``), scaled to unit length."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            held = self.word_rows(text, index) if index is not None else None
            if held is not None:
                out[row] = query_vector(np.vstack(held), list(range(len(held)))) if held else 0
                continue
            ids = self.pieces(text)
            held = self.rows(ids)
            stacked = np.vstack([held[i] for i in ids]) if ids else np.zeros((0, self.dimension), dtype=np.float32)
            out[row] = query_vector(stacked, list(range(len(ids))))
        return out
