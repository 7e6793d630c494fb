"""Split a region of a document into spans that fit a token budget, never inside a code block.

Cuts are tried from coarse to fine: top-level blocks, then list items / table rows / nested
paragraphs, then lines, then sentences, then whitespace, then token boundaries. A span is
refined only when it does not fit; a code block is never refined (it is kept whole and flagged
as oversize instead). Callers may add a character budget and choose which levels to try
(the character-sized strategies of seed 003 skip ``LINES``, ``sentence`` starts at ``SENTENCES``).

A span starting inside a table's body is shown after the table's header (``tables.py``): its
size is the header's plus its own, so every budget here counts the header it will carry.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass

from pipeline.chunking.sentences import sentence_starts
from pipeline.chunking.tables import TableHeader, TableHeaders
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.spans import SpanCounter
from pipeline.parsing.tokens import TokenCounter

WHITESPACE = re.compile(r"\s+")
_FENCE_MARK = re.compile(r"`{3,}|~{3,}")

# Levels of refinement, coarse to fine.
BLOCKS, SUBBLOCKS, LINES, SENTENCES, WORDS, TOKENS = range(6)
ALL_LEVELS = (BLOCKS, SUBBLOCKS, LINES, SENTENCES, WORDS, TOKENS)


@dataclass(frozen=True)
class _Limit:
    tokens: int
    chars: int | None
    levels: tuple[int, ...]


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    oversize: bool = False
    level: int = BLOCKS  # the finest level the span was cut at (for boundary_type)
    header: TableHeader | None = None  # the table header shown before the span (``RegionSplitter.header``)


class RegionSplitter:
    """Splits regions of one document; built once per document."""

    def __init__(
        self,
        document: ParsedDocument,
        spans: SpanCounter,
        counter: TokenCounter | None = None,
        *,
        nested: bool = False,
        lowercase_sentences: bool = False,
    ):
        """``nested``: the parts of a region that had to be cut are packed among themselves and
        never merged with the regions around it (a long paragraph's sentences do not join the
        next paragraph), as LangChain's recursive splitter does. ``lowercase_sentences``: a full
        stop before a lowercase word also ends a sentence (``sentence_starts(lowercase=True)``)."""
        self.nested = nested
        self.lowercase_sentences = lowercase_sentences
        self.document = document
        self.text = document.text
        self.spans = spans
        self.counter = counter  # recounts spans cut inside a word exactly (see ``tokens``)
        self.protected = code_ranges(document)
        self._protected_starts = [p[0] for p in self.protected]
        self._block_starts = [b.start for b in document.blocks]
        self._block_ends = [b.end for b in document.blocks]  # blocks do not overlap: sorted too
        self.tables = TableHeaders(document)
        self._header_tokens: dict[int, int] = {}

    def tokens(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]`` including the model's special tokens.

        Exact at whitespace and punctuation edges. A span cut inside a word (only the
        ``TOKENS`` level does that) tokenizes its fragment afresh, so it is recounted exactly
        when the splitter has a ``counter``.
        """
        if self.counter is not None:
            text = self.text
            n = len(text)
            # an edge inside a word: alphanumerics on both sides (inline: asked for every candidate span)
            if (0 < start < n and text[start - 1].isalnum() and text[start].isalnum()) or (
                0 < end < n and text[end - 1].isalnum() and text[end].isalnum()
            ):
                return self.counter.count(text[start:end])
        return self.spans.count(start, end)

    def header(self, start: int, budget: int, max_chars: int | None = None) -> TableHeader | None:
        """The table header a piece starting at ``start`` shows before its span: the header of
        the table whose body holds ``start``, unless it would take more than half of ``budget``
        (or of ``max_chars``): a header that wide leaves too little room for rows."""
        table = self.tables.at(start) if self.tables.tables else None
        if table is None:
            return None
        if self.header_tokens(table) * 2 > budget or (max_chars is not None and (table.end - table.start) * 2 > max_chars):
            return None
        return table

    def header_tokens(self, table: TableHeader | None) -> int:
        """Tokens ``table``'s header adds to a chunk (its text ends with a line end: counts add up)."""
        if table is None:
            return 0
        n = self._header_tokens.get(table.start)
        if n is None:
            n = self._header_tokens[table.start] = self.spans.count(table.start, table.end) - self.spans.specials
        return n

    def split(
        self,
        start: int,
        end: int,
        budget: int,
        *,
        max_chars: int | None = None,
        levels: tuple[int, ...] = ALL_LEVELS,
    ) -> list[Span]:
        """Spans covering every non-whitespace character of ``text[start:end]``, in order.

        Each span, with the table header it carries (``span.header``, ``header``), has at most
        ``budget`` tokens (and ``max_chars`` characters, when given) unless it is exactly one
        code block; such a span is ``oversize`` when it is over the token budget. Spans never
        start or end inside a code block. Cuts are tried at ``levels`` in order (coarse to fine).
        """
        start, end = _trim(self.text, start, end)
        if start >= end:
            return []
        return self._split(start, end, _Limit(budget, max_chars, tuple(levels)), 0)

    def whole(self, start: int, end: int, budget: int) -> list[Span] | None:
        """``split(start, end, b)`` for every ``b >= budget`` when ``text[start:end]`` fits
        ``budget`` whole (one span; none when it is blank), else None: a caller that only
        knows a lower bound of its budget learns whether the region needs splitting at all."""
        start, end = _trim(self.text, start, end)
        if start >= end:
            return []
        return [Span(start, end, header=self.header(start, budget))] if self.fits(start, end, budget) else None

    def cut(self, start: int, end: int, level: int) -> list[tuple[int, int]]:
        """``text[start:end]`` cut at every candidate point of ``level`` outside code blocks,
        whitespace trimmed from each part; together the parts cover its non-whitespace text."""
        start, end = _trim(self.text, start, end)
        return self._cut(start, end, level) if start < end else []

    def fits(self, start: int, end: int, budget: int, max_chars: int | None = None) -> bool:
        """A piece ``text[start:end]``, with the table header it would carry, fits the budgets."""
        table = self.header(start, budget, max_chars)
        if self.tokens(start, end) + self.header_tokens(table) > budget:
            return False
        return max_chars is None or end - start + (table.end - table.start if table else 0) <= max_chars

    def _span(self, start: int, end: int, limit: _Limit, level: int, *, whole: bool = False) -> Span:
        """``Span(start, end)`` with its table header under ``limit``; ``whole``: an indivisible
        span (one code block, or nothing left to cut at), ``oversize`` when over the token budget."""
        header = self.header(start, limit.tokens, limit.chars)
        oversize = whole and self.tokens(start, end) + self.header_tokens(header) > limit.tokens
        return Span(start, end, oversize=oversize, level=level, header=header)

    def _split(self, start: int, end: int, limit: _Limit, depth: int) -> list[Span]:
        if self.nested:
            return self._nested(start, end, limit, depth)
        return self._pack(self._units(start, end, limit, depth), limit)

    def _nested(self, start: int, end: int, limit: _Limit, depth: int) -> list[Span]:
        """Cut at the coarsest level that gives parts; runs of parts that fit are packed
        together, a part that does not fit is split on its own (recursively) and its pieces
        never join their neighbours."""
        level = limit.levels[min(depth, len(limit.levels) - 1)]
        if self.fits(start, end, limit.tokens, limit.chars):
            return [self._span(start, end, limit, level)]
        if self._is_code_block(start, end):
            return [self._span(start, end, limit, level, whole=True)]
        while depth < len(limit.levels):
            parts = self._cut(start, end, limit.levels[depth])
            if len(parts) > 1:
                break
            depth += 1
        else:
            return [self._span(start, end, limit, TOKENS, whole=True)]
        level = limit.levels[depth]
        out: list[Span] = []
        run: list[Span] = []
        for a, b in parts:
            if self.fits(a, b, limit.tokens, limit.chars):
                run.append(self._span(a, b, limit, level))
                continue
            if self._is_code_block(a, b):  # indivisible: alone, but it does not end the run
                run.append(self._span(a, b, limit, level, whole=True))
                continue
            out.extend(self._pack(run, limit))
            run = []
            out.extend(self._nested(a, b, limit, depth + 1))
        out.extend(self._pack(run, limit))
        return out

    def _units(self, start: int, end: int, limit: _Limit, depth: int) -> list[Span]:
        """The coarsest cuts of ``[start, end)`` in which every unit fits or is one code block."""
        level = limit.levels[min(depth, len(limit.levels) - 1)]
        if self.fits(start, end, limit.tokens, limit.chars):
            return [self._span(start, end, limit, level)]
        if self._is_code_block(start, end):
            return [self._span(start, end, limit, level, whole=True)]
        while depth < len(limit.levels):
            parts = self._cut(start, end, limit.levels[depth])
            if len(parts) > 1:
                break
            depth += 1
        else:  # nothing left to cut at: one indivisible run
            return [self._span(start, end, limit, TOKENS, whole=True)]
        return [
            unit
            for a, b in parts
            for unit in self._units(a, b, limit, depth if self.fits(a, b, limit.tokens, limit.chars) else depth + 1)
        ]

    def _fill(self, start: int, end: int, limit: _Limit) -> float:
        """How full ``text[start:end]`` (with its table header) makes a chunk: 1.0 is exactly at
        the tighter budget."""
        header = self.header(start, limit.tokens, limit.chars)
        fill = (self.tokens(start, end) + self.header_tokens(header)) / limit.tokens
        if not limit.chars:
            return fill
        return max(fill, (end - start + (header.end - header.start if header else 0)) / limit.chars)

    def _pack(self, units: list[Span], limit: _Limit) -> list[Span]:
        """Merge neighbouring units while they fit, aiming at equal sizes so a long section does
        not end in a sliver. An oversize unit stays alone."""
        if len(units) <= 1:
            return units
        total = self._fill(units[0].start, units[-1].end, limit)
        target = total / max(1, math.ceil(total))
        out: list[Span] = []
        # The chunk being filled: its first unit, end and level; its fill once asked (it only
        # changes when the chunk does). A Span is made once a merged chunk is complete.
        first: Span | None = None
        end = level = 0
        fill: float | None = None
        for unit in units:
            if first is not None and not unit.oversize and not first.oversize:
                if self.fits(first.start, unit.end, limit.tokens, limit.chars):
                    if fill is None:
                        fill = self._fill(first.start, end, limit)
                    if fill < target:
                        end, level, fill = unit.end, max(level, unit.level), None
                        continue
            if first is not None:
                out.append(first if end == first.end else Span(first.start, end, level=level, header=first.header))
            first, end, level, fill = unit, unit.end, unit.level, None
        out.append(first if end == first.end else Span(first.start, end, level=level, header=first.header))
        return out

    def _cut(self, start: int, end: int, level: int) -> list[tuple[int, int]]:
        """Cut ``[start, end)`` at the candidate points of ``level`` that are outside code blocks."""
        points = sorted(p for p in self._points(start, end, level) if start < p < end and not self._inside_code(p))
        bounds = [start, *points, end]
        parts = []
        for a, b in zip(bounds, bounds[1:]):
            a, b = _trim(self.text, a, b)
            if a < b:
                parts.append((a, b))
        return parts

    def _points(self, start: int, end: int, level: int) -> list[int]:
        doc, text = self.document, self.text
        if level == BLOCKS:
            return self._block_points(start, end)
        if level == SUBBLOCKS:
            return self._subblock_points(start, end)
        if level == LINES:
            first = bisect.bisect_right(doc.line_starts, start)
            last = bisect.bisect_left(doc.line_starts, end)
            return list(doc.line_starts[first:last])
        if level == SENTENCES:
            # A block, list item or table row also ends a sentence that has no full stop.
            return [
                *sentence_starts(text, start, end, lowercase=self.lowercase_sentences),
                *self._block_points(start, end),
                *self._subblock_points(start, end),
            ]
        if level == WORDS:
            return [m.end() for m in WHITESPACE.finditer(text, start, end)]
        # TOKENS: cut between word pieces (a single "word" longer than the budget, e.g. base64)
        starts = self.spans.token_starts
        lo = bisect.bisect_right(starts, start)
        hi = bisect.bisect_left(starts, end)
        return list(starts[lo:hi])

    def _block_points(self, start: int, end: int) -> list[int]:
        lo = bisect.bisect_right(self._block_starts, start)
        hi = bisect.bisect_left(self._block_starts, end)
        return self._block_starts[lo:hi]

    def _subblock_points(self, start: int, end: int) -> list[int]:
        doc = self.document
        lo = bisect.bisect_right(self._block_ends, start)  # first block ending after start
        hi = bisect.bisect_left(self._block_starts, end)  # blocks starting before end
        return [doc.line_offset(line) for b in doc.blocks[lo:hi] for line in b.sublines]

    def _inside_code(self, offset: int) -> bool:
        i = bisect.bisect_right(self._protected_starts, offset) - 1
        return i >= 0 and self.protected[i][0] < offset < self.protected[i][1]

    def _is_code_block(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._protected_starts, start) - 1
        return i >= 0 and self.protected[i][0] <= start and end <= self.protected[i][1]


def code_ranges(document: ParsedDocument) -> list[tuple[int, int]]:
    """``(start, end)`` of every code block, sorted: from its fence marker (an indented block:
    its first non-blank character) to its last non-blank character. Starting at the marker, not
    the line, lets a cut fall just before a fence indented inside a list item."""
    text = document.text
    out = []
    for fence in document.code:
        line_start = max(document.line_offset(fence.start_line), document.body_start)  # not the BOM
        line_end = document.line_offset(fence.start_line + 1)
        marker = _FENCE_MARK.search(text, line_start, line_end) if fence.fenced else None
        start = marker.start() if marker else _trim(text, line_start, line_end)[0]
        end = _trim_end(text, start, document.line_offset(fence.end_line))
        if start < end:
            out.append((start, end))
    return sorted(out)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    return start, _trim_end(text, start, end)


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end

