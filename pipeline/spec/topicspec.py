"""TopicSpec: chunk manifests -> embeddings (cached) -> similarities, keywords, prompt hashes and
chunk context -> ``topic-spec.md``.

``topic-spec.md`` is for people (tables) and for the next stage: its data block (a fenced JSON
block after the marker comment, ``spec/specfile.py``) is what IndexTool reads. Only chunks and questions the cache
does not hold are embedded, in one batch for the whole site; nothing imports torch when the
cache holds them all. Per topic (a directory with chunked documents):

- keywords: the author's ``_keywords/words.md``, else a generated one (``spec/extract.py``);
- prompt hashes: ``qa-pairs.md`` questions attached to chunks (``spec/questions.py``,
  ``spec/prompts.py``);
- context: position, neighbours' summaries and related chunks (``spec/records.py``,
  ``spec/context.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Callable

import numpy as np
import orjson

from pipeline import __version__
from pipeline.background import Serial
from pipeline.blas import numpy_blas, one_thread
from pipeline.chunking.tool import ManifestStub, manifest_field, read_manifests
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.cache import EmbeddingCache, content_hash, vectors_digest
from pipeline.embedding.executor import Encoding, Executor, LocalExecutor
from pipeline.errors import PipelineError
from pipeline.fsutil import read_text, require_dir, write_text_atomic
from pipeline.site.exclude import Exclude
from pipeline.site import stamps
from pipeline.site.memo import Memo
from pipeline.site.state import BuildState, Digest, entry_is_valid, file_hash, output_hash
from pipeline.site.tree import KEYWORDS_FILE, QUESTIONS_FILE, TOPIC_SPEC_FILE, document_key, site_dirs
from pipeline.spec.extract import MAX_KEYWORDS, KeywordExtractor, PhraseStats, TopicCounts, count_topic, render_table
from pipeline.spec.keywords import Keyword, is_generated, keywords_in, load_keywords
from pipeline.spec.prompts import DEFAULT_POLICY, PromptPolicy
from pipeline.spec.questions import Question, load_questions
from pipeline.spec.records import chunk_summaries, document_spec, topic_context
from pipeline.spec.specfile import load_template, render_topic_spec
from pipeline.quiet import info

TopicVectors = tuple[str, list[tuple[str, np.ndarray]]]
"""(model, [(document stem, its chunk vectors in index order)]): publish's ``topic_vectors``."""

QUESTIONS_STRATEGY = "questions"  # the embedding cache's "strategy" folder for qa-pairs.md questions


@dataclass
class SpecReport:
    topics: int = 0
    chunks: int = 0
    embedded: int = 0  # chunks that needed the model
    cached: int = 0
    questions: int = 0
    questions_embedded: int = 0  # questions that needed the model
    keywords_generated: int = 0  # topics whose words.md the KeywordExtractor wrote
    written: int = 0
    removed: list[str] = field(default_factory=list)


@dataclass
class Doc:
    """One chunked document of a topic. Its manifest (when the build did not read it: a
    ``ManifestStub``), chunk texts and vectors are read when first needed: a topic whose inputs
    are unchanged since the last build needs none of them (``topic_digest`` names the manifest
    by ``manifest_digest``, the vectors by ``vectors_digest``)."""

    site: Path
    dir_rel: str
    record: dict | ManifestStub  # the parsed manifest, or what the build state knows of it
    cache: EmbeddingCache
    vectors_digest: str | None = None  # set when the cache holds every vector (``entry_digest``)
    stored: bool = True  # False: embedded by this build, its cache entry still to write

    @cached_property
    def manifest(self) -> dict:
        return self.record.load() if isinstance(self.record, ManifestStub) else self.record

    @property
    def source(self) -> str:
        return _source_rel(self.dir_rel, manifest_field(self.record, "source"))

    @property
    def file_hash(self) -> str:
        return manifest_field(self.record, "source_sha256")[:16]

    @cached_property
    def hashes(self) -> list[str]:
        if isinstance(self.record, ManifestStub):
            return list(self.record.hashes)
        return [c["content_xxh64"] for c in self.manifest["chunks"]]

    @cached_property
    def manifest_digest(self) -> str:
        """xxh64 of the manifest file's bytes (which ``orjson`` writes from the parsed data)."""
        if isinstance(self.record, ManifestStub):
            return self.record.digest
        return output_hash(orjson.dumps(self.record, option=orjson.OPT_INDENT_2) + b"\n")

    @cached_property
    def texts(self) -> list[str]:
        return [_read_chunk(self.site / self.dir_rel / c["href"]) for c in self.manifest["chunks"]]

    @cached_property
    def vectors(self) -> list[np.ndarray | None]:
        """One vector per chunk; None where the cache has none (embedded by ``collect_topics``)."""
        if self.vectors_digest is not None:
            return self.cache.entry_vectors(self.file_hash)
        return self.cache.lookup(self.source, self.file_hash, self.hashes)

    @cached_property
    def spans(self) -> list[str]:
        """Each chunk's exact source span, ``source[start_offset:end_offset]`` of the copied
        source (a chunk file's span may have relocated link destinations: parsing/links.py)."""
        source = self.site / self.source
        if not source.is_file():
            return [_span_text(text, chunk) for text, chunk in zip(self.texts, self.manifest["chunks"])]
        text = read_text(source)
        return [text[c["start_offset"] : c["end_offset"]] for c in self.manifest["chunks"]]


