"""The canonical 64-bit SimHash of a question, shared by the builder and by readers.

Each chunk in ``index.json`` may carry ``prompt_hashes``: the SimHash of representative
questions. A reader hashes the user's query with the same function and matches stored hashes
within a small Hamming distance, without an embedding model. The function must therefore be
reproducible bit for bit elsewhere; ``pipeline/assets/simhash.js`` is its JavaScript twin and
``tests/vectors/simhash.json`` pins both to this module, which is the reference.

Feature definition (``ALGORITHM`` = ``"simhash64-w3-v1"``; changing any step changes every hash):

1. ``text`` is normalized with Unicode NFKC, lowercased with full default case mapping
   (``str.lower`` / ``String.prototype.toLowerCase``), and final sigma ``ς`` becomes ``σ``
   (so the context-dependent Final_Sigma rule never matters).
2. Words are maximal runs of code points whose general category is a letter, mark or number
   (``L*``, ``M*``, ``N*``; ``/[\\p{L}\\p{M}\\p{N}]+/u`` in JS). Everything else — spaces,
   punctuation, symbols, emoji, ``_`` — separates words. CJK text without spaces is one word
   per run.
3. Words in ``STOP_WORDS`` (a fixed list of English function words: "how", "the", "is", ...)
   are dropped, unless that would drop every word, in which case all words are kept.
4. Each remaining word ``w`` becomes the character trigrams of ``"_" + w + "_"`` (sliding one
   code point at a time), e.g. ``size`` -> ``_si``, ``siz``, ``ize``, ``ze_``. The features
   are these trigrams with their counts as weights.
5. The hash is Charikar's SimHash over the features exactly as ``simhash.Simhash`` (PyPI
   ``simhash`` 2.x) computes it from a ``{feature: weight}`` dict (for weights below 256, where
   the package does not overflow; computed here without it, and tested against it): each feature's 64-bit
   value is the last 8 bytes of ``md5(feature.encode("utf-8"))`` read big-endian; bit ``j``
   of the result is 1 iff the total weight of features with bit ``j`` set is more than half
   of the total weight.

A text with no word at all (``""``, ``"?!"``, emoji only) has no features and hashes to ``0``;
callers should not store or match such a hash.

Why trigrams of padded content words: a reader's query is a short paraphrase of a stored
question ("max chunk size" for "What is the maximum chunk size?"). On a small hand-made set
of such pairs, dropping function words mattered most; per-word padded trigrams were then
closer for paraphrases (and tolerant of plurals and typos) than whole words, word bigrams or
the package's default 4-grams over the joined text, with no more false matches between
unrelated questions. Word order is deliberately ignored.

Portability: Python 3.11 ships Unicode 14.0 tables. For characters assigned after Unicode
14.0, a newer JavaScript engine may classify, normalize or lowercase differently; every
character assigned in Unicode 14.0 or earlier hashes identically in both languages.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import hashlib

ALGORITHM = "simhash64-w3-v1"
"""Name of the feature definition and hash above; published so readers can check it."""

BITS = 64
MASK = (1 << BITS) - 1

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about am an and are as at be been being by can could did do does for from had has
    have how i if in into is it its me my of on or our should so than that the their them
    then there these they this those to was we were what when where which who whom why
    will with would you your
    """.split()
)
"""English function words dropped before hashing (lowercase; must match the JS list)."""

_HEX16 = re.compile(r"[0-9a-fA-F]{16}")


def normalize(text: str) -> str:
    """NFKC, then full lowercase, then ``ς`` -> ``σ`` (step 1 of the module docstring)."""
    return unicodedata.normalize("NFKC", text).lower().replace("\u03c2", "\u03c3")


def _is_word_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LMN"


def maximal_runs(text: str, keep) -> list[str]:
    """The maximal runs of characters of ``text`` for which ``keep(char)`` holds, in order.

    ``keep`` is asked once per distinct character, not once per character: every other
    character becomes NUL (which ``keep`` must reject, as both callers' do) and the text is
    split there, in C. Same runs as a loop over the characters (tests/test_simhash.py)."""
    if keep("\0"):
        raise ValueError("maximal_runs splits at NUL: keep must reject it")
    breaks = {ord(char): 0 for char in set(text) if not keep(char)}
    return [run for run in text.translate(breaks).split("\0") if run]


def words(text: str) -> list[str]:
    """The normalized words of ``text`` in order, stop words included (step 2)."""
    return maximal_runs(normalize(text), _is_word_char)


def features(text: str) -> dict[str, int]:
    """The weighted trigram features of ``text`` (steps 3-4); empty when it has no word."""
    all_words = words(text)
    content = [w for w in all_words if w not in STOP_WORDS] or all_words
    counts: Counter[str] = Counter()
    for word in content:
        padded = f"_{word}_"
        counts.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return dict(counts)


def simhash64(text: str) -> int:
    """The 64-bit SimHash of ``text`` as an int in ``[0, 2**64)``; ``0`` when it has no word."""
    if not isinstance(text, str):
        raise TypeError(f"simhash64 expects str, got {type(text).__name__}")
    weighted = features(text)
    if not weighted:
        return 0
    # Step 5 written out with Python ints: the package's numpy path overflows (uint8) once a
    # feature's weight reaches 256, as in a long pasted query; below that both agree (tests).
    total = sum(weighted.values())
    sums = [0] * BITS
    for feature, weight in weighted.items():
        value = int.from_bytes(hashlib.md5(feature.encode("utf-8")).digest()[8:], "big")
        for j in range(BITS):
            if value >> j & 1:
                sums[j] += weight
    return sum(1 << j for j in range(BITS) if 2 * sums[j] > total)


def _check(h: int, name: str) -> int:
    if not isinstance(h, int) or isinstance(h, bool):
        raise TypeError(f"{name} must be an int, got {type(h).__name__}")
    if not 0 <= h <= MASK:
        raise ValueError(f"{name} must be in [0, 2**64), got {h}")
    return h


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit hashes (0..64)."""
    return (_check(a, "a") ^ _check(b, "b")).bit_count()


def to_hex(h: int) -> str:
    """``h`` as exactly 16 lowercase hex digits, zero-padded (the JSON-safe form)."""
    return f"{_check(h, 'hash'):016x}"


def from_hex(s: str) -> int:
    """Inverse of ``to_hex``; accepts exactly 16 hex digits (either case), else ValueError."""
    if not isinstance(s, str) or not _HEX16.fullmatch(s):
        raise ValueError(f"expected 16 hex digits, got {s!r}")
    return int(s, 16)
