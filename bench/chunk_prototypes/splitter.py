"""Splitter variants, patched into ``RegionSplitter`` (and the sentence rules) for the duration
of one chunking call, then restored: hierarchical packing, a packing target below the budget,
looser sentence ends. Outside the ``with`` block the pipeline is untouched.
"""

from __future__ import annotations

import contextlib
import math
from typing import Callable

from bench.chunk_prototypes.markdown import plain


@contextlib.contextmanager
def splitter_variant(hierarchical: bool = False, target: float | None = None):
    """``hierarchical``: the pieces of a block that had to be cut are packed among themselves,
    never with the blocks around it (LangChain's recursive discipline). ``target``: pack towards
    chunks of ``target`` x the budget instead of filling every chunk up to the budget."""
    from pipeline.chunking import split as sp

    cls = sp.RegionSplitter
    orig_split, orig_pack = cls._split, cls._pack

    def pack(self, units, limit):
        if len(units) <= 1 or target is None:
            return orig_pack(self, units, limit)
        total = self._fill(units[0].start, units[-1].end, limit)
        n = max(1, math.ceil(total / target))
        goal = total / n
        out, current = [], None
        for unit in units:
            if current is not None and not unit.oversize and not current.oversize:
                if self.fits(current.start, unit.end, limit.tokens, limit.chars) and self._fill(current.start, current.end, limit) < goal:
                    current = sp.Span(current.start, unit.end, level=max(current.level, unit.level))
                    continue
            if current is not None:
                out.append(current)
            current = unit
        out.append(current)
        return out

    def split_h(self, start, end, limit, depth):
        level = limit.levels[min(depth, len(limit.levels) - 1)]
        if self.fits(start, end, limit.tokens, limit.chars):
            return [sp.Span(start, end, level=level)]
        if self._is_code_block(start, end):
            return [sp.Span(start, end, oversize=self.tokens(start, end) > limit.tokens, level=level)]
        while depth < len(limit.levels):
            parts = self._cut(start, end, limit.levels[depth])
            if len(parts) > 1:
                break
            depth += 1
        else:
            return [sp.Span(start, end, oversize=self.tokens(start, end) > limit.tokens, level=sp.TOKENS)]
        level = limit.levels[depth]
        out, run = [], []
        for a, b in parts:
            if self.fits(a, b, limit.tokens, limit.chars):
                run.append(sp.Span(a, b, level=level))
            else:
                out += self._pack(run, limit) if run else []
                run = []
                out += split_h(self, a, b, limit, depth + 1)
        out += self._pack(run, limit) if run else []
        return out

    if hierarchical:
        cls._split = split_h
    cls._pack = pack
    try:
        yield
    finally:
        cls._split, cls._pack = orig_split, orig_pack


@contextlib.contextmanager
def loose_sentences(enabled: bool = True):
    """A full stop followed by a lowercase word also ends a sentence (lowercased corpora such as
    Chroma's finance set have no capitals after a full stop), unless an ellipsis, an
    abbreviation or a list marker precedes it: the pipeline's own ``sentence_starts(lowercase=True)``
    rule, switched on for every caller while the context lasts."""
    from pipeline.chunking import sentences as se

    orig = se._not_a_full_stop

    def relaxed(text, start, dot, next_start, *, lowercase=False):
        return orig(text, start, dot, next_start, lowercase=True)

    if enabled:
        se._not_a_full_stop = relaxed
    try:
        yield
    finally:
        se._not_a_full_stop = orig


def variant(hierarchical=False, target=None, embed="content", loose=False, **options) -> Callable:
    inner = plain(embed=embed, **options)

    def split(text):
        with splitter_variant(hierarchical, target), loose_sentences(loose):
            return inner(text)

    return split
