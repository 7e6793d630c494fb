"""Options and packing rules shared by the character-sized strategies of seed 003.

``max_chunk_size`` (100-10000, default 1200) and ``min_chunk_size`` (10-1000, default 100) are
in characters. Every chunk is also capped at the embedding model's token limit: the model
silently drops what lies past it, and 1200 characters of English prose is already ~250-300
MiniLM tokens.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, ClassVar

from pipeline.chunking.base import Piece
from pipeline.errors import PipelineError
from pipeline.parsing.tokens import TokenCounter

MAX_CHUNK_SIZE = (100, 10_000)
MIN_CHUNK_SIZE = (10, 1_000)
DEFAULT_MAX_CHUNK_SIZE = 1200
DEFAULT_MIN_CHUNK_SIZE = 100
UNKNOWN_MODEL_TOKENS = 512  # cap when the model's limit is unknown (remote models)


def check_sizes(strategy: str, max_chunk_size: int, min_chunk_size: int) -> None:
    """Raise PipelineError unless both sizes are integers in range and ``min <= max``."""
    for name, value, (low, high) in (
        ("max_chunk_size", max_chunk_size, MAX_CHUNK_SIZE),
        ("min_chunk_size", min_chunk_size, MIN_CHUNK_SIZE),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise PipelineError(f"{strategy}: {name} must be an integer from {low} to {high}, not {value!r}")
    if min_chunk_size > max_chunk_size:
        raise PipelineError(f"{strategy}: min_chunk_size {min_chunk_size} is above max_chunk_size {max_chunk_size}")


def token_cap(requested: int | None, counter: TokenCounter, strategy: str) -> int:
    """The token limit of every chunk: ``requested`` clipped to the model, else the model's limit."""
    # Imported here: the strategies package imports this module while it loads.
    from pipeline.chunking.strategies.markdown import effective_max_tokens

    if requested is None:
        return counter.model_max_tokens or UNKNOWN_MODEL_TOKENS
    return effective_max_tokens(requested, counter, strategy)


@dataclass
class CharSizedOptions:
    """The options every character-sized strategy takes, checked when it is made: a strategy
    subclasses this (as a dataclass) and sets ``name``; ``max_tokens`` is the model's limit
    unless a smaller one is asked for."""

    counter: TokenCounter
    max_chunk_size: int = DEFAULT_MAX_CHUNK_SIZE
    min_chunk_size: int = DEFAULT_MIN_CHUNK_SIZE
    max_tokens: int | None = None
    name: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check_sizes(self.name, self.max_chunk_size, self.min_chunk_size)
        self.max_tokens = token_cap(self.max_tokens, self.counter, self.name)

    def cache_key(self) -> str:
        return f"{self.name}-{self.max_chunk_size}-{self.min_chunk_size}-{self.max_tokens}"


def merge_small(pieces: list[Piece], min_chars: int, fits: Callable[[int, int], bool]) -> list[Piece]:
    """Merge each piece shorter than ``min_chars`` into its previous neighbour (or a short
    previous piece into it) when ``fits(start, end)`` holds for the merged span.

    ``min_chars`` is a soft minimum: it never breaks the maximum, so a short piece stays short
    when no neighbour has room. The merged piece keeps the first piece's headings and the last
    one's ``boundary_type`` (the kind of boundary it now ends at).
    """
    out: list[Piece] = []
    for piece in pieces:
        if out:
            last = out[-1]
            short = piece.end - piece.start < min_chars or last.end - last.start < min_chars
            if short and not last.oversize and not piece.oversize and fits(last.start, piece.end):
                out[-1] = dataclasses.replace(last, end=piece.end, boundary_type=piece.boundary_type)
                continue
        out.append(piece)
    return out
