"""Parse markdown into top-level blocks with exact source positions.

markdown-it-py gives line maps (``token.map``); we turn them into ``str`` offsets of the text as
read (``newline=""``). Lines end at ``\\r\\n``, ``\\n`` or a lone ``\\r`` exactly as the parser counts
them (CommonMark line endings), so ``line_starts`` and token maps never drift (see docs/decisions/chunking.md).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import accumulate
from typing import Any

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter.index import _front_matter_rule  # wrapped: _front_matter_at_document_start

from pipeline.errors import PipelineError
from pipeline.parsing import rsblocks
from pipeline.parsing.raw import RawBlock, RawCode, RawDocument, RawFrontMatter
from pipeline.parsing.yamlsafe import load_yaml

BOM = "\ufeff"
_LINE_END = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class Block:
    """One top-level markdown block: ``text[start:end]`` is its source, trailing whitespace trimmed.

    Lines are 0-based and end-exclusive: ``[start_line, end_line)`` are the lines
    ``text[start:end]`` touches, which is markdown-it's ``token.map`` less the blank lines its
    map of a list, an empty quote or an unclosed HTML block may run over after the block.
    """

    kind: str
    start_line: int
    end_line: int
    start: int
    end: int
    level: int = 0  # heading level 1-6, else 0
    heading: str = ""  # heading text without markers and without a trailing ``{ #id .class }``
    sublines: tuple[int, ...] = ()  # start lines of nested list items / table rows: inner split points


_new = object.__new__
_set = object.__setattr__


def _block(kind: str, start_line: int, end_line: int, start: int, end: int, level: int, heading: str, sublines: tuple[int, ...]) -> Block:
    """``Block(kind, start_line, ...)``, the same object (its fields in its ``__dict__``, in
    order), built without the frozen dataclass's ``__init__``, which sets each field through
    ``object.__setattr__``: over twice as fast, for the hundreds of blocks of a document."""
    block = _new(Block)
    _set(block, "__dict__", {
        "kind": kind, "start_line": start_line, "end_line": end_line, "start": start, "end": end,
        "level": level, "heading": heading, "sublines": sublines,
    })
    return block


@dataclass(frozen=True)
class CodeFence:
    """A fenced or indented code block at any nesting depth, 0-based lines ``[start_line, end_line)``."""

    start_line: int
    end_line: int
    closed: bool
    fenced: bool


@dataclass(frozen=True)
class ParsedDocument:
    """A markdown document with blocks that point into ``text`` (the file exactly as read)."""

    path: str
    text: str
    line_starts: tuple[int, ...]
    blocks: tuple[Block, ...]
    code: tuple[CodeFence, ...]
    front_matter: dict[str, Any] = field(default_factory=dict)
    body_start: int = 0  # first offset after the front matter (and after a BOM)

    @cached_property
    def title(self) -> str:
        """Front matter ``title``, else the first H1, else '' (computed once: asked per chunk)."""
        if isinstance(self.front_matter.get("title"), str):
            return self.front_matter["title"].strip()
        return self.first_h1.heading if self.first_h1 else ""

    @cached_property
    def first_h1(self) -> Block | None:
        """The first level-1 heading block (computed once: chunkers ask for it per chunk)."""
        return next((b for b in self.blocks if b.kind == "heading" and b.level == 1), None)

    def line_number(self, offset: int) -> int:
        """1-based line of ``offset``."""
        return bisect.bisect_right(self.line_starts, offset)

    def line_offset(self, line: int) -> int:
        """Offset where 0-based ``line`` starts (``len(text)`` past the end)."""
        return self.line_starts[line] if line < len(self.line_starts) else len(self.text)

    def code_lines(self) -> frozenset[int]:
        """0-based lines inside code blocks (fence markers included)."""
        return self._code_lines

    @cached_property
    def _code_lines(self) -> frozenset[int]:  # computed once: asked for every chunk
        lines: set[int] = set()
        for fence in self.code:
            lines.update(range(fence.start_line, fence.end_line))
        return frozenset(lines)


# A trailing attribute list (Python-Markdown's attr_list, used by MkDocs and FastAPI):
# ``## Title { #anchor .class key=value }``, also ``{: #anchor }`` and ``{#anchor}``. Only lists
# made entirely of such items count, so ``## The {x} syntax`` keeps its braces.
_ATTR_ITEM = r"""(?:[#.][\w:-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s{}"']+))"""
_HEADING_ATTRS = re.compile(rf"[ \t]*\{{:?[ \t]*{_ATTR_ITEM}(?:[ \t]+{_ATTR_ITEM})*[ \t]*\}}[ \t]*$")


def clean_heading(text: str) -> str:
    """A heading's text without surrounding space and without a trailing attribute list."""
    return _HEADING_ATTRS.sub("", text.strip()).strip()


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Only block tokens are read (maps, heading text, fence markup): the inline rule, which
    # parses emphasis, links and code spans into children nobody reads, is off (~40% of parsing),
    # and so is text_join, which only joins those children (a pass over every token otherwise).
    return use_front_matter(MarkdownIt("commonmark").enable("table")).disable(["inline", "text_join"])


def use_front_matter(md: MarkdownIt) -> MarkdownIt:
    """``md`` reading front matter as mdit_py_plugins' ``front_matter_plugin`` registers it (a
    block rule before tables, which may end a paragraph, reference, quote or list), only where
    the document starts (``_front_matter_at_document_start``). Every parser of ours uses this."""
    md.block.ruler.before("table", "front_matter", _front_matter_at_document_start,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md


def _front_matter_at_document_start(state, start_line: int, end_line: int, silent: bool) -> bool:
    """mdit_py_plugins' front matter rule, only where the document starts. That rule checks the
    document's first character but counts dashes from the line's own start, so in a document
    opening with a list item whose text has dashes second and third (``- a--``) it took the item's
    text for an opening marker, and ended the list there (a lazy next line became a paragraph of
    its own); CommonMark, and the Rust reader (``parsing/rsblocks.py``), keep it in the item."""
    if state.bMarks[start_line] + state.tShift[start_line] != 0:
        return False
    return _front_matter_rule(state, start_line, end_line, silent)


def line_starts_of(text: str) -> tuple[int, ...]:
    """Offsets where each line starts. A line ends at ``\\r\\n``, ``\\n`` or a lone ``\\r``: the
    line endings of CommonMark, which the parser normalises the same way, so token maps and
    these offsets never drift."""
    if "\r" in text:
        return (0, *(m.end() for m in _LINE_END.finditer(text)))
    # each line's length plus its newline, summed (C-level loops: thousands of lines)
    return tuple(accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))


def parse_markdown(text: str, path: str = "<string>") -> ParsedDocument:
    """Parse ``text`` into top-level blocks; every block satisfies ``text[b.start:b.end]`` is its source.

    The blocks are markdown-it-py's (CommonMark, tables, mdit-py-plugins' front matter), read
    from markdown-it-pyrs when it gives the same ones (``rsblocks``), else from markdown-it-py.
    """
    line_starts = line_starts_of(text)
    # The parser reads a lone CR as a line end, as ``line_starts`` does (CommonMark).
    # Only line numbers come back from the parser, so dropping a BOM shifts nothing.
    parse_text = text.removeprefix(BOM)
    raw = rsblocks.read_blocks(parse_text)
    if raw is None:
        raw = python_blocks(parse_text)
    n_starts = len(line_starts)
    n_text = len(text)

    def offset(line: int) -> int:
        return line_starts[line] if line < n_starts else n_text

    origin = len(BOM) if text.startswith(BOM) else 0  # a BOM is no content: nothing starts before it ends
    blocks = []
    bisect_right = bisect.bisect_right
    # ``offset`` inlined and each end trimmed in place: a document has hundreds of blocks
    for kind, start_line, map_end, level, heading, sublines in raw.blocks:
        line_start = line_starts[start_line] if start_line < n_starts else n_text
        start = line_start if start_line else origin
        end = line_starts[map_end] if map_end < n_starts else n_text
        while end > line_start and text[end - 1].isspace():
            end -= 1
        # The line after the one ``end`` falls on: blank lines a parser's map may run over
        # after the block (markdown-it's lists, unclosed HTML blocks) are not the block's.
        end_line = bisect_right(line_starts, end - 1) if end > start else start_line + 1
        blocks.append(_block(kind, start_line, end_line, start, end, level, clean_heading(heading) if heading else "", sublines))
    front_matter: dict[str, Any] = {}
    body_start = origin
    fm = raw.front_matter
    if fm is not None:
        front_matter = _load_front_matter(fm.content, path, [fm.start_line, fm.end_line])
        body_start = offset(fm.end_line)
    return ParsedDocument(
        path=path,
        text=text,
        line_starts=line_starts,
        blocks=tuple(blocks),
        code=tuple(CodeFence(*c) for c in raw.code),
        front_matter=front_matter,
        body_start=body_start,
    )


def python_blocks(parse_text: str) -> RawDocument:
    """The blocks, code blocks and front matter of ``parse_text`` read from markdown-it-py's tokens."""
    tokens = _parser().parse(parse_text)
    blocks: list[RawBlock] = []
    code: list[RawCode] = []
    front: RawFrontMatter | None = None
    # One pass over the tokens (thousands per document): a top-level block that opens (a list, a
    # table, a blockquote, a paragraph) becomes a block when it closes, with the start lines of
    # the list items, table rows and paragraphs seen inside it as its ``sublines``.
    open_block: tuple[str, int, int] | None = None  # kind, start line, end line
    sublines: list[int] = []
    for i, tok in enumerate(tokens):
        ttype = tok.type
        tmap = tok.map
        if tok.level != 0:
            if tmap:
                if ttype in _SUBLINE_TOKENS and open_block is not None:
                    sublines.append(tmap[0])
                elif ttype == "fence" or ttype == "code_block":
                    code.append(RawCode(tmap[0], tmap[1], ttype == "code_block" or fence_closed(tok), ttype == "fence"))
            continue
        nesting = tok.nesting
        if nesting == -1:
            if open_block is not None:
                kind, start_line, end_line = open_block
                blocks.append(RawBlock(kind, start_line, end_line, sublines=tuple(sorted(set(sublines)))))
                open_block = None
            continue
        if not tmap:
            continue
        start_line, end_line = tmap
        if ttype == "fence" or ttype == "code_block":
            code.append(RawCode(start_line, end_line, ttype == "code_block" or fence_closed(tok), ttype == "fence"))
        kind = ttype.removesuffix("_open")
        if kind == "front_matter":
            front = RawFrontMatter(tok.content, start_line, end_line)
            continue
        if kind == "heading":
            heading = tokens[i + 1].content if i + 1 < len(tokens) else ""
            blocks.append(RawBlock("heading", start_line, end_line, int(tok.tag[1]), heading))
        elif nesting == 1:
            open_block = (kind, start_line, end_line)
            sublines = [start_line] if ttype in _SUBLINE_TOKENS else []
        else:
            blocks.append(RawBlock(kind, start_line, end_line))
    return RawDocument(blocks, code, front)


# Tokens whose start lines are a block's inner split points (``Block.sublines``).
_SUBLINE_TOKENS = frozenset(("list_item_open", "tr_open", "paragraph_open"))


def fence_closed(tok: Any) -> bool:
    """True when markdown-it found the fence's closing marker, read from the token itself.

    The fence rule maps the fence to ``[open, close + 1]`` when it found a closing marker and to
    ``[open, last content line + 1]`` when the fence ran to the end of its container (a
    blockquote, a list item, the document), and ``content`` holds exactly the lines between. So
    the fence is closed when its map spans one more line than the opening line plus its content
    lines. No hand-written marker check: the parser already stripped any ``>`` or list indent.
    """
    content = tok.content
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    return tok.map[1] - tok.map[0] - 1 - lines == 1


# libyaml's loader when PyYAML was built with it (PyPI wheels are): the same safe constructor in
# C; the pure-Python one stood out in a cProfile of chunking a synthetic corpus.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_front_matter(raw: str, path: str, span: list[int]) -> dict[str, Any]:
    """Front matter as JSON-safe data (``yamlsafe.load_yaml``: limits, clear errors)."""
    data = load_yaml(raw, path, first_line=span[0] + 2, what="front matter is ") if raw.strip() else {}
    if not isinstance(data, dict):
        raise PipelineError("front matter must be a YAML mapping", path=path, line=span[0] + 1)
    return data
