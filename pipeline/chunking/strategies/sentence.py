"""``sentence`` (seed 003): sentences combined up to ``max_chunk_size`` characters.

Sentences end at ``.!?`` plus whitespace, except after abbreviations, inside decimals, URLs,
inline code and code blocks (``pipeline.chunking.sentences``); a markdown block, list item or
table row also ends one. Consecutive sentences are packed, aiming at equal sizes, up to
``max_chunk_size`` characters and the model's token limit. A sentence longer than that is cut
at whitespace (``boundary_type`` ``character``); a code block is never cut, even when it is
longer than ``max_chunk_size`` (it becomes its own chunk; ``oversize`` if over the token
limit). Chunks shorter than ``min_chunk_size`` merge into a neighbour when that fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.chunking.base import Piece
from pipeline.chunking.charsize import CharSizedOptions, merge_small
from pipeline.chunking.outline import Outline
from pipeline.chunking.registry import register
from pipeline.chunking.split import SENTENCES, TOKENS, WORDS, RegionSplitter
from pipeline.parsing.markdown import ParsedDocument


@register("sentence")
@dataclass
class SentenceStrategy(CharSizedOptions):
    name: ClassVar[str] = "sentence"

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        splitter = RegionSplitter(document, self.counter.spans(document.text), self.counter)
        spans = splitter.split(
            document.body_start,
            len(document.text),
            self.max_tokens,
            max_chars=self.max_chunk_size,
            levels=(SENTENCES, WORDS, TOKENS),
        )
        outline = Outline(document)
        pieces = [
            Piece(
                start=span.start,
                end=span.end,
                title=outline.title(span.start),
                header_path=outline.header_path(span.start),
                heading=outline.heading(span.start),
                boundary_type="sentence" if span.level <= SENTENCES else "character",
                oversize=span.oversize,
                table_header=span.header,
            )
            for span in spans
        ]
        return merge_small(pieces, self.min_chunk_size, lambda a, b: splitter.fits(a, b, self.max_tokens, self.max_chunk_size))
