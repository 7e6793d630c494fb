"""The invariants every chunking strategy promises (issue 3), as a checker.

``violations`` returns human-readable problems (empty when all hold). Tests run it on generated
and real markdown; a build or benchmark may run it as a self-check.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.chunking.base import Chunk
from pipeline.chunking.split import code_ranges as split_code_ranges
from pipeline.chunking.tables import TableHeaders, header_record
from pipeline.parsing.markdown import BOM, ParsedDocument
from pipeline.parsing.tokens import TokenCounter

@dataclass(frozen=True)
class CodeRange:
    """``text[start:end]``: a code block from its fence marker to its last non-blank character."""

    start: int
    end: int
    line: int  # 1-based line where it starts


def code_ranges(document: ParsedDocument) -> list[CodeRange]:
    return [CodeRange(a, b, document.line_number(a)) for a, b in split_code_ranges(document)]


def violations(
    document: ParsedDocument,
    chunks: list[Chunk],
    *,
    max_tokens: int | None,
    counter: TokenCounter,
    coverage: bool = True,
    fences: bool = True,
) -> list[str]:
    """Problems with ``chunks`` of ``document``:

    - ``content`` ends with ``text[start_offset:end_offset]``, a non-empty span (a chunk
      ``rendered_from`` YAML/JSON shows a rendering of its span instead: not compared here);
    - a chunk recording ``repeated_header`` starts inside the body of the table whose header
      it records, and ``content`` ends with that header's source followed by the span;
    - spans are in order and never overlap;
    - (``coverage``) every non-whitespace character after the front matter lies in a span;
    - (``fences``) no span boundary falls inside a code block;
    - ``token_count`` is the exact count of ``content`` and at most ``max_tokens``, unless the
      chunk is flagged ``oversize`` and its span lies inside one code block;
    - ``chunk_index``/``total_chunks`` number the chunks 0..n-1.
    """
    text = document.text
    problems: list[str] = []
    tables = TableHeaders(document)
    for i, c in enumerate(chunks):
        where = f"chunk {i} [{c.start_offset}:{c.end_offset}]"
        if not 0 <= c.start_offset < c.end_offset <= len(text):
            problems.append(f"{where}: empty or out-of-range span")
            continue
        rendered = bool(c.metadata.get("rendered_from"))
        if not rendered and not c.content.endswith(text[c.start_offset : c.end_offset]):
            problems.append(f"{where}: content does not end with the source span")
        recorded = c.metadata.get("repeated_header")
        if recorded is not None:
            table = tables.at(c.start_offset)
            if table is None or recorded != header_record(document, table):
                problems.append(f"{where}: repeated_header {recorded} is not the header of a table whose body holds the span")
            elif not c.content.endswith(text[table.start : table.end] + text[c.start_offset : c.end_offset]):
                problems.append(f"{where}: content does not show the repeated header just before the span")
        if c.chunk_index != i or c.total_chunks != len(chunks):
            problems.append(f"{where}: numbered {c.chunk_index} of {c.total_chunks}")
        if i and chunks[i - 1].end_offset > c.start_offset:
            problems.append(f"{where}: overlaps or precedes chunk {i - 1} (ends {chunks[i - 1].end_offset})")
    counts = counter.count_many([c.content for c in chunks]) if chunks else []
    ranges = code_ranges(document)
    for i, (c, real) in enumerate(zip(chunks, counts)):
        where = f"chunk {i} [{c.start_offset}:{c.end_offset}]"
        if c.token_count != real:
            problems.append(f"{where}: token_count {c.token_count} but content has {real}")
        if max_tokens is not None and real > max_tokens:
            # a rendered chunk's code block is in its rendering, not in the YAML/JSON source
            inside_one = c.metadata.get("rendered_from") or any(r.start <= c.start_offset and c.end_offset <= r.end for r in ranges)
            if not (c.metadata.get("oversize") and inside_one):
                problems.append(f"{where}: {real} tokens > {max_tokens} and not a single flagged code block")
    if coverage:
        problems += _coverage(document, chunks)
    if fences:
        for r in ranges:
            for c in chunks:
                for point in (c.start_offset, c.end_offset):
                    if r.start < point < r.end:
                        problems.append(f"code block at line {r.line} [{r.start}:{r.end}] is cut at {point}")
    return problems


def _coverage(document: ParsedDocument, chunks: list[Chunk]) -> list[str]:
    text = document.text
    pos = document.body_start
    gaps = []
    for c in [*chunks, None]:
        gap_end = c.start_offset if c else len(text)
        if gap_end > pos:
            gap = text[pos:gap_end]
            if gap.replace(BOM, "").strip():
                gaps.append(f"text [{pos}:{gap_end}] is in no chunk: {gap.strip()[:40]!r}")
        if c:
            pos = max(pos, c.end_offset)
    return gaps
