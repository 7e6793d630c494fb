"""The static encoder's rows of the site's words, carried in the site-wide term shards.

A query embedded by the static encoder (``_search/encoder/``) costs its vocabulary and one row
shard per distinct word piece: about eight requests for a short question, beside the term shards
its lexical side reads anyway. A word the site holds has its index term there; so each
site-wide term shard also carries, under ``searchlayout.WORD_ROWS``, ``{word: row}`` for the
site's words whose term hashes to that shard:

* a word qualifies when it is ASCII letters and digits (``WHOLE_WORD``: as the model's tokenizer
  splits it, lowercased), its index term (``searchtext.word_term``) is one of the site's terms,
  and its pieces are at most ``MAX_WORD_PIECES``, known, and not all zero tokens;
* the row is base64 of a float32 scale then ``WORD_DTYPE`` values: its pieces' rows as the
  encoder's shards store them, summed, quantised again (the manifest's ``encoder`` entry says
  ``"word_dtype"``).

A client (``staticembed.py``, ``staticencoder.js``) splits the query as the model's tokenizer
does (BertNormalizer, BertPreTokenizer); when every word is a zero token or has a row in its
term's shard, the query's vector is those rows summed in order, scaled to unit length, with no
request beyond the term shards: within the 4-bit rounding of the piece path's vector. A word
without a row whose term's words have rows there takes their mean (``staticembed.same_term_row``);
only the other words take the piece path.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable

import numpy as np

from pipeline.embedding.statictable import decode_rows, row_bytes
from pipeline.embedding.tokenizer_settings import wordpiece_model
from pipeline.siteformat import vectorshards
from pipeline.siteformat.frontcode import front_decode
from pipeline.siteformat.searchlayout import WHOLE_WORD
from pipeline.siteformat.searchtext import shard_of, word_term

WORD_DTYPE = "int4"
"""How a word row is stored: a float32 scale and 4-bit values, quantised as vector shard rows are
(``vectorshards.encode_rows``: per row the better of two scales, 2.5 root mean squares or the
largest value; the bytes of ``statictable``'s int4, which decodes them): half the bytes of int8 in every term shard and word file a query
reads. R@5 against int8 rows, hybrid / clients' rule: Chroma +0.0 / +0.1, markdown −0.1 / −0.1,
realdocs 0 / 0; scaled by the largest value instead, Chroma −0.2 / −0.2 (docs/decisions/search.md
"Vector rows of four bits, shards of ~12 rows; a word's term's rows")."""
MAX_WORD_PIECES = 4
"""The most pieces a word with a row may have: a client knows a query of N words has at most
``MAX_WORD_PIECES * N`` pieces, so it takes the word path only below the model's truncation."""
WORD_FILE_ROWS = 8
"""Rows a small site's word file holds on average (``makers.word_files``): a query fetches one
file per word, so small files cost few bytes (~3.5 kB gzipped), cold or warm."""
ROW_POSTINGS = 128
"""A row counted as this many postings when sizing the term shards (``layout.shard_count``). Set
when rows were int8 (~390 bytes gzipped at 384 dimensions, a posting by document ~3), so that
shards kept their bytes as rows were added; kept at twice a 4-bit row's ~200 bytes: the same
number of smaller shards, and a query reads one a term either way."""


def site_word_rows(words: Iterable[str], terms: Iterable[str], entry: dict, read: Callable[[str], bytes]) -> dict[str, dict[str, str]]:
    """{term: {word: base64 row}} for each of ``words`` (the chunks' ``topicpart.text_words``)
    whose index term is among ``terms`` and which the encoder ``entry`` (a manifest's ``encoder``)
    splits into at most ``MAX_WORD_PIECES`` known pieces, not all of them zero tokens; ``read``:
    a path under ``_search/`` to the bytes of the encoder's file there. A word's row is its
    pieces' rows as the shards hold them, summed, stored as ``WORD_DTYPE``. Deterministic: terms
    and words sorted."""
    folder = entry["href"].rstrip("/")
    wanted = set(terms)
    zero = set(entry.get("zero") or ())
    tokens = front_decode(read(f"{folder}/{entry['vocab']}").decode("utf-8"))
    dtype, dimension, per = entry["dtype"], int(entry["dimension"]), int(entry["rows"])
    width = row_bytes(dtype, dimension)
    settings = entry["tokenizer"]
    vocab = {t: i for i, t in enumerate(tokens)}
    vocab.setdefault(settings["unk_token"], len(tokens))  # an unknown piece: no row, the word is left out
    model = wordpiece_model(vocab, settings)
    shards: dict[int, bytes] = {}

    def stored(i: int) -> bytes:
        if i // per not in shards:
            shards[i // per] = read(f"{folder}/{i // per}.bin")
        row = shards[i // per][(i % per) * width:(i % per + 1) * width]
        if len(row) != width:
            raise ValueError(f"static encoder shard {folder}/{i // per}.bin lacks row {i}")
        return row

    out: dict[str, dict[str, str]] = {}
    for word in sorted(words):
        term = word_term(word) if WHOLE_WORD.fullmatch(word) else None
        if term is None or term not in wanted:
            continue
        ids = [t.id for t in model.tokenize(word)]
        if not ids or len(ids) > MAX_WORD_PIECES or any(i >= len(tokens) for i in ids):
            continue
        kept = [i for i in ids if tokens[i] not in zero]
        if not kept:
            continue
        total = decode_rows(b"".join(stored(i) for i in kept), dtype, dimension).astype(np.float64).sum(axis=0)
        row = vectorshards.encode_rows(total.astype(np.float32).reshape(1, -1), np.ones(1, bool))
        out.setdefault(term, {})[word] = base64.b64encode(row).decode("ascii")
    return dict(sorted(out.items()))


def rows_by_shard(rows: dict[str, dict[str, str]], shards: int) -> dict[int, dict[str, str]]:
    """``rows`` (``site_word_rows``) regrouped as {shard: {token: row}}: the rows each of
    ``shards`` term shards carries under ``WORD_ROWS`` (its terms' by ``shard_of``)."""
    out: dict[int, dict[str, str]] = {}
    for term, held in rows.items():
        out.setdefault(shard_of(term, shards), {}).update(held)
    return out


def row_count(rows: dict[str, dict[str, str]]) -> int:
    """How many rows ``rows`` holds (``site_word_rows``)."""
    return sum(len(r) for r in rows.values())
