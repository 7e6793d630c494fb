"""Token-level evidence (``maxsim-*``): the fused first 10 re-ordered with late-interaction
(MaxSim) scores over MiniLM's own token vectors, alone or in the vector term. Scores are cached
on disk by (query, chunk text digest).
"""

from __future__ import annotations

import pickle
import sys
from typing import Sequence

import numpy as np

from bench import chroma_eval as ce
from bench.ranking.base import Context, Variant, full, v_score, vector_of
from pipeline.search import rank

MAXSIM_CACHE = ce.WORK_DIR / "ranking_maxsim_scores.pkl"


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_vectors(texts: Sequence[str]) -> list[np.ndarray]:
    """MiniLM's contextual token vectors of each text (the ones its mean pooling averages into the
    chunk vector), [CLS] and [SEP] left out, each row unit length."""
    out = ce.model().encode(list(texts), batch_size=16, output_value="token_embeddings", convert_to_numpy=False,
                            show_progress_bar=False)
    rows = []
    for t in out:
        m = t.float().numpy()[1:-1].astype(np.float32)
        rows.append(m / (np.linalg.norm(m, axis=1, keepdims=True) + 1e-12))
    return rows


def maxsim_scores(name: str, contexts: list[Context], depth: int = 10) -> list[list[dict[int, float]]]:
    """Per context, per question: for each of the site ranking's first ``depth`` chunks, the
    late-interaction score of the site's own model (ColBERT's MaxSim, untrained for it): the mean
    over the query's tokens of the best cosine between that token and one of the chunk's tokens.
    The chunk vector averages its tokens, so a query word that one phrase answers is diluted by
    the rest; the finest-grained form of sentence evidence. Scores are cached on disk by (query,
    chunk text digest), so nothing is computed twice."""
    import time

    cache: dict[tuple[str, str], float] = pickle.loads(MAXSIM_CACHE.read_bytes()) if MAXSIM_CACHE.exists() else {}
    firsts = [[v_score(ctx, qi)[:depth] for qi in range(len(ctx.questions))] for ctx in contexts]
    questions = contexts[0].questions
    qd = [_digest(q.text) for q in questions]
    need: dict[str, set[int]] = {}
    text_of: dict[str, str] = {}
    for ctx, per_q in zip(contexts, firsts):
        for qi, first in enumerate(per_q):
            for n in first:
                cd = _digest(ctx.chunks.texts[n])
                if (qd[qi], cd) not in cache:
                    need.setdefault(cd, set()).add(qi)
                    text_of[cd] = ctx.chunks.texts[n]
    if need:
        qtok = token_vectors([q.text for q in questions])
        todo = sorted(need)
        t0 = time.perf_counter()
        for i in range(0, len(todo), 32):
            part = todo[i : i + 32]
            for cd, tok in zip(part, token_vectors([text_of[c] for c in part])):
                for qi in need[cd]:
                    cache[(qd[qi], cd)] = float((qtok[qi] @ tok.T).max(axis=1).mean()) if len(tok) and len(qtok[qi]) else 0.0
            done = i + len(part)
            print(f"\rmaxsim {name}: {done}/{len(todo)} chunks ({done / (time.perf_counter() - t0):.1f}/s)", end="", file=sys.stderr, flush=True)
            if done % 640 == 0 or done == len(todo):
                MAXSIM_CACHE.write_bytes(pickle.dumps(cache))
        print(file=sys.stderr)
    return [[{n: cache[(qd[qi], _digest(ctx.chunks.texts[n]))] for n in first} for qi, first in enumerate(per_q)]
            for ctx, per_q in zip(contexts, firsts)]


def make_maxsim(how: str, depth: int = 10) -> Variant:
    """Re-order the site ranking's first ``depth`` with the MaxSim score (``maxsim_scores``), the rest
    unchanged. ``alone``: by MaxSim only; ``vec``: the vector term of score fusion becomes (cosine +
    MaxSim) / 2, the form kept for sentence evidence (``rank.sentence_rerank``); ``sent``: that
    vector term with the best sentence cosine too, (cosine + best sentence + MaxSim) / 3."""
    def run(ctx, qi):
        lex, vec = ctx.lexical[qi], vector_of(ctx, qi)
        fused = rank.fuse(lex, vec, "score")
        ms = ctx.alt["maxsim"][qi]
        head = [n for n, _ in fused[:depth]]
        if how == "alone":
            key = {n: -ms[n] for n in head}
        elif how == "borda":  # the Borda form of ``e5-borda``
            by_ms = {n: r for r, n in enumerate(sorted(head, key=lambda n: (-ms[n], n)))}
            key = {n: r + by_ms[n] for r, n in enumerate(head)}
        else:
            top = lex[0][1] if lex else 0
            lscore = dict(lex[:rank.FUSION_DEPTH])
            cosd = dict(vec[:rank.FUSION_DEPTH])
            key = {}
            for n in head:
                lx = lscore.get(n, 0) / top if top else 0.0
                c = max(cosd.get(n, 0.0), 0.0)
                if how == "vec":
                    v = (c + max(ms[n], 0.0)) / 2
                elif how == "sent":
                    v = (c + max(ctx.sentences[qi].get(n, c), 0.0) + max(ms[n], 0.0)) / 3
                else:
                    raise ValueError(how)
                key[n] = -(0.5 * lx + 0.5 * v)
        head = sorted(head, key=lambda n: (key[n], n))
        return full(head + [n for n, _ in fused[depth:]], ctx, qi)
    return run


VARIANTS: dict[str, Variant] = {f"maxsim-{_h}": make_maxsim(_h) for _h in ("alone", "vec", "sent", "borda")}
