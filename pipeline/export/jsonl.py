"""A site as JSON Lines: one chunk per line, in site order, in one of three record shapes.

* ``full`` (default): the chunk record (``chunk_id``, ``document_id``, ``source``, ``topic``,
  ``chunk_index``, ``total_chunks``, ``header_path``, ``heading``, ``title``, lines, offsets,
  ``token_count``, ``is_code``, ``keywords``, ``promotion_level``, ``href``, ``content``).
* ``seed002``: seed 002's ``ChunkedDocument`` for ``kb_bulk_import`` (``content, sourceFile,
  chunkIndex, totalChunks, headerPath, tokenCount``; ``headerPath`` is the immediate heading, as
  that seed asks) plus ``metadata``: the front matter and ``promotionLevel``.
* ``langchain``: ``{"page_content", "metadata"}`` as LangChain's ``Document`` takes them, the
  metadata flat (strings, numbers, booleans, a list of keyword names).

Lines are compact JSON with sorted keys and end with ``\\n``: the same site gives the same bytes.
"""

from __future__ import annotations

import orjson

from pipeline.export.source import ExportChunk, ExportDocument, SiteExport

RECORDS = ("full", "seed002", "langchain")


def full_record(doc: ExportDocument, c: ExportChunk) -> dict:
    return {
        "chunk_id": c.chunk_id,
        "document_id": c.document_id,
        "source": c.source,
        "topic": c.topic,
        "chunk_index": c.chunk_index,
        "total_chunks": c.total_chunks,
        "header_path": c.header_path,
        "heading": c.heading,
        "title": c.title,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "start_offset": c.start_offset,
        "end_offset": c.end_offset,
        "token_count": c.token_count,
        "is_code": c.is_code,
        "keywords": [{"name": n, "score": s} for n, s in c.keywords],
        "promotion_level": c.promotion_level,
        "href": c.href,
        "content": c.content,
    }


def seed002_record(doc: ExportDocument, c: ExportChunk) -> dict:
    return {
        "content": c.content,
        "sourceFile": c.source,
        "chunkIndex": c.chunk_index,
        "totalChunks": c.total_chunks,
        "headerPath": c.heading,
        "tokenCount": c.token_count,
        "metadata": {**doc.front_matter, "promotionLevel": c.promotion_level},
    }


def langchain_record(doc: ExportDocument, c: ExportChunk) -> dict:
    return {
        "page_content": c.content,
        "metadata": {
            "chunk_id": c.chunk_id,
            "document_id": c.document_id,
            "source": c.source,
            "topic": c.topic,
            "title": c.title,
            "header_path": c.header_path,
            "chunk_index": c.chunk_index,
            "total_chunks": c.total_chunks,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "token_count": c.token_count,
            "is_code": c.is_code,
            "keywords": [n for n, _ in c.keywords],
            "promotion_level": c.promotion_level,
        },
    }


_SHAPES = {"full": full_record, "seed002": seed002_record, "langchain": langchain_record}


def jsonl_bytes(export: SiteExport, record: str = "full") -> bytes:
    """The whole export as JSON Lines bytes; ValueError for an unknown ``record``."""
    if record not in _SHAPES:
        raise ValueError(f"record must be one of {', '.join(RECORDS)}, got {record!r}")
    shape = _SHAPES[record]
    lines = [
        orjson.dumps(shape(doc, chunk), option=orjson.OPT_SORT_KEYS, default=str)
        for doc in export.documents
        for chunk in doc.chunks
    ]
    return b"".join(line + b"\n" for line in lines)
