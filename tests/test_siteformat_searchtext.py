"""pipeline.siteformat.searchtext: the lexical-v1 tokenizer and the shard hash (the JS twin reads the vectors)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pipeline.siteformat.searchtext import MAX_TERM, TOKENIZER, _STEMMER, clean_heading, fnv1a32, shard_of, terms

VECTORS = json.loads((Path(__file__).parent / "vectors" / "lexical.json").read_text(encoding="utf-8"))
sys.path.insert(0, str(Path(__file__).parent / "vectors"))  # the generator, to check the vectors are current


def test_vectors_match_this_code():
    # tests/vectors/make_lexical_vectors.py wrote them; lexical.test.mjs checks the JS side
    assert VECTORS["tokenizer"] == TOKENIZER
    for v in VECTORS["texts"]:
        assert terms(v["text"]) == v["terms"], v["text"]
    words = list(VECTORS["stems"])
    assert dict(zip(words, _STEMMER.stemWords(words))) == VECTORS["stems"]
    assert {t: fnv1a32(t) for t in VECTORS["fnv1a32"]} == VECTORS["fnv1a32"]
    from make_lexical_vectors import rankings

    assert rankings() == VECTORS["ranking"]


def test_identifiers_stay_whole_and_words_are_stemmed_without_stop_words():
    assert terms("How do I call unwrap_or_else?") == ["call", "unwrap_or_else", "unwrap", "els"]
    assert terms("Setting root_path behind proxies") == ["set", "root_path", "root", "path", "behind", "proxi"]
    assert terms("__init__ v2_beta") == ["init", "v2_beta", "v2", "beta"]
    assert terms("the and of") == []


def test_fnv1a32_known_values():
    assert fnv1a32("") == 0x811C9DC5
    assert fnv1a32("a") == 0xE40C292C  # published FNV-1a test vector
    assert shard_of("root_path", 1) == 0


def test_clean_heading_drops_anchor_attributes_and_markers():
    assert clean_heading("## First Steps { #first-steps } > ### Run it") == "First Steps > Run it"
    assert clean_heading("") == ""


@given(st.text(max_size=200))
def test_terms_are_short_lowercase_and_deterministic(text):
    out = terms(text)
    assert out == terms(text)
    assert all(0 < len(t) <= MAX_TERM and t == t.lower() or not t.isascii() for t in out)
    assert all(not t.startswith("_") and not t.endswith("_") for t in out)


@given(st.lists(st.sampled_from(["alpha", "beta_gamma", "Running", "ünïcode", "x1", "the", "?"]), max_size=12))
def test_terms_of_a_concatenation_are_the_concatenation_of_terms(parts):
    assert terms(" ".join(parts)) == [t for p in parts for t in terms(p)]
