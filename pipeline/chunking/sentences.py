"""Sentence boundaries in markdown prose (seed 003).

A sentence ends at ``.``, ``!`` or ``?`` (closing quotes, brackets and emphasis markers may
follow) followed by whitespace, except:

- after an abbreviation (``Dr.``, ``e.g.``, ``i.e.``, ``U.S.``, ``etc.``, single initials);
- when the next word starts with a lowercase letter (``etc. and``, ``approx. five``);
- after an ordered-list marker (``1. Install``);
- inside an inline code span, a URL, or (filtered by the caller) a code block.

Decimals (``3.14``) and dotted names (``example.com``, ``v1.2``) never match: no whitespace
follows their dot.
"""

from __future__ import annotations

import bisect
import re

# The punctuation, what may close around it, then the whitespace before the next sentence.
_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]*_]*\s+")
_WORD_BEFORE_DOT = re.compile(r"(?<![\w/@.:-])([A-Za-z][A-Za-z.]*)\.$")
_LIST_MARKER = re.compile(r"[ \t>*+-]*\d{1,9}\.")
_URL = re.compile(r"(?:https?|ftp)://[^\s<>()\[\]`]*[^\s<>()\[\]`.,;:!?'\"]|www\.[^\s<>()\[\]`]*[^\s<>()\[\]`.,;:!?'\"]")
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\n\s*\n).)+?(?<!`)\1(?!`)", re.DOTALL)

ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft vs etc al cf eg ie viz approx appt apt dept est inc ltd co corp
    fig figs eq eqs no nos vol vols pp ch sec ed eds rev gen gov sen rep jan feb apr jun jul aug sep
    sept oct nov dec mon tue wed thu fri sat sun
    """.split()
)


def sentence_starts(text: str, start: int = 0, end: int | None = None, *, lowercase: bool = False) -> list[int]:
    """Offsets in ``(start, end)`` where a new sentence begins, in order.

    Each offset is the first character after the whitespace that follows a sentence end, so
    ``text[a:b]`` for consecutive offsets is one sentence plus its trailing whitespace.

    ``lowercase``: a full stop followed by a lowercase word also ends a sentence (unless an
    abbreviation, a list marker or an ellipsis precedes it), for lowercased text where no
    capital ever follows a full stop. Off by default: in ordinary prose the rule keeps
    ``etc. and`` and ``approx. five`` together even for abbreviations not in the list.
    """
    end = len(text) if end is None else end
    masked = _masked(text, start, end)
    mask_starts = [a for a, _ in masked]
    out: list[int] = []
    for match in _END.finditer(text, start, end):
        point = match.end()
        if point >= end or _inside(masked, mask_starts, match.start()):
            continue
        if match.group().startswith(".") and _not_a_full_stop(text, start, match.start(), point, lowercase=lowercase):
            continue
        out.append(point)
    return out


def sentence_ends(text: str) -> list[int]:
    """Offsets just after each sentence's final punctuation (whitespace excluded), in order."""
    ends = []
    for point in sentence_starts(text):
        end = point
        while end > 0 and text[end - 1].isspace():
            end -= 1
        ends.append(end)
    return ends


def _not_a_full_stop(text: str, start: int, dot: int, next_start: int, *, lowercase: bool = False) -> bool:
    """The dot at ``dot`` ends an abbreviation or list marker, or a lowercase word follows it
    (with ``lowercase``: only after an ellipsis)."""
    if text[next_start].islower():
        if not lowercase or text.startswith("..", dot) or (dot > start and text[dot - 1] == "."):
            return True
    line_start = max(text.rfind("\n", start, dot) + 1, start)
    if _LIST_MARKER.fullmatch(text, line_start, dot + 1):
        return True
    word = _WORD_BEFORE_DOT.search(text, max(start, dot - 24), dot + 1)
    if not word:
        return False
    token = word.group(1)
    if "." in token:  # e.g. / i.e. / U.S. / Ph.D., but not example.com
        return all(len(part) <= 2 for part in token.split("."))
    return len(token) == 1 or token.lower() in ABBREVIATIONS


def _masked(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Inline code spans and URLs in ``text[start:end]``, merged into disjoint sorted intervals."""
    spans = sorted([m.span() for m in _INLINE_CODE.finditer(text, start, end)] + [m.span() for m in _URL.finditer(text, start, end)])
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _inside(spans: list[tuple[int, int]], starts: list[int], offset: int) -> bool:
    i = bisect.bisect_right(starts, offset) - 1
    return i >= 0 and offset < spans[i][1]
