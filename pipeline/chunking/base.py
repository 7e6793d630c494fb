"""The chunk record and the one interface every chunking strategy implements.

A strategy decides *where* to cut (a list of ``Piece``: a source span plus heading context);
``assemble`` turns pieces into ``Chunk`` records, so offsets, lines, token counts and
``is_code`` are computed in one place for every strategy.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from pipeline.chunking.tables import TableHeader, header_record
from pipeline.parsing.markdown import ParsedDocument, parse_markdown
from pipeline.parsing.tokens import TokenCounter

TECHNICAL_BASELINE_WORDS = (
    "quick reference",
    "api reference",
    "reference card",
    "cheat sheet",
    "cheatsheet",
    "at a glance",
    "command reference",
    "quick start reference",
)


@dataclass(frozen=True)
class Piece:
    """A strategy's decision: ``source[start:end]`` plus the heading context placed before it,
    and, for a piece starting inside a table's body, the table's header (``chunking/tables.py``)."""

    start: int
    end: int
    title: str = ""
    header_path: str = ""
    heading: str = ""
    prefix: str = ""  # heading context, prepended to the span in ``Chunk.content``
    boundary_type: str = "section"
    oversize: bool = False  # a single code block over the token limit, kept whole
    table_header: TableHeader | None = None  # shown between ``prefix`` and the span (``Span.header``)
    # Shown instead of the span when not None: the markdown the span renders as (a YAML/JSON
    # entry's fields, ``entry_render.py``); the span is still its exact source.
    text: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """One chunk of one document.

    Guarantee: ``content.endswith(source[start_offset:end_offset])``; whatever precedes that
    span in ``content`` is heading context, then, when ``metadata["repeated_header"]`` records
    a split table's header at ``[h0, h1)``, ``source[h0:h1]`` (``chunking/tables.py``):
    ``content == context + source[h0:h1] + source[start_offset:end_offset]``. Lines are
    1-based and inclusive and, like the offsets, those of the span alone. One exception: a
    chunk with ``metadata["rendered_from"]`` (a YAML/JSON entry) shows, after its context, the
    markdown rendering of ``source[start_offset:end_offset]`` (``chunking/entry_render.py``).
    """

    chunk_id: str
    document_id: str
    source_file: str
    chunk_index: int
    total_chunks: int
    strategy: str
    content: str
    start_offset: int
    end_offset: int
    start_line: int
    end_line: int
    header_path: str
    heading: str
    title: str
    token_count: int
    boundary_type: str
    is_code: bool
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Chunk":
        return cls(**data)


class ChunkingStrategy(Protocol):
    """What the registry builds. ``pieces`` must return spans in order, non-overlapping."""

    name: str

    def cache_key(self) -> str:
        """Identifies the strategy and every option that changes its output (e.g. ``markdown-256``)."""
        ...

    def pieces(self, document: ParsedDocument) -> list[Piece]: ...


def is_code_span(document: ParsedDocument, start: int, end: int) -> bool:
    """True when more than half of the span's lines lie inside code blocks (seed 001 §5)."""
    first = document.line_number(start) - 1
    last = document.line_number(max(start, end - 1)) - 1
    total = last - first + 1
    inside = len(document.code_lines().intersection(range(first, last + 1)))
    return total > 0 and inside / total > 0.5


def _is_code_text(text: str) -> bool:
    """``is_code_span`` of a rendered text (``Piece.text``): its own lines, not the source's."""
    return is_code_span(parse_markdown(text), 0, len(text))


def is_technical_title(title: str) -> bool:
    """A 'Quick Reference'-like title marks chunk 1 as the technical baseline."""
    lowered = title.lower()
    return any(word in lowered for word in TECHNICAL_BASELINE_WORDS)


def _exact_counts(counter: TokenCounter, text: str, pieces: list[Piece], contents: list[str]) -> list[int]:
    """``counter.count(content)`` of every chunk. A chunk whose span edges lie outside words and
    whose prefix ends in whitespace holds whole runs of the text: its count is the prefix's plus
    the span's, read from the document's one tokenization (``SpanCounter.exact``)."""
    if not pieces:
        return []
    spans = counter.spans(text) if getattr(counter, "by_runs", False) else None
    counts = []
    prefix_counts: dict[str, int] = {"": counter.specials}
    for piece, content in zip(pieces, contents):
        span = spans.exact(piece.start, piece.end) if spans is not None and piece.text is None else None
        prefix = piece.prefix
        if span is None or (prefix and prefix[-1] not in " \t\n\r"):
            counts.append(counter.count(content))
            continue
        if prefix not in prefix_counts:
            prefix_counts[prefix] = counter.count(prefix)
        counts.append(prefix_counts[prefix] + span - counter.specials)
    return counts


