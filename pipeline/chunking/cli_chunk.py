"""``pipeline chunk FILE``: one file's chunk records as JSON on stdout (seed 002 AC5).

``run_chunk`` does all the work and touches no stream, so the CLI only prints what it returns:
``stdout`` is a JSON array of chunk records (``orjson``, indent 2, snake_case fields, one
trailing newline); ``messages`` go to stderr (warnings, or the error); ``exit_code`` is 0 on
success and 1 on any error (file not found, not UTF-8, unknown strategy, bad option value).
An empty or whitespace-only file is ``[]`` with exit 0. ``-`` reads stdin.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Mapping

import orjson
import yaml

from pipeline.chunking import DEFAULT_STRATEGY, chunk_text
from pipeline.chunking.registry import make_strategy
from pipeline.errors import PipelineError
from pipeline.fsutil import decode_utf8, read_text
from pipeline.embedding.models import default_counter
from pipeline.parsing.tokens import TokenCounter

STDIN = "-"
STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class ChunkRun:
    exit_code: int
    stdout: str
    messages: list[str] = field(default_factory=list)  # for stderr, one line each


def run_chunk(
    source: str,
    strategy: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    stdin: BinaryIO | None = None,
    counter: TokenCounter | None = None,
) -> ChunkRun:
    """Chunk the file ``source`` (``-``: ``stdin``, default ``sys.stdin.buffer``) with ``strategy``;
    None chooses as a build does (``chunk_text``).

    ``options`` are the strategy's options; None values are left out (unset CLI flags).
    """
    options = {k: v for k, v in (options or {}).items() if v is not None}
    error: PipelineError | None = None
    chunks = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            counter = counter or default_counter()
            make_strategy(strategy or DEFAULT_STRATEGY, counter, **options)  # bad options fail before any reading
            path = STDIN_NAME if source == STDIN else source
            if source == STDIN:
                text = decode_utf8((stdin or sys.stdin.buffer).read(), path)
            else:
                text = read_text(Path(source))
            if text.strip():
                chunks = chunk_text(text, path=path, strategy=strategy, counter=counter, document_id=_document_id(path), **options)
        except PipelineError as exc:
            error = exc
    messages = list(dict.fromkeys(f"warning: {w.message}" for w in caught))
    if error is not None:
        return ChunkRun(1, "", [*messages, f"error: {error}"])
    payload = orjson.dumps([c.to_dict() for c in chunks], option=orjson.OPT_INDENT_2, default=_jsonable)
    return ChunkRun(0, payload.decode("utf-8") + "\n", messages)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``["max_tokens=200", "embedder=hashing"]`` -> options; each value is read as a YAML scalar
    (so ``200`` is an int, ``true`` a bool). Raises PipelineError on a pair without ``=``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise PipelineError(f"option {pair!r} is not NAME=VALUE")
        try:
            options[name.strip().replace("-", "_")] = yaml.safe_load(value) if value.strip() else value
        except yaml.YAMLError:
            options[name.strip().replace("-", "_")] = value
    return options


def _document_id(path: str) -> str | None:
    """``stdin`` for standard input; else None: ``chunk_text`` takes an entry's id or the file's stem."""
    return "stdin" if path == STDIN_NAME else None


def _jsonable(value: Any) -> Any:
    """Front matter may hold YAML types JSON lacks (sets, binary): written as strings."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
