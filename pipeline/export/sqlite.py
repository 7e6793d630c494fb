"""A site as one SQLite file: seed 000's ``documents`` and ``document_chunks`` tables, FTS5 over
the chunk text, and every chunk's embedding as a float32 BLOB (content/reference/index-format/exports.md has the schema).

Guarantees: the file is written to a temporary name beside the target and renamed only when
complete, so a failed export leaves nothing (or the previous file) behind; the same site gives
the same bytes (rows inserted in site order, no timestamps, the FTS index built in one pass).

Vector search inside SQLite uses ``sqlite-vec``'s ``vec_distance_cosine`` over the same BLOB
column where the extension loads (``query.connect``); where this Python's ``sqlite3`` cannot load
extensions, ``query.nearest`` ranks the BLOBs with numpy instead. The file is the same either way.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import orjson

from pipeline import __version__
from pipeline.errors import PipelineError
from pipeline.export.source import SiteExport, iter_chunks

EXPORT_VERSION = 1

SCHEMA = """
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE documents (
  id TEXT PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  topic TEXT NOT NULL,
  title TEXT NOT NULL,
  strategy TEXT NOT NULL,
  is_chunked INTEGER NOT NULL,
  chunk_count INTEGER NOT NULL,
  promotion_level TEXT NOT NULL,
  front_matter TEXT NOT NULL
);
CREATE TABLE document_chunks (
  chunk_id TEXT PRIMARY KEY,
  document_id TEXT NOT NULL REFERENCES documents(id),
  chunk_index INTEGER NOT NULL,
  header_path TEXT NOT NULL,
  title TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  start_offset INTEGER NOT NULL,
  end_offset INTEGER NOT NULL,
  content TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  is_code INTEGER NOT NULL,
  keywords TEXT NOT NULL,
  promotion_level TEXT NOT NULL,
  href TEXT NOT NULL,
  embedding BLOB
);
CREATE INDEX documents_topic ON documents(topic);
CREATE INDEX documents_promotion_level ON documents(promotion_level);
CREATE UNIQUE INDEX document_chunks_order ON document_chunks(document_id, chunk_index);
CREATE INDEX document_chunks_promotion_level ON document_chunks(promotion_level);
CREATE INDEX document_chunks_is_code ON document_chunks(is_code);
CREATE VIRTUAL TABLE document_chunks_fts USING fts5(
  title, header_path, content,
  content='document_chunks', content_rowid='rowid', tokenize='porter unicode61'
);
"""


def write_sqlite(export: SiteExport, out: Path) -> None:
    """Write ``export`` to ``out`` (replacing it; the caller decides whether that is allowed)."""
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        connection = sqlite3.connect(tmp)
        try:
            _fill(connection, export)
        finally:
            connection.close()
        os.replace(tmp, out)
    except sqlite3.Error as exc:
        tmp.unlink(missing_ok=True)
        raise PipelineError(f"cannot write the SQLite export ({exc})", path=out) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fill(connection: sqlite3.Connection, export: SiteExport) -> None:
    connection.execute("PRAGMA journal_mode = OFF")  # a temp file renamed when done: no journal needed
    connection.execute("PRAGMA synchronous = OFF")
    with connection:
        connection.executescript(SCHEMA)
        meta = {
            "export_version": str(EXPORT_VERSION),
            "pipeline_version": __version__,
            "title": export.title,
            "model": export.model or "",
            "dimension": str(export.dimension or ""),
            "embedding_dtype": "float32",
            "embedding_source": "the site's _embeddings.bin (int8 with a per-row scale), as float32 unit vectors",
        }
        connection.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        connection.executemany(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (d.document_id, d.source, d.topic, d.title, d.strategy, int(d.is_chunked), len(d.chunks), d.promotion_level,
                 _json(d.front_matter))
                for d in export.documents
            ],
        )
        connection.executemany(
            "INSERT INTO document_chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (c.chunk_id, c.document_id, c.chunk_index, c.header_path, c.title, c.start_line, c.end_line,
                 c.start_offset, c.end_offset, c.content, c.token_count, int(c.is_code),
                 _json([{"name": n, "score": s} for n, s in c.keywords]), c.promotion_level, c.href,
                 None if c.embedding is None else np.asarray(c.embedding, dtype="<f4").tobytes())
                for c in iter_chunks(export)
            ],
        )
        connection.execute("INSERT INTO document_chunks_fts(document_chunks_fts) VALUES ('rebuild')")
    connection.execute("VACUUM")  # compact pages: the same rows give the same bytes


def _json(value) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode("utf-8")
