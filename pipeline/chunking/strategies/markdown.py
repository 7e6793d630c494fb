"""``markdown``: sections at ``##`` and ``###`` (seed 000), split further to fit the model.

Chunk 0 is the overview (title and text before the first split heading). A section over the
token limit splits at block boundaries, then list items, lines, sentences, words; a fenced code
block is never cut. The limit counts the heading context prepended to every chunk.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

from pipeline.chunking.base import Piece
from pipeline.chunking.registry import register
from pipeline.chunking.sections import Section, atx, context_prefix, heading_sections
from pipeline.chunking.split import BLOCKS, LINES, SENTENCES, SUBBLOCKS, TOKENS, WORDS, RegionSplitter
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import TokenCounter

BOUNDARY_NAMES = {BLOCKS: "paragraph", SUBBLOCKS: "paragraph", LINES: "line", SENTENCES: "sentence", WORDS: "word", TOKENS: "token"}


def effective_max_tokens(requested: int, counter: TokenCounter, strategy: str) -> int:
    """``requested`` clipped to what the embedding model reads, with a warning when clipped."""
    limit = counter.model_max_tokens
    if limit is not None and requested > limit:
        warnings.warn(
            f"{strategy}: max_tokens {requested} is above what the embedding model reads ({limit}); using {limit}",
            stacklevel=3,
        )
        return limit
    return requested


def split_sections(
    document: ParsedDocument,
    sections: list[Section],
    *,
    counter: TokenCounter,
    max_tokens: int,
) -> list[Piece]:
    """Pieces for ``sections``, each within ``max_tokens`` including its heading context."""
    splitter = RegionSplitter(document, counter.spans(document.text))
    title = document.title or "Overview"
    pieces: list[Piece] = []
    for section in sections:
        headings = [*section.ancestors, section.heading] if section.heading else []
        # Budget for the longest prefix a piece of this section can get (own heading included).
        longest = context_prefix(document, headings, section.end, counter=counter, max_prefix_tokens=max_tokens // 2)
        budget = max_tokens - (counter.count(longest) - counter.specials if longest else 0)
        spans = splitter.split(section.start, section.end, budget)
        for part, span in enumerate(spans):
            prefix = context_prefix(document, headings, span.start, counter=counter, max_prefix_tokens=max_tokens // 2)
            metadata = {"section_part": part + 1, "section_parts": len(spans)} if len(spans) > 1 else {}
            pieces.append(
                Piece(
                    start=span.start,
                    end=span.end,
                    title=section.heading.heading if section.heading else title,
                    header_path=section.header_path,
                    heading=atx(section.heading) if section.heading else "",
                    prefix=prefix,
                    boundary_type="section" if len(spans) == 1 else BOUNDARY_NAMES[span.level],
                    oversize=span.oversize,
                    metadata=metadata,
                )
            )
    return pieces


@register("markdown")
@dataclass
class MarkdownStrategy:
    """Split at ``##``/``###``; ``min_lines``: documents of at most this many lines stay one section."""

    counter: TokenCounter
    max_tokens: int = 256
    min_lines: int = 0
    name: ClassVar[str] = "markdown"
    levels: ClassVar[tuple[int, ...]] = (2, 3)

    def __post_init__(self) -> None:
        self.max_tokens = effective_max_tokens(self.max_tokens, self.counter, self.name)

    def cache_key(self) -> str:
        return f"markdown-{self.max_tokens}" + (f"-l{self.min_lines}" if self.min_lines else "")

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        levels = () if len(document.line_starts) <= self.min_lines else self.levels
        sections = heading_sections(document, levels)
        return split_sections(document, sections, counter=self.counter, max_tokens=self.max_tokens)
