"""markdown-it-py's rules, ported to Python where the Rust tree must be bypassed or checked:
its ``normalize`` core rule, mdit-py-plugins' ``front_matter`` rule, and the table rule's test
of a header and a delimiter line (``table_starts``). Each gives what markdown-it-py decides on
the same text (tests/test_parsing_rsblocks.py, git show ebc9af0:bench/parser_identity.py). Pure.
"""

from __future__ import annotations

import re

from pipeline.parsing.raw import RawFrontMatter

_NEWLINES = re.compile(r"\r\n?")
_HEADER_CELL = re.compile(r"^:?-+:?$")


def normalize(src: str) -> str:
    """markdown-it's ``normalize`` core rule: CommonMark line endings to ``\\n``, NUL to U+FFFD."""
    if "\r" in src:
        src = _NEWLINES.sub("\n", src)
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    return src


def _indent(line: str) -> tuple[int, int]:
    """(characters, columns) of ``line``'s leading spaces and tabs (a tab to the next multiple of 4)."""
    chars = cols = 0
    for ch in line:
        if ch == " ":
            cols += 1
        elif ch == "\t":
            cols += 4 - cols % 4
        else:
            break
        chars += 1
    return chars, cols


def front_matter(src: str) -> RawFrontMatter | None:
    """mdit-py-plugins' ``front_matter`` rule at the document's first line, on normalised text.

    A line of three or more ``-`` opens it (anything may follow them on that line, as in the
    plugin); it closes at the next line at column 0..3 made of at least as many ``-`` and then
    spaces, or at a ``...`` line at column 0 with trailing spaces. Unclosed: no front matter.
    """
    if not src.startswith("-"):
        return None
    lines = src.split("\n")
    # The plugin counts markers from the line's first character: ``while pos <= maximum`` lets
    # it look at the line's end (a newline, never a marker), so the count is the run of ``-``.
    first = lines[0]
    markers = len(first) - len(first.lstrip("-"))
    if markers < 3:
        return None
    # The plugin's block ends at the last line (``endLine``): a text ending in a newline has an
    # empty last line that markdown-it does not count.
    end_line = len(lines) - 1 if src.endswith("\n") else len(lines)
    for number in range(1, end_line):
        line = lines[number]
        chars, cols = _indent(line)
        body = line[chars:]
        if cols == 0 and body.startswith("...") and not body[3:].strip(" \t"):
            break
        if not body.startswith("-") or cols >= 4:  # an indented line is code to the plugin: skipped
            continue
        run = len(body) - len(body.lstrip("-"))
        if run < markers or body[run:].strip(" \t"):
            continue
        break
    else:
        return None
    content_lines = lines[1:number]
    return RawFrontMatter("\n".join(content_lines), 0, number + 1)


def _escaped_split(line: str) -> list[str]:
    """markdown-it-py's ``escapedSplit``: cells at ``|`` not preceded by a backslash."""
    out, current, last, escaped = [], "", 0, False
    for pos, ch in enumerate(line):
        if ch == "|":
            if not escaped:
                out.append(current + line[last:pos])
                current, last = "", pos + 1
            else:
                current += line[last : pos - 1]
                last = pos
        escaped = ch == "\\"
    out.append(current + line[last:])
    return out


def table_starts(header: str, delimiter: str) -> bool:
    """markdown-it-py's table rule on a header and a delimiter line (indentation removed):
    whether they open a table. Its checks of indentation (code blocks) are not made here."""
    d = delimiter.strip(" \t")
    if len(d) < 2 or d[0] not in "|-:" or (d[1] not in "|-: \t") or (d[0] == "-" and d[1] in " \t"):
        return False
    if any(ch not in "|-: \t" for ch in d):
        return False
    columns = delimiter.split("|")
    aligns = 0
    for i, column in enumerate(columns):
        t = column.strip()
        if not t:
            if i == 0 or i == len(columns) - 1:
                continue
            return False
        if not _HEADER_CELL.search(t):
            return False
        aligns += 1
    h = header.strip()
    if "|" not in h:
        return False
    cells = _escaped_split(h)
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    return 0 < len(cells) == aligns
