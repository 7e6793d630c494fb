"""Ranking over ``_search/`` data: lexical, SimHash prompts, vectors, and their fusion (pure).

``pipeline/assets/lexical.js`` implements every function here with the same arithmetic and the
same tie rules (ties go to the lower chunk number, i.e. site order), so the Python client and
the browser return identical rankings; ``tests/vectors/lexical.json`` and
``tests/test_client_js.py`` check it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from pipeline.siteformat.searchtext import terms

RRF_K = 60
"""Reciprocal-rank constant: score = sum over rankings of 1 / (RRF_K + rank), rank from 1."""
FUSION_DEPTH = 100
"""Only the first FUSION_DEPTH entries of each ranking take part in fusion."""
FUSIONS = ("rrf", "score")
DEFAULT_FUSION = "score"
"""Chosen by paired evaluation (bench/search_eval.py, docs/BENCHMARKS.md): score fusion beat RRF
on Chroma's set (R@5 +3.9 points, CI excluding 0) and was not worse on the other two."""
SCORE_ALPHA = 0.5
"""Weight of the lexical side in score fusion (see ``score_fusion``)."""


def query_terms(query: str) -> list[str]:
    """The distinct index terms of ``query`` in first-seen order (a repeated word counts once)."""
    return list(dict.fromkeys(terms(query)))


IDF_SCALE = 256
"""idf levels: round(256 * idf), at least 1 (``idf_level``)."""


def idf_level(chunks: int, df: int) -> int:
    """The integer idf of a term held by ``df`` of a collection's ``chunks`` chunks:
    ``floor(IDF_SCALE * ln(1 + (chunks - df + 0.5) / (df + 0.5)) + 0.5)``, at least 1 (BM25's
    idf; ``lexical.js`` computes it with the same operations)."""
    return max(1, math.floor(IDF_SCALE * math.log(1 + (chunks - df + 0.5) / (df + 0.5)) + 0.5))


def decode_postings(entry: Sequence[Sequence[int]], base: int = 0) -> list[tuple[int, int]]:
    """A stored entry ``[chunk deltas, levels]`` as [(chunk number, level)]: the first delta is a
    chunk number counted from ``base`` (the file's first chunk), each later one the step from the
    previous posting's."""
    deltas, levels = entry
    out, number = [], base
    for delta, level in zip(deltas, levels):
        number += delta
        out.append((number, level))
    return out


def decode_document_postings(entry: Sequence[Sequence[int]], starts: Sequence[int], base: int = 0) -> list[tuple[int, int]]:
    """A stored entry ``[document deltas, chunk indexes, levels]`` (a site-wide or a topic's own
    term shard's) as [(chunk number, level)]: the first delta is a document number counted from
    ``base`` (the file's first document), each later one the step from the previous posting's
    document; chunk number = ``starts[document]`` (its first chunk) + index."""
    deltas, indexes, levels = entry
    out, document = [], base
    for delta, index, level in zip(deltas, indexes, levels):
        document += delta
        out.append((starts[document] + index, level))
    return out


def lexical_ranking(
    postings: Mapping[str, Sequence[tuple[int, int]]], allowed: Callable[[int], bool] = lambda n: True, *, chunks: int,
) -> list[tuple[int, int]]:
    """[(chunk number, integer score)] best first: over the query terms, idf level x tf level.

    ``postings`` maps each query term to its decoded postings (a term absent from the index
    maps to nothing), with every posting of the collection the query ranks (the site, or the
    chunks its topic filter allows); chunks for which ``allowed`` is false are left out, and a
    term's idf counts the postings left among the collection's ``chunks`` chunks
    (``idf_level(chunks, df)``)."""
    kept = {term: [(n, level) for n, level in entries if allowed(n)] for term, entries in postings.items()}
    scores: dict[int, int] = {}
    for entries in kept.values():
        idf = idf_level(chunks, len(entries))
        for number, level in entries:
            scores[number] = scores.get(number, 0) + idf * level
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def prompt_ranking(prompts: Iterable[tuple[int, int, int]], query_hash: int) -> list[tuple[int, int]]:
    """[(chunk number, Hamming distance)] of chunks holding a prompt hash within its radius.

    ``prompts`` are (hash, chunk number, radius). Order: smallest distance, then more hashes
    in range, then chunk number. A query hash of 0 (no words) matches nothing.
    """
    if query_hash == 0:
        return []
    close: dict[int, list[int]] = {}
    for h, number, radius in prompts:
        d = (h ^ query_hash).bit_count()
        if d <= radius:
            close.setdefault(number, []).append(d)
    ranked = sorted(close.items(), key=lambda t: (min(t[1]), -len(t[1]), t[0]))
    return [(n, min(ds)) for n, ds in ranked]


def vector_ranking(numbers: Sequence[int], matrix: np.ndarray, query: np.ndarray) -> list[tuple[int, float]]:
    """[(chunk number, cosine)] best first for unit rows ``matrix[r]`` of chunk ``numbers[r]``."""
    if not len(numbers):
        return []
    # float64 throughout: the browser sums in doubles, and near-ties must break the same way
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(q))
    scores = np.asarray(matrix, dtype=np.float64) @ (q / norm if norm else q)
    return sorted(((int(n), float(s)) for n, s in zip(numbers, scores)), key=lambda t: (-t[1], t[0]))


