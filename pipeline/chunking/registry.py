"""The one registry of chunking strategies.

Add a strategy by decorating a class with ``@register("name")``; the class takes the token
counter as ``counter`` plus keyword options, and implements ``ChunkingStrategy``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from pipeline.chunking.base import ChunkingStrategy
from pipeline.errors import PipelineError
from pipeline.parsing.tokens import TokenCounter

_STRATEGIES: dict[str, type] = {}


def register(name: str) -> Callable[[type], type]:
    def add(cls: type) -> type:
        cls.name = name
        _STRATEGIES[name] = cls
        return cls

    return add


def strategy_names() -> list[str]:
    _load_builtins()
    return sorted(_STRATEGIES)


def make_strategy(name: str, counter: TokenCounter, **options: Any) -> ChunkingStrategy:
    """Build strategy ``name`` with ``options``; unknown names or options raise PipelineError."""
    _load_builtins()
    cls = _STRATEGIES.get(name)
    if cls is None:
        raise PipelineError(f"unknown chunking strategy {name!r}; choose one of: {', '.join(strategy_names())}")
    if dataclasses.is_dataclass(cls):
        known = {f.name for f in dataclasses.fields(cls)} - {"counter"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise PipelineError(
                f"strategy {name!r} has no option {', '.join(unknown)}; its options: {', '.join(sorted(known)) or 'none'}"
            )
    return cls(counter=counter, **{k: v for k, v in options.items() if v is not None})


def _load_builtins() -> None:
    # Importing the modules runs their @register decorators.
    from pipeline.chunking import strategies  # noqa: F401
