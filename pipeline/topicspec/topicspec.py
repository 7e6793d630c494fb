"""TopicSpec: chunk manifests -> embeddings (cached) -> similarities, keywords, prompt hashes and
chunk context -> ``topic-spec.md``.

``topic-spec.md`` is for people (tables) and for the next stage: its data block (a fenced JSON
block after the marker comment, ``topicspec/specfile.py``) is what IndexTool reads. Only chunks and questions the cache
does not hold are embedded, in one batch for the whole site; nothing imports torch when the
cache holds them all. Per topic (a directory with chunked documents):

- keywords: the author's ``_keywords/words.md``, else a generated one (``topicspec/extract.py``);
- prompt hashes: ``qa-pairs.md`` questions attached to chunks (``topicspec/questions.py``,
  ``topicspec/prompts.py``);
- context: position, neighbours' summaries and related chunks (``topicspec/records.py``,
  ``topicspec/context.py``).

This module runs the stage (``run_spec``, or ``start_spec`` / ``finish_spec`` / ``wait_spec`` in
a build) and writes each page whose inputs changed; its parts, one module a job:
``topicspec/topicinputs.py`` (a topic's inputs, ``check_topic_inputs``), ``topicspec/topicgather.py`` (the
topics with their vectors: cache, encoding, cache writes), ``topicspec/keywordtables.py`` (each
topic's keyword table) and ``topicspec/topicdata.py`` (a page's data block and its inputs' digest).
The names other code imports from here stay importable here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from pipeline.blas import numpy_blas, one_thread
from pipeline.chunking.tool import manifest_field
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.executor import Executor
from pipeline.fsutil import require_dir, write_text_atomic
from pipeline.handoff import BuildHandoff
from pipeline.reuse.state import BuildState, Digest
from pipeline.siteformat.tree import TOPIC_SPEC_FILE, document_key, site_dirs
from pipeline.topicspec.context import related, related_update, row_keys
from pipeline.topicspec.keywordtables import keyword_tables
from pipeline.topicspec.specfile import SPEC_DIR, load_template, pages_intact, render_topic_spec
from pipeline.topicspec.textmemo import keep_topic_text, memo_topic_text
from pipeline.topicspec.topicdata import TopicText, topic_data, topic_digest, topic_text, unvectored_specs
from pipeline.topicspec.topicgather import QUESTIONS_STRATEGY, Gathered, collect_topics, gather_topics
from pipeline.topicspec.topicinputs import SpecReport, Topic, check_topic_inputs
from pipeline.vault.graph import authored_links
from pipeline.vault.mode import vault_config

__all__ = [
    "QUESTIONS_STRATEGY", "Gathered", "SpecReport", "StartedSpec", "Topic", "TopicText", "TopicVectors", "abandon_spec",
    "check_topic_inputs", "collect_topics", "finish_spec", "gather_topics", "published_vectors", "release_spec",
    "run_spec", "spec_model", "start_spec", "topic_data", "topic_digest", "topic_text", "wait_spec",
]


TopicVectors = tuple[str, list[tuple[str, np.ndarray]]]
"""(model, [(document stem, its chunk vectors in index order)]): publish's ``topic_vectors``."""


def run_spec(
    site: Path,
    config: SiteConfig,
    embedder: Embedder,
    *,
    progress: bool = True,
    state: BuildState | None = None,
    executor: Executor | None = None,
    handoff: BuildHandoff | None = None,
) -> SpecReport:
    """Write ``topic-spec.md`` in every directory of ``site`` that has chunked documents.

    Also writes ``_keywords/words.md`` (generated, marked) where a topic has none of its own,
    and removes a generated one from a directory that no longer has documents. Bad keyword
    tables and question files raise PipelineError before any model time is spent. Chunks and
    questions the cache does not hold are embedded in one batch; none missing, no model.

    With ``state`` (a build), generated tables and topic pages whose inputs are unchanged since
    the previous build are not computed again (``reuse/state.py``). ``handoff``: see ``start_spec``.
    """
    started = start_spec(site, config, embedder, progress=progress, state=state, executor=executor, handoff=handoff)
    try:
        report = finish_spec(started)
        wait_spec(started)
    except BaseException:
        abandon_spec(started)
        raise
    return report


@dataclass
class StartedSpec:
    """A spec stage whose inputs are read and whose encoding runs (``start_spec``)."""

    site: Path
    config: SiteConfig
    embedder: Embedder
    state: BuildState
    gathered: Gathered
    progress: bool = True


def start_spec(
    site: Path,
    config: SiteConfig,
    embedder: Embedder,
    *,
    progress: bool = True,
    state: BuildState | None = None,
    executor: Executor | None = None,
    handoff: BuildHandoff | None = None,
) -> StartedSpec:
    """``run_spec`` up to the encoding, which runs in the background with a local executor
    (``gather_topics``) until ``finish_spec``; on failure in between, ``abandon_spec``.
    ``handoff`` (a build, ``handoff.py``): its ``manifests`` and ``texts`` stand in for the
    chunk manifests and files; handed both, this reads no chunk file of a document chunked now."""
    state = state if state is not None else BuildState()
    handoff = handoff or BuildHandoff()
    require_dir(site, "site")
    # Run alone on a copy of a vault (``pipeline spec``), "auto" is decided here as the chunking
    # stage decided it (``plan_chunks``): else the notes' authored links were left out.
    config = vault_config(site, config)
    gathered = gather_topics(site, config, embedder, SpecReport(), progress=progress, executor=executor,
                             manifests=handoff.manifests, texts=handoff.texts, state=state)
    return StartedSpec(site, config, embedder, state, gathered, progress)