@dataclass
class Topic:
    """One directory with chunked documents, and what the spec stage computes it from."""

    dir_rel: str
    docs: list[Doc]
    table: list[Keyword] | None  # the author's table; None: generate one
    questions: list[Question]
    question_vectors: list[np.ndarray | None]
    questions_sha: str = ""


def check_topic_inputs(root: Path, exclude: Exclude | None = None) -> None:
    """Read every author's keyword table and question file under ``root``; raise PipelineError
    (file and line) on the first bad one. A build calls this on CONTENT before writing anything,
    so bad input never leaves a half-updated site. What ``exclude`` names is never read (it is
    not copied into the site either)."""
    left_out = (lambda rel: exclude.excludes(rel)) if exclude is not None else (lambda rel: False)  # noqa: E731
    for dir_rel in site_dirs(root):
        prefix = f"{dir_rel}/" if dir_rel else ""
        table = root / dir_rel / KEYWORDS_FILE
        if _linked(table) or _linked(table.parent):  # links are never followed (site/confine.py)
            continue
        if table.is_file() and not is_generated(table) and not left_out(prefix + KEYWORDS_FILE):
            load_keywords(table)
        if not _linked(root / dir_rel / QUESTIONS_FILE) and not left_out(prefix + QUESTIONS_FILE):
            load_questions(root / dir_rel / QUESTIONS_FILE)


def _linked(path: Path) -> bool:
    return os.path.islink(path)


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
                    self.writing.add(partial(self._store, doc))
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
                    self.writing.add(partial(self._store, doc))

    def _store(self, doc: Doc) -> None:
        doc.cache.store(doc.source, doc.file_hash, doc.hashes, doc.vectors)
        doc.stored = True

    def finish(self) -> dict[str, Topic]:
        """Every topic with all its vectors. The cache entries of what was embedded that are not
        written yet are written by a background thread (file creation, mostly in the kernel,
        overlaps the topic pages); ``wait_written`` before anything reads the cache."""
        if self.encoding is not None:
            for (target, i), vector in zip(self.missing, self.encoding.result()):
                if target[i] is None:  # an executor that does not call ``on_block`` (Ray)
                    target[i] = vector
            self.encoding = None
        for t in self.topics.values():
            for doc in t.docs:
                if doc.vectors_digest is None:
                    doc.vectors_digest = vectors_digest(doc.vectors)
        for cache in self.caches.values():
            self.report.cached += cache.stats.hits
        if self.writing is None:
            self.writing = Serial(name="pipeline-cache-write")
        # the topics as they are now: ``release_spec`` may empty ``self.topics`` before the
        # writing thread reaches this task (questions' entries would then never be stored)
        self.writing.add(partial(self._write, list(self.topics.values())))
        self.writing.close()
        return self.topics

    def _write(self, topics: list[Topic]) -> None:
        """Store what was embedded and is not stored yet, point the index at what was found;
        only the writing thread changes the caches until ``wait_written`` returns."""
        for t in topics:
            for doc in t.docs:
                if doc.stored:
                    doc.cache.keep(doc.source, doc.file_hash)
                else:
                    self._store(doc)
            if t.questions:
                self.questions_cache.store(
                    _source_rel(t.dir_rel, QUESTIONS_FILE), t.questions_sha, [content_hash(q.text) for q in t.questions], t.question_vectors
                )
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
                _source_rel(dir_rel, QUESTIONS_FILE), topic.questions_sha, [content_hash(q.text) for q in questions]
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
    gathered = Gathered(topics, caches, questions_cache, report)
    for t in topics.values():
        for doc in t.docs:
            if doc.vectors_digest is None:  # its entry is to be written (``Gathered``)
                doc.stored = False
    if missing or missing_q:
        what = f"{len(missing)} chunks" + (f" and {len(missing_q)} questions" if missing_q else "")
        info(f"embedding {what} with {embedder.name}")
        gathered.missing = [(target, i) for _, target, i, _ in missing] + [(target, i) for target, i, _ in missing_q]
        gathered.owners = [doc for doc, _, _, _ in missing] + [None] * len(missing_q)
        to_embed = [text for _, _, _, text in missing] + [text for _, _, text in missing_q]
        gathered.start(executor or LocalExecutor(), embedder, to_embed, progress=progress)
    return gathered


