"""Chunk context (seed 003 Decision 5, seed 004): position, neighbours' summaries, related chunks.

Pure functions. ``plain_text`` turns a chunk's markdown source span into prose without heading
lines, code blocks or markup; ``summarize`` cuts it to at most 100 characters at a sentence
boundary (seed 004 ``_summarize``); ``related`` picks each chunk's most similar other chunks.
"""

from __future__ import annotations

import re

import numpy as np

from pipeline.topicspec import relatedivf

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


RELATED_BLOCK_CELLS = 1 << 22  # similarities held at once (4 Mi float32 = 16 MiB), whatever the topic size
_FLOAT32_EPS = float(np.finfo(np.float32).eps)
# Entries a row's screen takes the maximum of at once: the candidates then lie in the groups of
# the k best maxima (a few dozen entries), found without partitioning the whole row.
_SCREEN_GROUP = 16


def related(vectors: np.ndarray, k: int, keys: list[int] | None = None) -> list[list[tuple[int, float]]]:
    """For each row of unit vectors, up to ``k`` other rows by cosine similarity, most similar
    first, as ``(row, similarity rounded to 4 decimals)``; ties go to the lower row number.
    A row is never related to itself. The similarities are float64 dot products of the rows.

    Below ``relatedivf.APPROXIMATE_ROWS`` rows, the ``k`` best of all rows. Memory is O(n *
    dimension + RELATED_BLOCK_CELLS), never n x n: similarities are computed for a block of rows
    at a time and only each row's candidates are kept. Time is O(n^2 * dimension): the blocks
    are screened in float32 (half the work of float64 here), and only the rows that can still be
    among the ``k`` best are scored again in float64, so the answer is the float64 one (the
    float32 error is bounded and the screen's margin covers it). From that size on, the ``k``
    best of the rows an inverted file offers (``relatedivf``), scored the same way. ``keys``:
    ``row_keys(vectors)``, when known."""
    exact = np.asarray(vectors, dtype=np.float64)
    return _related_all(exact, k, _inverted_file(exact, k, keys))


def _related_all(exact: np.ndarray, k: int, lists: relatedivf.Lists | None) -> list[list[tuple[int, float]]]:
    """``related(exact, k)``, its inverted file (or None: exact) given."""
    rows = np.arange(len(exact))
    return _related_of(exact, rows, k) if lists is None else _related_of_ivf(exact, rows, k, lists)


def _inverted_file(exact: np.ndarray, k: int, keys: list[int] | None) -> relatedivf.Lists | None:
    """The inverted file ``related`` looks in, or None where it is exact (``relatedivf.fitted_on``)."""
    if len(exact) < relatedivf.APPROXIMATE_ROWS or k <= 0:
        return None
    keys = row_keys(exact) if keys is None else keys
    fitted = relatedivf.fitted_on(keys)
    return relatedivf.Lists(exact, keys, fitted) if fitted is not None else None


def _related_of_ivf(exact: np.ndarray, rows: np.ndarray, k: int, lists: relatedivf.Lists) -> list[list[tuple[int, float]]]:
    return relatedivf.related_of(exact, rows, k, lists, _screen_error(exact), RELATED_BLOCK_CELLS)


