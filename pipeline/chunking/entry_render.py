"""A YAML/JSON knowledge-base entry's fields as readable markdown, every character traced to its source.

Seed 004 asks for readable chunks: a definition as its term and its text, an error as its code,
cause and fix, a how-to's steps as a numbered list, not the raw ``{"errorCode": "401", ...}``.
The chunk shows the rendering; its offsets stay the source's. ``Rendering.source_span(a, b)`` is
the source ``text[a:b]`` was rendered from: from the first to the last source character of the
keys and values it shows. A label (``**Fix:**``) is rendered from its key, a value from the
value's characters (aligned through quotes, escapes and YAML folding), a list item, a field or
a whole value from its node's full span (quotes and markers included); list markers and
emphasis are the renderer's own and trace to nothing.

Fields are rendered in source order, so source positions never decrease along a rendering:
consecutive parts of it have source spans in order that never overlap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# A value's characters are looked for this far ahead of the last one found (past whitespace):
# an escape (``\\U0001F600``), a quote or a YAML line continuation lies between them.
ALIGN_WINDOW = 12
# Labels for fields whose names say what seed 004's readers look for (compared like ``key``).
LABELS = {
    "errorcode": "Code", "code": "Code", "statuscode": "Code",
    "cause": "Cause", "causes": "Causes", "commoncauses": "Causes", "rootcause": "Cause",
    "solution": "Fix", "fix": "Fix", "resolution": "Fix", "remedy": "Fix", "workaround": "Workaround",
}
TERM_KEYS = {"term", "name"}  # a definition's term: shown in bold, unlabelled
TEXT_KEYS = {"definition"}  # a definition's text: shown as a paragraph, unlabelled
STEP_PREFIX = re.compile(r"\s*step\s*\d+\s*[:.)\-]\s*", re.IGNORECASE)  # "Step 1: ..." in a numbered list
ITEM_TEXT_KEYS = ("action", "step", "text", "description", "title")  # a mapping item's line (seed 004)
YAML_TAG = re.compile(r"!\S*\s+")  # ``!!int "401"``: a scalar shows what follows its tag


@dataclass(frozen=True)
class SourceNode:
    """A parsed YAML/JSON value with its source span ``text[start:end]``; ``key_start:key_end``
    is the key naming it in its parent mapping (``-1`` when none); ``style`` is the scalar's
    quoting (YAML: None, ``'``, ``"``, ``|``, ``>``; JSON strings ``"``)."""

    value: Any
    start: int
    end: int
    children: dict[str, "SourceNode"] = field(default_factory=dict)
    items: tuple["SourceNode", ...] | None = None  # a sequence's items, in order
    style: str | None = None
    key_start: int = -1
    key_end: int = -1


@dataclass(frozen=True)
class Rendering:
    """Markdown ``text``; ``text[i]`` is rendered from ``source[starts[i]:ends[i]]``; an empty
    range renders nothing of the source (a list marker, emphasis, whitespace; ``-1``: not even
    placed in it)."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def source_span(self, a: int, b: int) -> tuple[int, int] | None:
        """The source ``text[a:b]`` is rendered from; None when it traces to nothing."""
        traced = [i for i in range(a, b) if self.ends[i] > self.starts[i]]
        if not traced:
            return None
        return min(self.starts[i] for i in traced), max(self.ends[i] for i in traced)



def key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def label_for(name: str) -> str:
    """``errorCode`` -> ``Code``, ``solution`` -> ``Fix``, ``userType`` -> ``User type``."""
    known = LABELS.get(key(name))
    if known:
        return known
    words = re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", str(name)).replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize() if words else str(name)


class _Writer:
    def __init__(self, source: str):
        self.source = source
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def __len__(self) -> int:
        return len(self.starts)

    def plain(self, text: str) -> None:
        self.parts.append(text)
        self.starts.extend([-1] * len(text))
        self.ends.extend([-1] * len(text))

    def traced(self, text: str, positions: list[tuple[int, int]], continuation: str = "") -> None:
        """``text`` whose character ``i`` renders ``source[a:b]``, ``(a, b) = positions[i]``;
        every line after the first gets ``continuation`` (a list item's indent) before it."""
        lines = text.split("\n")
        i = 0
        for n, line in enumerate(lines):
            if n:
                self.plain("\n" + (continuation if line else ""))
                i += 1
            self.parts.append(line)
            for a, b in positions[i : i + len(line)]:
                self.starts.append(a)
                self.ends.append(b)
            i += len(line)

    def bound(self, begin: int, start: int, end: int) -> None:
        """What was written since ``begin`` traces, as a whole, to ``source[start:end]``."""
        mapped = [i for i in range(begin, len(self.starts)) if self.starts[i] >= 0]
        if mapped:
            self.starts[mapped[0]] = min(self.starts[mapped[0]], start)
            self.ends[mapped[-1]] = max(self.ends[mapped[-1]], end)

    def rendering(self) -> Rendering:
        return Rendering("".join(self.parts), tuple(self.starts), tuple(self.ends))


# Escapes of double-quoted YAML and JSON strings that stand for one character (``\\u``,
# ``\\U`` and ``\\x`` are read by ``_escape_at``).
_SIMPLE_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", "e": "\x1b", " ": " ",
    '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029", "\t": "\t",
}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def _escape_at(source: str, q: int, end: int) -> tuple[str, int] | None:
    """The character the escape at ``source[q]`` spells and where it ends, else None."""
    if source[q] != "\\" or q + 1 >= end:
        return None
    kind = source[q + 1]
    if kind in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[kind], q + 2
    digits = _HEX_DIGITS.get(kind)
    if digits is None:
        return None
    try:
        code = int(source[q + 2 : q + 2 + digits], 16) if q + 2 + digits <= end else -1
    except ValueError:
        return None
    after = q + 2 + digits
    if kind == "u" and 0xD800 <= code < 0xDC00 and source.startswith("\\u", after):  # a JSON surrogate pair
        try:
            low = int(source[after + 2 : after + 6], 16)
        except ValueError:
            low = -1
        if 0xDC00 <= low < 0xE000:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), after + 6
    return (chr(code), after) if 0 <= code <= 0x10FFFF else None


