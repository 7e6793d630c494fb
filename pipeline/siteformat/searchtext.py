"""Index terms of a text, identical in Python and in the browser (``assets/lexical.js``).

Definition (``TOKENIZER`` = ``"lexical-v1"``; changing any step changes every index):

1. Normalise as SimHash does (``pipeline.simhash.normalize``: NFKC, lowercase, ``ς`` -> ``σ``).
2. Runs are maximal sequences of letters, marks, numbers and ``_`` (``/[\\p{L}\\p{M}\\p{N}_]+/u``).
3. A run holding ``_`` between two non-empty parts (``unwrap_or_else``, ``root_path``) yields
   itself with outer underscores stripped, unstemmed: code identifiers stay whole. Then every
   run yields its ``_``-separated parts as words.
4. A word in ``pipeline.simhash.STOP_WORDS`` is dropped; a word of ASCII letters ``a-z`` only
   is stemmed with Snowball English (PyStemmer; ``assets/snowball.js`` in the browser); any
   other word (digits, non-ASCII) is kept as it is.
5. Terms longer than ``MAX_TERM`` code points are dropped (base64 blobs, hashes).

Terms keep their order and repetitions (term frequencies count them).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

import Stemmer

from pipeline.simhash import STOP_WORDS, maximal_runs, normalize

TOKENIZER = "lexical-v1"
MAX_TERM = 64
_ASCII_WORD = re.compile(r"[a-z]+")
_STEMMER = Stemmer.Stemmer("english")


def _is_run_char(char: str) -> bool:
    return char == "_" or unicodedata.category(char)[0] in "LMN"


def runs(text: str) -> list[str]:
    """Step 1-2: the normalised runs of ``text`` in order."""
    return maximal_runs(normalize(text), _is_run_char)


@lru_cache(maxsize=65536)
def word_term(word: str) -> str | None:
    """Step 4 for one word: its term, or None for a stop word."""
    if word in STOP_WORDS:
        return None
    if _ASCII_WORD.fullmatch(word):
        return _STEMMER.stemWord(word)
    return word


def terms(text: str) -> list[str]:
    """The index terms of ``text`` in order (module docstring)."""
    out: list[str] = []
    for run in runs(text):
        if "_" not in run:  # most runs: one word
            term = word_term(run)
            if term is not None:
                out.append(term)
            continue
        parts = [p for p in run.split("_") if p]
        if len(parts) > 1:
            out.append(run.strip("_"))
        for part in parts:
            term = word_term(part)
            if term is not None:
                out.append(term)
    return [t for t in out if len(t) <= MAX_TERM]


def fnv1a32(text: str) -> int:
    """32-bit FNV-1a of ``text``'s UTF-8 bytes (which shard holds a term)."""
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def shard_of(term: str, shards: int) -> int:
    """The shard file number of ``term`` among ``shards`` shards."""
    return fnv1a32(term) % shards


_ANCHOR = re.compile(r"\s*\{\s*#[^}]*\}")
_MARKS = re.compile(r"(^|\s)#{1,6}\s+")


def clean_heading(text: str) -> str:
    """A header path or heading without ``{ #anchor }`` attributes and ``#`` markers, for display."""
    return _MARKS.sub(r"\1", _ANCHOR.sub("", text)).strip()


def chunk_fields(title: str, header_path: str, chunk_title: str, body: Counter, count=None,
                 aliases: tuple[str, ...] = ()) -> dict[str, Counter]:
    """The BM25F fields ``_search/`` indexes for one chunk: its document's ``title`` and other
    names (``aliases``: a vault note's front matter, so a search for an alias finds the note), its
    heading (``header_path`` cleaned, else ``chunk_title``) and ``body`` (the chunk file's term
    counts). ``count``: text -> term counts (default ``Counter(terms(text))``; a build passes a
    memo, whose counters are not changed)."""
    count = count or (lambda text: Counter(terms(text)))
    names = count(title)
    if aliases:
        names = sum((count(a) for a in aliases), Counter(names))
    return {"title": names, "heading": count(clean_heading(header_path) or chunk_title), "body": body}
