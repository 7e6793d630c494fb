"""``paragraph`` (seed 003): paragraphs combined up to ``max_chunk_size`` characters, headings
as section boundaries.

Every heading (``^#+\\s``, and setext headings too) starts a section; a heading with no text
of its own joins the section after it. A section that fits ``max_chunk_size`` characters and
the model's token limit is one chunk (``boundary_type`` ``section``). A longer one is cut at
paragraphs (markdown blocks; inside a long list or table, its items and rows), packed aiming
at equal sizes; a paragraph still too long falls back to sentences, then whitespace
(``character``). A code block is never cut. A chunk shorter than ``min_chunk_size`` merges into
a neighbour when that fits, even across a heading: the only way a chunk spans two sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.chunking.base import Piece
from pipeline.chunking.charsize import CharSizedOptions, merge_small
from pipeline.chunking.outline import Outline
from pipeline.chunking.registry import register
from pipeline.chunking.sections import heading_sections
from pipeline.chunking.split import BLOCKS, SENTENCES, SUBBLOCKS, TOKENS, WORDS, RegionSplitter
from pipeline.parsing.markdown import ParsedDocument

ALL_HEADING_LEVELS = (1, 2, 3, 4, 5, 6)
BOUNDARY = {BLOCKS: "paragraph", SUBBLOCKS: "paragraph", SENTENCES: "sentence", WORDS: "character", TOKENS: "character"}


@register("paragraph")
@dataclass
class ParagraphStrategy(CharSizedOptions):
    name: ClassVar[str] = "paragraph"

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        splitter = RegionSplitter(document, self.counter.spans(document.text), self.counter)
        outline = Outline(document)
        pieces: list[Piece] = []
        for section in heading_sections(document, ALL_HEADING_LEVELS):
            spans = splitter.split(
                section.start,
                section.end,
                self.max_tokens,
                max_chars=self.max_chunk_size,
                levels=(BLOCKS, SUBBLOCKS, SENTENCES, WORDS, TOKENS),
            )
            for span in spans:
                pieces.append(
                    Piece(
                        start=span.start,
                        end=span.end,
                        title=outline.title(span.start),
                        header_path=outline.header_path(span.start),
                        heading=outline.heading(span.start),
                        boundary_type="section" if len(spans) == 1 else BOUNDARY[span.level],
                        oversize=span.oversize,
                        table_header=span.header,
                    )
                )
        return merge_small(pieces, self.min_chunk_size, lambda a, b: splitter.fits(a, b, self.max_tokens, self.max_chunk_size))
