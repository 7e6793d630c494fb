"""Locating a chunker's returned strings in the source text: exact, half-open character spans
(``spans_from_strings``), verbatim or, for splitters that rewrite whitespace, on the text's
skeleton of printable non-whitespace characters. Raises ``SpanError`` rather than guess.
Pure; ``tests/test_bench_metrics.py`` checks it.
"""

from __future__ import annotations

import bisect
from typing import Iterable

Span = tuple[int, int]


class SpanError(ValueError):
    pass


def spans_from_strings(
    text: str, pieces: Iterable[str], *, overlapping: bool = False, lenient: bool = False
) -> list[Span]:
    """Locate ``pieces`` (returned in document order) in ``text`` with a moving cursor.

    The search starts at the end of the previous piece (just after its start when
    ``overlapping``). A piece is matched verbatim (``str.find``) and, when ``lenient``, also on
    its *skeleton* — the sequence of its printable non-whitespace characters, mapped back to the
    source from its first to its last such character — for splitters that rewrite whitespace
    (MarkdownHeaderTextSplitter strips lines and drops blank ones). The earlier of the two
    matches wins (verbatim on a tie), so a verbatim copy further on cannot pull the cursor past
    the piece's true, whitespace-rewritten place. Raises SpanError when nothing matches.
    """
    spans: list[Span] = []
    cursor = 0
    prev_start = -1
    skeleton: tuple[str, list[int]] | None = None
    for piece in pieces:
        if not piece:
            continue
        origin = prev_start + 1 if overlapping else cursor
        pos = text.find(piece, origin)
        span = (pos, pos + len(piece)) if pos >= 0 else None
        if lenient:
            if skeleton is None:
                skeleton = _skeleton(text)
            loose = _skeleton_find(text, skeleton, piece, origin)
            if loose is not None and (span is None or loose[0] < span[0]):
                span = loose
        if span is None:
            raise SpanError(f"cannot locate chunk at or after offset {origin}: {piece[:80]!r}")
        spans.append(span)
        prev_start = span[0]
        cursor = span[1]
    return spans


def _keep(ch: str) -> bool:
    return not ch.isspace() and ch.isprintable()


def _skeleton(text: str) -> tuple[str, list[int]]:
    idx = [i for i, ch in enumerate(text) if _keep(ch)]
    return "".join(text[i] for i in idx), idx


def _skeleton_find(text: str, skeleton: tuple[str, list[int]], piece: str, origin: int) -> Span | None:
    skel, idx = skeleton
    target = "".join(ch for ch in piece if _keep(ch))
    if not target:
        return None
    k = skel.find(target, bisect.bisect_left(idx, origin))
    if k < 0:
        return None
    return idx[k], idx[k + len(target) - 1] + 1
