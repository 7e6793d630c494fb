"""Sub-chunk vectors (``piece*``): each chunk's text embedded in 2 or 3 contiguous pieces cut at
line or sentence boundaries, the kind of vectors a build could precompute instead of (or beside)
one vector per chunk, for about the same encode work (the pieces hold the chunk's tokens once).

Sentence evidence (``bench/ranking/sentences.py``) helps on every set but needs the head's texts
and ~60 sentence embeddings per query in the client; pieces are its build-time approximation.
Variants (``N`` = 2 or 3 pieces; ``Nc``: every piece after the first carries the chunk's
heading lines too, a few more tokens per piece):

* ``pieceN-head``: the fused first 10 re-scored as ``rank.sentence_rerank`` does, the best
  piece cosine in place of the best sentence cosine (vector term (chunk + best piece) / 2).
* ``pieceN-mean``: the chunk vector replaced by the normalised mean of its piece vectors (the
  build embeds only pieces); ``pieceN-mean-head``: that, plus the head re-scoring above.
* ``pieceN-max``: the vector side is max over pieces for the whole ranking.
* ``pieceN-avg``: the vector side is (chunk + best piece) / 2 for the whole ranking (the head
  rule applied everywhere); ``pieceN-mavg``: the same with the mean-of-pieces vector as chunk.
* ``pieceN-cmax``: the vector side is max(chunk, best piece) for the whole ranking (the chunk
  vector counted as one more piece: pieces alone lose the context a whole chunk has);
  ``pieceN-cmaxhead`` (``-d20``): that vector term for the fused first 10 (20) only, so a
  client would need the pieces of the head only.
* ``vector-pieceN-*``: the vector-only ranking with that vector side (the single-method
  baseline a variant that changes the vector side must beat).

Piece cosines are computed once per set and budget and pickled (``load_cached``/``save_cached``);
piece vectors are cached by text like every other vector of the bench (``quality.embed_cached``).
``--piece-cost`` in the runner times the encode of whole chunks against their pieces.
"""

from __future__ import annotations

import sys
import time
from typing import Sequence

import numpy as np

from bench import chroma_eval as ce
from bench import quality
from bench import search_eval as se
from bench.ranking.base import Context, Variant, full, ids, load_cached, save_cached, vector_of
from pipeline.search import rank

SENTENCE_END = ".!?"
KINDS = ("2", "3", "2c", "3c")  # pieces per chunk; ``c``: heading lines on every piece


def boundaries(text: str) -> list[int]:
    """Offsets where a piece may start: just after a line break, or after the spaces that follow
    a sentence end (``.``, ``!``, ``?``). Sorted, each in 1 .. len(text) - 1."""
    out = []
    for i in range(1, len(text)):
        prev = text[i - 1]
        if prev == "\n" and text[i] != "\n":
            out.append(i)
        elif prev in " \t" and text[i] not in " \t\n" and i >= 2:
            j = i - 1
            while j > 0 and text[j] in " \t":
                j -= 1
            if text[j] in SENTENCE_END:
                out.append(i)
    return out


