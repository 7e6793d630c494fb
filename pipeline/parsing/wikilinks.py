"""Obsidian's wikilinks, embeds and tags in a markdown document, with exact offsets (issue 33).

``[[target]]``, ``[[target#heading]]``, ``[[target#^block]]``, ``[[target|alias]]`` (and their
combinations), ``![[embed]]`` (the same forms; ``|300`` after an image is a size) and ``#tag``
(letters, digits, ``_``, ``-``, ``/``; not digits alone; after a space or at a line's start).

No maintained markdown-it-py plugin reads them (mdit-py-plugins 0.7.0 has none; checked in
issue 33), so this module adds three inline rules to markdown-it-py's CommonMark parser, before
its own ``link`` and ``image`` rules: a wikilink inside a code span, a fence or raw HTML is text,
as Obsidian shows it. Positions map back to the document as ``parsing/links.py`` maps link
destinations (``inline_line_bases``), so ``text[w.start:w.end]`` is the construct as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from pipeline.parsing.links import LINKS_ENV_KEY, Destination, definition_spans, inline_line_bases, recording_rule
from pipeline.parsing.markdown import BOM, ParsedDocument, use_front_matter

_ENV_KEY = "pipeline_wikilinks"
_LONE_CR = re.compile(r"\r(?!\n)")
_TAG = re.compile(r"[\w/-]+")


@dataclass(frozen=True)
class WikiLink:
    """``text[start:end]`` is ``[[...]]`` or ``![[...]]``; its parts as written (stripped)."""

    start: int
    end: int
    embed: bool
    target: str  # a note or file name, or a path; "" for a link inside the document (``[[#x]]``)
    heading: str = ""  # after ``#`` (not a block reference)
    block: str = ""  # after ``#^``
    alias: str = ""  # after ``|``


def parse_inner(inner: str) -> tuple[str, str, str, str]:
    """``target#heading|alias`` -> (target, heading, block, alias); ``#^id`` is a block."""
    link, _, alias = inner.partition("|")
    target, _, fragment = link.partition("#")
    heading = block = ""
    if fragment.startswith("^"):
        block = fragment[1:].strip()
    else:
        heading = fragment.strip()
    return target.strip(), heading, block, alias.strip()


def _record(state: Any, kind: str, start: int, end: int, value: str) -> None:
    state.env.setdefault(_ENV_KEY, {}).setdefault(id(state.tokens), []).append((kind, start, end, value, state.src))


def _wikilink_rule(embed: bool):
    opener = "![[" if embed else "[["

    def rule(state: Any, silent: bool) -> bool:
        pos = state.pos
        src = state.src
        if not src.startswith(opener, pos):
            return False
        close = src.find("]]", pos + len(opener), state.posMax)
        inner = src[pos + len(opener) : close] if close >= 0 else ""
        if close < 0 or not inner.strip() or "\n" in inner or "[" in inner or "]" in inner:
            return False
        end = close + 2
        if not silent:
            _record(state, "embed" if embed else "link", pos, end, inner)
            token = state.push("text", "", 0)
            token.content = src[pos:end]
        state.pos = end
        return True

    return rule


def _tag_rule(state: Any, silent: bool) -> bool:
    pos = state.pos
    src = state.src
    if src[pos] != "#" or (pos > 0 and not src[pos - 1].isspace()):
        return False
    m = _TAG.match(src, pos + 1, state.posMax)
    if m is None or m.group().strip("/").isdigit() or not m.group().strip("/-"):
        return False
    if not silent:
        _record(state, "tag", pos, m.end(), m.group())
        token = state.push("text", "", 0)
        token.content = src[pos : m.end()]
    state.pos = m.end()
    return True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = use_front_matter(MarkdownIt("commonmark").enable("table")).disable(["text_join", "inline"])
    for name in ("link", "image"):  # link destinations too (``parsing/links.py``): one parse of a note
        rule = next(r for r in md.inline.ruler.__rules__ if r.name == name).fn
        md.inline.ruler.at(name, recording_rule(rule, name))
    md.inline.ruler.before("link", "wikilink", _wikilink_rule(False))
    md.inline.ruler.before("image", "wikiembed", _wikilink_rule(True))
    md.inline.ruler.before("link", "obsidian_tag", _tag_rule)
    md.inline.add_terminator_char("#")
    return md


def vault_syntax(document: ParsedDocument) -> tuple[list[WikiLink], list[str], list[Destination]]:
    """The document's wikilinks and embeds (in text order), its inline tags (as written, without
    ``#``, in order of first appearance), outside code, and its markdown link destinations (what
    ``parsing.links.link_destinations`` finds, from the same parse)."""
    text = document.text
    md = _parser()
    env: dict = {}
    tokens = md.parse(_LONE_CR.sub(" ", text.removeprefix(BOM)), env)
    links: dict[int, WikiLink] = {}
    tags: dict[str, None] = {}
    destinations: set[tuple[int, int]] = set()
    cursor: dict[int, int] = {}
    table_cursor: dict[int, int] = {}
    for tok in tokens:
        if tok.type != "inline" or not tok.map or ("[[" not in tok.content and "#" not in tok.content and "](" not in tok.content):
            continue
        tok.children = []
        md.inline.parse(tok.content, md, env, tok.children)
        bases = inline_line_bases(document, tok.map[0], tok.content, cursor)
        for a, b, src in env.get(LINKS_ENV_KEY, {}).get(id(tok.children), ()):
            k = src.count("\n", 0, a)
            if bases[k] is None or src.count("\n", a, b):
                continue
            start = bases[k] + a - (src.rfind("\n", 0, a) + 1)
            if text[start : start + b - a] == src[a:b]:
                destinations.add((start, start + b - a))
        for kind, a, b, value, src in env.get(_ENV_KEY, {}).get(id(tok.children), ()):
            if kind == "tag":
                tags.setdefault(value, None)
                continue
            k = src.count("\n", 0, a)
            start = bases[k] + a - (src.rfind("\n", 0, a) + 1) if bases[k] is not None else -1
            written = src[a:b]
            if start < 0 or text[start : start + len(written)] != written:
                # a table cell's ``[[x\|alias]]`` (the parser gave the cell without the escape, so
                # the cell is not found in its line): the construct as written, in order on the row
                written = written.replace("|", "\\|")
                start = text.find(written, table_cursor.get(tok.map[0], document.line_offset(tok.map[0])),
                                  document.line_offset(tok.map[1]))
                if start < 0:
                    continue  # not found in its source lines
                table_cursor[tok.map[0]] = start + len(written)
            links[start] = WikiLink(start, start + len(written), kind == "embed", *parse_inner(value))
    destinations.update(definition_spans(document, env.get("references", {})))
    return [links[k] for k in sorted(links)], list(tags), [Destination(a, b) for a, b in sorted(destinations) if b > a]
