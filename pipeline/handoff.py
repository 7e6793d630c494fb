"""What a build hands a later stage in memory (``BuildHandoff``), instead of the stage reading
back the files an earlier stage wrote or doing again work done while the model encoded.

Every field is optional and none changes an output byte: a stage run alone (the CLI's ``spec``,
``index``, ``publish``; ``build_search_index`` from a test or a benchmark) passes no handoff, reads
the files and does the work itself, and writes the same bytes a build writes. When each field
is made, and what runs meanwhile, is the overlap schedule in ``site/build.py``'s docstring.

Imports nothing of the package at run time (the types are for readers and checkers only), so
every stage may import it without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pipeline.chunking.manifest import ManifestStub
    from pipeline.search.bodies import BodyTerms
    from pipeline.topicspec.topicspec import TopicVectors


@dataclass(frozen=True)
class BuildHandoff:
    """In-memory results a build passes from one stage to a later one; None: not handed, the
    stage reads the site instead. A build makes one for the spec stage (``manifests``,
    ``texts``) and one for publish and its search index (the rest)."""

    manifests: dict[str, list[dict | ManifestStub]] | None = None
    """Spec stage: each directory's chunk manifests as ``chunking.tool.read_manifests`` reads them
    once ``write_chunks`` wrote them (a build: ``manifests_by_dir`` of its plans); a directory
    missing here has none. Not handed: read from the site."""

    texts: dict[str, dict[str, str]] | None = None
    """Spec stage: each directory's chunk file texts by href, the very text ``write_chunks``
    writes or wrote (a build: ``chunk_texts_by_dir``; a reused document's are absent and read
    from its files). Handed, the spec stage reads no chunk file, so they may still be being
    written. Not handed: read from the site."""

    assets: tuple[int, list[str]] | None = None
    """Publish: what ``publish.publish_assets`` returned (files written, removed), the build
    having copied ``_assets/`` already. Not handed: publish copies them."""

    model_files: tuple[int, list[str]] | None = None
    """Publish: what ``browser_model.publish_model_files`` returned, the build having published
    ``_assets/model/`` already from its embedder's name. Not handed: publish does it from the
    model ``topic-spec.md`` names."""

    encoder: tuple[dict, dict[str, bytes] | None] | None = None
    """Publish: what ``static_encoder.site_encoder`` returned for the build's model (the search
    index's static query encoder: manifest entry and files, the files None when the previous
    build's are kept). Not handed (or None: the site has none): publish asks ``site_encoder``
    for the site's model, which gives the same."""

    vectors_of: Callable[[str], TopicVectors | None] | None = None
    """Publish: a directory's vectors for its ``_embeddings.bin`` as the spec stage holds them
    (``topicspec.published_vectors``), the same float32 values publish's ``topic_vectors`` reads
    from the embedding cache. Not handed: read from the cache."""

    release_vectors: Callable[[], None] | None = None
    """Publish: called once, after the last ``_embeddings.bin`` and before the search index, so the
    spec stage's vectors are freed before the index's peak (``topicspec.release_spec``)."""

    bodies: BodyTerms | None = None
    """Search index: chunk texts whose index terms are counted already (``search/bodies.py``):
    the counts the index would make from the chunk files. Not handed: counted from the files."""

    drafts: dict[str, tuple] | None = None
    """Search index: topic shares that need no vector, by ``index.json`` path
    (``search.topicpart.draft_parts``), completed from the final ``index.json``
    (``topicpart.complete_part``): the same shares as made afresh. Not handed: made afresh."""

    prompts: dict[str, tuple[list, list[list[str]]]] | None = None
    """Search index: for the ``drafts`` whose index files the index stage wrote, what completing
    them reads of the document resources (``index.tool.written_prompts``: documents
    ``[[name, chunks]]`` and each chunk's prompt hashes, ~300 bytes a chunk), by ``index.json``
    path; the same values as read back. Not handed (or a topic missing): read from the site."""
