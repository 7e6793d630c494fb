"""Where another site generator publishes each document as an HTML page (MkDocs: the
``pipeline.mkdocs_plugin``), and so each chunk's ``page_url``: the page's URL plus the anchor of
the heading the chunk lies under, as that generator rendered it.

One job, pure: ``PageLocation.chunk_urls`` maps a parsed document's chunks to URLs. The anchors
are the generator's, never computed here (no slugify): a heading it gave no anchor to, or that
could not be matched to one of its headings, leaves the chunk with the page's URL alone.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from pipeline.reuse.state import Digest

if TYPE_CHECKING:  # the configuration imports this module: the markdown parser only where one is parsed
    from pipeline.parsing.markdown import ParsedDocument


_FRAGMENT_SAFE = "-._~!$&'()*+,;=:@/?"  # RFC 3986 fragment characters kept as they are


@dataclass(frozen=True)
class PageLocation:
    """A document's page: ``url`` (absolute: ``/guide/setup/`` or ``https://host/guide/setup/``)
    and ``anchors``, ``(0-based line of a top-level heading block of the source, its id in the
    page)`` in line order."""

    url: str
    anchors: tuple[tuple[int, str], ...] = ()

    def digest(self) -> str:
        """What a chunk plan's fingerprint adds for it: a changed URL or anchor re-plans the
        document (its chunk records carry them)."""
        return Digest(self.url, [list(a) for a in self.anchors]).hex()

    def chunk_urls(self, document: ParsedDocument, starts: list[int]) -> tuple[str, ...]:
        """For each chunk start offset, ``url#id`` of the last heading at or before it, or
        ``url`` when that heading has no anchor (or none precedes it)."""
        anchor_of = dict(self.anchors)
        headings = [(b.start, b.start_line) for b in document.blocks if b.kind == "heading"]
        offsets = [h[0] for h in headings]
        out = []
        for start in starts:
            i = bisect.bisect_right(offsets, start) - 1
            anchor = anchor_of.get(headings[i][1]) if i >= 0 else None
            out.append(f"{self.url}#{quote(anchor, safe=_FRAGMENT_SAFE)}" if anchor else self.url)
        return tuple(out)
