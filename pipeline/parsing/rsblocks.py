"""Top-level blocks read from markdown-it-pyrs (the Rust port of markdown-it), the same blocks
markdown-it-py's block rules give, about five times faster.

``read_blocks`` returns ``None`` whenever the Rust tree cannot be trusted to match markdown-it-py;
``parse_markdown`` then parses with markdown-it-py. Identical parsed documents on real and random
documents are checked by ``tests/test_parsing_rsblocks.py`` and the comparison of ``git show ebc9af0:bench/parser_identity.py``
(docs/decisions/chunking.md has the counts and the speed).

What differs between the two libraries and how it is bridged:

* Positions: the Rust tree maps each node to UTF-8 byte offsets (``srcmap``), markdown-it-py to
  line ranges. A node's lines are those of its first and last byte; the text is normalised as
  markdown-it does (CR line ends, NUL) and a final line of only spaces, which markdown-it-py
  does not count, is dropped, so line numbers agree. Maps that run over blank lines after a
  block differ, so ``Block.end_line`` is taken from the block's trimmed end in both readers;
  an unclosed fence's lines come from its content (``_code``).
* Front matter: the Rust plugin's rules differ from mdit-py-plugins' (``...`` as end marker,
  longer markers), so ``front_matter`` (``mditrules.py``) ports mdit-py-plugins' rule and the front matter's lines
  are blanked before the Rust parse: markdown-it-py resumes after the front matter as on a
  document starting with that many blank lines.
* Tight list items hold their paragraph's text directly (markdown-it-py keeps a hidden
  ``paragraph_open``): a text node starting a run of text under a list item counts as one.
* Rules that decide otherwise, found by comparing random documents: lazy lines in block
  quotes, tables (the Rust rule takes headers without ``|``, also when it only checks whether
  a paragraph ends), HTML blocks that should run to a closing marker, and nesting deep enough
  for markdown-it-py's ``maxNesting``. Where any of them may apply (``_Reader.agrees``), the
  Rust reading is declined: on the real documents of the comparison, 3 of 290.
"""

from __future__ import annotations

import bisect
import re
from itertools import accumulate

from pipeline.parsing.mditrules import front_matter, normalize, table_starts
from pipeline.parsing.raw import RawBlock, RawCode, RawDocument

try:  # optional: without it every document goes to markdown-it-py
    from markdown_it_pyrs import MarkdownIt as _RustMarkdownIt
except ImportError:  # pragma: no cover - the package is a dependency; a source checkout may lack it
    _RustMarkdownIt = None

# markdown-it-py's commonmark preset stops parsing blocks nested ``maxNesting`` (20) token levels
# deep (blockquote +1, list +2 with its item). Deeper than this margin, markdown-it-py decides.
MAX_LEVEL = 16

# markdown-it-pyrs frees its tree recursively: a document nested tens of thousands of levels deep
# overflows the stack, a segfault rather than an exception (measured: 30,000 nested lists). Each
# level of nesting takes a marker or indentation at the start of the line where a block opens, so
# a document whose lines never start with a longer run of such characters cannot nest deeper
# than twice this (a tab is one character and up to two list levels); a deeper one goes to
# markdown-it-py, which stops at its ``maxNesting`` anyway. Far above ``MAX_LEVEL``, so no
# real document is turned away by it.
MAX_PREFIX = 256
_DEEP = re.compile(r"^[ \t>*+\-0-9.)]{%d}" % MAX_PREFIX, re.M)

