"""The anchors MkDocs gave a page's headings, matched to the heading blocks of its markdown source
(pure; no MkDocs import).

``page_headings`` reads every ``<h1>``-``<h6>`` with an ``id`` from the HTML MkDocs rendered (its
toc extension's ids: ``{ #id }`` attribute lists, its slugify, ``_1`` suffixes for repeats), so
no anchor is computed here. ``match_anchors`` pairs them with the source's headings in order:
first by text (the texts compared as letters and digits only, so markup, a trailing attribute
list and MkDocs' permalink sign do not matter), then, between two matched pairs, by position
where both sides left the same number of headings of the same levels unmatched. A heading left
unmatched has no anchor (its chunks point to the page alone): wrong anchors are worse than none.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from pipeline.parsing.markdown import ParsedDocument, clean_heading

_MD_LINK_TARGET = re.compile(r"\]\([^)]*\)")  # ``[text](url)``: the url is not heading text
_HTML_TAG = re.compile(r"<[^>]*>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")  # split: text, backticks, code, text, ...
_NOT_WORD = re.compile(r"[\W_]+")
LOOKAHEAD = 12  # how far past the last match a heading's text is looked for


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str = ""  # the page's id (MkDocs side)
    line: int = -1  # 0-based line of the heading block (source side)


def normalized(text: str, *, markdown: bool = True) -> str:
    """Heading text compared across the two renderings: letters and digits, casefolded.
    ``markdown``: ``text`` is the source's (link targets and HTML tags are no text); else it is
    the page's text already."""
    if markdown:  # code spans are literal text; outside them, tags are markup and entities characters
        parts = _CODE_SPAN.split(text)
        text = "".join(part if i % 3 == 2 else "" if i % 3 == 1 else html.unescape(_HTML_TAG.sub("", _MD_LINK_TARGET.sub("]", part)))
                       for i, part in enumerate(parts))
    return _NOT_WORD.sub("", clean_heading(text)).casefold()


class _Headings(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[Heading] = []
        self._open: tuple[int, str] | None = None
        self._text: list[str] = []
        self._skip = 0  # depth inside a permalink anchor (``<a class="headerlink">``)

    def handle_starttag(self, tag, attrs):
        if self._open is None and len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            anchor = dict(attrs).get("id")
            if anchor:
                self._open, self._text = (int(tag[1]), anchor), []
        elif self._open is not None and (self._skip or (tag == "a" and "headerlink" in (dict(attrs).get("class") or ""))):
            self._skip += 1

    def handle_endtag(self, tag):
        if self._open is None:
            return
        if self._skip and tag == "a":
            self._skip -= 1
        elif tag == f"h{self._open[0]}":
            level, anchor = self._open
            self.found.append(Heading(level, "".join(self._text).strip(), anchor))
            self._open = None

    def handle_data(self, data):
        if self._open is not None and not self._skip:
            self._text.append(data)


def page_headings(page_html: str) -> list[Heading]:
    """Every heading of a rendered page that has an ``id``, in page order."""
    parser = _Headings()
    parser.feed(page_html)
    parser.close()
    return parser.found


def source_headings(document: ParsedDocument) -> list[Heading]:
    """The document's top-level heading blocks (the ones chunks lie under), in order."""
    return [Heading(b.level, b.heading, line=b.start_line) for b in document.blocks if b.kind == "heading"]


def match_anchors(source: list[Heading], page: list[Heading]) -> tuple[tuple[int, str], ...]:
    """``(line, anchor)`` for every source heading matched to a page heading (module docstring)."""
    pairs: dict[int, int] = {}
    keys = [normalized(h.text, markdown=False) for h in page]
    cursor = 0
    for i, heading in enumerate(source):
        key = normalized(heading.text)
        if not key:
            continue
        for j in range(cursor, min(len(page), cursor + LOOKAHEAD)):
            if keys[j] == key:
                pairs[i] = j
                cursor = j + 1
                break
    # between matched pairs (and the ends): equal runs of unmatched headings pair by position
    matched = sorted(pairs.items())
    bounds = [(-1, -1), *matched, (len(source), len(page))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        ours, theirs = list(range(i0 + 1, i1)), list(range(j0 + 1, j1))
        if ours and len(ours) == len(theirs) and all(source[i].level == page[j].level for i, j in zip(ours, theirs)):
            pairs.update(zip(ours, theirs))
    return tuple((source[i].line, page[j].anchor) for i, j in sorted(pairs.items()))
