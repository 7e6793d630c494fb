"""Which strategy chunks a document: site, then directory, then the document's front matter.

Each layer is ``None`` (no say), a strategy name, or a mapping ``{strategy: NAME, <option>:
value, ...}`` (the site's ``[chunking]`` table, a directory's chunking config, a document's
``chunking:`` front matter key). A layer naming the same strategy as the layers below it (or
none) merges its options over theirs; a layer naming another strategy starts from that
strategy's defaults, since options of one strategy mean nothing to another.

Without a ``chunking:`` key, a document that is a knowledge-base entry (front matter ``type:``
of ``definition``, ``error``, ``how_to`` or ``workflow``, or a ``.yaml``/``.yml``/``.json``
file) is chunked by ``entry``. In a site, such a file is a document when ``pipeline.sources.documents.is_entry_file``.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from typing import Any, Iterable, Mapping

from pipeline.chunking.base import ChunkingStrategy
from pipeline.chunking.registry import make_strategy
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import TokenCounter
from pipeline.sources.documents import ENTRY_SUFFIXES, ENTRY_TYPES, entry_type

FRONT_MATTER_KEY = "chunking"


def merge_chunking(
    name: str,
    options: Mapping[str, Any],
    layer: Any,
    *,
    path: str | None = None,
    line: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """``(name, options)`` with ``layer`` applied over them (see the module docstring)."""
    if layer is None:
        return name, dict(options)
    if isinstance(layer, str):
        layer = {"strategy": layer}
    if not isinstance(layer, Mapping):
        raise PipelineError(
            f"`{FRONT_MATTER_KEY}` must be a strategy name or a mapping of strategy and options, not {type(layer).__name__}",
            path=path,
            line=line,
        )
    layer = dict(layer)
    chosen = layer.pop("strategy", name)
    if not isinstance(chosen, str) or not chosen:
        raise PipelineError(f"`{FRONT_MATTER_KEY}.strategy` must be a strategy name, not {chosen!r}", path=path, line=line)
    if chosen == name:
        return name, {**options, **layer}
    return chosen, layer


def resolve_chunking(layers: Iterable[Any], *, default: str = "markdown") -> tuple[str, dict[str, Any]]:
    """The strategy and options after applying ``layers`` in order (site first)."""
    name, options = default, {}
    for layer in layers:
        name, options = merge_chunking(name, options, layer)
    return name, options


def strategy_for(
    document: ParsedDocument,
    default_name: str,
    default_options: dict[str, Any],
    counter: TokenCounter,
    *,
    site_defaults: Mapping[str, Mapping[str, Any]] | None = None,
) -> ChunkingStrategy:
    """The strategy for ``document``: ``default_name``/``default_options`` (the site's choice,
    with any directory layers already merged by ``merge_chunking``) overridden by the document.

    ``site_defaults`` gives per-strategy options that hold unless a layer sets them (the build
    passes ``{"semantic": {"embedder": <the site's embedder>}}``).

    Raises PipelineError naming the document (and the front matter line) on a bad override.
    """
    line = _front_matter_line(document)
    layer = document.front_matter.get(FRONT_MATTER_KEY)
    if layer is None and _is_entry(document):
        layer = "entry"
    name, options = merge_chunking(default_name, default_options, layer, path=document.path, line=line)
    options = {**(site_defaults or {}).get(name, {}), **options}
    try:
        return make_strategy(name, counter, **options)
    except PipelineError as exc:
        if layer is None:
            raise
        raise PipelineError(exc.message, path=document.path, line=line) from None


def _is_entry(document: ParsedDocument) -> bool:
    if PurePath(document.path).suffix.lower() in ENTRY_SUFFIXES:
        return True
    kind = document.front_matter.get("type")
    return isinstance(kind, str) and entry_type(kind) in ENTRY_TYPES


def _front_matter_line(document: ParsedDocument) -> int:
    """1-based line of the ``chunking:`` key in the front matter (else 1)."""
    head = document.text[: document.body_start]
    match = re.search(rf"^{FRONT_MATTER_KEY}\s*:", head, re.MULTILINE)
    return head.count("\n", 0, match.start()) + 1 if match else 1
