"""The topics of a site with every chunk and question vector: read from the cache, the rest embedded and cached.

One job: ``gather_topics`` reads each directory's manifests, author's keyword table and questions
(``topicspec/topicinputs.py``), takes the vectors the embedding cache holds (an entry whose build-state
stamps are the recorded ones is confirmed without being read: ``_entry_digest``) and starts
encoding the rest in one batch for the whole site; ``Gathered.finish`` completes it and stores
the new vectors in the cache (on a background thread: ``wait_written``). ``collect_topics`` does
both. Nothing imports torch when the cache holds every vector. It also removes generated keyword
tables of directories that lost their documents.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from pipeline.background import Serial
from pipeline.chunking.tool import manifest_field, read_manifests
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.cache import EmbeddingCache, content_hash, vectors_digest
from pipeline.embedding.executor import Encoding, Executor, LocalExecutor
from pipeline.quiet import info
from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, Digest
from pipeline.siteformat.tree import KEYWORDS_FILE, QUESTIONS_FILE, site_dirs
from pipeline.topicspec.keywords import is_generated, load_keywords
from pipeline.topicspec.questions import load_questions
from pipeline.topicspec.topicinputs import Doc, SpecReport, Topic, source_rel
from pipeline.wording import counted


QUESTIONS_STRATEGY = "questions"  # the embedding cache's "strategy" folder for qa-pairs.md questions


def collect_topics(
    site: Path,
    config: SiteConfig,
    embedder: Embedder,
    report: SpecReport | None = None,
    *,
    progress: bool = True,
    executor: Executor | None = None,
    manifests: dict[str, list[dict]] | None = None,
    state: BuildState | None = None,
) -> dict[str, Topic]:
    """Every topic of ``site`` with its chunk and question vectors, from the cache or embedded
    now (in one batch) and then cached. Validates keyword tables and question files first.
    Removes generated keyword tables of directories that lost their documents. With ``state``,
    a cache entry whose stamps are the ones recorded is confirmed without reading it
    (``_entry_digest``)."""
    gathered = gather_topics(site, config, embedder, report, progress=progress, executor=executor, manifests=manifests,
                             state=state)
    try:
        topics = gathered.finish()
        gathered.wait_written()
    except BaseException:
        gathered.abandon()
        raise
    return topics


@dataclass
class Gathered:
    """The topics of a site with the vectors the cache holds; ``finish`` adds the rest, embedded
    by ``encoding`` (started by ``gather_topics``: in the background for a local executor, so
    the caller can write files and extract keywords meanwhile), and stores them in the cache
    (in the background too: ``wait_written``). With a local executor a document's cache entry
    is written as soon as its last vector arrives (``_arrived``), while the rest encodes."""

    topics: dict[str, Topic]
    caches: dict[str, EmbeddingCache]
    questions_cache: EmbeddingCache
    report: SpecReport
    missing: list = field(default_factory=list)  # (vector list, index) of each text to embed, in order
    owners: list = field(default_factory=list)  # the Doc of each text to embed (None: a question), in that order
    encoding: Encoding | None = None
    writing: Serial | None = None  # the cache entries being written (``start``, ``finish``)
    left: dict[int, int] = field(default_factory=dict)  # id(doc) -> how many of its vectors are still to come
    state: BuildState | None = None  # where ``finish`` records the digests of the entries it makes

    def start(self, executor: Executor, embedder: Embedder, texts: list[str], *, progress: bool) -> None:
        """Encode ``texts`` (those of ``missing``, in order) and store each new document's entry
        in the cache as soon as it has every vector: at once for one whose vectors the cache
        held under other entries (``EmbeddingCache.lookup`` reuses them by content)."""
        self.writing = Serial(name="pipeline-cache-write")
        for doc in self.owners:
            if doc is not None:
                self.left[id(doc)] = self.left.get(id(doc), 0) + 1
        for t in self.topics.values():
            for doc in t.docs:
                if not doc.stored and id(doc) not in self.left:
                    self._hand_over(doc)
        self.encoding = Encoding(executor, embedder, texts, progress=progress, on_block=self._arrived)

    def _arrived(self, block: list[int], rows: np.ndarray) -> None:
        """The encoding's thread, after each block: the vectors into their places, and the
        entry of every document now complete to the writing thread (a file's bytes do not
        depend on when it is written, and ``finish`` reads the vectors only after the last)."""
        for j, index in enumerate(block):
            target, i = self.missing[index]
            target[i] = rows[j]
            doc = self.owners[index]
            if doc is not None:
                self.left[id(doc)] -= 1
                if self.left[id(doc)] == 0:
                    self._hand_over(doc)

    def _hand_over(self, doc: Doc) -> None:
        """``doc``'s entry to the writing thread: what is written, not the document (its parsed
        manifest), which a writer lagging behind the build would keep past ``release_spec``."""
        doc.stored = True  # the writing thread stores it before the last task (``finish``) runs
        self.writing.add(partial(doc.cache.store, doc.source, doc.file_hash, doc.hashes, doc.vectors))

    def finish(self) -> dict[str, Topic]:
        """Every topic with all its vectors. The cache entries of what was embedded that are not
        written yet are written by a background thread (file creation, mostly in the kernel,
        overlaps the topic pages); ``wait_written`` before anything reads the cache."""
        if self.encoding is not None:
            for (target, i), vector in zip(self.missing, self.encoding.result()):
                if target[i] is None:  # an executor that does not call ``on_block``
                    target[i] = vector
            self.encoding = None
        # What placed the vectors holds every embedded document (its manifest, its vectors):
        # dropped now, so that ``release_spec`` (which empties ``topics``) frees them.
        self.missing, self.owners, self.left = [], [], {}
        for t in self.topics.values():
            for doc in t.docs:
                if doc.vectors_digest is None:
                    doc.vectors_digest = vectors_digest(doc.vectors)
                    # recorded as a rebuild records it: the state's bytes do not depend on the cache's history
                    if self.state is not None:
                        key = _vectors_key(doc.cache, doc.file_hash, doc.hashes)
                        self.state.put("vectors", doc.source, key, vectors_xxh64=doc.vectors_digest)
        for cache in self.caches.values():
            self.report.cached += cache.stats.hits
        if self.writing is None:
            self.writing = Serial(name="pipeline-cache-write")
        # What the last task needs, taken now (``release_spec`` may empty ``self.topics`` before
        # the writing thread reaches it), and no more than that: holding the topics, it held every
        # document (manifest, vectors) until the writes ended, past ``release_spec`` when they lag.
        kept, unstored, questions = [], [], []
        for t in self.topics.values():
            for doc in t.docs:
                if doc.stored:  # found, or written by a task handed over before
                    kept.append((doc.cache, doc.source, doc.file_hash))
                else:  # an executor that does not call ``on_block``
                    unstored.append((doc.cache, doc.source, doc.file_hash, doc.hashes, doc.vectors))
            if t.questions:
                hashes = [content_hash(q.text) for q in t.questions]
                questions.append((source_rel(t.dir_rel, QUESTIONS_FILE), t.questions_sha, hashes, t.question_vectors))
        self.writing.add(partial(self._write, kept, unstored, questions))
        self.writing.close()
        return self.topics

    def _write(self, kept: list[tuple[EmbeddingCache, str, str]], unstored: list[tuple], questions: list[tuple]) -> None:
        """Store what was embedded and is not stored yet, point the index at what was found;
        only the writing thread changes the caches until ``wait_written`` returns."""
        for cache, source, file_hash in kept:
            cache.keep(source, file_hash)
        for cache, *entry in unstored:
            cache.store(*entry)
        for source, questions_sha, hashes, vectors in questions:
            self.questions_cache.store(source, questions_sha, hashes, vectors)
        # Nothing is pruned here: entries this build did not use belong to other sites and earlier
        # builds (embedding/cache_admin.py removes entries by budget).
        for cache in self.caches.values():
            cache.save()
        self.questions_cache.save()

    def wait_written(self) -> None:
        """Wait for ``finish``'s cache writes; raises what failed there."""
        if self.writing is not None:
            writing, self.writing = self.writing, None
            writing.wait()

    def abandon(self) -> None:
        """After a failure: stop the encoding (after the block it is in) and let the cache
        writes handed over so far end (an entry is written whole or not at all: a complete
        document's vectors are kept for the next build), raising neither's error."""
        if self.encoding is not None:
            self.encoding.cancel()
            self.encoding = None
        if self.writing is not None:
            self.writing.join()
            self.writing = None


