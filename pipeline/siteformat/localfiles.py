"""A site's files read from a local directory by site-relative path (``LocalTransport``), and
what every transport provides (``Transport``; over HTTP: ``pipeline.client.transport``). A
transport knows nothing of HAL: it maps ``guide/index.json`` to bytes or raises a ``SiteError``
naming the exact file. A path that would leave the site directory (``..``, a symlink pointing
outside) raises ``NotFound`` like a missing file; ``requests`` counts ``get`` calls."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Protocol

from pipeline.siteformat.readerrors import FetchFailed, NotFound


class Transport(Protocol):
    root: str  # the site's root as given: a URL ending in "/" or a directory path
    requests: int  # number of get() calls so far

    def locate(self, rel: str) -> str:
        """The absolute URL or file path of site-relative ``rel`` (for hits and errors)."""
        ...

    def get(self, rel: str) -> bytes: ...


def clean_rel(rel: str, *, backslash: bool = False) -> str | None:
    """``rel`` normalised (no ``.``/``..`` segments, no leading ``/``), or None if it leaves the site.
    A backslash is refused (a browser reads a raw one in a URL as ``/``) unless ``backslash``:
    ``rel`` was decoded from an href's ``%5C``, a character of a file's name (``back\\slash.md``)."""
    if ("\\" in rel and not backslash) or "\x00" in rel:
        return None
    norm = posixpath.normpath("/" + rel.lstrip("/"))
    return norm.lstrip("/") if norm != "/" else ""


class LocalTransport:
    """Files under a local directory; nothing outside it is ever read."""

    def __init__(self, root: Path):
        self.dir = Path(root).resolve()
        self.root = str(self.dir)
        self.requests = 0
        self.bytes = 0  # bytes read, as HttpTransport counts bytes transferred

    def locate(self, rel: str) -> str:
        """``str(self.dir.joinpath(*rel's segments))`` (empty and ``.`` segments dropped, as
        pathlib drops them), without a Path per call: a site's reader locates every chunk."""
        return os.path.join(self.root, *[p for p in rel.split("/") if p and p != "."])

    def get(self, rel: str) -> bytes:
        self.requests += 1
        where = self.locate(rel)
        path = Path(where)
        try:
            real = path.resolve(strict=True)
        except (FileNotFoundError, RuntimeError, OSError):
            raise NotFound("no such file", where) from None
        if not real.is_relative_to(self.dir) or not real.is_file():
            raise NotFound("no such file", where)
        try:
            data = real.read_bytes()
            self.bytes += len(data)
            return data
        except OSError as exc:
            raise FetchFailed(f"cannot read: {exc.strerror}", where) from None