def run_spec(
    site: Path,
    config: SiteConfig,
    embedder: Embedder,
    *,
    progress: bool = True,
    state: BuildState | None = None,
    executor: Executor | None = None,
    manifests: dict[str, list[dict]] | None = None,
) -> SpecReport:
    """Write ``topic-spec.md`` in every directory of ``site`` that has chunked documents.

    Also writes ``_keywords/words.md`` (generated, marked) where a topic has none of its own,
    and removes a generated one from a directory that no longer has documents. Bad keyword
    tables and question files raise PipelineError before any model time is spent. Chunks and
    questions the cache does not hold are embedded in one batch; none missing, no model.

    With ``state`` (a build), generated tables and topic pages whose inputs are unchanged since
    the previous build are not computed again (``site/state.py``). ``manifests``: each
    directory's chunk manifests as ``read_manifests`` would read them (a build has them from its
    plans, ``manifests_by_dir``); None reads them from ``site``.
    """
    started = start_spec(site, config, embedder, progress=progress, state=state, executor=executor, manifests=manifests)
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
    manifests: dict[str, list[dict]] | None = None,
    texts: dict[str, dict[str, str]] | None = None,
) -> StartedSpec:
    """``run_spec`` up to the encoding, which runs in the background with a local executor
    (``gather_topics``) until ``finish_spec``; on failure in between, ``abandon_spec``.
    A build writes its chunk files meanwhile: with ``texts`` (see ``gather_topics``) this reads
    none of them."""
    state = state if state is not None else BuildState()
    require_dir(site, "site")
    gathered = gather_topics(site, config, embedder, SpecReport(), progress=progress, executor=executor,
                             manifests=manifests, texts=texts, state=state)
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


def finish_spec(started: StartedSpec) -> SpecReport:
    """The rest of ``run_spec``: keyword tables (while the encoding runs: they need only the
    chunk spans), then the vectors, the cache entries and each ``topic-spec.md``."""
    site, config, embedder, state = started.site, started.config, started.embedder, started.state
    gathered = started.gathered
    report = gathered.report
    try:
        tables = _keyword_tables(site, gathered.topics, report, state)
        # While the encoding runs: what the pages of the topics being encoded (they will be
        # written: their vectors are new) need that does not depend on the vectors.
        texts = {}
        if gathered.encoding is not None:
            load_template()
            numpy_blas()  # found once per process (for one_thread below)
            texts = {
                dir_rel: topic_text(topic, tables[dir_rel])
                for dir_rel, topic in gathered.topics.items()
                if any(doc.vectors_digest is None for doc in topic.docs)
            }
        topics = gathered.finish()
    except BaseException:
        gathered.abandon()  # keyword extraction failed: the encoding is not waited for
        raise
    with one_thread():  # small matrix products (pipeline/blas.py)
        _write_pages(started, topics, tables, texts)
    return report