def _related_of(exact: np.ndarray, rows: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """``related(exact, k)[r]`` for each ``r`` of ``rows``, computed for those rows alone."""
    n = len(exact)
    if n == 0 or k <= 0:
        return [[] for _ in range(len(rows))]
    fast = exact.astype(np.float32)
    error = _screen_error(exact)
    block = max(1, RELATED_BLOCK_CELLS // n)
    out: list[list[tuple[int, float]]] = []
    for first in range(0, len(rows), block):
        own = rows[first : first + block]
        sims = fast[own] @ fast.T
        out.extend(_top_k(sims, exact, own, k, error))
    return out


def _screen_error(exact: np.ndarray) -> float:
    # |float32 dot - float64 dot| <= (dimension + 2) * eps * |x| * |y| (the sums, and the rounding
    # of float64 input to float32), doubled for safety; the screen keeps twice that below the k-th
    return 2.0 * (exact.shape[1] + 2) * _FLOAT32_EPS * float(np.max(np.einsum("ij,ij->i", exact, exact)))


def row_keys(vectors: np.ndarray) -> list[int]:
    """A 128-bit digest of each row as ``related`` reads it (float64): equal keys, equal rows."""
    import xxhash

    exact = np.ascontiguousarray(vectors, dtype=np.float64)
    return [xxhash.xxh3_128_intdigest(row) for row in exact]


def related_update(
    vectors: np.ndarray, k: int, keys: list[int], previous: tuple[list[int], list[list[tuple[int, float]]]]
) -> list[list[tuple[int, float]]]:
    """``related(vectors, k)``, from the answer for earlier rows: ``previous`` is ``(row_keys(old),
    related(old, k))`` with the same ``k``, ``keys`` is ``row_keys(vectors)``.

    A row that was there before (its key, the i-th time it occurs matched to the i-th time it
    occurred) keeps its list, merged with the rows that are new: the k best of a superset that
    all lie among the rows still there are the k best of those, and rows kept keep their order,
    so ties break as before. A row whose list named a row now gone, and every new row, is
    computed as ``related`` computes it. One edit in a topic of n rows costs O(n * new rows)
    instead of O(n^2). Falls back to ``related`` when kept rows changed their order or most rows
    are new. A big topic's (``relatedivf``) lists are updated the same way, the new rows merged
    into the lists of the rows that probe theirs, when the centroids are those of ``previous``
    (else computed again)."""
    exact = np.asarray(vectors, dtype=np.float64)
    n = len(exact)
    old_keys, old_lists = previous
    if n == 0 or k <= 0 or len(old_lists) != len(old_keys):
        return related(exact, k, keys)
    lists = _inverted_file(exact, k, keys)
    if (lists.fitted if lists is not None else None) != relatedivf.fitted_on(old_keys):
        return _related_all(exact, k, lists)
    places: dict[int, list[int]] = {}
    for row, key in enumerate(keys):
        places.setdefault(key, []).append(row)
    taken: dict[int, int] = {}
    new_of_old = []
    for key in old_keys:
        at = places.get(key, ())
        i = taken.get(key, 0)
        taken[key] = i + 1
        new_of_old.append(at[i] if i < len(at) else -1)
    kept = [r for r in new_of_old if r >= 0]
    if any(b <= a for a, b in zip(kept, kept[1:])) or 2 * len(kept) < n:
        return _related_all(exact, k, lists)
    out: list[list[tuple[int, float]] | None] = [None] * n
    for old_row, row in enumerate(new_of_old):
        if row >= 0 and all(new_of_old[j] >= 0 for j, _ in old_lists[old_row]):
            out[row] = [(new_of_old[j], sim) for j, sim in old_lists[old_row]]
    new_rows = np.setdiff1d(np.arange(n), np.asarray(kept, dtype=np.intp))
    merged = [r for r in range(n) if out[r] is not None]
    if len(new_rows) and merged and lists is None:
        _merge_new_rows(exact, out, np.asarray(merged, dtype=np.intp), new_rows, k)
    elif len(new_rows) and merged:  # a kept row's candidates gain the new rows of the lists it probes
        own = lists.probes[new_rows, 0]
        probing = lists.probing(np.asarray(merged, dtype=np.intp))
        for c in np.unique(own).tolist():
            if len(probing[c]):
                _merge_new_rows(exact, out, probing[c], new_rows[own == c], k)
    redo = np.asarray([r for r in range(n) if out[r] is None], dtype=np.intp)
    computed = _related_of(exact, redo, k) if lists is None else _related_of_ivf(exact, redo, k, lists)
    for row, listed in zip(redo.tolist(), computed):
        out[row] = listed
    return out  # type: ignore[return-value]


def _merge_new_rows(exact: np.ndarray, out: list, rows: np.ndarray, new_rows: np.ndarray, k: int) -> None:
    """Each ``out[r]`` (r in ``rows``, the k best among the rows kept) merged with ``new_rows``:
    screened in float32 against each list's k-th, the candidates scored in float64 as ``_top_k``
    scores them. A block of ``rows`` at a time: memory O(RELATED_BLOCK_CELLS + new rows)."""
    error = _screen_error(exact)
    fresh = exact[new_rows].astype(np.float32)
    block = max(1, RELATED_BLOCK_CELLS // max(exact.shape[1], len(new_rows)))
    for first in range(0, len(rows), block):
        own = rows[first : first + block]
        sims = exact[own].astype(np.float32) @ fresh.T
        kth = np.array([lst[k - 1][1] if len(lst) >= k else -np.inf for lst in (out[r] for r in own.tolist())])
        at_row, at_new = np.nonzero(sims >= (kth - (2.0 * error + 1e-4))[:, None])
        if not len(at_row):
            continue
        pairs, columns = own[at_row], new_rows[at_new]
        step = max(1, RELATED_BLOCK_CELLS // exact.shape[1])  # candidates scored in slices, as in ``_top_k``
        values = [v for lo in range(0, len(pairs), step)
                  for v in np.einsum("ij,ij->i", exact[pairs[lo : lo + step]], exact[columns[lo : lo + step]]).tolist()]
        for r, c, value in zip(pairs.tolist(), columns.tolist(), values):
            out[r].append((c, round(value, 4)))
        for r in set(own[at_row].tolist()):
            out[r].sort(key=lambda pair: (-pair[1], pair[0]))
            del out[r][k:]


def _top_k(sims: np.ndarray, exact: np.ndarray, own: np.ndarray, k: int, error: float) -> list[list[tuple[int, float]]]:
    """The ``k`` best other rows of each row of a block of float32 similarity rows (row ``r`` is
    vector ``own[r]``, and ``sims[r, own[r]]`` its similarity to itself), by their float64
    similarity to ``exact``'s rows. Whole-block numpy calls: one call per row cost more than the
    row's candidates."""
    b, n = sims.shape
    rows = np.arange(b)
    sims[rows, own] = -np.inf  # never itself
    groups = range(0, n, _SCREEN_GROUP)
    if n - 1 > k:
        if len(groups) > k:
            # A lower bound of each row's k-th largest float32 similarity: the k-th largest of its
            # groups' maxima (they are k distinct entries). One pass, where a partition of the
            # whole row cost twice the float32 matrix product.
            maxima = np.maximum.reduceat(sims, groups, axis=1)
            kth = np.partition(maxima, len(groups) - k, axis=1)[:, len(groups) - k]
        else:
            kth = np.partition(sims, n - k, axis=1)[:, n - k]
        # A row among the k best in float64 is at least the float64 k-th, so at least the float32
        # k-th minus twice ``error``; one more than a unit of the 4th decimal below cannot round
        # up to it. Below both (with a lower bound of the k-th): not a candidate.
        candidates = sims >= (kth - (2.0 * error + 1e-4))[:, None]
    else:
        candidates = np.isfinite(sims)
    at_row, columns = np.nonzero(candidates)  # row by row, columns ascending
    # a few per row, unless the vectors are far from unit length and the margin wide: in slices
    step = max(1, RELATED_BLOCK_CELLS // exact.shape[1])
    values = [v for lo in range(0, len(columns), step)
              for v in np.einsum("ij,ij->i", exact[own[at_row[lo : lo + step]]], exact[columns[lo : lo + step]]).tolist()]
    columns = columns.tolist()
    bounds = np.concatenate(([0], np.cumsum(np.bincount(at_row, minlength=b)))).tolist()
    out = []
    for r in range(b):
        lo, hi = bounds[r], bounds[r + 1]
        scored = [(round(values[x], 4), columns[x]) for x in range(lo, hi)]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        out.append([(j, s) for s, j in scored[:k]])
    return out
