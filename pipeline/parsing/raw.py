"""The blocks of a markdown document in lines, before offsets: what both block readers return
(``rsblocks.read_blocks`` from markdown-it-pyrs, ``markdown.python_blocks`` from markdown-it-py)
and ``parse_markdown`` turns into offsets. Line ranges are ``[start_line, end_line)`` as
markdown-it's token maps; the two readers give equal records for the same text.
"""

from __future__ import annotations

from typing import NamedTuple


# Named tuples, not dataclasses: thousands per document, and a tuple is built several times faster.
class RawBlock(NamedTuple):
    """A top-level block in lines, before offsets: ``[start_line, end_line)`` as markdown-it's maps."""

    kind: str
    start_line: int
    end_line: int
    level: int = 0
    heading: str = ""
    sublines: tuple[int, ...] = ()


class RawCode(NamedTuple):
    """A fenced or indented code block in lines (``CodeFence`` before it is built)."""

    start_line: int
    end_line: int
    closed: bool
    fenced: bool


class RawFrontMatter(NamedTuple):
    """Front matter: its YAML text and the lines ``[start_line, end_line)`` it spans (markers included)."""

    content: str
    start_line: int
    end_line: int


class RawDocument(NamedTuple):
    blocks: list[RawBlock]
    code: list[RawCode]
    front_matter: RawFrontMatter | None
