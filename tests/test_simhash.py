"""pipeline.simhash: pinned hashes, the shared vectors file, and SimHash's properties."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.simhash import (
    ALGORITHM,
    STOP_WORDS,
    features,
    from_hex,
    hamming,
    simhash64,
    to_hex,
    words,
)

VECTORS_DIR = Path(__file__).resolve().parent / "vectors"
hashes = st.integers(min_value=0, max_value=2**64 - 1)


def _load_maker():
    spec = importlib.util.spec_from_file_location("make_simhash_vectors", VECTORS_DIR / "make_simhash_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arithmetic(weighted: dict[str, int]) -> int:
    """SimHash written out without numpy: the arithmetic simhash.js reproduces."""
    total = sum(weighted.values())
    sums = [0] * 64
    for feature, weight in weighted.items():
        h = int.from_bytes(hashlib.md5(feature.encode("utf-8")).digest()[8:], "big")
        for j in range(64):
            if h >> j & 1:
                sums[j] += weight
    return sum(1 << j for j in range(64) if 2 * sums[j] > total)


# --- pinned values: a change here changes every published prompt hash --------------------


@pytest.mark.parametrize(
    ("text", "hex_"),
    [
        ("What is the maximum chunk size?", "8255406ea6b88416"),
        ("max chunk size", "8b64606ea6be8012"),
        ("如何配置嵌入模型？", "72b280a14ee20940"),
        ("a", "abb7713a7506e73c"),
        ("", "0000000000000000"),
    ],
)
def test_pinned_hashes(text, hex_):
    assert to_hex(simhash64(text)) == hex_


def test_algorithm_name_is_published():
    assert ALGORITHM == "simhash64-w3-v1"


def test_features_are_padded_trigrams_of_content_words():
    assert features("What is the SIZE?") == {"_si": 1, "siz": 1, "ize": 1, "ze_": 1}
    assert features("size, size") == {"_si": 2, "siz": 2, "ize": 2, "ze_": 2}


def test_stop_words_are_kept_when_nothing_else_is_left():
    assert set(words("How do I?")) <= STOP_WORDS
    assert features("How do I?") == features("how do i")
    assert features("How do I?") != {}


def test_texts_without_words_hash_to_zero():
    for text in ["", "   ", "?!...", "___", "🙂🚀", "\u0000\ud800"]:
        assert features(text) == {}
        assert simhash64(text) == 0


def test_normalization_ignores_case_width_accents_composition_and_final_sigma():
    assert simhash64("WHAT IS THE MAXIMUM CHUNK SIZE?") == simhash64("what is the maximum chunk size")
    assert simhash64("ｆｕｌｌｗｉｄｔｈ") == simhash64("fullwidth")
    assert simhash64("de\u0301ployer") == simhash64("d\u00e9ployer")
    assert simhash64("σίσυφος") == simhash64("σίσυφοσ")
    assert simhash64("déployer") != simhash64("deployer")  # accents are kept, not stripped


def test_punctuation_and_symbols_separate_words():
    assert words("snake_case, kebab-case 🙂 x+y") == ["snake", "case", "kebab", "case", "x", "y"]
    assert words("如何配置嵌入模型？") == ["如何配置嵌入模型"]


def test_result_equals_the_package_and_the_written_out_arithmetic():
    from simhash import Simhash  # the reference definition (PyPI simhash 2.x)

    maker = _load_maker()
    for text in maker.TEXTS:
        weighted = features(text)
        assert simhash64(text) == _arithmetic(weighted), text
        if weighted and max(weighted.values()) < 256:  # the package's numpy path overflows beyond
            assert simhash64(text) == Simhash(weighted, f=64).value, text


def test_heavy_weights_do_not_overflow():
    text = "the chunk size " * 400  # a pasted paragraph: trigram weights far past 255
    assert max(features(text).values()) >= 256
    assert simhash64(text) == _arithmetic(features(text)) == simhash64("chunk size")


def test_rejects_non_text():
    with pytest.raises(TypeError):
        simhash64(b"bytes")  # type: ignore[arg-type]


# --- the vectors file shared with the JavaScript tests -----------------------------------


def test_vectors_file_matches_the_code():
    maker = _load_maker()
    stored = (VECTORS_DIR / "simhash.json").read_text(encoding="utf-8")
    assert stored == maker.render(maker.build()), "run tests/vectors/make_simhash_vectors.py"


def test_vectors_cover_the_required_kinds_of_text():
    document = json.loads((VECTORS_DIR / "simhash.json").read_text(encoding="utf-8"))
    texts = [v["text"] for v in document["vectors"]]
    assert len(texts) >= 40
    assert "" in texts
    assert any(any("\u4e00" <= c <= "\u9fff" for c in t) for t in texts)  # CJK
    assert any(any(ord(c) >= 0x1F300 for c in t) for t in texts)  # emoji
    assert any(len(t) > 300 for t in texts)
    for v in document["vectors"]:
        assert v["value"] == int(v["decimal"]) == int(v["hex"], 16)
    assert any(v["value"] > 2**53 for v in document["vectors"])  # the case JSON.parse rounds


# --- properties ----------------------------------------------------------------------------


@given(hashes, hashes)
def test_hamming_is_symmetric_and_bounded(a, b):
    assert hamming(a, b) == hamming(b, a)
    assert 0 <= hamming(a, b) <= 64
    assert hamming(a, a) == 0
    assert (hamming(a, b) == 0) == (a == b)


@given(hashes)
def test_hex_round_trips(h):
    text = to_hex(h)
    assert len(text) == 16 and text == text.lower()
    assert from_hex(text) == h
    assert from_hex(text.upper()) == h


@given(st.text())
def test_simhash_is_a_64_bit_function_of_the_text(text):
    h = simhash64(text)
    assert 0 <= h < 2**64
    assert h == simhash64(text)


def test_hex_is_zero_padded():
    assert to_hex(0) == "0000000000000000"
    assert to_hex(1) == "0000000000000001"
    assert to_hex(2**64 - 1) == "ffffffffffffffff"


@pytest.mark.parametrize("bad", ["", "abc", "0x00000000000000", "000000000000000g", " 0000000000000000", "0" * 17, 5])
def test_from_hex_rejects_anything_but_16_hex_digits(bad):
    with pytest.raises(ValueError):
        from_hex(bad)


@pytest.mark.parametrize("bad", [-1, 2**64, True, 1.0])
def test_out_of_range_hashes_are_rejected(bad):
    with pytest.raises((TypeError, ValueError)):
        to_hex(bad)
    with pytest.raises((TypeError, ValueError)):
        hamming(bad, 0)


@pytest.mark.parametrize(
    ("stored", "query", "unrelated"),
    [
        ("What is the maximum chunk size?", "max chunk size", "How do I reset my password?"),
        ("How do I configure the embedding model?", "configuring embeding models", "What license is the project under?"),
        ("Can I deploy the site to GitHub Pages?", "deploying site to github pages", "Which Python version is required?"),
        ("如何配置嵌入模型？", "配置嵌入模型", "网站的许可证是什么？"),
    ],
)
def test_paraphrases_are_closer_than_unrelated_questions(stored, query, unrelated):
    s, q, u = simhash64(stored), simhash64(query), simhash64(unrelated)
    assert hamming(s, q) < hamming(s, u)
    assert hamming(s, q) < hamming(q, u)


def _runs_one_char_at_a_time(text, keep):
    """maximal_runs as it was written first: the definition the fast version must match."""
    found, current = [], []
    for char in text:
        if keep(char):
            current.append(char)
        elif current:
            found.append("".join(current))
            current = []
    if current:
        found.append("".join(current))
    return found


@given(st.text(alphabet=st.sampled_from("ab_1 \t\n-.é\u0301ΣσçüΩ\u00a0\u2014\u200b\x00\udc80字𝔘!")))
def test_maximal_runs_are_the_runs_of_a_character_loop(text):
    from pipeline.siteformat.searchtext import _is_run_char
    from pipeline.simhash import _is_word_char, maximal_runs

    for keep in (_is_word_char, _is_run_char):
        assert maximal_runs(text, keep) == _runs_one_char_at_a_time(text, keep)


@given(st.text())
def test_maximal_runs_match_the_loop_on_any_text(text):
    from pipeline.siteformat.searchtext import _is_run_char
    from pipeline.simhash import maximal_runs

    assert maximal_runs(text, _is_run_char) == _runs_one_char_at_a_time(text, _is_run_char)


def test_maximal_runs_refuse_a_keep_that_accepts_the_separator():
    from pipeline.simhash import maximal_runs

    with pytest.raises(ValueError):
        maximal_runs("a\0b", lambda char: True)
