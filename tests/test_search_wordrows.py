"""pipeline/search/wordrows.py: the static encoder's rows of a site's words."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.staticfit import hashing_table
from pipeline.embedding.statictable import decode_rows, encode_rows, row_bytes
from pipeline.search.wordrows import MAX_WORD_PIECES, rows_by_shard, site_word_rows
from pipeline.site.static_encoder import encoder_files
from pipeline.siteformat.searchtext import shard_of, word_term


@pytest.fixture(scope="module")
def encoder():
    table = hashing_table(384, DEFAULT_MODEL)
    entry, files = encoder_files(table)
    return table, entry, files


def stored_row(table, entry, files, token: str) -> bytes:
    """The bytes the encoder's shard holds for ``token``."""
    i = table.tokens.index(token)
    width = row_bytes(entry["dtype"], entry["dimension"])
    data = files[f"{entry['href']}{i // entry['rows']}.bin"]
    return data[(i % entry["rows"]) * width:(i % entry["rows"] + 1) * width]


def test_a_word_gets_its_tokens_row_or_its_pieces_rows_summed(encoder):
    table, entry, files = encoder
    words = {"chunk", "chunks", "embeddings", "the", "unknownterm", "zzzzqqqqxxxxwwww"}
    terms = {word_term(w) for w in words if word_term(w)} - {word_term("unknownterm")}
    rows = site_word_rows(words, terms, entry, files.__getitem__)
    flat = {w: r for held in rows.values() for w, r in held.items()}
    # one token: the very bytes of the encoder's shard
    assert base64.b64decode(flat["chunk"]) == stored_row(table, entry, files, "chunk")
    # more: its pieces' rows summed, quantised as the shards are
    pieces = ["em", "##bed", "##ding", "##s"]
    assert all(p in table.tokens for p in pieces)
    total = sum(decode_rows(stored_row(table, entry, files, p), "int8", 384)[0].astype(np.float64) for p in pieces)
    assert base64.b64decode(flat["embeddings"]) == encode_rows(total.astype(np.float32).reshape(1, -1), "int8")
    assert "the" not in flat  # a stop word: no term
    assert "unknownterm" not in flat  # its term is not the site's
    assert "zzzzqqqqxxxxwwww" not in flat  # more pieces than MAX_WORD_PIECES
    assert MAX_WORD_PIECES == 4
    assert {w: word_term(w) for w in flat} == {w: t for t, held in rows.items() for w in held}


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(words=st.sets(WORD, max_size=40), keep=st.floats(0, 1), shards=st.sampled_from([1, 2, 8, 64]))
def test_rows_are_the_sites_terms_words_sorted_and_shard_by_term(encoder, words, keep, shards):
    _, entry, files = encoder
    all_terms = sorted({word_term(w) for w in words if word_term(w)})
    terms = set(all_terms[: int(keep * len(all_terms))])
    rows = site_word_rows(words, terms, entry, files.__getitem__)
    assert rows == site_word_rows(sorted(words, reverse=True), terms, entry, files.__getitem__)  # deterministic
    assert list(rows) == sorted(rows) and all(list(held) == sorted(held) for held in rows.values())
    width = row_bytes(entry["dtype"], entry["dimension"])
    for term, held in rows.items():
        assert term in terms
        for word, row in held.items():
            assert word in words and word_term(word) == term and len(base64.b64decode(row)) == width
    by_shard = rows_by_shard(rows, shards)
    assert sorted(w for held in by_shard.values() for w in held) == sorted(w for held in rows.values() for w in held)
    assert all(shard_of(word_term(w), shards) == s for s, held in by_shard.items() for w in held)
