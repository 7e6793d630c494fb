"""Chunk context (seed 003 Decision 5, seed 004): position, neighbours' summaries, related chunks.

Pure functions. ``plain_text`` turns a chunk's markdown source span into prose without heading
lines, code blocks or markup; ``summarize`` cuts it to at most 100 characters at a sentence
boundary (seed 004 ``_summarize``); ``related`` picks each chunk's most similar other chunks.
"""

from __future__ import annotations

import re

import numpy as np

MAX_SUMMARY = 100
ELLIPSIS = "..."

_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$")
_SETEXT_RULE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<(https?://[^>]+)>")
_HTML = re.compile(r"<!--.*?-->|</?[A-Za-z][^>]*>", re.S)
_LINE_MARKERS = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:[-*+][ \t]+|\d{1,9}[.)][ \t]+)?")
_EMPHASIS = re.compile(r"(?<![\w*])(\*{1,3})(\S(?:.*?\S)??)\1(?![\w*])|(?<![\w_])(_{1,3})(\S(?:.*?\S)??)\3(?![\w_])")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# A sentence ends at . ! ? (closing quotes/brackets may follow) before whitespace, except
# after a short list of abbreviations.
_SENTENCE_END = re.compile(r"[.!?][\"')\]\u201d\u2019]*(?=\s|$)")
_CLAUSE_BREAK = re.compile(r"[,;:](?= )| [\u2013\u2014-] ")  # where a clause may end: "a, b" "a; b" "a — b"
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|no|fig|dr|mr|mrs|ms)|\b[A-Za-z])\.$", re.IGNORECASE)


def _unemphasize(text: str) -> str:
    """``text`` without emphasis markers; code spans keep their content verbatim (``_links``)."""
    out, last = [], 0
    for code in _CODE_SPAN.finditer(text):
        out.append(_strip_emphasis(text[last : code.start()]))
        out.append(code.group(2).strip())
        last = code.end()
    out.append(_strip_emphasis(text[last:]))
    return "".join(out)


def _strip_emphasis(text: str) -> str:
    previous = None
    while previous != text:  # nested emphasis: ***a*** or **_a_**
        previous, text = text, _EMPHASIS.sub(lambda m: m.group(2) or m.group(4), text)
    return text


def plain_text(markdown: str) -> str:
    """The prose of a markdown span on one line: heading lines, fenced code, HTML, link targets,
    list/quote markers and emphasis removed; inline code keeps its text. Tables are left out:
    their cells flattened read as noise, so a table-only span has no prose (callers use its title)."""
    prose: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines():
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
            continue
        if marker:
            fence = marker.group(1)
            continue
        if _HEADING_LINE.match(line) or _SETEXT_RULE.match(line) or _TABLE_RULE.match(line):
            continue
        if line.lstrip().startswith("|"):
            continue
        prose.append(_LINE_MARKERS.sub("", line).strip())
    text = " ".join(" ".join(prose).split())
    text = _HTML.sub(" ", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _unemphasize(text).replace("`", "")
    return " ".join(text.split())


def summarize(text: str, max_length: int = MAX_SUMMARY) -> str:
    """``text`` (whitespace collapsed) if it fits in ``max_length`` characters; otherwise the
    longest prefix ending at a sentence end that fits; failing that (a first sentence longer
    than that), the longest prefix ending at a clause break (``,`` ``;`` ``:`` or a dash) that
    keeps at least half the room, else at a word boundary, followed by ``"..."``.
    Guarantee: ``len(result) <= max_length``.

    ``summarize("This is a long paragraph about CRM integration. It has multiple sentences.")``
    is ``"This is a long paragraph about CRM integration."`` with ``max_length=60`` (seed 004).
    """
    text = " ".join(text.split())
    if len(text) <= max_length:
        return text
    best = -1
    for match in _SENTENCE_END.finditer(text, 0, max_length + 1):
        end = match.end()
        if end <= max_length and not _ABBREVIATION.search(text[: match.start() + 1]):
            best = end
    if best > 0:
        return text[:best]
    room = max_length - len(ELLIPSIS)
    clauses = [m.start() for m in _CLAUSE_BREAK.finditer(text, 0, room + 1) if m.start() >= room // 2]
    cut = clauses[-1] if clauses else text.rfind(" ", 0, room + 1)
    head = text[:cut] if cut > 0 else text[:room]
    return head.rstrip(" ,;:-\u2013\u2014") + ELLIPSIS


def position(index: int, count: int) -> str:
    """Seed 004's ``"2 of 5"`` for the 0-based ``index`` among ``count`` chunks."""
    return f"{index + 1} of {count}"


RELATED_BLOCK_CELLS = 1 << 22  # similarities held at once (4 Mi float64 = 32 MiB), whatever the topic size


def related(vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """For each row of unit vectors, up to ``k`` other rows by cosine similarity, most similar
    first, as ``(row, similarity rounded to 4 decimals)``; ties go to the lower row number.
    A row is never related to itself.

    Memory is O(n * dimension + RELATED_BLOCK_CELLS), never n x n: similarities are computed for
    a block of rows at a time and only each row's candidates are kept."""
    matrix = np.asarray(vectors, dtype=np.float64)
    n = len(matrix)
    if n == 0 or k <= 0:
        return [[] for _ in range(n)]
    block = max(1, RELATED_BLOCK_CELLS // n)
    out: list[list[tuple[int, float]]] = []
    for first in range(0, n, block):
        sims = matrix[first : first + block] @ matrix.T
        out.extend(_top_k(sims, first, k))
    return out


def _top_k(sims: np.ndarray, first: int, k: int) -> list[list[tuple[int, float]]]:
    """The ``k`` best other entries of each row of a block of similarity rows (row ``r`` is
    vector ``first + r``, and ``sims[r, first + r]`` its similarity to itself). Whole-block
    numpy calls: one call per row cost more than the row's candidates."""
    b, n = sims.shape
    rows = np.arange(b)
    own = first + rows
    candidates = np.ones(sims.shape, dtype=bool)
    if n - 1 > k:
        raw = sims[rows, own].copy()
        sims[rows, own] = -np.inf  # never itself
        kth = np.partition(sims, n - k, axis=1)[:, n - k]
        sims[rows, own] = raw
        # Rounding is monotone, so the k best by rounded value all round to at least what the
        # k-th largest raw value rounds to; anything below that value minus half a unit of
        # the 4th decimal (with margin) cannot be among them.
        floors = np.array([round(v, 4) - 1e-4 for v in kth.tolist()])
        candidates = sims >= floors[:, None]
    candidates[rows, own] = False
    at_row, columns = np.nonzero(candidates)  # row by row, columns ascending
    values = sims[at_row, columns].tolist()
    columns = columns.tolist()
    bounds = np.concatenate(([0], np.cumsum(np.bincount(at_row, minlength=b)))).tolist()
    out = []
    for r in range(b):
        lo, hi = bounds[r], bounds[r + 1]
        scored = [(round(values[x], 4), columns[x]) for x in range(lo, hi)]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        out.append([(j, s) for s, j in scored[:k]])
    return out
