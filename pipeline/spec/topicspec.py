"""TopicSpec: chunk manifests -> embeddings (cached) -> similarities and keywords -> ``topic-spec.md``.

``topic-spec.md`` is for people (tables) and for the next stage: its data block (a fenced JSON
block after the marker comment) is what IndexTool reads. Only chunks the cache does not hold are
embedded, in one batch for the whole site; nothing imports torch when the cache holds them all.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined

from pipeline import __version__
from pipeline.chunking.tool import read_manifests
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.cache import EmbeddingCache
from pipeline.errors import PipelineError
from pipeline.fsutil import read_text, write_text_atomic
from pipeline.site.tree import KEYWORDS_FILE, TOPIC_SPEC_FILE, site_dirs
from pipeline.spec.keywords import keywords_in, load_keywords

DATA_MARKER = "<!-- pipeline:topic-spec-data -->"


@dataclass
class SpecReport:
    topics: int = 0
    chunks: int = 0
    embedded: int = 0  # chunks that needed the model
    cached: int = 0
    written: int = 0
    removed: list[str] = field(default_factory=list)


@dataclass
class _Doc:
    dir_rel: str
    manifest: dict
    texts: list[str]
    vectors: list[np.ndarray | None]


def similarity(vectors: np.ndarray, baseline: int) -> list[float]:
    """Cosine similarity of every row to row ``baseline`` (rows are unit length), 4 decimals."""
    return [round(float(x), 4) for x in vectors @ vectors[baseline]]


def document_spec(manifest: dict, vectors: np.ndarray, keywords: list) -> dict:
    """The spec record of one document: what IndexTool needs, from its chunks and their vectors."""
    technical = manifest.get("technical_baseline")
    conceptual_sim = similarity(vectors, 0)
    technical_sim = similarity(vectors, technical) if technical is not None else None
    items = []
    for i, chunk in enumerate(manifest["chunks"]):
        item = {
            "index": chunk["chunk_index"],
            "href": chunk["href"],
            "title": chunk["title"],
            "header_path": chunk["header_path"],
            "is_code": chunk["is_code"],
            "token_count": chunk["token_count"],
            "start_line": chunk["start_line"],
            "end_line": chunk["end_line"],
            "similarity_conceptual": conceptual_sim[i],
        }
        if technical_sim is not None:
            item["similarity_technical"] = technical_sim[i]
        item["keywords"] = [k.to_dict() for k in keywords[i]]
        items.append(item)
    spec = {
        "source": manifest["source"],
        "title": manifest["title"],
        "document_id": manifest["document_id"],
        "strategy": manifest["strategy_key"],
        "count": manifest["count"],
        "baseline_conceptual": 0,
    }
    if technical is not None:
        spec["baseline_technical"] = technical
    spec["items"] = items
    return spec


def run_spec(site: Path, config: SiteConfig, embedder: Embedder, *, progress: bool = True) -> SpecReport:
    """Write ``topic-spec.md`` in every directory of ``site`` that has chunked documents."""
    report = SpecReport()
    docs_by_dir: dict[str, list[_Doc]] = {}
    caches: dict[str, EmbeddingCache] = {}
    tables = {}
    for dir_rel in site_dirs(site):
        manifests = read_manifests(site, dir_rel)
        if manifests:  # bad keyword tables fail before any model time is spent
            tables[dir_rel] = load_keywords(site / dir_rel / KEYWORDS_FILE)
        for manifest in manifests:
            texts = [_read_chunk(site / dir_rel / c["href"]) for c in manifest["chunks"]]
            cache = caches.setdefault(
                manifest["strategy_key"], EmbeddingCache(config.cache_dir, manifest["strategy_key"], embedder.name)
            )
            source = _source_rel(dir_rel, manifest["source"])
            hashes = [c["content_xxh64"] for c in manifest["chunks"]]
            vectors = cache.lookup(source, manifest["source_sha256"][:16], hashes)
            docs_by_dir.setdefault(dir_rel, []).append(_Doc(dir_rel, manifest, texts, vectors))

    missing = [(doc, i) for docs in docs_by_dir.values() for doc in docs for i, v in enumerate(doc.vectors) if v is None]
    if missing:
        print(f"embedding {len(missing)} chunks with {embedder.name}", file=sys.stderr, flush=True)
        fresh = embedder.embed([doc.texts[i] for doc, i in missing], progress=progress)
        for (doc, i), vector in zip(missing, fresh):
            doc.vectors[i] = vector
    report.embedded = len(missing)

    for docs in docs_by_dir.values():
        for doc in docs:
            m = doc.manifest
            cache = caches[m["strategy_key"]]
            hashes = [c["content_xxh64"] for c in m["chunks"]]
            cache.store(_source_rel(doc.dir_rel, m["source"]), m["source_sha256"][:16], hashes, doc.vectors)
    for cache in caches.values():
        cache.prune({_source_rel(d.dir_rel, d.manifest["source"]) for docs in docs_by_dir.values() for d in docs})
        cache.save()
        report.cached += cache.stats.hits

    for dir_rel in site_dirs(site):
        target = site / dir_rel / TOPIC_SPEC_FILE
        docs = docs_by_dir.get(dir_rel)
        if not docs:
            if target.exists():
                target.unlink()
                report.removed.append(target.relative_to(site).as_posix())
            continue
        table = tables[dir_rel]
        specs = []
        for doc in docs:
            vectors = np.vstack(doc.vectors).astype(np.float32)
            spans = [_span_text(text, chunk) for text, chunk in zip(doc.texts, doc.manifest["chunks"])]
            specs.append(document_spec(doc.manifest, vectors, [keywords_in(s, table) for s in spans]))
            report.chunks += len(doc.texts)
        data = {"topic": dir_rel, "model": embedder.name, "pipeline_version": __version__, "documents": specs}
        report.written += write_text_atomic(target, render_topic_spec(data))
        report.topics += 1
    return report


def _span_text(content: str, chunk: dict) -> str:
    """The chunk's own source span: ``content`` minus its heading context."""
    return content[len(content) - (chunk["end_offset"] - chunk["start_offset"]) :]


def _source_rel(dir_rel: str, source: str) -> str:
    return f"{dir_rel}/{source}" if dir_rel else source


def _read_chunk(path: Path) -> str:
    if not path.is_file():
        raise PipelineError("chunk file missing; rebuild with `pipeline chunk-dir`", path=path)
    return read_text(path)


@lru_cache(maxsize=1)
def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("pipeline", "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["cell"] = lambda value: str(value).replace("|", "\\|").replace("\n", " ")
    return env


def render_topic_spec(data: dict) -> str:
    """The markdown page for people, with ``data`` as a JSON block for IndexTool."""
    payload = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    longest = max((len(run) for run in re.findall(r"`+", payload)), default=0)
    fence = "`" * max(3, longest + 1)
    return _templates().get_template("topic-spec.md.j2").render(
        data=data, payload=payload, fence=fence, marker=DATA_MARKER
    )


def read_topic_spec(path: Path) -> dict:
    """The data block of a ``topic-spec.md`` written by ``render_topic_spec``."""
    text = read_text(path)
    marker = text.find(DATA_MARKER)
    match = re.compile(r"^(`{3,})json\n(.*?)^\1\s*$", re.M | re.S).search(text, marker) if marker >= 0 else None
    if not match:
        raise PipelineError("no data block; regenerate it with `pipeline spec`", path=path)
    try:
        return orjson.loads(match.group(2))
    except orjson.JSONDecodeError as exc:
        line = text.count("\n", 0, match.start(2)) + 1
        raise PipelineError(f"data block is not valid JSON: {exc}", path=path, line=line) from None
