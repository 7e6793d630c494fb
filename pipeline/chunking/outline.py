"""The headings in force at any offset of a document (all levels), for chunk titles and paths."""

from __future__ import annotations

import bisect

from pipeline.chunking.sections import atx
from pipeline.parsing.markdown import Block, ParsedDocument


class Outline:
    """``at(offset)`` is the chain of headings (outermost first) whose sections contain ``offset``;
    a heading starting exactly at ``offset`` is included. The document's title heading (the H1
    that ``document.title`` comes from) is not part of any chain, as in the markdown strategy's
    ``header_path``: it is the chunk's document, not its section."""

    def __init__(self, document: ParsedDocument):
        self.document = document
        self._starts: list[int] = []
        self._chains: list[tuple[Block, ...]] = []
        chain: list[Block] = []
        title = document.first_h1 if document.first_h1 and document.first_h1.heading == document.title else None
        for block in document.blocks:
            if block.kind == "heading" and block is not title:
                while chain and chain[-1].level >= block.level:
                    chain.pop()
                chain.append(block)
                self._starts.append(block.start)
                self._chains.append(tuple(chain))

    def at(self, offset: int) -> tuple[Block, ...]:
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._chains[i] if i >= 0 else ()

    def header_path(self, offset: int) -> str:
        """``# Title > ## Section > ### Sub`` at ``offset`` ('' before the first heading)."""
        return " > ".join(atx(b) for b in self.at(offset))

    def heading(self, offset: int) -> str:
        """The innermost heading at ``offset`` in ATX form, or ''."""
        chain = self.at(offset)
        return atx(chain[-1]) if chain else ""

    def title(self, offset: int) -> str:
        """The innermost heading's text at ``offset``, else the document title."""
        chain = self.at(offset)
        return chain[-1].heading if chain else self.document.title