def abandon_spec(started: StartedSpec) -> None:
    """A build failed between ``start_spec`` and ``wait_spec``: stop the encoding, let the cache
    writes end (neither's error raised)."""
    started.gathered.abandon()


def wait_spec(started: StartedSpec) -> None:
    """Wait for the cache entries ``finish_spec`` left to a background thread (raises what failed
    there); anything that reads the cache (publish: ``_embeddings.bin``) comes after."""
    started.gathered.wait_written()


def published_vectors(started: StartedSpec, dir_rel: str, read: Callable[[str], TopicVectors | None]) -> TopicVectors | None:
    """What publish writes into ``dir_rel``'s ``_embeddings.bin`` (``finish_spec`` done): the
    topic's vectors as this build holds them, or ``read(dir_rel)`` (publish's ``topic_vectors``,
    which reads the embedding cache) for a topic with a vector not in memory, after the cache
    writes ended, and at once for a directory without documents (nothing of the cache read).

    The same values ``read`` returns: the cache stores and reads float32 exactly, and a topic
    whose vectors are all held has none to heal. So a cold build's new vectors are not read
    back from ~1,000 cache files, and the cache writes overlap publish."""
    topic = started.gathered.topics.get(dir_rel)
    if topic is None or not topic.docs:
        return read(dir_rel)
    documents = []
    for doc in topic.docs:
        vectors = doc.__dict__.get("vectors")  # loaded by this build (a cached_property's value), else not read now
        if vectors is None or any(v is None for v in vectors):
            wait_spec(started)  # ``read`` reads the cache: after what this build writes there
            return read(dir_rel)
        name = document_key(manifest_field(doc.record, "source"))
        documents.append((name, np.vstack(vectors).astype(np.float32, copy=False) if vectors else np.zeros((0, 0), np.float32)))
    return started.embedder.name, documents


def spec_model(started: StartedSpec) -> str | None:
    """The model every ``topic-spec.md`` of the site names once ``finish_spec`` is done (a kept
    page too: the model is among its inputs), None when the site has no topic."""
    return started.embedder.name if started.gathered.topics else None


def release_spec(started: StartedSpec) -> None:
    """Drop the topics and their vectors (a whole site's worth: at 100k chunks, hundreds of MB a
    later stage should not hold alongside its own). The cache writes may still run (they hold
    what they have still to write, by then the entries of the encoding's last block or so):
    ``wait_spec`` before the build ends."""
    started.gathered.topics = {}


def finish_spec(
    started: StartedSpec, *, while_encoding: Callable[[Iterator[tuple[str, list[dict]]]], None] | None = None
) -> SpecReport:
    """The rest of ``run_spec``: keyword tables (while the encoding runs: they need only the
    chunk spans), then the vectors, the cache entries and each ``topic-spec.md``.
    ``while_encoding`` (a build) is called while the encoding runs, with (directory, document
    specs as far as they need no vector: ``topicdata.unvectored_specs``) of each topic being
    encoded, made as it reads them (it may stop early)."""
    site, config, embedder, state = started.site, started.config, started.embedder, started.state
    gathered = started.gathered
    report = gathered.report
    try:
        tables = keyword_tables(site, gathered.topics, report, state)
        # While the encoding runs: what the pages of the topics being encoded (they will be
        # written: their vectors are new) need that does not depend on the vectors.
        texts = {}
        if gathered.encoding is not None:
            load_template()
            numpy_blas()  # found once per process (for one_thread below)
            texts = {
                dir_rel: memo_topic_text(topic, tables[dir_rel], state.memo)
                for dir_rel, topic in gathered.topics.items()
                if any(doc.vectors_digest is None for doc in topic.docs)
            }
            if while_encoding is not None and texts:
                while_encoding((dir_rel, unvectored_specs(gathered.topics[dir_rel], text)) for dir_rel, text in texts.items())
        topics = gathered.finish()
    except BaseException:
        gathered.abandon()  # keyword extraction failed: the encoding is not waited for
        raise
    with one_thread():  # small matrix products (pipeline/blas.py)
        _write_pages(started, topics, tables, texts)
    return report


