"""Stage 1, chunking: markdown text -> ``Chunk`` records (pure), and ``tool`` writes them to disk.

Strategies live in ``pipeline.chunking.strategies`` and register in ``pipeline.chunking.registry``.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from pipeline.chunking.base import Chunk, assemble
from pipeline.chunking.registry import make_strategy
from pipeline.parsing.markdown import parse_markdown
from pipeline.parsing.tokens import TokenCounter, default_counter

__all__ = ["Chunk", "chunk_text"]


def chunk_text(
    text: str,
    *,
    path: str = "<string>",
    strategy: str = "markdown",
    counter: TokenCounter | None = None,
    document_id: str | None = None,
    **options: Any,
) -> list[Chunk]:
    """Chunk ``text`` with ``strategy``; ``chunks[i].content.endswith(text[c.start_offset:c.end_offset])``."""
    counter = counter or default_counter()
    chosen = make_strategy(strategy, counter, **options)
    document = parse_markdown(text, path)
    return assemble(
        document,
        chosen.pieces(document),
        strategy=chosen.name,
        document_id=document_id or PurePath(path).stem,
        source_file=path,
        counter=counter,
    )
