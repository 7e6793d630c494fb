"""``tokens`` (seed 002, AC1-AC4): sections at ``##`` only, each chunk within ``max_tokens``.

``###`` and deeper headings stay inside their ``##`` section. A section over the limit is split
at paragraphs (AC2); where a single paragraph is itself over the limit we keep cutting (list
items, lines, sentences, words), because the issue's invariant (every chunk fits the model) beats
the seed's "stop at paragraph level". A code block over the limit becomes a chunk of its own,
flagged ``oversize``, with a warning (AC3). Every chunk after the first of its section starts
with its ``##`` heading line as context (the first already does); ``heading`` and
``header_path`` are that immediate ``##`` heading only (AC4). Front matter is stripped and
attached to every chunk's metadata by ``assemble`` (AC1.5).

``max_tokens`` defaults to the seed's 500 but is clipped to what the embedding model reads (256
for all-MiniLM-L6-v2); only a value asked for is clipped with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.chunking.base import Piece
from pipeline.chunking.registry import register
from pipeline.chunking.sections import Section, atx, heading_sections
from pipeline.chunking.strategies.markdown import effective_max_tokens, split_sections
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import TokenCounter

SEED_MAX_TOKENS = 500


@register("tokens")
@dataclass
class TokensStrategy:
    counter: TokenCounter
    max_tokens: int | None = None  # default: the seed's 500, clipped to the model without a warning
    name: ClassVar[str] = "tokens"
    levels: ClassVar[tuple[int, ...]] = (2,)

    def __post_init__(self) -> None:
        requested = SEED_MAX_TOKENS if self.max_tokens is None else self.max_tokens
        self.max_tokens = effective_max_tokens(requested, self.counter, self.name, asked=self.max_tokens is not None)

    def cache_key(self) -> str:
        return f"{self.name}-{self.max_tokens}"

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        sections = heading_sections(document, self.levels)
        pieces = split_sections(document, sections, counter=self.counter, max_tokens=self.max_tokens, context=self._own_heading)
        # An oversize piece is warned about by ``assemble`` (every strategy, once per chunk).
        return pieces

    def _own_heading(self, section: Section, span_start: int) -> str:
        """The section's ``##`` heading line (cut to half the limit), unless the span starts with it."""
        if section.heading is None or span_start <= section.heading.start:
            return ""
        return self.counter.truncate(atx(section.heading), self.max_tokens // 2) + "\n\n"
