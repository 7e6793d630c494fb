"""Where the relative link and image destinations of a markdown document are, and how a chunk
file one folder below its source rewrites them so they still resolve (issue 13).

A chunk file lives in ``<dir>/_chunks/`` while its source is ``<dir>/<name>.md``, so a link
``alternatives.md`` written in the source resolves to ``<dir>/_chunks/alternatives.md`` from the
chunk: a 404. ``chunk_file_text`` gives the chunk file: the heading context plus the span with
each relative destination prefixed by ``../`` (a bare ``#fragment`` becomes
``../<name>.md#fragment``). The chunk record's ``content`` and the manifest's offsets are
untouched: ``source[start_offset:end_offset]`` is still the exact span.

Positions come from markdown-it's own parse, not from a regular expression over the text: the
``link`` and ``image`` rules are wrapped to record where each construct starts
and ends in its inline source; the destination inside is found with the parser's own helpers
(``parseLinkLabel``, ``parseLinkDestination``); the inline source maps back to the document by
its block's line map (each inline line is the tail of its source line once the parser has
removed container markers such as ``>`` and list indentation). So a link in a code span or a
fenced block is never touched, and one inside a quote or a list is. Reference definitions
(``[x]: dest``) make no token; the parser records each one's line map. Raw HTML (``<img src>``,
``<a href>``) is passed through verbatim, as the search page shows it: as text, never rendered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt

from pipeline.parsing.markdown import BOM, ParsedDocument, use_front_matter

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_DEFINITION = re.compile(r"(?:[ \t]*>)*[ \t]*\[((?:[^\]\\]|\\.)+)\]:[ \t]*(?:\r?\n(?:[ \t]*>)*[ \t]*)?(<[^>\n]*>|[^\s<]\S*)")
_LONE_CR = re.compile(r"\r(?!\n)")
LINKS_ENV_KEY = "pipeline_links"


@dataclass(frozen=True)
class Destination:
    """``text[start:end]`` is a link or image destination as written (``<...>`` included), or,
    with ``replacement``, a construct a chunk file writes as that text instead (a wikilink as a
    markdown link already relocated for ``_chunks/``: ``pipeline/vault/notes.py``)."""

    start: int
    end: int
    replacement: str | None = None


def recording_rule(rule: Any, kind: str):
    """``rule`` that also records the destinations inside every construct it accepts."""

    def wrapped(state: Any, silent: bool) -> bool:
        start = state.pos
        ok = rule(state, silent)
        if ok and not silent:
            spans = _destinations_in(state, kind, start, state.pos)
            if spans:
                state.env.setdefault(LINKS_ENV_KEY, {}).setdefault(id(state.tokens), []).extend((a, b, state.src) for a, b in spans)
        return ok

    return wrapped


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # text_join would replace each inline token's children list, and the recorded positions
    # are keyed by that list's identity (the inline state's ``tokens``); no text token is read.
    # The core inline rule is off: ``link_destinations`` runs the inline parser itself, only on
    # the inline tokens that can hold a link (most paragraphs hold none).
    md = use_front_matter(MarkdownIt("commonmark").enable("table")).disable(["text_join", "inline"])
    for name, kind in (("link", "link"), ("image", "image")):
        rule = next(r for r in md.inline.ruler.__rules__ if r.name == name).fn
        md.inline.ruler.at(name, recording_rule(rule, kind))
    return md


def _destinations_in(state: Any, kind: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` in ``state.src`` of the destination(s) of the construct ``src[start:end]``
    the rule just accepted, found with the parser's own helpers."""
    src = state.src
    bracket = start + 1 if kind == "image" else start
    saved = state.pos, state.posMax
    state.posMax = end
    try:
        label_end = state.md.helpers.parseLinkLabel(state, bracket, True)
    finally:
        state.pos, state.posMax = saved
    pos = label_end + 1
    if label_end < 0 or pos >= end or src[pos] != "(":
        return []  # a reference link: its destination is in the definition
    pos += 1
    while pos < end and src[pos] in " \t\n":
        pos += 1
    res = state.md.helpers.parseLinkDestination(src, pos, end)
    if not res.ok or res.pos <= pos or res.pos > end:
        return []
    return [(pos, res.pos)]


