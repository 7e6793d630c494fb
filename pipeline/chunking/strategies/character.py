"""``character`` (seed 003): fixed windows of ``max_chunk_size`` characters.

The legacy strategy, kept for comparison: it cuts wherever the window ends, mid-word and
inside code blocks alike, so it is exempt from the coverage and fence invariants. It still
keeps offsets exact (``content == text[start_offset:end_offset]``) and every chunk within the
model's token limit: a window that would hold more tokens ends early, at a token boundary.
Whitespace at a window's edges is left out of its span; whitespace-only windows are dropped.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import ClassVar

from pipeline.chunking.base import Piece
from pipeline.chunking.charsize import CharSizedOptions
from pipeline.chunking.outline import Outline
from pipeline.chunking.registry import register
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.spans import SpanCounter


@register("character")
@dataclass
class CharacterStrategy(CharSizedOptions):
    """Windows of ``max_chunk_size`` characters; a final window under ``min_chunk_size`` shares
    the last two windows' characters evenly with its predecessor."""

    name: ClassVar[str] = "character"

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        text = document.text
        spans = self.counter.spans(text)
        windows: list[tuple[int, int]] = []
        pos = document.body_start
        while pos < len(text):
            end = self._fit(text, spans, pos, min(pos + self.max_chunk_size, len(text)))
            windows.append((pos, end))
            pos = end
        if len(windows) >= 2 and windows[-1][1] - windows[-1][0] < self.min_chunk_size:
            a, b = windows[-2][0], windows[-1][1]
            mid = (a + b) // 2
            if self._fits(text, a, mid) and self._fits(text, mid, b):
                windows[-2:] = [(a, mid), (mid, b)]
        outline = Outline(document)
        pieces = []
        for start, end in windows:
            start, end = _trim(text, start, end)
            if start < end:
                pieces.append(
                    Piece(
                        start=start,
                        end=end,
                        title=outline.title(start),
                        header_path=outline.header_path(start),
                        heading=outline.heading(start),
                        boundary_type="character",
                    )
                )
        return pieces

    def _fits(self, text: str, start: int, end: int) -> bool:
        return self.counter.count(text[start:end]) <= self.max_tokens

    def _fit(self, text: str, spans: SpanCounter, start: int, end: int) -> int:
        """The largest end ``<= end`` whose window ``text[start:end]`` fits the token limit."""
        if self._fits(text, start, end):
            return end
        # Cut before the first word piece that would not fit, then step back while the exact
        # count (a fragment of a word tokenizes afresh) is still over.
        first = bisect.bisect_left(spans.token_starts, start)
        room = self.max_tokens - spans.specials
        cut = spans.token_starts[first + room] if first + room < len(spans.token_starts) else end
        cut = min(cut, end)
        while cut > start + 1 and not self._fits(text, start, cut):
            i = bisect.bisect_left(spans.token_starts, cut) - 1
            cut = spans.token_starts[i] if i >= 0 and spans.token_starts[i] > start else cut - 1
        return max(cut, start + 1)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
