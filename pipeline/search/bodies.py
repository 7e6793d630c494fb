"""Chunk files' index terms counted ahead, while a build encodes, for the search index.

The search index counts every chunk file's terms (``text.terms``) once the site is built, after
the last vector; the chunk files' texts are known long before (the plans hold them). A build
counts them while the vectors are encoded (``BodyTerms.add``; the overlap schedule:
``site/build.py``) and hands them over (``handoff.py``), and the search index takes a
chunk's counts from here when the file it reads holds a text counted here (by content hash,
xxh64, the key the embedding cache trusts for a chunk's text too), else counts it itself.

Guarantee: ``counts(text)`` is ``Counter(terms(text))`` (same terms, same counts, keys in the
same order: the order of first occurrence, which numbers the index's terms) or None. Memory is
bounded: the counts are two int arrays a text over one shared term list, and no more than
``budget`` (term, count) pairs in all are kept (a bigger build counts the rest after the last
vector, as before).
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Iterable

import xxhash

from pipeline.siteformat.searchtext import terms

BUDGET = 4_000_000
"""Most (term, count) pairs kept: ~32 MB of arrays, ~60,000 chunks of the synthetic corpus."""


class BodyTerms:
    """Term counts of chunk texts, by the text's content hash (module docstring)."""

    def __init__(self, budget: int = BUDGET):
        self.budget = budget
        self.size = 0  # (term, count) pairs held
        self._names: list[str] = []  # term id -> term
        self._ids: dict[str, int] = {}
        self._counts: dict[int, tuple[array, array]] = {}  # content hash -> (term ids, counts)

    def add(self, texts: Iterable[str]) -> None:
        """Count the terms of ``texts`` (until the budget is spent; a text seen is not counted again)."""
        ids, names = self._ids, self._names
        for text in texts:
            key = _key(text)
            if key in self._counts:
                continue
            counted = Counter(terms(text))
            if self.size + len(counted) > self.budget:
                return
            self.size += len(counted)
            term_ids = array("i")
            for term in counted:  # in the Counter's order: first occurrence
                i = ids.get(term)
                if i is None:
                    i = ids[term] = len(names)
                    names.append(term)
                term_ids.append(i)
            self._counts[key] = (term_ids, array("i", counted.values()))

    def counts(self, text: str) -> Counter | None:
        """``Counter(terms(text))`` when ``text`` was counted here, else None."""
        found = self._counts.get(_key(text))
        if found is None:
            return None
        names = self._names
        return Counter(dict(zip(map(names.__getitem__, found[0]), found[1])))


def _key(text: str) -> int:
    """xxh64 of the text's UTF-8 bytes (``embedding.cache.content_hash``, as an int)."""
    return xxhash.xxh64_intdigest(text.encode("utf-8"))