def align(value: str, source: str, start: int, end: int, style: str | None) -> list[tuple[int, int]]:
    """Where each character of ``value`` (a scalar's value) is written in ``source[start:end]``
    (its source text): ``(a, b)`` with ``source[a:b]`` the character or the escape spelling it.
    Greedy and non-decreasing: each is the next occurrence within ``ALIGN_WINDOW`` past
    whitespace (and, double-quoted, line continuations). Whitespace, and a character not found,
    gets the empty ``(p, p)`` where the search stood: it renders nothing of its own."""
    escapes = style == '"'
    pos = start
    if style in ("'", '"'):
        pos += 1
    elif style in ("|", ">"):  # the indicator line holds none of the value
        newline = source.find("\n", start, end)
        pos = newline + 1 if newline >= 0 else end
    out: list[tuple[int, int]] = []
    for ch in value:
        if ch.isspace():
            out.append((pos, pos))
            continue
        p = pos
        while p < end and (source[p] in " \t\r\n" or (escapes and source[p] == "\\" and p + 1 < end and source[p + 1] in "\r\n")):
            p += 1
        found = None
        for q in range(p, min(end, p + ALIGN_WINDOW)):
            if escapes and source[q] == "\\":
                escape = _escape_at(source, q, end)
                if escape is not None and escape[0] == ch:
                    found = (q, escape[1])
                    break
            elif source[q] == ch:
                found = (q, q + 1)
                break
        if found is None:
            out.append((pos, pos))
            continue
        out.append(found)
        pos = found[1]
    return out


def _scalar(w: _Writer, node: SourceNode, *, drop: re.Pattern | None = None, continuation: str = "") -> None:
    """A scalar's text: a string's value (``drop`` removes a leading match), else its source."""
    if isinstance(node.value, str):
        text = node.value.strip("\n")
        positions = align(text, w.source, node.start, node.end, node.style)
        if drop is not None:
            cut = drop.match(text)
            if cut and cut.end() < len(text):
                text, positions = text[cut.end() :], positions[cut.end() :]
    else:  # a number, boolean or date: as written (``yes`` stays ``yes``), without a YAML tag or quotes
        raw = w.source[node.start : node.end]
        start = node.start + len(raw) - len(raw.lstrip())
        text = raw.strip()
        tag = YAML_TAG.match(text)  # ``!!int "401"``: the value is what follows the tag
        if tag:
            text, start = text[tag.end() :], start + tag.end()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text, start = text[1:-1], start + 1
        positions = [(p, p + 1) for p in range(start, start + len(text))]
    begin = len(w)
    w.traced(text, positions, continuation)
    w.bound(begin, node.start, node.end)


