"""Token counts of spans of one text, from one tokenization of its whitespace-separated runs.

Guarantees: ``SpanCounter.count(start, end)`` equals the tokenizer's count of ``text[start:end]``
(special tokens included) whenever both edges fall on whitespace or line boundaries, and gives
the same numbers whichever layout it was built from (flat piece offsets, runs, or lines);
``exact`` returns a count only when it is the tokenizer's. ``RunMemo`` is what a counter
remembers of the runs it has tokenized; span counters only read it. Pure: no I/O, no tokenizer.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.parsing.wordpiece import AsciiWordPiece


# Pieces never cross these characters: BERT-style tokenizers (normalizer, pre-tokenizer,
# WordPiece) treat them as whitespace and split there, so a text's word pieces are the word
# pieces of each of its runs of other characters, tokenized alone (see ``splits_at_whitespace``).
RUNS = re.compile(r"([ \t\n\r]+)")
SPACE = " \t\n\r"


class RunOffsets(dict):
    """run -> its non-empty pieces' ``(starts, ends)``, relative to the run. Runs the tokenizer
    read are stored when learnt; a printable-ASCII run's are worked out on first use
    (``AsciiWordPiece.pieces``): only runs a span edge falls inside, or a cut between word
    pieces, ever need them, so learning a run costs its count alone."""

    def __init__(self, ascii_wordpiece: "AsciiWordPiece | None"):
        super().__init__()
        self._ascii = ascii_wordpiece

    def __missing__(self, run: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        pieces = self._ascii.pieces(run) if self._ascii is not None else None
        if pieces is None:  # only learnt runs are asked for, and the others are stored
            raise KeyError(run)
        value = (tuple(a for a, _ in pieces), tuple(b for _, b in pieces))
        self[run] = value  # threads may both compute it: the same value
        return value


@dataclass
class RunMemo:
    """What a counter remembers of the runs it has tokenized. Only ``TokenCounter._learn`` adds
    to it (under the counter's lock); a full memo is replaced, never cleared, so a reader holding
    one always finds the runs it was returned for (thread-safe without locking every lookup)."""

    offsets: RunOffsets  # run -> non-empty pieces' (starts, ends)
    ids: dict[str, int] = field(default_factory=dict)  # run -> its word pieces (no special tokens)
    odd: set[str] = field(default_factory=set)  # runs whose pieces include empty or unsorted offsets
    unsorted: set[str] = field(default_factory=set)


class SpanCounter:
    """Token counts of spans of one text, from a single tokenization of the whole text.

    ``count(start, end)`` is the number of word pieces lying inside ``text[start:end]`` plus the
    special tokens. It equals ``TokenCounter.count(text[start:end])`` whenever ``start`` and
    ``end`` fall on whitespace or line boundaries (the only places our chunkers cut); the
    chunkers re-count each finished chunk exactly.

    Built either from the piece offsets of the whole text (``token_starts``/``token_ends``) or,
    faster, from its whitespace-separated runs and their piece counts (``from_runs``): piece
    offsets are then looked up only for the runs a span edge falls inside, and the flat
    ``token_starts``/``token_ends`` are built on first use. Both give the same counts.
    """

    def __init__(self, token_starts: tuple[int, ...] | list[int], token_ends: tuple[int, ...] | list[int], specials: int):
        self._starts = token_starts
        self._ends = token_ends
        self.specials = specials
        self._runs: list[str] | None = None
        self._line_cum: list[int] | None = None

    @classmethod
    def from_runs(
        cls, runs: list[str], run_starts: list[int], run_ends: list[int], cum: list[int], offsets: dict, specials: int
    ) -> "SpanCounter":
        """``runs[i]`` lies at ``run_starts[i]:run_ends[i]``; ``cum[i]`` pieces lie before it;
        ``offsets[run]`` is its pieces' ``(starts, ends)`` relative to the run, both sorted."""
        self = cls.__new__(cls)
        self._starts = self._ends = None
        self.specials = specials
        self._runs, self._run_starts, self._run_ends, self._cum, self._offsets = runs, run_starts, run_ends, cum, offsets
        self._text = None
        self._line_cum = None
        return self

    @classmethod
    def from_lines(
        cls, text: str, line_starts: list[int], line_ends: list[int], cum: list[int], memo: "RunMemo", specials: int
    ) -> "SpanCounter":
        """Counts from the text's lines (``text.split("\\n")``): ``cum[i]`` pieces lie before line
        ``i``, which spans ``line_starts[i]:line_ends[i]``. An edge at a line's start or end is
        read from ``cum``; a line's runs (and a run's piece offsets) are looked at only when an
        edge falls inside the line, once per line (a cut between sentences of a long line asks
        many times). Only for texts none of whose runs is odd (every piece has non-empty
        offsets, in order), so the counts are the flat lists'."""
        self = cls.__new__(cls)
        self._starts = self._ends = None
        self.specials = specials
        self._runs = None
        self._text = text
        self._line_starts, self._line_ends, self._line_cum = line_starts, line_ends, cum
        self._memo, self._details = memo, {}
        # Edges inside lines (cuts between sentences or words of long lines: plain text) cost
        # more by lines than by runs; past this many, the text's runs are laid out once.
        self._inside, self._inside_limit = 0, 64 + len(text) // 256
        return self

    def _to_runs(self) -> None:
        """Count from the text's runs from now on (``from_runs``'s layout): same counts."""
        parts = RUNS.split(self._text)  # run, whitespace, run, ..., run (the first and last may be "")
        bounds = list(accumulate(map(len, parts), initial=0))
        runs = parts[0::2]
        cum = list(accumulate(map(self._memo.ids.get, runs, itertools.repeat(0)), initial=0))  # "" is no piece
        self._runs, self._run_starts, self._run_ends, self._cum = runs, bounds[0::2], bounds[1::2], cum
        self._offsets = self._memo.offsets
        self._line_cum = None

    def _line_runs(self, i: int) -> tuple[list[int], list[int], list[int], list[str]]:
        """Line ``i``'s runs: starts and ends (relative to the line), pieces before each, runs."""
        self._inside += 1
        details = self._details.get(i)
        if details is None:
            parts = RUNS.split(self._text[self._line_starts[i] : self._line_ends[i]])  # C-level, as ``_to_runs``
            bounds = list(accumulate(map(len, parts), initial=0))
            runs = parts[0::2]  # the first and last may be "" (no piece)
            cum = list(accumulate(map(self._memo.ids.get, runs, itertools.repeat(0)), initial=0))
            details = self._details[i] = (bounds[0::2], bounds[1::2], cum, runs)
        return details

    def _before(self, x: int) -> int:
        """Pieces starting before offset ``x`` (``bisect_left`` on the flat starts)."""
        i = bisect.bisect_right(self._line_starts, x) - 1
        at = self._line_starts[i]
        if x == at:
            return self._line_cum[i]
        if x >= self._line_ends[i]:
            return self._line_cum[i + 1]
        run_starts, run_ends, cum, runs = self._line_runs(i)
        x -= at
        j = bisect.bisect_left(run_starts, x)
        if j and run_ends[j - 1] > x:
            return self._line_cum[i] + cum[j - 1] + bisect.bisect_left(self._memo.offsets[runs[j - 1]][0], x - run_starts[j - 1])
        return self._line_cum[i] + cum[j]

    def _by(self, x: int) -> int:
        """Pieces ending by offset ``x`` (``bisect_right`` on the flat ends)."""
        i = bisect.bisect_right(self._line_starts, x) - 1
        at = self._line_starts[i]
        if x >= self._line_ends[i]:
            return self._line_cum[i + 1]
        if x == at:
            return self._line_cum[i]
        run_starts, run_ends, cum, runs = self._line_runs(i)
        x -= at
        k = bisect.bisect_right(run_ends, x)
        if k < len(run_starts) and run_starts[k] < x:
            return self._line_cum[i] + cum[k] + bisect.bisect_right(self._memo.offsets[runs[k]][1], x - run_starts[k])
        return self._line_cum[i] + cum[k]

    def exact(self, start: int, end: int) -> int | None:
        """``TokenCounter.count(text[start:end])`` when neither edge falls inside a run (then the
        span's runs are whole runs of the text), else None. Only for counters built from runs
        whose pieces all have offsets (``cum`` then counts every piece)."""
        text = self._text
        if text is None or start > end:
            return None
        n = len(text)
        if 0 < start < n and text[start - 1] not in SPACE and text[start] not in SPACE:
            return None
        if 0 < end < n and text[end - 1] not in SPACE and text[end] not in SPACE:
            return None
        return self.count(start, end)

    @property
    def token_starts(self):
        if self._starts is None:
            self._flatten()
        return self._starts

    @property
    def token_ends(self):
        if self._ends is None:
            self._flatten()
        return self._ends

    def _flatten(self) -> None:
        if self._runs is None:  # built from lines: the runs of the whole text, once
            self._to_runs()
        starts: list[int] = []
        ends: list[int] = []
        offsets = self._offsets
        for run, at in zip(self._runs, self._run_starts):
            rel_starts, rel_ends = offsets[run]
            starts.extend([at + s for s in rel_starts])
            ends.extend([at + e for e in rel_ends])
        self._starts, self._ends = starts, ends

    def count(self, start: int, end: int) -> int:
        line_cum = self._line_cum
        if line_cum is not None:
            if self._inside <= self._inside_limit:
                # ``_before``/``_by`` inlined for edges at a line's start or past its end (all but
                # a few in markdown): thousands of counts per document, a call each saved.
                line_starts, line_ends = self._line_starts, self._line_ends
                i = bisect.bisect_right(line_starts, start) - 1
                if start == line_starts[i]:
                    first = line_cum[i]
                elif start >= line_ends[i]:
                    first = line_cum[i + 1]
                else:
                    first = self._before(start)
                i = bisect.bisect_right(line_starts, end) - 1
                if end >= line_ends[i]:
                    last = line_cum[i + 1]
                elif end == line_starts[i]:
                    last = line_cum[i]
                else:
                    last = self._by(end)
                return max(0, last - first) + self.specials
            self._to_runs()
        if self._runs is None:
            first = bisect.bisect_left(self._starts, start)
            last = bisect.bisect_right(self._ends, end)
            return max(0, last - first) + self.specials
        # Same numbers as the bisections above on the flat lists: pieces starting before
        # ``start`` and pieces ending by ``end``, whole runs from ``cum``, the run an edge
        # falls inside from its own offsets.
        run_starts, run_ends, cum = self._run_starts, self._run_ends, self._cum
        j = bisect.bisect_left(run_starts, start)
        if j and run_ends[j - 1] > start:
            first = cum[j - 1] + bisect.bisect_left(self._offsets[self._runs[j - 1]][0], start - run_starts[j - 1])
        else:
            first = cum[j]
        k = bisect.bisect_right(run_ends, end)
        if k < len(run_starts) and run_starts[k] < end:
            last = cum[k] + bisect.bisect_right(self._offsets[self._runs[k]][1], end - run_starts[k])
        else:
            last = cum[k]
        return max(0, last - first) + self.specials
