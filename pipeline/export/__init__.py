"""Exports of a built site for databases and retrieval frameworks: ``export_site``.

``pipeline export SITE --format sqlite|jsonl [--out FILE] [--record full|seed002|langchain]``
reads SITE (a directory or URL) like any reader and writes one file; content/reference/index-format/exports.md has the
schemas. Bad input (not a site, a site built by another pipeline version, an existing target
without ``force``) raises PipelineError naming it before anything is written.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.errors import PipelineError

FORMATS = ("sqlite", "jsonl")
SUFFIXES = {"sqlite": ".sqlite", "jsonl": ".jsonl"}


@dataclass(frozen=True)
class ExportReport:
    out: str
    documents: int
    chunks: int
    with_embeddings: int


def default_out(location: str, fmt: str) -> Path:
    """``<site folder name>.<sqlite|jsonl>`` in the working directory (``site`` for a URL's root)."""
    if "://" in location:
        name = Path(urlsplit(location).path.rstrip("/")).name or "site"
        name = "site" if name == "index.json" else name
    else:
        path = Path(location)
        name = (path.parent if path.name == "index.json" else path).resolve().name or "site"
    return Path(name + SUFFIXES[fmt])


def export_site(
    location: str, fmt: str = "sqlite", out: str | os.PathLike | None = None, *, record: str = "full",
    force: bool = False, timeout: float = 10.0,
) -> ExportReport:
    """Export the site at ``location`` to ``out`` (``-`` writes JSONL to stdout)."""
    from pipeline.client import open_site
    from pipeline.export.jsonl import RECORDS, jsonl_bytes
    from pipeline.export.source import iter_chunks, read_site

    if fmt not in FORMATS:
        raise PipelineError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if record not in RECORDS:
        raise PipelineError(f"record must be one of {', '.join(RECORDS)}, got {record!r}")
    if fmt == "sqlite" and record != "full":
        raise PipelineError("--record chooses the JSONL record shape; the SQLite export has one schema")
    target = default_out(str(location), fmt) if out is None else (None if str(out) == "-" else Path(out))
    if target is None and fmt == "sqlite":
        raise PipelineError("a SQLite export needs a file: give --out FILE")
    if target is not None:
        if target.is_dir():
            raise PipelineError("the export target is a directory; give a file name", path=target)
        if target.exists() and not force:
            raise PipelineError("the export target exists; pass --force to replace it", path=target)
        if not target.parent.is_dir():
            raise PipelineError("the export target's folder does not exist", path=target.parent)
    export = read_site(open_site(location, timeout=timeout))
    if fmt == "sqlite":
        from pipeline.export.sqlite import write_sqlite

        write_sqlite(export, target)
    else:
        data = jsonl_bytes(export, record)
        if target is None:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            from pipeline.fsutil import write_bytes_atomic

            write_bytes_atomic(target, data)
    chunks = list(iter_chunks(export))
    return ExportReport(
        out="-" if target is None else str(target),
        documents=len(export.documents),
        chunks=len(chunks),
        with_embeddings=sum(c.embedding is not None for c in chunks),
    )