def _label(w: _Writer, name: str, node: SourceNode) -> None:
    """``**Label:**``, traced to the key it renders."""
    label = label_for(name)
    w.plain("**")
    if node.key_start >= 0:  # the label as a whole renders the key
        positions = [(node.key_start, node.key_end)] + [(node.key_end, node.key_end)] * (len(label) - 1)
    else:
        positions = [(-1, -1)] * len(label)
    w.traced(label, positions)
    w.plain(":**")


def is_empty(node: SourceNode) -> bool:
    value = node.value
    return value is None or (isinstance(value, (str, list, dict)) and not (value.strip() if isinstance(value, str) else value))


def render_value(w: _Writer, node: SourceNode, *, numbered: bool = False, pad: str = "") -> None:
    """A field's value: a scalar as its text, a sequence as a list (numbered for steps, a
    mapping item as its first text field with the others nested below), a mapping as a list of
    labelled fields."""
    begin = len(w)
    if node.items is not None:
        items = [item for item in node.items if not is_empty(item)]
        for n, item in enumerate(items, 1):
            marker = f"{n}. " if numbered else "- "
            w.plain(("\n" if n > 1 else "") + pad + marker)
            _item(w, item, numbered=numbered, pad=pad + " " * len(marker))
    elif node.children:
        fields = [(name, child) for name, child in node.children.items() if not is_empty(child)]
        for n, (name, child) in enumerate(fields):
            w.plain(("\n" if n else "") + pad + "- ")
            _labelled(w, name, child, pad=pad + "  ")
    else:
        _scalar(w, node, drop=STEP_PREFIX if numbered else None, continuation=pad)
    w.bound(begin, node.start, node.end)


def _item(w: _Writer, item: SourceNode, *, numbered: bool, pad: str) -> None:
    """A list item's text after its marker. A mapping item's line is its text field (seed 004:
    ``action``, ``step``, ...), else its first field labelled; its other fields nest below. In
    a numbered list a ``Step 3:`` before the text (or as the key) is the number, so not shown."""
    begin = len(w)
    if item.children:
        scalars = {n: c for n, c in item.children.items() if c.items is None and not c.children and not is_empty(c)}
        first = next((n for n in ITEM_TEXT_KEYS if n in scalars), None)
        if first is not None:
            _scalar(w, scalars[first], drop=STEP_PREFIX if numbered else None, continuation=pad)
        elif scalars:
            first = next(iter(scalars))
            if not (numbered and STEP_PREFIX.fullmatch(first + ":")):
                _label(w, first, scalars[first])
                w.plain(" ")
            _scalar(w, scalars[first], continuation=pad)
        rest = [(name, child) for name, child in item.children.items() if name != first and not is_empty(child)]
        for name, child in rest:
            w.plain("\n" + pad + "- ")
            _labelled(w, name, child, pad=pad + "  ")
    elif item.items is not None:
        render_value(w, item, pad=pad)
    else:
        _scalar(w, item, drop=STEP_PREFIX if numbered else None, continuation=pad)
    w.bound(begin, item.start, item.end)


def _labelled(w: _Writer, name: str, node: SourceNode, *, pad: str) -> None:
    """``**Label:** value`` on one line, or the label then the value's list below it."""
    _label(w, name, node)
    if node.items is not None or node.children:
        w.plain("\n")
        render_value(w, node, pad=pad)
    else:
        w.plain(" ")
        _scalar(w, node, continuation=pad)


def render_section(source: str, node: SourceNode, *, numbered: bool) -> Rendering:
    """One how-to section's value (its label is the chunk's heading context)."""
    w = _Writer(source)
    render_value(w, node, numbered=numbered)
    return w.rendering()


def render_fields(source: str, fields: list[tuple[str, SourceNode]]) -> Rendering:
    """An entry's fields in source order, one paragraph each: a term in bold, a definition as
    text, any other field as ``**Label:** value`` (a list or mapping below its label)."""
    w = _Writer(source)
    fields = sorted(((name, node) for name, node in fields if not is_empty(node)), key=lambda f: f[1].start)
    for n, (name, node) in enumerate(fields):
        if n:
            w.plain("\n\n")
        k = key(name)
        if k in TERM_KEYS and node.items is None and not node.children:
            w.plain("**")
            _scalar(w, node)
            w.plain("**")
        elif k in TEXT_KEYS and node.items is None and not node.children:
            _scalar(w, node)
        else:
            if node.items is not None or node.children:
                _label(w, name, node)
                w.plain("\n\n")
                render_value(w, node)
            else:
                _labelled(w, name, node, pad="")
    return w.rendering()
