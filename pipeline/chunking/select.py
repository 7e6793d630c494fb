"""Which strategy chunks a document: site default, overridden by the document's front matter.

Front matter ``chunking: {strategy: NAME, <option>: value}`` overrides the site's choice for
that document; options only merge when the strategy stays the same.
"""

from __future__ import annotations

from typing import Any

from pipeline.chunking.base import ChunkingStrategy
from pipeline.chunking.registry import make_strategy
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import TokenCounter


def strategy_for(
    document: ParsedDocument,
    default_name: str,
    default_options: dict[str, Any],
    counter: TokenCounter,
) -> ChunkingStrategy:
    override = document.front_matter.get("chunking")
    if override is None:
        return make_strategy(default_name, counter, **default_options)
    if not isinstance(override, dict):
        raise PipelineError("front matter `chunking` must be a mapping", path=document.path, line=1)
    override = dict(override)
    name = override.pop("strategy", default_name)
    options = {**default_options, **override} if name == default_name else override
    try:
        return make_strategy(name, counter, **options)
    except PipelineError as exc:
        raise PipelineError(exc.message, path=document.path, line=1) from None
