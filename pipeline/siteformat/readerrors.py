"""Errors a site reader raises: each names the URL (or file) it is about.

All are ``PipelineError``s, so the CLI prints them as ``URL: message`` and exits 1.
"""

from __future__ import annotations

from pipeline.errors import PipelineError


class SiteError(PipelineError):
    """Something about a site could not be read; ``url`` is the address involved."""

    def __init__(self, message: str, url: str):
        self.url = url
        super().__init__(message, path=url)


class NotASite(SiteError):
    """The address has no ``index.json``, or it is not a pipeline site's root index."""


class NotFound(SiteError):
    """A file the site links to does not exist (HTTP 404/410, or no such file)."""


class FetchFailed(SiteError):
    """The transfer failed: timeout, refused connection, HTTP error other than 404, short body."""


class CorruptIndex(SiteError):
    """An ``index.json`` is not valid JSON or lacks a field readers rely on."""


NO_EMBEDDINGS = "no topic publishes embeddings (_embeddings.bin); rebuild the site"
"""The ``embedding`` method's error where a site has no vectors to rank (client.js says the same)."""