def gather_topics(
    site: Path,
    config: SiteConfig,
    embedder: Embedder,
    report: SpecReport | None = None,
    *,
    progress: bool = True,
    executor: Executor | None = None,
    manifests: dict[str, list[dict]] | None = None,
    texts: dict[str, dict[str, str]] | None = None,
    state: BuildState | None = None,
) -> Gathered:
    """``collect_topics`` up to the encoding, which it starts (``Gathered.finish`` completes it).
    ``texts``: each directory's chunk file texts by href, as ``write_chunks`` writes or wrote
    them (a build has them from its plans): the chunk files are then not read, so they may be
    written while the encoding runs."""
    report = report if report is not None else SpecReport()
    topics: dict[str, Topic] = {}
    caches: dict[str, EmbeddingCache] = {}
    questions_cache = EmbeddingCache(config.cache_dir, QUESTIONS_STRATEGY, embedder.name)
    for dir_rel in site_dirs(site):
        dir_manifests = read_manifests(site, dir_rel) if manifests is None else manifests.get(dir_rel, [])
        if not dir_manifests:
            _remove_generated_table(site, dir_rel, report)
            continue
        table_path = site / dir_rel / KEYWORDS_FILE
        table = None if is_generated(table_path) or not table_path.is_file() else load_keywords(table_path)
        questions_path = site / dir_rel / QUESTIONS_FILE
        questions = load_questions(questions_path)
        topic = Topic(dir_rel, [], table, questions, [])
        if questions:
            topic.questions_sha = hashlib.sha256(questions_path.read_bytes()).hexdigest()[:16]
            topic.question_vectors = questions_cache.lookup(
                source_rel(dir_rel, QUESTIONS_FILE), topic.questions_sha, [content_hash(q.text) for q in questions]
            )
        for manifest in dir_manifests:
            strategy_key = manifest_field(manifest, "strategy_key")
            if strategy_key not in caches:  # read each cache's index.json once
                caches[strategy_key] = EmbeddingCache(config.cache_dir, strategy_key, embedder.name)
            doc = Doc(site, dir_rel, manifest, caches[strategy_key])
            doc.vectors_digest = _entry_digest(doc, state)
            if doc.vectors_digest is None and texts is not None:
                known = texts.get(dir_rel, {})
                hrefs = [c["href"] for c in doc.manifest["chunks"]]
                if all(h in known for h in hrefs):  # a reused plan's texts are its files in SITE
                    # the cached_property's value; a document the cache holds keeps none in memory
                    doc.texts = [known[h] for h in hrefs]
            topic.docs.append(doc)
        topics[dir_rel] = topic

    missing = [
        (doc, doc.vectors, i, doc.texts[i])
        for t in topics.values()
        for doc in t.docs
        if doc.vectors_digest is None
        for i, v in enumerate(doc.vectors)
        if v is None
    ]
    report.embedded = len(missing)
    missing_q = [(t.question_vectors, i, q.text) for t in topics.values() for i, q in enumerate(t.questions) if t.question_vectors[i] is None]
    report.questions_embedded = len(missing_q)
    gathered = Gathered(topics, caches, questions_cache, report, state=state)
    for t in topics.values():
        for doc in t.docs:
            if doc.vectors_digest is None:  # its entry is to be written (``Gathered``)
                doc.stored = False
    if missing or missing_q:
        what = counted(len(missing), "chunk") + (f" and {counted(len(missing_q), 'question')}" if missing_q else "")
        info(f"embedding {what} with {embedder.name}")
        gathered.missing = [(target, i) for _, target, i, _ in missing] + [(target, i) for target, i, _ in missing_q]
        gathered.owners = [doc for doc, _, _, _ in missing] + [None] * len(missing_q)
        to_embed = [text for _, _, _, text in missing] + [text for _, _, text in missing_q]
        gathered.start(executor or LocalExecutor(), embedder, to_embed, progress=progress)
    return gathered


