"""Ranking chunks for a query, three ways, and the filters every way shares (pure).

``pipeline/assets/client.js`` implements ``simhash_hits``, ``keyword_hits``, ``passes`` and
``interleave`` (``siteformat/walk.py``) with the same rules, so both clients return the same hits in the same order
(checked by ``tests/test_client_js.py``). Ties keep site order: topics as the walk from the
root meets them, documents as their topic lists them, chunks by index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from pipeline.simhash import BITS, STOP_WORDS, normalize, words
from pipeline.siteformat.records import ChunkRef, Hit


def norm_keyword(text: str) -> str:
    """A keyword compared case- and spacing-insensitively (NFKC, lowercase, single spaces)."""
    return " ".join(normalize(text).split())


def passes(chunk: ChunkRef, *, keyword: str | None = None, is_code: bool | None = None, promotion_level: str | None = None) -> bool:
    """True when ``chunk`` lists ``keyword`` among its keywords and has the wanted ``is_code``
    and ``promotion_level`` (its document's level, compared exactly)."""
    if is_code is not None and chunk.is_code != is_code:
        return False
    if promotion_level is not None and chunk.promotion_level != promotion_level:
        return False
    if keyword is not None:
        wanted = norm_keyword(keyword)
        return any(norm_keyword(k.name) == wanted for k in chunk.keywords)
    return True


def simhash_hits(entries: Iterable[tuple[ChunkRef, int]], query_hash: int) -> list[Hit]:
    """Chunks holding a prompt hash within their radius of ``query_hash``, closest first.

    ``entries`` pairs each chunk with its radius (the largest Hamming distance that matches;
    each topic may publish its own). A chunk's distance is that of its closest hash; ties go
    to the chunk with more hashes in range, then to site order. A query hash of 0 (a query
    without words) matches nothing.
    """
    if query_hash == 0:
        return []
    found = []
    for position, (chunk, radius) in enumerate(entries):
        close = [d for d in ((h ^ query_hash).bit_count() for h in chunk.prompt_hashes) if d <= radius]
        if close:
            best = min(close)
            found.append((best, -len(close), position, Hit(chunk, 1.0 - best / BITS, "simhash", best)))
    found.sort(key=lambda t: t[:3])
    return [t[3] for t in found]


def query_words(query: str) -> set[str]:
    """The query's normalised words without stop words (all words if every word is one)."""
    all_words = words(query)
    return set(w for w in all_words if w not in STOP_WORDS) or set(all_words)


def keyword_hits(chunks: Iterable[ChunkRef], query: str) -> list[Hit]:
    """Chunks scored by the query's words: best first, zero scores left out.

    Score: the authority score of every chunk keyword all of whose words are query words, plus
    one for every query word among the words of the chunk's title and header path.
    """
    wanted = query_words(query)
    if not wanted:
        return []
    found = []
    for position, chunk in enumerate(chunks):
        score = 0.0
        for kw in chunk.keywords:
            kw_words = words(kw.name)
            if kw_words and all(w in wanted for w in kw_words):
                score += kw.score
        score += len(wanted & set(words(f"{chunk.title} {chunk.header_path}")))
        if score > 0:
            found.append((-score, position, Hit(chunk, score, "keyword")))
    found.sort(key=lambda t: t[:2])
    return [t[2] for t in found]


def embedding_hits(chunks: Sequence[ChunkRef], matrix: np.ndarray, query: np.ndarray) -> list[Hit]:
    """``chunks[r]`` scored by the cosine of ``matrix[r]`` with ``query`` (unit rows), best first."""
    if not len(chunks):
        return []
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    scores = matrix @ (q / norm if norm else q)
    order = sorted(range(len(chunks)), key=lambda r: (-float(scores[r]), r))
    return [Hit(chunks[r], float(scores[r]), "embedding") for r in order]
