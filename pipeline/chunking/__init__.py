"""Stage 1, chunking: markdown text -> ``Chunk`` records (pure), and ``tool`` writes them to disk.

Strategies live in ``pipeline.chunking.strategies`` and register in ``pipeline.chunking.registry``.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from pipeline.chunking.base import Chunk, assemble
from pipeline.chunking.registry import make_strategy
from pipeline.chunking.select import strategy_for
from pipeline.parsing.markdown import parse_markdown
from pipeline.embedding.models import default_counter
from pipeline.parsing.tokens import TokenCounter

__all__ = ["Chunk", "chunk_text", "DEFAULT_STRATEGY"]

DEFAULT_STRATEGY = "markdown"


def chunk_text(
    text: str,
    *,
    path: str = "<string>",
    strategy: str | None = None,
    counter: TokenCounter | None = None,
    document_id: str | None = None,
    **options: Any,
) -> list[Chunk]:
    """Chunk ``text`` with ``strategy``; ``chunks[i].content.endswith(text[c.start_offset:c.end_offset])``.

    ``strategy`` None chooses as a build does (``select.strategy_for``): the document's
    ``chunking:`` front matter, ``entry`` for a knowledge-base entry, else ``markdown``, with
    ``options`` for the default. ``document_id`` defaults to an entry's ``id``, else the path's stem.
    """
    counter = counter or default_counter()
    document = parse_markdown(text, path)
    if strategy is None:
        chosen = strategy_for(document, DEFAULT_STRATEGY, dict(options), counter)
    else:
        chosen = make_strategy(strategy, counter, **options)
    pieces = chosen.pieces(document)
    entry_id = pieces[0].metadata.get("parent_entry_id") if pieces and chosen.name == "entry" else None
    return assemble(
        document,
        pieces,
        strategy=chosen.name,
        document_id=document_id or (str(entry_id) if entry_id else PurePath(path).stem),
        source_file=path,
        counter=counter,
        max_tokens=getattr(chosen, "max_tokens", None),
    )