def _write_pages(started: StartedSpec, topics: dict[str, Topic], tables: dict, texts: dict[str, TopicText]) -> None:
    """``finish_spec``'s ``topic-spec.md`` of every topic whose inputs changed; removes those of
    directories without documents."""
    site, config, embedder, state = started.site, started.config, started.embedder, started.state
    gathered = started.gathered
    report = gathered.report
    for dir_rel in site_dirs(site):
        target = site / dir_rel / TOPIC_SPEC_FILE
        topic = topics.get(dir_rel)
        if topic is None:
            if target.exists():
                target.unlink()
                report.removed.append(target.relative_to(site).as_posix())
            continue
        report.chunks += sum(len(doc.hashes) for doc in topic.docs)
        report.questions += len(topic.questions)
        report.topics += 1
        digest = topic_digest(topic, tables[dir_rel], embedder.name, config.related_k)
        entry = state.get("topics", dir_rel, digest)
        if entry is not None and file_hash(target) == entry.get("output"):
            state.put("topics", dir_rel, digest, output=entry["output"])
            continue
        _heal_vectors(topic, embedder, progress=started.progress, before_store=gathered.wait_written)
        text = render_topic_spec(topic_data(topic, tables[dir_rel], embedder.name, config.related_k, text=texts.pop(dir_rel, None)))
        report.written += write_text_atomic(target, text)
        state.put("topics", dir_rel, digest, output=output_hash(text.encode("utf-8")))


def _entry_digest(doc: Doc, state: BuildState | None) -> str | None:
    """``EmbeddingCache.entry_digest`` of ``doc``'s entry, or what the previous build recorded
    for it (state section ``vectors``, keyed on the source, the entry and its chunk hashes) while
    the entry's folder and its ``metadata.json`` keep their stamps (``site/stamps.py``): an entry
    is written whole into a new folder and removed whole, and a chunk file added to or removed
    from its folder changes the folder's stamp, so the recorded facts (the metadata's chunk
    hashes and ``vectors_xxh64``, each chunk file present) still hold. The stamps are taken
    before the metadata is read; vectors are checked against the digest whenever they are read."""
    if state is None:
        return doc.cache.entry_digest(doc.source, doc.file_hash, doc.hashes)
    folder = os.path.join(doc.cache.dir, doc.file_hash)
    folder_stat, meta_stat = stamps.stat(folder), stamps.stat(os.path.join(folder, "metadata.json"))
    key = Digest(doc.cache.strategy_key, doc.cache.model, doc.file_hash, doc.hashes).hex()
    known = state.old.get("vectors", {}).get(doc.source)
    if (
        entry_is_valid(known) and known["digest"] == key and isinstance(known.get("vectors_xxh64"), str)
        and stamps.matches(folder_stat, known.get("folder")) and stamps.matches(meta_stat, known.get("meta"))
    ):
        doc.cache.confirm(doc.file_hash, len(doc.hashes))
        state.put("vectors", doc.source, key, vectors_xxh64=known["vectors_xxh64"], folder=known["folder"], meta=known["meta"])
        return known["vectors_xxh64"]
    digest = doc.cache.entry_digest(doc.source, doc.file_hash, doc.hashes)
    folder_stamp, meta_stamp = stamps.recordable(folder_stat), stamps.recordable(meta_stat)
    if digest is not None and folder_stamp and meta_stamp:
        state.put("vectors", doc.source, key, vectors_xxh64=digest, folder=folder_stamp, meta=meta_stamp)
    return digest


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


def topic_digest(
    topic: Topic, table: tuple[str, list[Keyword]], model: str, related_k: int, policy: PromptPolicy = DEFAULT_POLICY
) -> str:
    """Digest of every input of ``topic_data`` (and so of ``topic-spec.md``)."""
    origin, keywords = table
    d = Digest(topic.dir_rel, model, related_k, type(policy).__name__, dataclasses.asdict(policy), origin)
    d.add([[k.name, k.score] for k in keywords], [[q.text, q.line, q.hash] for q in topic.questions])
    for vector in topic.question_vectors:
        d.add(_vector_bytes(vector))
    for doc in topic.docs:
        # The manifest names each chunk's text by its content hash; the cache names the vectors.
        d.add(doc.manifest_digest, doc.vectors_digest)
    return d.hex()


def _vector_bytes(vector: np.ndarray | None) -> bytes:
    if vector is None:
        return b"none"
    array = np.ascontiguousarray(vector)
    return array.dtype.str.encode() + str(array.shape).encode() + array.tobytes()


@dataclass
class TopicText:
    """What ``topic_data`` computes from a topic's chunk spans alone, not its vectors: a build
    computes it for the topics being encoded while the encoding runs (``finish_spec``)."""

    summaries: list[str]  # ``chunk_summaries``: per chunk, in manifest then chunk order
    keywords: list[list[list[Keyword]]]  # per document, per chunk: the table's keywords in its span


