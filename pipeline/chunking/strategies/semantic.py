"""``semantic`` (seed 001, cache key ``semantic-250-750``): cut where the topic shifts.

1. Units: the document's blocks; a block over the unit budget (``min_tokens``, at most half of
   ``max_tokens``) is split by the ``RegionSplitter`` (list items, lines, sentences, ...). A
   heading joins the unit after it. Code blocks are whole units: never cut.
2. Each unit is embedded; the distance at the gap before unit ``k`` is
   ``1 - cos(mean of the window units before, mean of the window units after)``.
3. Recursive splitting of the whole document: a segment that fits ``max_tokens`` (heading
   context included) is kept unless a gap inside it is at or above the ``percentile`` of all
   gaps with both sides at least ``min_tokens``; a segment over ``max_tokens`` is split at its
   widest gap, preferring gaps that leave ``min_tokens`` on both sides. The widest gap wins.
   A unit over the limit (a code block: always a chunk of its own) counts for neither side: a
   side has ``min_tokens`` up to the nearest such unit, or ends at one.
4. Each segment becomes a chunk with the markdown strategy's heading context (title and the
   headings above it); a lone unit still over the limit is split like a markdown section.
5. The minimum holds for the chunks, not only for the cuts: a chunk under ``min_tokens``
   (heading context and a repeated table header included) joins a neighbour while the joined
   chunk fits ``max_tokens``, the smallest first, into its smaller neighbour. A segment cut off
   beside a code block over the limit (a lone ``<div class="termy">`` or ``///`` before it)
   joins the text before it. A chunk stays short only when neither neighbour has room: on
   FastAPI's docs, only all the text between two code blocks over the limit (or one and the
   document's start), or a document shorter than the minimum.

The seed's bounds (250-750 tokens) are for a large-context model. ``max_tokens`` (default 750)
is clipped to what the embedder reads (256 for MiniLM), with a warning only when it was asked
for (``effective_max_tokens``); ``min_tokens`` defaults
to a third of the effective maximum (the seed's ratio: 85 of 256), and an explicit one is
scaled by the same factor when the maximum is clipped. The effective values name the cache key
(``semantic-85-256``). Needs an embedder: ``embedder`` is an ``Embedder`` or a spec for
``make_embedder``; the default (MiniLM) is built only when ``pieces`` runs on a document with
more than one unit.
"""

from __future__ import annotations

import heapq
import re
import warnings
from functools import lru_cache
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from pipeline.chunking.base import Piece
from pipeline.chunking.outline import Outline
from pipeline.chunking.registry import register
from pipeline.chunking.sections import Section, context_prefix
from pipeline.chunking.split import BLOCKS, RegionSplitter
from pipeline.chunking.strategies.markdown import MIN_MAX_TOKENS, effective_max_tokens, split_sections
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import TokenCounter

SEED_MIN_TOKENS = 250
SEED_MAX_TOKENS = 750
DEFAULT_PERCENTILE = 95.0
DEFAULT_WINDOW = 1
DEFAULT_EMBEDDER = "minilm"


