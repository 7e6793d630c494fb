"""Heading sections of a parsed document, with the heading context every chunk of them carries."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache

from pipeline.parsing.markdown import Block, ParsedDocument
from pipeline.parsing.tokens import TokenCounter


@dataclass(frozen=True)
class Section:
    """``text[start:end]`` from a split heading (or the body start) to the next split heading.

    ``heading`` is None for the overview (text before the first split heading).
    ``ancestors`` are the enclosing split-level headings (the ``##`` above a ``###``).
    """

    start: int
    end: int
    heading: Block | None
    ancestors: tuple[Block, ...]

    @property
    def header_path(self) -> str:
        chain = [*self.ancestors, self.heading] if self.heading else []
        return " > ".join(atx(b) for b in chain)


def atx(block: Block) -> str:
    """A heading in ATX form (``## Text``), whatever its form in the source (setext too)."""
    return f"{'#' * block.level} {block.heading}".rstrip()


def heading_sections(document: ParsedDocument, levels: tuple[int, ...], *, title: Block | None = None) -> list[Section]:
    """Sections split at headings of ``levels``; together they cover the whole body.

    ``title``: the document's title heading, when ``levels`` include its level. It still
    splits (what follows it is no longer under the headings before it) but it is not a
    section heading: its section has ``heading`` None, like the overview, since the title is
    the chunk's document, not its section.

    A region holding nothing but headings (an "empty section", or an overview that is only the
    title) is not a section of its own: it joins the next section, or the previous one at the
    end of the document, so its text is still covered.
    """
    text = document.text
    starts: list[tuple[int, Block | None, tuple[Block, ...]]] = [(document.body_start, None, ())]
    stack: list[Block] = []
    for block in document.blocks:
        if title is not None and block is title:
            stack.clear()
            starts.append((block.start, None, ()))
            continue
        if block.kind == "heading" and block.level in levels:
            while stack and stack[-1].level >= block.level:
                stack.pop()
            starts.append((block.start, block, tuple(stack)))
            stack.append(block)
    bounds = [s[0] for s in starts[1:]] + [len(text)]
    raw = []
    for (start, heading, ancestors), end in zip(starts, bounds):
        while end > start and text[end - 1].isspace():
            end -= 1
        if text[start:end].strip():
            raw.append(Section(start, end, heading, ancestors))

    sections: list[Section] = []
    pending: int | None = None  # start of heading-only regions waiting for a body
    block_starts = [b.start for b in document.blocks]
    for section in raw:
        start = pending if pending is not None else section.start
        if _only_headings(document, section, block_starts):
            pending = start
            continue
        sections.append(Section(start, section.end, section.heading, section.ancestors))
        pending = None
    if pending is not None:
        if sections:
            last = sections[-1]
            sections[-1] = Section(last.start, raw[-1].end, last.heading, last.ancestors)
        else:
            first = raw[0]
            sections.append(Section(pending, raw[-1].end, first.heading, first.ancestors))
    return sections


def _only_headings(document: ParsedDocument, section: Section, block_starts: list[int]) -> bool:
    first = bisect.bisect_left(block_starts, section.start)
    last = bisect.bisect_left(block_starts, section.end)
    return all(b.kind == "heading" for b in document.blocks[first:last])


def context_prefix(
    document: ParsedDocument,
    headings: list[Block],
    span_start: int,
    *,
    counter: TokenCounter,
    max_prefix_tokens: int,
) -> str:
    """Heading lines for a chunk starting at ``span_start``: the title and each heading above it
    that the span itself does not contain. Oldest lines are dropped if over ``max_prefix_tokens``.
    """
    lines: list[str] = []
    title = document.title
    title_block = document.first_h1
    if title and not (title_block and title_block.start >= span_start and title_block.heading == title):
        lines.append(f"# {title}")
    lines.extend(atx(b) for b in headings if b.start < span_start)
    return _prefix(counter, tuple(lines), max_prefix_tokens)


@lru_cache(maxsize=4096)
def _prefix(counter: TokenCounter, lines: tuple[str, ...], max_prefix_tokens: int) -> str:
    """The heading lines, oldest dropped while over ``max_prefix_tokens``, as a chunk prefix
    (asked for every piece and every candidate start of a section: remembered)."""
    lines = list(lines)
    while lines and counter.count("\n".join(lines)) - counter.specials > max_prefix_tokens:
        lines.pop(0)
    return "\n".join(lines) + "\n\n" if lines else ""
