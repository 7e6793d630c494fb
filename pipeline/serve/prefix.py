"""``pipeline serve --prefix /docs/``: serve a site built with ``--base-url /docs/`` at that path,
so its absolute links resolve as on the real host."""

from __future__ import annotations

from urllib.parse import urlsplit

from pipeline.errors import PipelineError


def normalize_prefix(prefix: str | None) -> str:
    """``docs``, ``/docs`` or ``/docs/`` -> ``/docs/``; None or ``/`` -> ``/``. A full URL
    (``https://host/docs/``) keeps only its path, like a base_url does."""
    path = urlsplit(prefix or "/").path or "/"
    if "\\" in path or any(part in (".", "..") for part in path.split("/")):
        raise PipelineError(f"prefix {prefix!r} must be a plain URL path such as /docs/")
    path = "/" + path.strip("/") + "/"
    return "/" if path == "//" else path


def strip_prefix(prefix: str, target: str) -> str | None:
    """The request target ``target`` as the site root sees it, or None when it is outside
    ``prefix`` (then 404). ``/docs`` (no slash) maps to the root, which then redirects to
    ``/docs/``; the query string is kept."""
    if prefix == "/":
        return target
    parts = urlsplit(target)
    path = parts.path
    if path == prefix[:-1]:
        rest = "/"
    elif path.startswith(prefix):
        rest = path[len(prefix) - 1 :]
    else:
        return None
    return rest + (f"?{parts.query}" if parts.query else "")