def topic_text(topic: Topic, table: tuple[str, list[Keyword]]) -> TopicText:
    keywords = table[1]
    manifests = [doc.manifest for doc in topic.docs]
    spans = [doc.spans for doc in topic.docs]
    return TopicText(chunk_summaries(manifests, spans), [[keywords_in(s, keywords) for s in doc_spans] for doc_spans in spans])


def topic_data(
    topic: Topic, table: tuple[str, list[Keyword]], model: str, related_k: int, policy: PromptPolicy = DEFAULT_POLICY,
    text: TopicText | None = None,
) -> dict:
    """The data block of one topic (everything IndexTool and readers of topic-spec.md need).
    ``text``: ``topic_text(topic, table)``, when already computed."""
    origin, keywords = table
    manifests = [doc.manifest for doc in topic.docs]
    spans = [doc.spans for doc in topic.docs]
    text = text if text is not None else topic_text(topic, table)
    vectors = np.vstack([v for doc in topic.docs for v in doc.vectors]).astype(np.float32)
    qvectors = (
        np.vstack(topic.question_vectors).astype(np.float32) if topic.questions else np.zeros((0, vectors.shape[1]), np.float32)
    )
    contexts, rows_of_question = topic_context(
        manifests, spans, vectors, qvectors, topic.questions, related_k=related_k, policy=policy, summaries=text.summaries
    )
    specs = []
    row = 0
    for doc, doc_keywords, ctx in zip(topic.docs, text.keywords, contexts):
        n = len(doc.manifest["chunks"])
        specs.append(document_spec(doc.manifest, vectors[row : row + n], doc_keywords, ctx))
        row += n
    refs = [c["href"] for m in manifests for c in m["chunks"]]
    data = {
        "topic": topic.dir_rel,
        "model": model,
        "pipeline_version": __version__,
        "keywords": {"origin": origin, "table": [k.to_dict() for k in keywords]},
        "prompt_matching": policy.describe(),
        "questions": [
            {"text": q.text, "line": q.line, "hash": q.hash, "hash_hex": q.hex, "chunks": [refs[r] for r in rows]}
            for q, rows in zip(topic.questions, rows_of_question)
        ],
        "documents": specs,
    }
    return data


def generated_stats(topics: dict[str, Topic], need: list[str], state: BuildState) -> dict[str, list[PhraseStats]]:
    """KeywordExtractor's stats of the topics in ``need``, computed from every topic's chunk
    spans, or the previous build's when those spans are unchanged (state section ``keywords``;
    the spans are named by the manifests' digests, which cover each chunk's content hash and
    offsets, so unchanged chunks and manifests are not read). When they changed, each topic's
    candidate counts come from the state's memo while its own spans are unchanged
    (``_topic_counts``): one edit reads and counts the spans of one topic."""
    digest = Digest(MAX_KEYWORDS, sorted(need))
    for name in sorted(topics):
        digest.add(name, [d.manifest_digest for d in topics[name].docs])
    key = digest.hex()
    entry = state.get("keywords", "site", key)
    if entry is not None and isinstance(entry.get("stats"), dict) and set(need) <= entry["stats"].keys():
        try:
            stats = {t: [PhraseStats(*row) for row in entry["stats"][t]] for t in need}
        except TypeError:
            stats = None
        if stats is not None:
            state.put("keywords", "site", key, stats=entry["stats"])
            return stats
    counts, chunk_counts, termhood, stored = _topic_counts(topics, state.memo)
    extractor = KeywordExtractor.from_counts(
        counts, lambda name: [s for d in topics[name].docs for s in d.spans], chunk_counts=chunk_counts, termhood=termhood
    )
    stats = {t: extractor.stats(t) for t in need}
    if state.memo is not None:
        for name, (memo_key, known, had_termhood) in stored.items():
            # new counts, chunk counts found for more phrases, or the termhood computed now
            if chunk_counts[name] != known or (name in termhood and not had_termhood):
                c = counts[name]
                state.memo.put(KEYWORDS_MEMO, memo_key, (c.chunks, c.tokens, c.totals, sorted(c.marked), chunk_counts[name],
                                                         termhood.get(name)))
    state.put("keywords", "site", key, stats={t: [list(dataclasses.astuple(s)) for s in rows] for t, rows in stats.items()})
    return stats


