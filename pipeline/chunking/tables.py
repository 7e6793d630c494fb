"""The header of a split table, repeated before every piece of the table that does not hold it.

A piece of a table cut between rows starts ``| 14 | item14 | ...``: unreadable alone, for a person
and for the embedder. So a chunk whose span starts inside a table's body (after its delimiter
row) shows the table's header and delimiter rows first, as docling does. The span itself stays
exact; the header is source text too:

    chunk.content == context + source[h.start:h.end] + source[start_offset:end_offset]

where ``context`` is the strategy's heading context and ``h`` is the header recorded in
``metadata["repeated_header"]`` (its two lines, line ending included). Top-level tables only:
a table nested in a list item or a quote is cut like the rest of its container.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from pipeline.parsing.markdown import ParsedDocument


@dataclass(frozen=True)
class TableHeader:
    """``text[start:end]``: a table's header and delimiter rows, with the delimiter's line end;
    ``body_start:body_end`` is the rest of the table (its rows)."""

    start: int
    end: int
    body_start: int
    body_end: int


class TableHeaders:
    """Every top-level table of a document with at least one body row, by position."""

    def __init__(self, document: ParsedDocument):
        self.tables = [
            TableHeader(block.start, document.line_offset(block.start_line + 2), document.line_offset(block.start_line + 2), block.end)
            for block in document.blocks
            if block.kind == "table" and block.end_line - block.start_line > 2
        ]
        self._starts = [t.body_start for t in self.tables]

    def at(self, offset: int) -> TableHeader | None:
        """The header of the table whose body holds ``offset`` (a piece starting there needs it)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i >= 0 and offset < self.tables[i].body_end:
            return self.tables[i]
        return None


def header_record(document: ParsedDocument, header: TableHeader) -> dict[str, int]:
    """What a chunk record says of the header repeated before its span (``metadata["repeated_header"]``)."""
    return {
        "start_offset": header.start,
        "end_offset": header.end,
        "start_line": document.line_number(header.start),
        "end_line": document.line_number(header.end - 1),
    }
