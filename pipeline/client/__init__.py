"""Read a built site from Python: open it by URL or directory, list topics, sample, search.

    >>> from pipeline.client import open_site
    >>> site = open_site("http://127.0.0.1:8000/")          # or open_site("site")
    >>> [t.id for t in site.topics()]
    >>> site.sample("guide/chunking", 3)                    # first 3 chunks of the stripe order
    >>> site.search("how big is a chunk?", k=5)             # prompt matches, then words and meaning fused

See content/guide/clients/python-client.md for its use and docs/ARCHITECTURE.md for the formats and
the browser twin (``client.js``).
"""

from pipeline.client.site import DEFAULT_MAX_DISTANCE, METHODS, Site, embedder_for, open_site
from pipeline.client.transport import DEFAULT_TIMEOUT
from pipeline.siteformat.readerrors import CorruptIndex, FetchFailed, NotASite, NotFound, SiteError
from pipeline.siteformat.records import Chunk, ChunkRef, Document, Hit, Keyword, Node, TopicIndex
from pipeline.siteformat.vectors import VectorFormatError

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "DEFAULT_TIMEOUT",
    "METHODS",
    "Chunk",
    "ChunkRef",
    "CorruptIndex",
    "Document",
    "FetchFailed",
    "Hit",
    "Keyword",
    "Node",
    "NotASite",
    "NotFound",
    "Site",
    "SiteError",
    "TopicIndex",
    "VectorFormatError",
    "embedder_for",
    "open_site",
]
