"""The semantic strategy (with or without loose sentences) and a hybrid: markdown sections kept
whole when they fit, a section over the budget cut where the embedding of consecutive units
drifts most (MiniLM, or a hashed TF-IDF ``LexicalEmbedder`` for lexical cohesion).
"""

from __future__ import annotations

from typing import Callable

from bench.chunk_prototypes.markdown import counter, plain
from bench.chunk_prototypes.splitter import loose_sentences


def semantic(loose=False, **options) -> Callable:
    from bench.chunkers import CachedMiniLM

    inner = plain("semantic", embedder=CachedMiniLM(), **options)

    def split(text):
        with loose_sentences(loose):
            return inner(text)

    return split


def hybrid_pieces(document, counter_, *, max_tokens=256, min_tokens=64, percentile=90.0, split_fitting=False, embedder=None, window=1):
    """Markdown sections (## / ###) kept whole when they fit; a section over the budget is cut
    where the embedding of consecutive units drifts most (the semantic strategy's gaps, with
    min_tokens on both sides), recursively, until every part fits. ``split_fitting`` also cuts
    a fitting section at a gap at or above the document's ``percentile``."""
    import numpy as np
    from pipeline.chunking.sections import Section, heading_sections
    from pipeline.chunking.split import RegionSplitter
    from pipeline.chunking.strategies.markdown import split_sections
    from pipeline.chunking.strategies.semantic import SemanticStrategy, _gaps

    sem = SemanticStrategy(counter=counter_, min_tokens=min_tokens, max_tokens=max_tokens, percentile=percentile, embedder=embedder)
    splitter = RegionSplitter(document, counter_.spans(document.text), counter_)
    sections = heading_sections(document, (2, 3))
    units = sem._units(document, splitter)
    if len(units) < 2:
        return split_sections(document, sections, counter=counter_, max_tokens=max_tokens)
    text = document.text
    gaps = _gaps(sem._embedder().embed([text[a:b] for a, b in units]), window)
    threshold = float(np.percentile(gaps, percentile))
    spans = splitter.spans
    first = np.searchsorted(np.asarray(spans.token_starts), [a for a, _ in units], side="left")
    after = np.searchsorted(np.asarray(spans.token_ends), [b for _, b in units], side="right")
    specials = spans.specials
    ustarts = [a for a, _ in units]
    import bisect

    def prefix_cost(section):
        # the markdown strategy's budget rule: the longest heading prefix a piece can get
        from pipeline.chunking.sections import context_prefix
        headings = [*section.ancestors, section.heading] if section.heading else []
        cost = 0
        for at in (section.start, section.start + 1, section.end):
            pre = context_prefix(document, headings, at, counter=counter_, max_prefix_tokens=max_tokens // 2)
            cost = max(cost, counter_.count(pre) - counter_.specials if pre else 0)
        return cost

    out_sections = []
    for section in sections:
        i = bisect.bisect_left(ustarts, section.start)
        j = bisect.bisect_left(ustarts, section.end)
        if i >= j:
            out_sections.append(section)
            continue
        budget = max_tokens - prefix_cost(section)
        fits_all = splitter.tokens(section.start, section.end) <= budget
        if fits_all and not split_fitting:
            out_sections.append(section)
            continue
        stack = [(i, j)]
        segs = []
        while stack:
            a, b = stack.pop()
            if b - a == 1:
                segs.append((a, b)); continue
            ks = np.arange(a + 1, b)
            left = after[ks - 1] - first[a] + specials
            right = after[b - 1] - first[ks] + specials
            balanced = (left >= min_tokens) & (right >= min_tokens)
            fits = after[b - 1] - first[a] + specials <= budget
            if fits:
                allowed = balanced & (gaps[ks - 1] >= threshold)
                if not allowed.any():
                    segs.append((a, b)); continue
            else:
                allowed = balanced if balanced.any() else np.ones_like(balanced)
            k = int(ks[allowed][np.argmax(gaps[ks - 1][allowed])])
            stack.append((k, b)); stack.append((a, k))
        segs.sort()
        for n, (a, b) in enumerate(segs):
            s0 = section.start if n == 0 else units[a][0]
            e0 = section.end if n == len(segs) - 1 else units[b - 1][1]
            out_sections.append(Section(s0, e0, section.heading, section.ancestors))
    return split_sections(document, out_sections, counter=counter_, max_tokens=max_tokens)


class LexicalEmbedder:
    """TF-IDF bag of words over one call's texts (one document's units), hashed to ``dim``
    dimensions: lexical cohesion (TextTiling-like) instead of a model. IDF is computed over the
    texts of the call, so words frequent across the document weigh little."""

    name = "lexical"

    def __init__(self, dim: int = 4096, sublinear: bool = True):
        self.dim = dim
        self.sublinear = sublinear

    def embed(self, texts, *, progress: bool = False):
        import re
        import zlib

        import numpy as np

        word = re.compile(r"[^\W_]{2,}")
        bags = []
        df: dict[str, int] = {}
        for t in texts:
            counts: dict[str, int] = {}
            for w in word.findall(t.lower()):
                counts[w] = counts.get(w, 0) + 1
            bags.append(counts)
            for w in counts:
                df[w] = df.get(w, 0) + 1
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        for row, counts in enumerate(bags):
            for w, c in counts.items():
                idf = np.log((1 + n) / (1 + df[w])) + 1.0
                tf = 1.0 + np.log(c) if self.sublinear else c
                out[row, zlib.crc32(w.encode()) % self.dim] += tf * idf
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def hybrid(loose=True, embed="content", embedder="minilm", **options) -> Callable:
    from bench.chunkers import CachedMiniLM
    from pipeline.chunking.base import assemble
    from pipeline.parsing.markdown import parse_markdown

    emb = CachedMiniLM() if embedder == "minilm" else LexicalEmbedder()

    def split(text):
        with loose_sentences(loose):
            document = parse_markdown(text)
            pieces = hybrid_pieces(document, counter(), embedder=emb, **options)
            chunks = assemble(document, pieces, strategy="hybrid", document_id="x", source_file="x", counter=counter())
        return [(c.start_offset, c.end_offset) if embed == "span" else (c.start_offset, c.end_offset, c.content) for c in chunks]

    return split
