"""Split a region of a document into spans that fit a token budget, never inside a code block.

Cuts are tried from coarse to fine: top-level blocks, then list items / table rows / nested
paragraphs, then lines, then sentences, then whitespace, then token boundaries. A span is
refined only when it does not fit; a code block is never refined (it is kept whole and flagged
as oversize instead).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass

from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import SpanCounter

SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
WHITESPACE = re.compile(r"\s+")

# Levels of refinement, coarse to fine.
BLOCKS, SUBBLOCKS, LINES, SENTENCES, WORDS, TOKENS = range(6)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    oversize: bool = False
    level: int = BLOCKS  # the finest level the span was cut at (for boundary_type)


class RegionSplitter:
    """Splits regions of one document; built once per document."""

    def __init__(self, document: ParsedDocument, spans: SpanCounter):
        self.document = document
        self.text = document.text
        self.spans = spans
        self.protected = sorted(
            (document.line_offset(c.start_line), _trim_end(self.text, document.line_offset(c.start_line), document.line_offset(c.end_line)))
            for c in document.code
        )
        self._protected_starts = [p[0] for p in self.protected]

    def tokens(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]`` including the model's special tokens."""
        return self.spans.count(start, end)

    def split(self, start: int, end: int, budget: int) -> list[Span]:
        """Spans covering every non-whitespace character of ``text[start:end]``, in order.

        Each span has ``tokens(span) <= budget`` unless it is exactly one code block
        (``oversize=True``). Spans never start or end inside a code block.
        """
        start, end = _trim(self.text, start, end)
        if start >= end:
            return []
        return self._split(start, end, budget, BLOCKS)

    def _split(self, start: int, end: int, budget: int, level: int) -> list[Span]:
        return self._pack(self._units(start, end, budget, level), budget)

    def _units(self, start: int, end: int, budget: int, level: int) -> list[Span]:
        """The coarsest cuts of ``[start, end)`` in which every unit fits or is one code block."""
        if self.tokens(start, end) <= budget:
            return [Span(start, end, level=level)]
        if self._is_code_block(start, end):
            return [Span(start, end, oversize=True, level=level)]
        while level <= TOKENS:
            parts = self._cut(start, end, level)
            if len(parts) > 1:
                break
            level += 1
        else:  # nothing left to cut at: one indivisible token run
            return [Span(start, end, oversize=True, level=TOKENS)]
        return [unit for a, b in parts for unit in self._units(a, b, budget, level + 1 if self.tokens(a, b) > budget else level)]

    def _pack(self, units: list[Span], budget: int) -> list[Span]:
        """Merge neighbouring units while they fit, aiming at equal sizes so a long section does
        not end in a sliver. An oversize unit stays alone."""
        if len(units) <= 1:
            return units
        total = self.tokens(units[0].start, units[-1].end)
        target = total / max(1, math.ceil(total / budget))
        out: list[Span] = []
        current: Span | None = None
        for unit in units:
            if current is not None and not unit.oversize and not current.oversize:
                if self.tokens(current.start, unit.end) <= budget and self.tokens(current.start, current.end) < target:
                    current = Span(current.start, unit.end, level=max(current.level, unit.level))
                    continue
            if current is not None:
                out.append(current)
            current = unit
        out.append(current)
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
            return [b.start for b in doc.blocks if start < b.start < end]
        if level == SUBBLOCKS:
            return [doc.line_offset(line) for b in doc.blocks if b.start < end and b.end > start for line in b.sublines]
        if level == LINES:
            first = bisect.bisect_right(doc.line_starts, start)
            last = bisect.bisect_left(doc.line_starts, end)
            return list(doc.line_starts[first:last])
        if level == SENTENCES:
            return [m.end() for m in SENTENCE_END.finditer(text, start, end)]
        if level == WORDS:
            return [m.end() for m in WHITESPACE.finditer(text, start, end)]
        # TOKENS: cut between word pieces (a single "word" longer than the budget, e.g. base64)
        starts = self.spans.token_starts
        lo = bisect.bisect_right(starts, start)
        hi = bisect.bisect_left(starts, end)
        return list(starts[lo:hi])

    def _inside_code(self, offset: int) -> bool:
        i = bisect.bisect_right(self._protected_starts, offset) - 1
        return i >= 0 and self.protected[i][0] < offset < self.protected[i][1]

    def _is_code_block(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._protected_starts, start) - 1
        return i >= 0 and self.protected[i][0] <= start and end <= self.protected[i][1]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    return start, _trim_end(text, start, end)


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end