def _entry_digest(doc: Doc, state: BuildState | None) -> str | None:
    """``EmbeddingCache.entry_digest`` of ``doc``'s entry, or what the previous build recorded
    for it (state section ``vectors``, keyed on the source, the entry and its chunk hashes) while
    the entry's folder and its ``metadata.json`` keep their stamps (``reuse/stamps.py``): an entry
    is written whole into a new folder and removed whole, and a chunk file added to or removed
    from its folder changes the folder's stamp, so the recorded facts (the metadata's chunk
    hashes and ``vectors_xxh64``, each chunk file present) still hold. The stamps are taken
    before the metadata is read; vectors are checked against the digest whenever they are read."""
    cache, file_hash, hashes = doc.cache, doc.file_hash, doc.hashes  # properties: each asked once (10,000 documents)
    if state is None:
        return cache.entry_digest(doc.source, file_hash, hashes)
    folder = os.path.join(cache.dir, file_hash)
    folder_stat, meta_stat = stamps.stat(folder), stamps.stat(os.path.join(folder, "metadata.json"))
    key = _vectors_key(cache, file_hash, hashes)

    def intact(entry: dict) -> dict | None:  # the entry's folder and metadata keep their stamps
        unchanged = stamps.matches(folder_stat, entry.get("folder")) and stamps.matches(meta_stat, entry.get("meta"))
        return {} if unchanged and isinstance(entry.get("vectors_xxh64"), str) else None

    source = doc.source
    known = state.reuse("vectors", source, key, intact)
    if known is not None:
        cache.confirm(file_hash, len(hashes))
        return known["vectors_xxh64"]
    digest = cache.entry_digest(source, file_hash, hashes)
    folder_stamp, meta_stamp = stamps.recordable(folder_stat), stamps.recordable(meta_stat)
    if digest is not None:  # recorded with or without stamps: the state file holds no stamps
        entry_stamps = {"folder": folder_stamp, "meta": meta_stamp} if folder_stamp and meta_stamp else {}
        state.put("vectors", source, key, vectors_xxh64=digest, **entry_stamps)
    return digest


def _vectors_key(cache: EmbeddingCache, file_hash: str, hashes: list[str]) -> str:
    """The key of a document's cache entry in the state's ``vectors`` section."""
    return Digest(cache.strategy_key, cache.model, file_hash, hashes).hex()


def _remove_generated_table(site: Path, dir_rel: str, report: SpecReport) -> None:
    path = site / dir_rel / KEYWORDS_FILE
    if is_generated(path):
        path.unlink()
        report.removed.append(path.relative_to(site).as_posix())
        if not any(path.parent.iterdir()):
            path.parent.rmdir()