def split_pieces(text: str, n: int) -> list[str]:
    """``text`` cut into at most ``n`` contiguous pieces at ``boundaries``, each cut the boundary
    closest (in characters) to an equal share. Guarantees: ``"".join(pieces) == text``; 1 to
    ``n`` pieces; every piece holds a non-space character when ``text`` does (a piece that
    would be blank is merged into its neighbour); a text without a boundary is one piece."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    cands = boundaries(text)
    cuts: list[int] = []
    for j in range(1, n):
        target = j * len(text) / n
        left = [c for c in cands if c > (cuts[-1] if cuts else 0)]
        if not left:
            break
        cuts.append(min(left, key=lambda c: (abs(c - target), c)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    out: list[str] = []
    for p in pieces:  # a blank piece joins the previous one (or the next, if first)
        if out and (not p.strip() or not out[-1].strip()):
            out[-1] += p
        else:
            out.append(p)
    return out


def heading_lines(text: str) -> int:
    """Length of ``text``'s leading heading block: the lines starting with ``#`` at its start and
    the blank lines after them (the heading context the bench and the site put before a span);
    0 when the text does not start with one."""
    i = 0
    while i < len(text) and text.startswith("#", i):
        end = text.find("\n", i)
        i = len(text) if end < 0 else end + 1
    if i == 0:
        return 0
    while i < len(text) and text[i] == "\n":
        i += 1
    return i


def pieces_of(text: str, kind: str) -> list[str]:
    """The pieces embedded for one chunk text. ``kind``: ``"2"``/``"3"``: ``split_pieces``;
    ``"2c"``/``"3c"``: the body after the heading block split, the heading block put before
    every piece (the first piece is then exactly the text's start)."""
    n = int(kind.rstrip("c"))
    if not kind.endswith("c"):
        return split_pieces(text, n)
    h = heading_lines(text)
    if h == 0 or h == len(text):
        return split_pieces(text, n)
    return [text[:h] + p for p in split_pieces(text[h:], n)]


def mean_vectors(vecs: np.ndarray, owner: np.ndarray, n_chunks: int) -> np.ndarray:
    """Per chunk, the normalised mean of its rows of ``vecs`` (``owner[r]`` = chunk of row r);
    every chunk must own at least one row."""
    sums = np.zeros((n_chunks, vecs.shape[1]), dtype=np.float64)
    np.add.at(sums, owner, vecs.astype(np.float64))
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a chunk owns no piece vector")
    return sums / norms


def max_by_owner(sims: np.ndarray, owner: np.ndarray, n_chunks: int) -> np.ndarray:
    """questions x chunks: the largest of each chunk's columns of ``sims`` (questions x rows)."""
    if len(np.unique(owner)) != n_chunks or owner.min() != 0 or owner.max() != n_chunks - 1:
        raise ValueError("a chunk owns no piece vector")
    order = np.argsort(owner, kind="stable")
    starts = np.searchsorted(owner[order], np.arange(n_chunks))
    return np.maximum.reduceat(sims[:, order], starts, axis=1)


def piece_sims(name: str, contexts: list[Context], kind: str) -> list[dict[str, np.ndarray]]:
    """Per context: ``max`` (questions x chunks, best piece cosine) and ``mean`` (cosine with
    the normalised mean of the pieces), float32; plus ``pieces`` (pieces per chunk)."""
    cache = ce.WORK_DIR / f"ranking_pieces_{name}_{kind}_{len(contexts)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "sims")
    if saved is not None:
        return saved
    out = []
    for ctx in contexts:
        per = [pieces_of(t, kind) for t in ctx.chunks.texts]
        texts = [p for ps in per for p in ps]
        owner = np.repeat(np.arange(len(per)), [len(ps) for ps in per])
        vecs, computed, seconds = quality.embed_cached(texts, progress=True)
        print(f"{name} pieces {kind}: {len(texts)} pieces of {len(per)} chunks ({computed} embedded in {seconds:.0f} s)",
              file=sys.stderr)
        q = ctx.qvecs.astype(np.float64)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        sims = q @ vecs.T.astype(np.float64)
        out.append({"max": max_by_owner(sims, owner, len(per)).astype(np.float32),
                    "mean": (q @ mean_vectors(vecs, owner, len(per)).T).astype(np.float32),
                    "pieces": np.bincount(owner, minlength=len(per))})
    save_cached(cache, dataset, "sims", out)
    return out


def _sims(ctx: Context, qi: int, kind: str, how: str) -> np.ndarray:
    """The vector side ``how`` for one question: ``chunk``, ``max``, ``mean``, ``avg`` ((chunk +
    max) / 2, negatives at 0 as in fusion), ``mavg`` ((mean + max) / 2) or ``cmax`` (max of the
    chunk and its pieces: the chunk vector as one more piece)."""
    p = ctx.alt["pieces" + kind]
    chunk = ctx.sims[qi]
    if how == "chunk":
        return chunk
    if how == "cmax":
        return np.maximum(chunk, p["max"][qi].astype(np.float64))
    if how in ("max", "mean"):
        return p[how][qi].astype(np.float64)
    base = chunk if how == "avg" else p["mean"][qi].astype(np.float64)
    return (np.maximum(base, 0.0) + np.maximum(p["max"][qi].astype(np.float64), 0.0)) / 2


def make_piece(kind: str, side: str, head: str | None, depth: int = rank.RERANK_DEPTH) -> Variant:
    """Score fusion with the vector side ``side`` (see ``_sims``) over the whole ranking, then
    its first ``depth`` re-scored (the rest unchanged): ``head="avg"``: by
    ``rank.sentence_rerank`` with the best piece cosine as the best sentence (vector term (side +
    best piece) / 2); ``head="cmax"``: vector term max(side, best piece), the lexical term as in
    fusion (only the head's pieces are needed, as for sentence evidence)."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi, _sims(ctx, qi, kind, side))
        fused = rank.fuse(lex, vec, "score")
        best = ctx.alt["pieces" + kind]["max"][qi]
        if head == "avg":
            fused = rank.sentence_rerank(fused, lex, vec, {n: float(best[n]) for n, _ in fused[:depth]}, depth=depth)
        elif head == "cmax":
            top = lex[0][1] if lex else 0
            lscore = dict(lex[:rank.FUSION_DEPTH])
            cos = dict(vec[:rank.FUSION_DEPTH])
            scored = [(n, rank.SCORE_ALPHA * (lscore.get(n, 0) / top if top else 0.0)
                       + (1 - rank.SCORE_ALPHA) * max(cos.get(n, 0.0), float(best[n]), 0.0)) for n, _ in fused[:depth]]
            fused = sorted(scored, key=lambda t: (-t[1], t[0])) + list(fused[depth:])
        elif head is not None:
            raise ValueError(f"unknown head rule {head!r}")
        return full(ids(fused), ctx, qi)
    return run


def make_vector(kind: str, side: str) -> Variant:
    """The vector-only ranking with the vector side ``side``."""
    def run(ctx, qi):
        return ids(vector_of(ctx, qi, _sims(ctx, qi, kind, side)))
    return run


VARIANTS: dict[str, Variant] = {}
for _k in KINDS:
    VARIANTS[f"piece{_k}-head"] = make_piece(_k, "chunk", "avg")
    VARIANTS[f"piece{_k}-mean"] = make_piece(_k, "mean", None)
    VARIANTS[f"piece{_k}-mean-head"] = make_piece(_k, "mean", "avg")
    VARIANTS[f"piece{_k}-max"] = make_piece(_k, "max", None)
    VARIANTS[f"piece{_k}-avg"] = make_piece(_k, "avg", None)
    VARIANTS[f"piece{_k}-mavg"] = make_piece(_k, "mavg", None)
    VARIANTS[f"piece{_k}-cmax"] = make_piece(_k, "cmax", None)
    VARIANTS[f"piece{_k}-cmaxhead"] = make_piece(_k, "chunk", "cmax")
    VARIANTS[f"piece{_k}-cmaxhead-d20"] = make_piece(_k, "chunk", "cmax", 20)
    for _s in ("mean", "max", "avg", "mavg", "cmax"):
        VARIANTS[f"vector-piece{_k}-{_s}"] = make_vector(_k, _s)


def kinds_in(names: Sequence[str]) -> list[str]:
    """The piece kinds (``KINDS``) the variant ``names`` need, in ``KINDS`` order."""
    used = {n.split("piece", 1)[1].split("-", 1)[0] for n in names if "piece" in n}
    return [k for k in KINDS if k in used]


def encode_cost(name: str = "markdown", kinds: Sequence[str] = ("2", "3", "2c", "3c"), sample: int = 256,
                block: int = 64, rounds: int = 3, backend: str = "auto") -> None:
    """Encode time of whole chunks against their pieces, the same texts side by side: a seeded
    sample of ``name``'s chunks at budget 224, in blocks; each block encoded whole and as each
    kind's pieces, the order rotating per block (the 2 cores are shared), with the build's own
    embedder (``backend``: ``auto`` = what a build here uses). Prints per form the median ratio
    to the whole chunks' time and the word pieces it embeds (those past the model's 256 count
    for chunks and pieces alike, since the model reads only its first 256)."""
    from pipeline.embedding.backends import choose_backend, make_local
    from pipeline.embedding.models import DEFAULT_MODEL

    from bench.ranking.base import prepare

    ctx = prepare(name, se.CHUNKERS)[1]
    rng = np.random.default_rng(0)
    texts = [ctx.chunks.texts[i] for i in sorted(rng.choice(len(ctx), size=min(sample, len(ctx)), replace=False))]
    used = choose_backend() if backend == "auto" else backend
    embedder = make_local(DEFAULT_MODEL, used)
    embedder.embed(texts[:8])  # load and warm up outside the timings
    forms = {"chunks": lambda ts: ts, **{k: (lambda ts, k=k: [p for t in ts for p in pieces_of(t, k)]) for k in kinds}}
    names = list(forms)
    times: dict[str, list[float]] = {f: [] for f in names}
    step = 0
    for _ in range(rounds):
        for b in range(0, len(texts), block):
            part = texts[b : b + block]
            for f in names[step % len(names):] + names[: step % len(names)]:
                items = forms[f](part)
                t0 = time.perf_counter()
                embedder.embed(items)
                times[f].append(time.perf_counter() - t0)
            step += 1
    counts = {f: ce.count_tokens_many(forms[f](texts), special=True) for f in names}
    read = {f: sum(min(c, 256) for c in cs) for f, cs in counts.items()}
    print(f"{name}, budget 224, {len(texts)} chunks, backend {used}, {rounds} rounds of {block}-chunk blocks")
    for f in names:
        ratio = float(np.median([t / w for t, w in zip(times[f], times["chunks"])]))
        print(f"{f:7s} {len(counts[f]):5d} texts  {read[f]:7d} word pieces read (x{read[f] / read['chunks']:.3f})  "
              f"median block {1000 * np.median(times[f]):7.0f} ms  x{ratio:.3f} the chunks' time")


def own_vector(variant: str) -> str | None:
    """The vector-only variant whose vector side ``variant`` fuses (``piece2-mean-head`` ->
    ``vector-piece2-mean``); None when it fuses the site's chunk cosines (``-head``) or is not a
    piece variant."""
    if not variant.startswith("piece"):
        return None
    kind, _, rest = variant[len("piece"):].partition("-")
    side = rest.split("-", 1)[0]  # head rules (``head``, ``cmaxhead``) leave the chunk side
    return f"vector-piece{kind}-{side}" if side in ("mean", "max", "avg", "mavg", "cmax") else None


def margins(res: dict[str, dict[str, list[float]]], hybrid: str, vector: str, lexical: str = "lexical") -> dict[str, float]:
    """Hybrid ``hybrid`` against the better (by mean R@5) of ``lexical`` and ``vector`` in
    ``res`` (per variant, per metric, per question): the paired ΔR@5 and its CI, which single
    method that was, and hybrid IoU − ``vector``'s IoU (points). The issue's targets: ΔR@5 ≥ 3,
    ΔIoU ≥ 0."""
    best = max((lexical, vector), key=lambda m: (float(np.mean(res[m]["recall"])), m == lexical))
    p = quality.paired(res[hybrid]["recall"], res[best]["recall"], n_boot=2000)
    return {"best": best, "d_recall": p["mean_diff"], "ci_low": p["ci_low"], "ci_high": p["ci_high"],
            "d_iou": 100 * (float(np.mean(res[hybrid]["iou"])) - float(np.mean(res[vector]["iou"])))}


def top_costs(contexts: list[Context], variant: Variant, k: int = 5) -> float:
    """Mean word pieces of the chunks ``variant`` puts in its first ``k``, over questions and
    contexts (budgets): which chunk lengths a ranking prefers, the lever behind IoU at k."""
    return float(np.mean([np.mean([ctx.costs[n] for n in variant(ctx, qi)[:k]])
                          for ctx in contexts for qi in range(len(ctx.questions))]))