def _write_pages(started: StartedSpec, topics: dict[str, Topic], tables: dict, texts: dict[str, TopicText]) -> None:
    """``finish_spec``'s ``topic-spec.md`` and document pages (``_spec/``) of every topic whose
    inputs changed; removes those of directories without documents, and pages of documents gone."""
    site, config, embedder, state = started.site, started.config, started.embedder, started.state
    gathered = started.gathered
    report = gathered.report
    # a vault's authored links, both ways: a note's backlinks are an input of its topic's page
    graph = authored_links((doc.source, doc.manifest["title"], doc.manifest.get("links"))
                           for topic in topics.values() for doc in topic.docs) if config.vault is True else {}
    for dir_rel in site_dirs(site):
        target = site / dir_rel / TOPIC_SPEC_FILE
        topic = topics.get(dir_rel)
        if topic is None:
            if target.exists():
                target.unlink()
                report.removed.append(target.relative_to(site).as_posix())
            report.removed += _remove_pages(site, dir_rel, set())
            continue
        report.chunks += topic.chunks
        report.questions += len(topic.questions)
        report.topics += 1
        digest = topic_digest(topic, tables[dir_rel], embedder.name, config.related_k)
        authored = {doc.source: graph[doc.source] for doc in topic.docs if doc.source in graph} if graph else {}
        if authored:
            digest = Digest(digest, authored).hex()
        related_key = state.memo.key(RELATED_MEMO, dir_rel, config.related_k) if state.memo is not None else None
        if state.reuse("topics", dir_rel, digest, lambda e: _pages_intact(target.parent, e)) is not None:
            if related_key is not None:
                state.memo.keep(RELATED_MEMO, related_key)  # for the topic's next edit
            keep_topic_text(state.memo, topic, tables[dir_rel])
            continue
        _heal_vectors(topic, embedder, progress=started.progress, before_store=gathered.wait_written)
        spans_text = texts.pop(dir_rel, None)
        if spans_text is None:  # a topic not being encoded (a document removed, a keyword table changed)
            spans_text = memo_topic_text(topic, tables[dir_rel], state.memo)
        pages = render_topic_spec(topic_data(topic, tables[dir_rel], embedder.name, config.related_k, text=spans_text,
                                             related_of=_related_memo(state.memo, related_key, config.related_k),
                                             authored=authored))
        for rel, page in pages.items():
            report.written += write_text_atomic(site / dir_rel / rel, page)
        report.removed += _remove_pages(site, dir_rel, set(pages))
        state.put("topics", dir_rel, digest, data=pages[TOPIC_SPEC_FILE].encode("utf-8"))


def _pages_intact(folder: Path, entry: dict) -> dict | None:
    """``{"pages": fresh stamps}`` when the topic's ``topic-spec.md`` still hashes to the entry's
    ``output`` and its document pages are still those listed (the topic page read once for both)."""
    output = entry.get("output")
    pages = pages_intact(folder, entry.get("pages"), topic_xxh64=output) if isinstance(output, str) else None
    return None if pages is None else {"pages": pages}


def _remove_pages(site: Path, dir_rel: str, keep: set[str]) -> list[str]:
    """Remove the document pages (``_spec/*``) of ``dir_rel`` not in ``keep`` (paths relative to
    the topic's folder), and the folder once empty; returns what was removed, site-relative."""
    folder = site / dir_rel / SPEC_DIR
    if not folder.is_dir():
        return []
    removed = []
    for path in sorted(folder.iterdir()):
        if f"{SPEC_DIR}/{path.name}" not in keep and path.is_file() and not path.name.startswith("."):
            path.unlink()
            removed.append(path.relative_to(site).as_posix())
    if not keep and not any(folder.iterdir()):
        folder.rmdir()
    return removed


RELATED_MEMO = "related-topic"  # reuse/memo.py: each topic's chunk vector keys and their related lists


def _related_memo(memo, key: str | None, k: int) -> Callable[[np.ndarray], list[list[tuple[int, float]]]]:
    """``context.related(vectors, k)`` of a topic, updated from the lists the memo holds for the
    topic's previous vectors (``context.related_update``: one edit in a topic of n chunks costs
    O(n) instead of O(n^2); 27 s of a 52 s one-edit rebuild of 10,000 documents in one folder),
    and stored for the next build."""

    def related_of(vectors: np.ndarray) -> list[list[tuple[int, float]]]:
        if key is None:  # no memo
            return related(vectors, k)
        keys = row_keys(vectors)
        previous = memo.get(RELATED_MEMO, key)
        if isinstance(previous, tuple) and len(previous) == 2:  # ``related_update`` checks the rest
            lists = related_update(vectors, k, keys, previous)
        else:
            lists = related(vectors, k, keys)
        memo.put(RELATED_MEMO, key, (keys, lists))
        return lists

    return related_of


def _heal_vectors(topic: Topic, embedder: Embedder, *, progress: bool, before_store=None) -> None:
    """Embed again the vectors of ``topic`` that the cache confirmed by metadata but that failed
    their check when read (``EmbeddingCache._read_entry`` warned), and store them whole.
    ``before_store``: called before the first store (waits for other writers of the cache)."""
    for doc in topic.docs:
        vectors = doc.vectors
        missing = [i for i, v in enumerate(vectors) if v is None]
        if not missing:
            continue
        if before_store is not None:
            before_store()
        fresh = embedder.embed([doc.texts[i] for i in missing], progress=progress)
        for i, vector in zip(missing, fresh):
            vectors[i] = vector
        doc.cache.store(doc.source, doc.file_hash, doc.hashes, vectors)
