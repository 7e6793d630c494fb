"""Searching an exported SQLite file: by chunk id, by text (FTS5, BM25) and by vector.

Vector search runs inside SQLite with ``sqlite-vec``'s ``vec_distance_cosine`` when the
extension loads into this Python's ``sqlite3`` (``connect`` tries); otherwise (e.g. a Python
built without ``enable_load_extension``) the float32 BLOBs are read and ranked with numpy. Both
rank by cosine similarity, ties by chunk id, so they return the same chunks.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError


@dataclass(frozen=True)
class Match:
    chunk_id: str
    score: float  # cosine similarity (vector) or -bm25 (text): higher is better


def connect(path: Path) -> tuple[sqlite3.Connection, bool]:
    """(read-only connection, whether sqlite-vec is loaded). PipelineError when not an export."""
    if not Path(path).is_file():
        raise PipelineError("no such export file", path=path)
    connection = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        connection.execute("SELECT value FROM meta WHERE key = 'export_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise PipelineError(f"not a pipeline SQLite export ({exc})", path=path) from None
    return connection, _load_sqlite_vec(connection)


def _load_sqlite_vec(connection: sqlite3.Connection) -> bool:
    if not hasattr(connection, "enable_load_extension"):
        return False  # this Python's sqlite3 was built without extension loading
    try:
        import sqlite_vec

        connection.enable_load_extension(True)
        sqlite_vec.load(connection)
        connection.enable_load_extension(False)
        return True
    except (ImportError, sqlite3.Error, AttributeError):
        return False


def fts_query(text: str) -> str:
    """``text`` as an FTS5 query matching chunks that hold all its words (each word quoted, so
    FTS5 syntax in a query is taken literally)."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in text.split())


def text_search(connection: sqlite3.Connection, text: str, k: int = 10) -> list[Match]:
    """The ``k`` chunks that best match all words of ``text`` (BM25 over title, header path, content)."""
    query = fts_query(text)
    if not query:
        return []
    rows = connection.execute(
        "SELECT c.chunk_id, bm25(document_chunks_fts) AS rank FROM document_chunks_fts "
        "JOIN document_chunks AS c ON c.rowid = document_chunks_fts.rowid "
        "WHERE document_chunks_fts MATCH ? ORDER BY rank, c.chunk_id LIMIT ?",
        (query, k),
    ).fetchall()
    return [Match(chunk_id, -float(rank)) for chunk_id, rank in rows]


def nearest(connection: sqlite3.Connection, vector, k: int = 10, *, use_extension: bool = False) -> list[Match]:
    """The ``k`` chunks whose embeddings have the highest cosine similarity with ``vector``."""
    query = np.asarray(vector, dtype="<f4").reshape(-1)
    if use_extension:
        rows = connection.execute(
            "SELECT chunk_id, 1.0 - vec_distance_cosine(embedding, ?) AS score FROM document_chunks "
            "WHERE embedding IS NOT NULL ORDER BY score DESC, chunk_id LIMIT ?",
            (query.tobytes(), k),
        ).fetchall()
        return [Match(chunk_id, float(score)) for chunk_id, score in rows]
    ids, blobs = [], []
    for chunk_id, blob in connection.execute("SELECT chunk_id, embedding FROM document_chunks WHERE embedding IS NOT NULL"):
        ids.append(chunk_id)
        blobs.append(blob)
    if not ids:
        return []
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), -1)
    if matrix.shape[1] != query.shape[0]:
        raise PipelineError(f"query has {query.shape[0]} dimensions, the export's embeddings {matrix.shape[1]}")
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    scores = (matrix @ query) / np.where(norms == 0, 1.0, norms)
    order = sorted(range(len(ids)), key=lambda r: (-float(scores[r]), ids[r]))[:k]
    return [Match(ids[r], float(scores[r])) for r in order]