@register("semantic")
@dataclass
class SemanticStrategy:
    counter: TokenCounter
    min_tokens: int | None = None  # default: the seed's ratio, a third of max_tokens (250 of 750)
    max_tokens: int | None = None  # default: the seed's 750, clipped to the model without a warning
    percentile: float = DEFAULT_PERCENTILE
    window: int = DEFAULT_WINDOW
    embedder: Any = None  # an Embedder, a make_embedder spec, or None for MiniLM (built lazily)
    name: ClassVar[str] = "semantic"
    _label: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if self.min_tokens is not None and (isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int) or self.min_tokens < 1):
            raise PipelineError(f"semantic: min_tokens must be a positive integer, not {self.min_tokens!r}")
        if isinstance(self.percentile, bool) or not isinstance(self.percentile, (int, float)) or not 0 <= self.percentile <= 100:
            raise PipelineError(f"semantic: percentile must be a number from 0 to 100, not {self.percentile!r}")
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise PipelineError(f"semantic: window must be a positive integer, not {self.window!r}")
        requested = SEED_MAX_TOKENS if self.max_tokens is None else self.max_tokens
        self.max_tokens = effective_max_tokens(requested, self.counter, self.name, asked=self.max_tokens is not None)
        if self.min_tokens is None:
            self.min_tokens = max(1, round(self.max_tokens * SEED_MIN_TOKENS / SEED_MAX_TOKENS))
        elif self.max_tokens < requested:  # clipped: keep the requested proportion
            self.min_tokens = max(1, round(self.min_tokens * self.max_tokens / requested))
            warnings.warn(f"semantic: min_tokens scaled with max_tokens to {self.min_tokens}", stacklevel=3)
        if self.min_tokens > self.max_tokens:
            raise PipelineError(f"semantic: min_tokens {self.min_tokens} is above max_tokens {self.max_tokens}")
        self._label = _embedder_label(self.embedder)

    def cache_key(self) -> str:
        key = f"{self.name}-{self.min_tokens}-{self.max_tokens}"
        if self.percentile != DEFAULT_PERCENTILE:
            key += f"-p{self.percentile:g}"
        if self.window != DEFAULT_WINDOW:
            key += f"-w{self.window}"
        return key + (f"-{self._label}" if self._label else "")

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        splitter = RegionSplitter(document, self.counter.spans(document.text), self.counter)
        units = self._units(document, splitter)
        if not units:
            return []
        outline = Outline(document)
        segments = self._segments(document, splitter, outline, units)
        sections = []
        for i, j in segments:
            start, end = units[i][0], units[j - 1][1]
            chain = outline.at(start)
            sections.append(Section(start, end, chain[-1] if chain else None, tuple(chain[:-1])))
        pieces = split_sections(document, sections, counter=self.counter, max_tokens=self.max_tokens)
        return _number_parts(self._merge_short(splitter, pieces))

    # -- units ----------------------------------------------------------------------------

    def _units(self, document: ParsedDocument, splitter: RegionSplitter) -> list[tuple[int, int]]:
        """Blocks (or parts of long blocks) covering the body, each heading joined to the next."""
        budget = max(MIN_MAX_TOKENS, min(self.min_tokens, self.max_tokens // 2))
        raw: list[tuple[int, int]] = []
        for a, b in splitter.cut(document.body_start, len(document.text), BLOCKS):
            if splitter.tokens(a, b) <= budget:
                raw.append((a, b))
            else:
                raw.extend((s.start, s.end) for s in splitter.split(a, b, budget))
        headings = {blk.start: blk.end for blk in document.blocks if blk.kind == "heading"}
        units: list[tuple[int, int]] = []
        pending: int | None = None
        for a, b in raw:
            if headings.get(a) == b:
                pending = a if pending is None else pending
                continue
            units.append((pending if pending is not None else a, b))
            pending = None
        if pending is not None:  # headings at the very end join the unit before them
            if units:
                units[-1] = (units[-1][0], raw[-1][1])
            else:
                units.append((pending, raw[-1][1]))
        return units

    # -- boundaries -----------------------------------------------------------------------

    def _segments(
        self, document: ParsedDocument, splitter: RegionSplitter, outline: Outline, units: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Unit ranges ``[i, j)`` of the chunks, in order."""
        n = len(units)
        if n == 1:
            return [(0, 1)]
        text = document.text
        gaps = _gaps(self._embedder().embed([text[a:b] for a, b in units]), self.window)
        threshold = float(np.percentile(gaps, self.percentile))
        spans = splitter.spans
        first = np.searchsorted(np.asarray(spans.token_starts), [a for a, _ in units], side="left")
        after = np.searchsorted(np.asarray(spans.token_ends), [b for _, b in units], side="right")
        specials = spans.specials
        # What a chunk starting at each unit shows before it: heading context, a table's header.
        cost = np.array([self._prefix_cost(document, outline, a) + splitter.header_tokens(splitter.header(a, self.max_tokens)) for a, _ in units])
        # A unit over the limit (a code block, never cut) is a chunk of its own whatever the cuts,
        # so it lends no tokens to the text beside it: a side of a cut reaches the minimum with
        # the units between the cut and the nearest such wall, or by ending at the wall itself.
        wall = after - first + specials + cost > self.max_tokens
        walls = np.flatnonzero(wall)
        # for each unit k: the first unit after the last wall before k, and the first wall at or after k
        wall_before = np.concatenate([[0], walls + 1])[np.searchsorted(walls, np.arange(n), side="left")]
        wall_after = np.concatenate([walls, [n]])[np.searchsorted(walls, np.arange(n), side="left")]

        segments: list[tuple[int, int]] = []
        stack = [(0, n)]
        while stack:
            i, j = stack.pop()
            if j - i == 1:
                segments.append((i, j))
                continue
            ks = np.arange(i + 1, j)
            left = after[ks - 1] - first[np.maximum(i, wall_before[ks - 1])] + specials
            right = after[np.minimum(j, wall_after[ks]) - 1] - first[ks] + specials
            balanced = (wall[ks - 1] | (left >= self.min_tokens)) & (wall[ks] | (right >= self.min_tokens))
            fits = after[j - 1] - first[i] + specials + cost[i] <= self.max_tokens
            if fits:
                allowed = balanced & (gaps[ks - 1] >= threshold)
                if not allowed.any():
                    segments.append((i, j))
                    continue
            else:
                allowed = balanced if balanced.any() else np.ones_like(balanced)
            k = int(ks[allowed][np.argmax(gaps[ks - 1][allowed])])
            stack.append((k, j))
            stack.append((i, k))
        return segments

    def _merge_short(self, splitter: RegionSplitter, pieces: list[Piece]) -> list[tuple[Piece, int]]:
        """Step 5: each piece with the segment it starts in, after joining every piece under
        ``min_tokens`` that can join a neighbour within ``max_tokens``: the smallest first, into
        its smaller neighbour (oversize pieces never join). A joined piece only grows, so a piece
        that cannot join now never can: one pass over a heap, O(n log n)."""
        prefix_tokens: dict[str, int] = {"": 0}

        def size(start: int, end: int, prefix: str, header) -> int:
            if prefix not in prefix_tokens:
                prefix_tokens[prefix] = self.counter.count(prefix) - self.counter.specials
            return prefix_tokens[prefix] + splitter.tokens(start, end) + splitter.header_tokens(header)

        items: list[list] = []  # piece, its segment, its size, previous and next live item (-1: none)
        segment = -1
        for i, piece in enumerate(pieces):
            segment += piece.metadata.get("section_part", 1) == 1
            items.append([piece, segment, size(piece.start, piece.end, piece.prefix, piece.table_header), i - 1, i + 1])
        if items:
            items[-1][4] = -1
        alive = [True] * len(items)
        heap = [(n, i) for i, (piece, _, n, _, _) in enumerate(items) if n < self.min_tokens and not piece.oversize]
        heapq.heapify(heap)
        while heap:
            n, i = heapq.heappop(heap)
            if not alive[i] or items[i][2] != n:
                continue  # joined since it was pushed
            best = None  # (joined size, first, second) of the pair it can join
            for first, second in ((items[i][3], i), (i, items[i][4])):
                if first < 0 or second < 0 or items[first][0].oversize or items[second][0].oversize:
                    continue
                a, b = items[first][0], items[second][0]
                joined = size(a.start, b.end, a.prefix, a.table_header)
                if joined <= self.max_tokens and (best is None or joined < best[0]):
                    best = (joined, first, second)
            if best is None:
                continue  # neither neighbour has room, and neither ever will
            joined, first, second = best
            a, b = items[first][0], items[second][0]
            items[first][0] = replace(a, end=b.end, boundary_type=b.boundary_type, metadata={})
            items[first][2], items[first][4] = joined, items[second][4]
            if items[second][4] >= 0:
                items[items[second][4]][3] = first
            alive[second] = False
            if joined < self.min_tokens:
                heapq.heappush(heap, (joined, first))
        return [(item[0], item[1]) for item, live in zip(items, alive) if live]

    def _prefix_cost(self, document: ParsedDocument, outline: Outline, start: int) -> int:
        """Tokens the heading context adds to a chunk starting at ``start`` (upper bound)."""
        chain = list(outline.at(start))
        cost = 0
        for at in (start, start + 1):
            prefix = context_prefix(document, chain, at, counter=self.counter, max_prefix_tokens=self.max_tokens // 2)
            cost = max(cost, self.counter.count(prefix) - self.counter.specials if prefix else 0)
        return cost

    def _embedder(self) -> Any:
        if self.embedder is None or isinstance(self.embedder, str):
            self.embedder = _shared_embedder(self.embedder or DEFAULT_EMBEDDER)
        return self.embedder


@lru_cache(maxsize=4)
def _shared_embedder(spec: str) -> Any:
    """One embedder per spec for the process: a build makes a strategy per document, and loading
    the model once per document would cost seconds each."""
    from pipeline.embedding.registry import make_embedder

    return make_embedder(spec)


def _gaps(vectors: np.ndarray, window: int) -> np.ndarray:
    """Cosine distance across each gap between consecutive units (``len(vectors) - 1`` values)."""
    n = len(vectors)
    sums = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64), np.cumsum(vectors, axis=0, dtype=np.float64)])
    k = np.arange(1, n)
    before = sums[k] - sums[np.maximum(0, k - window)]
    after = sums[np.minimum(n, k + window)] - sums[k]
    norms = np.linalg.norm(before, axis=1) * np.linalg.norm(after, axis=1)
    cos = np.einsum("ij,ij->i", before, after) / np.where(norms == 0, 1.0, norms)
    return 1.0 - cos


def _number_parts(items: list[tuple[Piece, int]]) -> list[Piece]:
    """The pieces, a segment's parts numbered ``section_part`` of ``section_parts`` (one that
    stayed whole is a ``semantic`` boundary, without part numbers)."""
    counts: dict[int, int] = {}
    for _, segment in items:
        counts[segment] = counts.get(segment, 0) + 1
    out, seen = [], {}
    for piece, segment in items:
        metadata = {k: v for k, v in piece.metadata.items() if k not in ("section_part", "section_parts")}
        if counts[segment] == 1:
            out.append(replace(piece, boundary_type="semantic", metadata=metadata))
            continue
        seen[segment] = seen.get(segment, 0) + 1
        out.append(replace(piece, metadata={**metadata, "section_part": seen[segment], "section_parts": counts[segment]}))
    return out


def _embedder_label(embedder: Any) -> str:
    """How a non-default embedder shows in the cache key ('' for the default MiniLM)."""
    if embedder is None:
        return ""
    if isinstance(embedder, str):
        return "" if embedder == DEFAULT_EMBEDDER else re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder)
    from pipeline.embedding.models import DEFAULT_MODEL

    name = str(getattr(embedder, "name", type(embedder).__name__))
    return "" if name == DEFAULT_MODEL.name else re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