def link_destinations(document: ParsedDocument) -> list[Destination]:
    """Every link and image destination of ``document`` outside code, in text order."""
    text = document.text
    if "](" not in text and "]:" not in text:
        return []  # no inline link and no definition: skip the parse
    md = _parser()
    env: dict = {}
    tokens = md.parse(_LONE_CR.sub(" ", text.removeprefix(BOM)), env)
    recorded = env.get(LINKS_ENV_KEY, {})
    found: set[tuple[int, int]] = set()
    cursor: dict[int, int] = {}  # per document line: where the last inline source found on it ended
    for tok in tokens:
        if tok.type == "inline" and tok.map:
            if "](" not in tok.content:
                continue  # no inline link or image can be here
            tok.children = []
            md.inline.parse(tok.content, md, env, tok.children)
            recorded = env.get(LINKS_ENV_KEY, {})
            bases = inline_line_bases(document, tok.map[0], tok.content, cursor)
            for a, b, src in recorded.get(id(tok.children), ()):
                k = src.count("\n", 0, a)
                if bases[k] is None or src.count("\n", a, b):
                    continue  # not found in its source line (tabs the parser expanded)
                start = bases[k] + a - (src.rfind("\n", 0, a) + 1)
                if text[start : start + b - a] == src[a:b]:
                    found.add((start, start + b - a))
    found.update(definition_spans(document, env.get("references", {})))
    return [Destination(a, b) for a, b in sorted(found) if b > a]


def inline_line_bases(document: ParsedDocument, first_line: int, src: str, cursor: dict[int, int]) -> list[int | None]:
    """Document offset where each line of the inline source ``src`` starts: line ``k`` of a
    block starting at 0-based ``first_line`` is the tail of document line ``first_line + k``
    (the parser removed the container markers before it), or, for a heading before its
    closing ``#``s or a table cell, a part of it found after what ``cursor`` says was used."""
    bases: list[int | None] = []
    for k, inline_line in enumerate(src.split("\n")):
        line = first_line + k
        lo = document.line_offset(line)
        source_line = document.text[lo : document.line_offset(line + 1)].rstrip("\r\n")
        used = cursor.get(line, 0)
        if source_line.endswith(inline_line) and len(source_line) - len(inline_line) >= used:
            base = len(source_line) - len(inline_line)
        else:
            base = source_line.find(inline_line, used)
        if base < 0:
            bases.append(None)
            continue
        cursor[line] = base + len(inline_line)
        bases.append(lo + base)
    return bases


def definition_spans(document: ParsedDocument, references: dict) -> list[tuple[int, int]]:
    """Destinations of the reference definitions the parser registered (it records each one's
    line map: the destination is on the label's line or the next one)."""
    text, out = document.text, []
    for ref in references.values():
        span = ref.get("map") if isinstance(ref, dict) else None
        if not span:
            continue
        m = _DEFINITION.match(text, document.line_offset(span[0]), document.line_offset(span[1]))
        if m:
            out.append((m.start(2), m.end(2)))
    return out


def relocate(destination: str, source_name: str) -> str | None:
    """``destination`` as seen from one folder below its source ``source_name``, or None when
    it needs no change (absolute, with a scheme, or empty)."""
    inner = destination[1:-1] if destination.startswith("<") and destination.endswith(">") else destination
    if not inner or inner.startswith("/") or _SCHEME.match(inner):
        return None
    moved = ("../" + quote(source_name) + inner) if inner.startswith("#") else "../" + inner
    return f"<{moved}>" if inner is not destination else moved


def rewrite_span(text: str, start: int, end: int, destinations: list[Destination], source_name: str) -> str:
    """``text[start:end]`` with every destination inside it relocated (``relocate``)."""
    out, pos = [], start
    for d in destinations:
        if d.start < start or d.end > end:
            continue
        moved = d.replacement if d.replacement is not None else relocate(text[d.start : d.end], source_name)
        if moved is not None:
            out += [text[pos : d.start], moved]
            pos = d.end
    out.append(text[pos:end])
    return "".join(out)


def chunk_file_text(
    content: str,
    text: str,
    start: int,
    end: int,
    destinations: list[Destination],
    source_name: str,
    header: tuple[int, int] | None = None,
) -> str:
    """A chunk file: ``content`` (heading context + ``text[header]`` + ``text[start:end]``) with
    the relative destinations of the span and of the repeated table header (``header``, source
    offsets, when the chunk shows one) relocated for a file one folder below the source."""
    h0, h1 = header or (start, start)
    context = content[: len(content) - (end - start) - (h1 - h0)]
    moved_header = rewrite_span(text, h0, h1, destinations, source_name) if header else ""
    return context + moved_header + rewrite_span(text, start, end, destinations, source_name)