# Block rules only: the inline rules' output is never read (heading text is the raw inline text).
_RULES = ["blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "reference", "html_block", "table"]

# Rust node name -> markdown-it-py block kind (token type without ``_open``).
_KINDS = {
    "paragraph": "paragraph", "heading": "heading", "lheading": "heading", "bullet_list": "bullet_list",
    "ordered_list": "ordered_list", "blockquote": "blockquote", "table": "table", "fence": "fence",
    "code_block": "code_block", "html_block": "html_block", "hr": "hr",
}
# Nodes inside a top-level block whose start lines are its split points (``Block.sublines``):
# markdown-it-py's ``list_item_open``, ``tr_open`` and ``paragraph_open``.
_SUBLINE_NODES = frozenset(("list_item", "trow", "paragraph"))
# Nodes holding blocks or rows (walked for sublines and code); the others hold inline text only.
# Value: the token levels markdown-it-py adds for it (its ``maxNesting`` counts them).
_CONTAINERS = {"bullet_list": 1, "ordered_list": 1, "list_item": 1, "blockquote": 1, "table": 0, "thead": 0, "tbody": 0}


_parser = None


def available() -> bool:
    return _RustMarkdownIt is not None


def _rust():
    global _parser
    if _parser is None:
        _parser = _RustMarkdownIt("zero").enable_many(_RULES)
    return _parser


_PLUS_ONE = (1).__add__


class _Lines:
    """Lines of ``src`` and where each starts, in UTF-8 bytes (Rust offsets) and in characters."""

    def __init__(self, src: str):
        self.lines = src.split("\n")
        # markdown-it counts no line after a final newline
        self.count = len(self.lines) - 1 if src.endswith("\n") else len(self.lines)
        # each line's length plus its newline, summed (C-level loops: thousands of lines)
        self.char_starts = list(accumulate(map(_PLUS_ONE, map(len, self.lines[:-1])), initial=0))
        if src.isascii():
            self.byte_starts = self.char_starts
        else:
            lines = src.encode("utf-8").split(b"\n")
            self.byte_starts = list(accumulate(map(_PLUS_ONE, map(len, lines[:-1])), initial=0))

    def blank(self, line: int) -> bool:
        return line >= self.count or not self.lines[line].strip(" \t")


def read_blocks(src: str) -> RawDocument | None:
    """The blocks markdown-it-py's block rules find in ``src`` (BOM removed), or None when
    markdown-it-py must decide (see the module docstring)."""
    if _RustMarkdownIt is None:
        return None
    src = normalize(src)
    if src and src[-1] in " \t":
        # markdown-it-py counts no final line of only spaces and tabs (no newline after it)
        last = src.rfind("\n") + 1
        if not src[last:].strip(" \t"):
            src = src[:last]
    fm = front_matter(src)
    if fm is not None:
        # Blank the front matter's lines: the parse resumes after it, line numbers unchanged.
        cut = 0
        for _ in range(fm.end_line):
            cut = src.find("\n", cut) + 1 if cut != -1 else -1
        src = "\n" * fm.end_line + (src[cut:] if cut > 0 else "")
    lines = _Lines(src)
    # Only a line of ``MAX_PREFIX`` characters or more can start so: the regex on those lines
    # alone, not at every line start of the text (~1.5 % of a chunking pass on the bench's corpus).
    if any(_DEEP.match(line) for line in lines.lines if len(line) >= MAX_PREFIX):
        return None
    try:
        root = _rust().tree(src)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - a Rust panic (pyo3's PanicException is no Exception): markdown-it-py decides
        return None
    reader = _Reader(lines)
    blocks: list[RawBlock] = []
    byte_starts = lines.byte_starts
    bisect_right = bisect.bisect_right
    for node in root.children:
        name = node.name
        if name == "definition":  # link reference definitions: no token in markdown-it-py
            continue
        kind = _KINDS.get(name)
        srcmap = node.srcmap
        if kind is None or srcmap is None:
            return None
        # the lines of the node's first and last byte (hundreds of blocks a document)
        first, past = srcmap
        start_line = bisect_right(byte_starts, first) - 1
        last_line = bisect_right(byte_starts, past - 1) - 1 if past - 1 > first else start_line
        if kind == "heading":
            children = node.children
            text = children[0].meta.get("content", "") if children else ""
            blocks.append(RawBlock("heading", start_line, last_line + 1, node.meta["level"], text))
            continue
        if kind == "paragraph":  # its own start line only: nothing nested is read
            blocks.append(RawBlock(kind, start_line, last_line + 1, 0, "", (start_line,)))
            continue
        sublines: list[int] = []
        if kind in ("fence", "code_block"):
            reader.code.append(_code(node, start_line, last_line))
        elif kind == "html_block":
            reader.html.append((start_line, last_line))
        elif name in _CONTAINERS:
            if name == "table":
                reader.tables.append((start_line, last_line, 0))
            elif name == "blockquote":
                reader.quotes.append((start_line, last_line, 1))
            if not reader.walk(node, _CONTAINERS[name], 1 if name == "blockquote" else 0, sublines):
                return None
        blocks.append(RawBlock(kind, start_line, last_line + 1, 0, "", tuple(sorted(set(sublines))) if sublines else ()))
    if not reader.agrees(src):
        return None
    return RawDocument(blocks, reader.code, fm)


# A table row that may start a block that ends a table in markdown-it-py (its terminators:
# fence, blockquote, rule, list, HTML block, heading).
_TERMINATOR_START = re.compile(r"[ \t]*(?:[`~>*_+<#-]|\d{1,9}[.)](?:[ \t]|$))")
_LIST_MARKER = re.compile(r"(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$)")
# A line (not the first: it has no line above) that may be a table's delimiter row, from the
# newline before it: a search for a literal start is far faster than trying ``^`` at every offset.
_DELIMITER_ROW = re.compile(r"\n[ \t>]*[-:|][-:| \t]*(?=\n|\Z)")
# HTML blocks (CommonMark kinds 1-5) that end at a closing marker, not at a blank line.
_HTML_ENDS = (("<script", "</script>"), ("<pre", "</pre>"), ("<style", "</style>"), ("<textarea", "</textarea>"),
              ("<!--", "-->"), ("<?", "?>"), ("<![cdata[", "]]>"), ("<!", ">"))
# A line that may open an HTML declaration block with a lowercase letter (``<!doctype``):
# markdown-it-py takes ``<!`` and any ASCII letter (CommonMark 0.31), the Rust rule only an
# uppercase one and reads a paragraph. Loose on purpose (any container markers before it).
_LOWER_DECLARATION = re.compile(r"^[ \t>*+\d.)-]*<![a-z]", re.M)
# Nested nodes whose lines are read besides split points and containers.
_POSITIONED = frozenset(("fence", "code_block", "html_block"))
# Nested nodes whose lines ``_Reader.walk`` reads: one set lookup a node.
_READ = frozenset((*_SUBLINE_NODES, "text", *_POSITIONED, *_CONTAINERS))


class _Reader:
    """Walks the containers of the Rust tree (split points, code blocks, nesting depth) and
    checks the constructs where the two parsers are known to differ (``agrees``)."""

    def __init__(self, lines: _Lines):
        self.lines = lines
        self.code: list[RawCode] = []
        self.tables: list[tuple[int, int, int]] = []  # first and last line, blockquote depth
        self.quotes: list[tuple[int, int, int]] = []  # first and last line, blockquote depth
        self.html: list[tuple[int, int]] = []  # first and last line of each HTML block

    def walk(self, node, level: int, depth: int, sublines: list[int]) -> bool:
        """Collect the split points and code blocks inside a top-level container; False when
        the nesting reaches ``MAX_LEVEL`` or a node has no position."""
        if level >= MAX_LEVEL:
            return False
        previous_text = False
        in_item = node.name == "list_item"
        byte_starts = self.lines.byte_starts
        bisect_right = bisect.bisect_right
        for child in node.children:
            name = child.name
            is_text = name == "text"
            if is_text and previous_text:  # one paragraph's text in several nodes: one split point
                continue
            previous_text = is_text
            if name in _READ:
                srcmap = child.srcmap
                if srcmap is None:
                    return False
                # the lines of the node's first and last byte (thousands of nodes a document)
                first, past = srcmap
                start_line = bisect_right(byte_starts, first) - 1
                last_line = bisect_right(byte_starts, past - 1) - 1 if past - 1 > first else start_line
                if name in _SUBLINE_NODES or (is_text and in_item):
                    sublines.append(start_line)
                if name == "fence" or name == "code_block":
                    self.code.append(_code(child, start_line, last_line))
                elif name == "html_block":
                    self.html.append((start_line, last_line))
                elif name in _CONTAINERS:
                    inner = depth + (name == "blockquote")
                    if name == "table":
                        self.tables.append((start_line, last_line, depth))
                    elif name == "blockquote":
                        self.quotes.append((start_line, last_line, inner))
                    if not self.walk(child, level + _CONTAINERS[name], inner, sublines):
                        return False
        return True

    def agrees(self, src: str) -> bool:
        """False where markdown-it-py may read the text otherwise than the Rust tree does:

        * a lazy line in a blockquote (fewer ``>`` than the quote's depth): markdown-it-py ends
          the quote at any list there, even one that cannot interrupt a paragraph;
        * a table inside a blockquote, on a list item's first line, right after a quote's line,
          followed by a non-blank line, with a row that may start another block, or whose header
          and delimiter markdown-it-py would not take (``table_starts``);
        * a line that may be a table's delimiter row, under a non-blank line, where no Rust
          table starts (the Rust rule takes headers without ``|``, and even as a paragraph's
          terminator: it ends paragraphs that markdown-it-py continues);
        * an HTML block of the kinds that end at a closing marker (``<script``, ``<pre``,
          ``<!--``, ...) whose last line has no such marker: the Rust rule ends some at a
          blank line;
        * a line that may open a declaration with a lowercase letter (``<!doctype html>``):
          an HTML block for markdown-it-py, a paragraph for the Rust rule.
        """
        if "<!" in src and _LOWER_DECLARATION.search(src):
            return False
        lines = self.lines
        text = lines.lines
        for first, last, depth in self.quotes:
            for number in range(first + 1, last + 1):
                line = text[number]
                body = line.lstrip(" \t>")
                if body.strip(" \t") and line[: len(line) - len(body)].count(">") < depth:
                    return False
        starts = set()
        for first, last, depth in self.tables:
            if depth or first + 1 > last:
                return False
            header = text[first].lstrip(" \t")
            if _LIST_MARKER.match(header) or not table_starts(header, text[first + 1]):
                return False
            if first and not lines.blank(first - 1) and text[first - 1].lstrip(" \t").startswith(">"):
                return False
            if not lines.blank(last + 1):
                return False
            if any(_TERMINATOR_START.match(text[number]) for number in range(first + 2, last + 1)):
                return False
            starts.add(first)
        for first, last in self.html:
            opening = text[first].lstrip(" \t>").lower()
            for opener, closer in _HTML_ENDS:
                if opening.startswith(opener):
                    if closer not in text[last].lower():
                        return False
                    break
        if "|" in src:
            code_lines = None
            for match in _DELIMITER_ROW.finditer(src):
                number = bisect.bisect_right(lines.char_starts, match.start() + 1) - 1  # the line after the newline
                if number - 1 in starts or lines.blank(number - 1):
                    continue
                if "|" not in text[number] and "|" not in text[number - 1]:
                    continue
                if code_lines is None:
                    code_lines = {n for c in self.code for n in range(c.start_line, c.end_line)}
                if number - 1 not in code_lines or number not in code_lines:
                    return False
        return True


def _code(node, start_line: int, last_line: int) -> RawCode:
    """A code node whose source's first and last bytes lie on ``start_line`` and ``last_line``."""
    if node.name != "fence":
        return RawCode(start_line, last_line + 1, True, False)
    # markdown-it-py maps a fence to its opening line, its content and its closing line if it
    # has one (``markdown.fence_closed``). The content is the same in both parsers, trailing
    # blank lines of an unclosed fence included, but the Rust map of an unclosed fence stops
    # before them: so the lines come from the content, and the fence is closed when its source
    # reaches past the content.
    content = node.meta.get("content", "")
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    closed = last_line > start_line + lines
    return RawCode(start_line, start_line + 1 + lines + closed, closed, True)
