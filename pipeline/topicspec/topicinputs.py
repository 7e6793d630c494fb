"""What the spec stage computes a topic from: its documents, questions and keyword table, and the input checks.

One job: the topic's inputs as values (``Doc``, ``Topic``) and the stage's counts (``SpecReport``).
A ``Doc`` reads its manifest, chunk texts, source spans and cached vectors only when first asked
(a topic whose inputs are unchanged since the last build needs none of them).
``check_topic_inputs`` reads every author's keyword table and question file of CONTENT and raises
on the first bad one, before a build writes anything. Gathering the topics of a site is
``topicspec/topicgather.py``'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from pipeline.chunking.manifest import manifest_digest
from pipeline.chunking.tool import ManifestStub, manifest_field
from pipeline.embedding.cache import EmbeddingCache
from pipeline.errors import PipelineError
from pipeline.fsutil import LinkRefused, Vanished, decode_utf8, read_below, read_text
from pipeline.siteformat.tree import KEYWORDS_FILE, QUESTIONS_FILE, site_dirs
from pipeline.sources.exclude import Exclude
from pipeline.topicspec.keywords import GENERATED_MARKER, Keyword, parse_keywords
from pipeline.topicspec.questions import Question, parse_questions


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
    stored: bool = True  # False: embedded by this build, its cache entry not yet handed to ``Gathered``'s writer

    @cached_property
    def manifest(self) -> dict:
        return self.record.load() if isinstance(self.record, ManifestStub) else self.record

    @property
    def source(self) -> str:
        return source_rel(self.dir_rel, manifest_field(self.record, "source"))

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
        """``manifest_digest`` of the manifest (the build state's, when the build did not read it)."""
        if isinstance(self.record, ManifestStub):
            return self.record.digest
        return manifest_digest(self.record)

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

    @property
    def chunks(self) -> int:
        """The topic's chunks, from its manifests (no span read)."""
        return sum(len(doc.hashes) for doc in self.docs)


def check_topic_inputs(root: Path, exclude: Exclude | None = None) -> None:
    """Read every author's keyword table and question file under ``root``; raise PipelineError
    (file and line) on the first bad one. A build calls this on CONTENT before writing anything,
    so bad input never leaves a half-updated site. What ``exclude`` names is never read (it is
    not copied into the site either)."""
    left_out = (lambda rel: exclude.excludes(rel)) if exclude is not None else (lambda rel: False)  # noqa: E731
    for dir_rel in site_dirs(root):
        prefix = f"{dir_rel}/" if dir_rel else ""
        table = _content_text(root, prefix + KEYWORDS_FILE)
        if table is not None and table.split("\n", 1)[0].rstrip("\r") != GENERATED_MARKER and not left_out(prefix + KEYWORDS_FILE):
            parse_keywords(table, root / dir_rel / KEYWORDS_FILE)
        questions = _content_text(root, prefix + QUESTIONS_FILE)
        if questions is not None and not left_out(prefix + QUESTIONS_FILE):
            parse_questions(questions, root / dir_rel / QUESTIONS_FILE)


def _content_text(root: Path, rel: str) -> str | None:
    """CONTENT's file ``rel`` as text; None when it is missing or a link (never followed: the
    sync skips it with a warning, sources/confine.py), read with ``fsutil.read_below``."""
    try:
        return decode_utf8(read_below(root, rel), root / rel)
    except (LinkRefused, Vanished):
        return None


def _span_text(content: str, chunk: dict) -> str:
    """The chunk's own source span: ``content`` minus its heading context."""
    return content[len(content) - (chunk["end_offset"] - chunk["start_offset"]) :]


def source_rel(dir_rel: str, source: str) -> str:
    return f"{dir_rel}/{source}" if dir_rel else source


def _read_chunk(path: Path) -> str:
    if not path.is_file():
        raise PipelineError("chunk file missing; rebuild with `pipeline chunk-dir`", path=path)
    return read_text(path)