KEYWORDS_MEMO = "keywords-topic"  # site/memo.py: each topic's TopicCounts and the chunk counts of its phrases


def _topic_counts(topics: dict[str, Topic], memo: Memo | None) -> tuple[
    dict[str, TopicCounts], dict[str, dict[str, int]], dict[str, list], dict[str, tuple[str, dict[str, int] | None, bool]]
]:
    """Each topic's ``TopicCounts``, known phrase chunk counts and termhood (``extract._termhood``,
    when known), from ``memo`` for a topic whose manifests are those they were counted from (the
    manifests name each chunk's span: its offsets and the source's hash), else counted from its
    spans. Also {topic: (memo key, the chunk counts as read, whether the termhood was read)}, so
    the caller stores what grew. One edited topic is counted again; the specificity of every
    phrase still sums all topics' rates, so every table is exact."""
    counts: dict[str, TopicCounts] = {}
    chunk_counts: dict[str, dict[str, int]] = {}
    termhood: dict[str, list] = {}
    stored: dict[str, tuple[str, dict[str, int] | None, bool]] = {}
    for name in sorted(topics):
        docs = topics[name].docs
        key = memo.key(KEYWORDS_MEMO, MAX_KEYWORDS, name, [d.manifest_digest for d in docs]) if memo is not None else None
        entry = memo.get(KEYWORDS_MEMO, key) if key is not None else None
        if _is_counts(entry):
            chunks, tokens, totals, salient, known, cvalues = entry
            counts[name] = TopicCounts(chunks, tokens, totals, frozenset(salient))
            chunk_counts[name] = dict(known)
            if cvalues is not None:
                termhood[name] = cvalues
        else:
            counts[name] = count_topic([s for d in docs for s in d.spans])
            chunk_counts[name] = {}
            known = None
        if key is not None:
            stored[name] = (key, known, name in termhood)
    return counts, chunk_counts, termhood, stored


def _is_counts(entry: object) -> bool:
    """True when a memo entry has the shape ``_topic_counts`` stores (checked, never trusted)."""
    return (
        isinstance(entry, tuple) and len(entry) == 6 and isinstance(entry[0], int) and isinstance(entry[1], int)
        and isinstance(entry[2], dict) and isinstance(entry[3], list) and isinstance(entry[4], dict)
        and (entry[5] is None or isinstance(entry[5], list) and all(
            isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], float) for row in entry[5]
        ))
    )


def _keyword_tables(
    site: Path, topics: dict[str, Topic], report: SpecReport, state: BuildState | None = None
) -> dict[str, tuple[str, list[Keyword]]]:
    """Each topic's (origin, table): the author's ``words.md``, or one generated from the whole
    site's chunk spans and written (marked) to ``_keywords/words.md``."""
    out: dict[str, tuple[str, list[Keyword]]] = {}
    need = [t.dir_rel for t in topics.values() if t.table is None]
    generated = generated_stats(topics, need, state if state is not None else BuildState()) if need else {}
    for t in topics.values():
        if t.table is not None:
            out[t.dir_rel] = (KEYWORDS_FILE, t.table)
            continue
        stats = generated[t.dir_rel]
        report.written += write_text_atomic(site / t.dir_rel / KEYWORDS_FILE, render_table(t.dir_rel, stats))
        report.keywords_generated += 1
        out[t.dir_rel] = ("generated", [Keyword(s.name, s.score) for s in stats])
    return out


def _remove_generated_table(site: Path, dir_rel: str, report: SpecReport) -> None:
    path = site / dir_rel / KEYWORDS_FILE
    if is_generated(path):
        path.unlink()
        report.removed.append(path.relative_to(site).as_posix())
        if not any(path.parent.iterdir()):
            path.parent.rmdir()


def _span_text(content: str, chunk: dict) -> str:
    """The chunk's own source span: ``content`` minus its heading context."""
    return content[len(content) - (chunk["end_offset"] - chunk["start_offset"]) :]


def _source_rel(dir_rel: str, source: str) -> str:
    return f"{dir_rel}/{source}" if dir_rel else source


def _read_chunk(path: Path) -> str:
    if not path.is_file():
        raise PipelineError("chunk file missing; rebuild with `pipeline chunk-dir`", path=path)
    return read_text(path)