def rrf(rankings: Sequence[Sequence[int]], *, k: int = RRF_K, depth: int = FUSION_DEPTH) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of chunk-number rankings: [(chunk number, score)] best first.

    Each ranking adds 1 / (k + rank) (rank from 1) for its first ``depth`` entries, in the
    order the rankings are given (so float sums are the same in JS).
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, number in enumerate(ranking[:depth], start=1):
            scores[number] = scores.get(number, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def score_fusion(
    lexical: Sequence[tuple[int, float]], vector: Sequence[tuple[int, float]], *, alpha: float = SCORE_ALPHA,
    depth: int = FUSION_DEPTH,
) -> list[tuple[int, float]]:
    """Calibrated score fusion: alpha * lexical / best lexical + (1 - alpha) * max(cosine, 0).

    Over the first ``depth`` entries of each list; a chunk missing from one list gets 0 there.
    """
    top = lexical[0][1] if lexical else 0
    scores: dict[int, float] = {}
    for number, score in lexical[:depth]:
        scores[number] = alpha * (score / top if top else 0.0)
    for number, cosine in vector[:depth]:
        scores[number] = scores.get(number, 0.0) + (1 - alpha) * max(cosine, 0.0)
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def fuse(
    lexical: Sequence[tuple[int, float]], vector: Sequence[tuple[int, float]], fusion: str = DEFAULT_FUSION
) -> list[tuple[int, float]]:
    """[(chunk number, fused score)] best first. With one list empty, the other unchanged."""
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    if not vector:
        return list(lexical)
    if not lexical:
        return list(vector)
    if fusion == "rrf":
        return rrf([[n for n, _ in lexical], [n for n, _ in vector]])
    return score_fusion(lexical, vector)


def within_slots(
    lexical: Sequence[tuple[int, float]], fused: Sequence[tuple[int, float]], covered: set[int] | frozenset[int]
) -> list[tuple[int, float]]:
    """The lexical ranking with the ``covered`` chunks (those with vector evidence) re-ordered
    among the positions they hold in it, in their ``fused`` order (a chunk missing from ``fused``
    after those in it, in lexical order); every other chunk keeps its position. Then the ``fused``
    chunks the lexical ranking lacks, in ``fused`` order. Scores are the ``fused`` ones (0.0 for
    a chunk missing from it).

    What a query whose request budget left some of its chosen documents without vectors ranks
    by: plain fusion would push those documents' chunks below every chunk with a cosine (they
    get 0 there), which cost 9 points R@5 on the realdocs set under a cap of 6 requests; this
    costs 1.4 (docs/decisions/search.md "A default cap of 6 requests")."""
    order = {n: i for i, (n, _) in enumerate(fused)}
    score = dict(fused)
    slots = [i for i, (n, _) in enumerate(lexical) if n in covered]
    members = sorted(slots, key=lambda i: (order.get(lexical[i][0], len(order)), i))
    numbers = [n for n, _ in lexical]
    for slot, i in zip(slots, members):
        numbers[slot] = lexical[i][0]
    seen = set(numbers)
    numbers += [n for n, _ in fused if n not in seen]
    return [(n, score.get(n, 0.0)) for n in numbers]


RERANK_DEPTH = 10
"""Sentence re-ranking re-orders the fused ranking's first RERANK_DEPTH chunks (twice k = 5)."""
MIN_SENTENCE = 20
"""Pieces shorter than this (code points) are not scored on their own: bullets, headings."""
_SENTENCE_END = ".!?"
_SPACE = " \t"


def sentences(text: str) -> list[str]:
    """A chunk text's sentences: split at every line break and after ``.``, ``!`` or ``?``
    followed by spaces or tabs; each piece stripped of spaces, tabs and line breaks; pieces
    shorter than MIN_SENTENCE code points dropped.

    Written out character by character (no regex) so that ``lexical.js`` splits identically.
    """
    pieces, current, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c in "\r\n":
            pieces.append("".join(current))
            current = []
        elif c in _SPACE and current and current[-1] in _SENTENCE_END:
            pieces.append("".join(current))
            current = []
            while i + 1 < len(text) and text[i + 1] in _SPACE:
                i += 1
        else:
            current.append(c)
        i += 1
    pieces.append("".join(current))
    out = []
    for p in pieces:
        p = p.strip(" \t\r\n")
        if len(p) >= MIN_SENTENCE:
            out.append(p)
    return out


def sentence_rerank(
    fused: Sequence[tuple[int, float]], lexical: Sequence[tuple[int, float]], vector: Sequence[tuple[int, float]],
    best_sentence: Mapping[int, float], *, alpha: float = SCORE_ALPHA, depth: int = RERANK_DEPTH,
) -> list[tuple[int, float]]:
    """Score fusion's first ``depth`` re-ordered with sentence evidence; the rest unchanged.

    For each of them: alpha * lexical / best lexical + (1 - alpha) * (max(cosine, 0) +
    max(best sentence cosine, 0)) / 2, where ``best_sentence[n]`` is the largest cosine between
    the query and one of chunk n's ``sentences`` (a chunk absent from it: its own cosine). A
    chunk embedding averages its sentences, so the one that answers is diluted by the others;
    the best sentence is that one's own evidence. Cosine and lexical score as in
    ``score_fusion`` (0 when a list lacks the chunk). Ties: the lower chunk number.
    """
    top = lexical[0][1] if lexical else 0
    lex = {n: s for n, s in lexical[:FUSION_DEPTH]}
    cos = {n: c for n, c in vector[:FUSION_DEPTH]}
    head = []
    for number, _ in fused[:depth]:
        c = max(cos.get(number, 0.0), 0.0)
        s = max(best_sentence.get(number, cos.get(number, 0.0)), 0.0)
        head.append((number, alpha * (lex.get(number, 0) / top if top else 0.0) + (1 - alpha) * (c + s) / 2))
    return sorted(head, key=lambda t: (-t[1], t[0])) + list(fused[depth:])