def _with_header(text: str, piece: Piece) -> Piece:
    """``piece`` with its table header's source appended to its prefix (what ``content`` shows)."""
    header = piece.table_header
    if header is None:
        return piece
    return replace(piece, prefix=piece.prefix + text[header.start : header.end])


def oversize_message(path: str, line: int, tokens: int, model_limit: int | None, max_tokens: int | None = None) -> str:
    """``path:line: ...``: a chunk of ``tokens`` word pieces over the chunk limit (``max_tokens``,
    the strategy's, named when known) or the model's."""
    limit = f" of {max_tokens}" if max_tokens else ""
    message = f"{path}:{line}: chunk of {tokens} word pieces is over the token limit{limit}; kept whole as its own chunk"
    if model_limit is not None and tokens > model_limit:
        message += f" (the model reads only its first {model_limit}; the rest is not embedded)"
    return message


def assemble(
    document: ParsedDocument,
    pieces: list[Piece],
    *,
    strategy: str,
    document_id: str,
    source_file: str,
    counter: TokenCounter,
    max_tokens: int | None = None,
) -> list[Chunk]:
    """Build the chunk records of ``document`` from a strategy's pieces (``max_tokens``: the
    strategy's limit, named in its warnings).

    ``chunks[i].content == pieces[i].prefix + header + document.text[start:end]``, where
    ``header`` is the source of ``pieces[i].table_header`` (recorded as ``repeated_header``) or
    ''; ``token_count`` is the exact count of ``content`` with the model's tokenizer. Every chunk kept whole over the
    strategy's limit (``oversize``) or over what the model reads is warned about (``UserWarning``
    naming file and line; a build and ``pipeline chunk`` print it on stderr). Chunk indices listed in a piece's
    ``metadata["context"]["related_chunks"]`` become chunk ids (``{document_id}_chunk_{i}``).
    """
    text = document.text
    pieces = [_with_header(text, piece) for piece in pieces]
    contents = [piece.prefix + (text[piece.start : piece.end] if piece.text is None else piece.text) for piece in pieces]
    counts = _exact_counts(counter, text, pieces, contents)
    total = len(pieces)
    model_limit = getattr(counter, "model_max_tokens", None)
    chunks = []
    for index, (piece, content, tokens) in enumerate(zip(pieces, contents, counts)):
        metadata = dict(piece.metadata)
        context = metadata.get("context")
        if isinstance(context, dict) and isinstance(context.get("related_chunks"), list):
            # A strategy names related chunks by index; only here is the document id known.
            ids = [f"{document_id}_chunk_{j}" if isinstance(j, int) else j for j in context["related_chunks"]]
            metadata["context"] = {**context, "related_chunks": ids}
        if document.front_matter:
            metadata.setdefault("front_matter", document.front_matter)
        if piece.oversize:
            metadata["oversize"] = True
        if piece.table_header is not None:
            metadata["repeated_header"] = header_record(document, piece.table_header)
        if piece.oversize or (model_limit is not None and tokens > model_limit):
            warnings.warn(oversize_message(document.path, document.line_number(piece.start), tokens, model_limit, max_tokens), UserWarning, stacklevel=2)
        chunks.append(
            Chunk(
                chunk_id=f"{document_id}_chunk_{index}",
                document_id=document_id,
                source_file=source_file,
                chunk_index=index,
                total_chunks=total,
                strategy=strategy,
                content=content,
                start_offset=piece.start,
                end_offset=piece.end,
                start_line=document.line_number(piece.start),
                end_line=document.line_number(max(piece.start, piece.end - 1)),
                header_path=piece.header_path,
                heading=piece.heading,
                title=piece.title,
                token_count=tokens,
                boundary_type=piece.boundary_type,
                is_code=is_code_span(document, piece.start, piece.end) if piece.text is None else _is_code_text(piece.text),
                metadata=metadata,
            )
        )
    return chunks
