"""Build ``_search/``: the static lexical index, the chunk records and the topic centroids.

Runs after publish (it reads what readers read: every ``index.json``, the chunk files, each
topic's ``_embeddings.bin``) and writes, under ``SITE/_search/``::

    meta.json           the root manifest, all that every query needs: counts, scoring constants,
                        topic ranges, SimHash prompts, shard count, and the topic centroids inline
                        (base64 of the _embeddings.bin format, one "document" per topic),
                        or a link to centroids.bin when they exceed CENTROIDS_INLINE_BYTES
    terms/<s>.json      {term: [chunk-number deltas, impacts]} for the terms with fnv1a32(term) % S == s
    chunks/<b>.json     the records of chunk numbers b*BLOCK ... b*BLOCK+BLOCK-1
    nodes.json          the site's folder tree for a page's navigation: [{id, title, documents,
                        path, parent, children}] in breadth-first order (what a walk of every
                        index.json finds), so the page lists topics with one request
    topics/<i>.json     topic i's bundle: {"terms": its postings, "records": its chunk records}, for
                        topics of at most BUNDLE_POSTINGS postings: a topic-scoped query fetches
                        this one file instead of site-wide shards and record blocks

Chunk numbers follow site order: topics as the client's breadth-first walk meets them,
documents as each topic lists them, chunks by index. Scoring is BM25F (docs/CLIENTS.md) with
every (term, chunk) contribution precomputed and quantised to an integer impact 1..255, so a
query's score is an integer sum: both clients rank identically without float drift.

Guarantees: deterministic bytes (sorted keys, fixed separators); files are written atomically
and only when changed; files of an earlier build that this one does not write are removed.
``meta.json`` records ``inputs``, the xxh64 of everything the index is made from (every
``index.json``, chunk manifest and ``_embeddings.bin``, and this package's code); when it still
matches and every file is present, nothing is read or written (a no-op rebuild stays fast).
Chunk texts enter through the manifests' ``content_xxh64``.
"""

from __future__ import annotations

import base64
import bisect
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import xxhash

from pipeline.errors import PipelineError
from pipeline.fsutil import write_bytes_atomic
from pipeline.search.text import TOKENIZER, clean_heading, shard_of, terms
from pipeline.site import vectors

SEARCH_DIR = "_search"
META = "meta.json"
NODES = "nodes.json"  # the folder tree for a page's navigation (one request instead of every index.json)
CENTROIDS = "centroids.bin"
FORMAT = "pipeline-search"
VERSION = 2
BLOCK = 128
"""Chunk records per ``chunks/<b>.json`` file."""
POSTINGS_PER_SHARD = 3000
"""Target postings per term shard: about 4-8 kB gzipped, so a cold term costs one small file."""
K1 = 1.2
FIELDS = {"title": (0.5, 0.5), "heading": (0.5, 0.5), "body": (1.0, 0.75)}
"""Field: (weight, length normalisation b). The body is the chunk file, which already holds the
title and header path (the heading context), so these fields only add to them: a title or heading
term counts 1.5 body occurrences. Weights 2/3 (4x-5x) ranked a document's every chunk by its title
and lost 4.8 points R@5 on the realdocs set (docs/QUALITY.md, "Search: BM25F field weights")."""
MAX_IMPACT = 255
CENTROIDS_INLINE_BYTES = 32 * 1024
"""Centroids up to this size (about 80 topics of 384 int8 dimensions) travel inside meta.json."""
BUNDLE_POSTINGS = 60000
"""Largest topic bundle, in postings (~50 kB gzipped with its records); a bigger topic has none and
its scoped queries use the site-wide shards."""


@dataclass
class SearchReport:
    chunks: int = 0
    terms: int = 0
    shards: int = 0
    written: int = 0
    bytes: int = 0
    removed: int = 0


def _dumps(value) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def chunk_record(ref, document, metadata: dict) -> dict:
    """What a reader needs to show, filter and re-create a chunk's ``ChunkRef`` (no text)."""
    tags = metadata.get("tags")
    return {
        "topic": ref.topic,
        "document": ref.document,
        "document_title": document.title,
        "source": ref.source,
        "index": ref.index,
        "path": ref.path,
        "title": ref.title,
        "header_path": ref.header_path,
        "is_code": ref.is_code,
        "keywords": [[k.name, k.score] for k in ref.keywords],
        "prompt_hashes": [f"{h:016x}" for h in ref.prompt_hashes],
        "promotion_level": ref.promotion_level,
        "type": metadata.get("type") if isinstance(metadata.get("type"), str) else None,
        "tags": sorted(str(t) for t in tags) if isinstance(tags, list) else [],
    }


def _front_matter(site: Path, ref) -> dict:
    """The chunk's front matter from its manifest (``metadata.front_matter``; for an entry file
    its ``entry_type`` as ``type``), or {}."""
    from pipeline.site.tree import manifest_name

    manifest = site / Path(ref.path).parent / manifest_name(ref.document)
    try:
        data = orjson.loads(manifest.read_bytes())
        meta = data["chunks"][ref.index].get("metadata") or {}
    except (OSError, orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return {}
    if not isinstance(meta, dict):
        return {}
    front = meta.get("front_matter") if isinstance(meta.get("front_matter"), dict) else {}
    # knowledge-base entries carry their type as ``entry_type`` (and may carry ``tags``) in metadata
    base = {"type": meta.get("entry_type"), "tags": meta.get("tags")}
    return {**{k: v for k, v in base.items() if v is not None}, **front}


def impacts(fields: list[dict[str, Counter]], lengths: list[dict[str, int]]) -> dict[str, list[tuple[int, float]]]:
    """BM25F contribution of every (term, chunk): {term: [(chunk number, score)]} (pure).

    tf~ = sum_f w_f * tf_f / (1 - b_f + b_f * len_f / avglen_f); score = idf * tf~ (k1 + 1) / (k1 + tf~),
    idf = ln(1 + (N - df + 0.5) / (df + 0.5)).
    """
    n = len(fields)
    avg = {f: (sum(le[f] for le in lengths) / n if n else 0.0) or 1.0 for f in FIELDS}
    df: Counter = Counter()
    for per_field in fields:
        df.update(set().union(*(c.keys() for c in per_field.values())))
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for number, (per_field, length) in enumerate(zip(fields, lengths)):
        weighted: dict[str, float] = defaultdict(float)
        for f, (weight, b) in FIELDS.items():
            norm = 1 - b + b * length[f] / avg[f]
            for term, tf in per_field[f].items():
                weighted[term] += weight * tf / norm
        for term, tf in weighted.items():
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            out[term].append((number, idf * tf * (K1 + 1) / (K1 + tf)))
    return out


def quantise(scores: dict[str, list[tuple[int, float]]]) -> tuple[dict[str, list[tuple[int, int]]], float]:
    """Impacts as integers 1..255 of the largest one, and the scale back to BM25F units."""
    top = max((s for postings in scores.values() for _, s in postings), default=0.0)
    scale = top / MAX_IMPACT if top > 0 else 1.0
    return (
        {t: [(c, max(1, min(MAX_IMPACT, round(s / scale)))) for c, s in postings] for t, postings in scores.items()},
        scale,
    )


def inputs_digest(site: Path, postings_per_shard: int) -> str:
    """xxh64 of the index's inputs: site files it reads (names and bytes) and this package's code."""
    from pipeline.site.tree import CHUNKS_DIR, INDEX_FILE, site_dirs

    h = xxhash.xxh64()
    h.update(f"{FORMAT}/{VERSION}/{TOKENIZER}/{postings_per_shard}/{BUNDLE_POSTINGS}/{CENTROIDS_INLINE_BYTES}\0".encode())
    for code in sorted(Path(__file__).parent.glob("*.py")):
        h.update(code.name.encode() + b"\0" + code.read_bytes())
    for dir_rel in site_dirs(site):
        folder = site / dir_rel
        names = [INDEX_FILE, vectors.FILE_NAME] + sorted(
            f"{CHUNKS_DIR}/{p.name}" for p in (folder / CHUNKS_DIR).glob("*.json")
        )
        for name in names:
            path = folder / name
            if path.is_file():
                h.update(f"{dir_rel}/{name}\0".encode() + path.read_bytes() + b"\0")
    return h.hexdigest()


def _unchanged(folder: Path, digest: str) -> bool:
    """True when ``folder`` holds a complete index built from inputs with ``digest``."""
    try:
        meta = orjson.loads((folder / META).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    if not isinstance(meta, dict) or meta.get("inputs") != digest:
        return False
    wanted = [f"terms/{s}.json" for s in range(meta["shards"])]
    wanted += [f"chunks/{b}.json" for b in range(math.ceil(meta["chunks"] / meta["block"]))]
    wanted += [t["bundle"] for t in meta["topics"] if t.get("bundle")]
    wanted += [meta["vectors"]["href"]] if (meta.get("vectors") or {}).get("href") else []
    wanted += [meta["nodes"]] if isinstance(meta.get("nodes"), str) else []
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    return present == {META, *wanted}


def build_search_index(site: Path, *, postings_per_shard: int = POSTINGS_PER_SHARD) -> SearchReport:
    """Write ``site/_search/`` from the built site (module docstring). Raises PipelineError on a
    site the client cannot read."""
    from pipeline.client import SiteError, open_site

    site = Path(site)
    report = SearchReport()
    digest = inputs_digest(site, postings_per_shard)
    if _unchanged(site / SEARCH_DIR, digest):
        return report
    try:
        reader = open_site(site)
        all_nodes = reader.nodes()
        topic_nodes = reader.topics()
        indexes = [reader.topic(node) for node in topic_nodes]
    except SiteError as exc:
        raise PipelineError(f"cannot read the built site for the search index: {exc}", path=site) from None
    records: list[dict] = []
    fields: list[dict[str, Counter]] = []
    lengths: list[dict[str, int]] = []
    topics_meta = []
    prompts = []
    centroid_rows: list[tuple[str, np.ndarray]] = []
    model = None
    for node, index in zip(topic_nodes, indexes):
        start = len(records)
        ours, radius = _matching(site / node.path)  # another algorithm's hashes cannot be matched: left out
        for document in index.documents:
            for ref in document.items:
                text = (site / ref.path).read_text(encoding="utf-8")
                per_field = {
                    "title": Counter(terms(document.title)),
                    "heading": Counter(terms(clean_heading(ref.header_path) or ref.title)),
                    "body": Counter(terms(text)),
                }
                fields.append(per_field)
                lengths.append({f: sum(c.values()) for f, c in per_field.items()})
                if ours:
                    prompts.extend([f"{h:016x}", len(records)] for h in ref.prompt_hashes)
                records.append(chunk_record(ref, document, _front_matter(site, ref)))
        embeddings = site / Path(node.path).parent / vectors.FILE_NAME
        table = vectors.decode(embeddings.read_bytes(), source=str(embeddings)) if embeddings.is_file() else None
        documents = [[d.name, len(d.items)] for d in index.documents]
        if table is not None and len(table.vectors):
            model = model or table.model
            centre = table.vectors.mean(axis=0)
            norm = float(np.linalg.norm(centre))
            centroid_rows.append((node.id, (centre / norm if norm else centre).reshape(1, -1)))
        topics_meta.append({
            "id": node.id,
            "start": start,
            "count": len(records) - start,
            # null when the vector rows are the topic's chunks in order (the usual case): the
            # per-document list is only needed to map rows of a table that disagrees with the index
            "documents": None if table is not None and [list(d) for d in table.documents] == documents else documents,
            "index": node.path,
            "radius": radius,
            "embeddings": embeddings.relative_to(site).as_posix() if table is not None else None,
        })
    quantised, scale = quantise(impacts(fields, lengths))
    postings = sum(len(p) for p in quantised.values())
    shards = max(1, math.ceil(postings / postings_per_shard))
    files: dict[str, bytes] = {}
    by_shard: dict[int, dict] = defaultdict(dict)
    for term in sorted(quantised):
        entries = sorted(quantised[term])
        ids = [c for c, _ in entries]
        by_shard[shard_of(term, shards)][term] = [[ids[0]] + [b - a for a, b in zip(ids, ids[1:])], [q for _, q in entries]]
    for s in range(shards):
        files[f"terms/{s}.json"] = _dumps(by_shard.get(s, {}))
    for b in range(0, len(records), BLOCK):
        files[f"chunks/{b // BLOCK}.json"] = _dumps(records[b : b + BLOCK])
    bundles = _bundles(quantised, topics_meta)
    for i, topic in enumerate(topics_meta):
        topic["bundle"] = f"topics/{i}.json" if i in bundles else None
        if i in bundles:
            files[topic["bundle"]] = _dumps({"terms": bundles[i], "records": records[topic["start"] : topic["start"] + topic["count"]]})
    centroids = vectors.encode(model, centroid_rows, dtype="int8") if centroid_rows and model else None
    files[NODES] = _dumps([
        {"id": n.id, "title": n.title, "documents": n.documents, "path": n.path, "parent": n.parent, "children": list(n.children)}
        for n in all_nodes
    ])
    files[META] = _dumps({
        "format": FORMAT,
        "version": VERSION,
        "tokenizer": TOKENIZER,
        "chunks": len(records),
        "terms": len(quantised),
        "shards": shards,
        "block": BLOCK,
        "scoring": {"method": "bm25f-impact", "k1": K1, "fields": {f: {"weight": w, "b": b} for f, (w, b) in FIELDS.items()},
                    "scale": scale},
        "topics": topics_meta,
        "prompts": prompts,
        "vectors": _vectors_meta(model, centroids, files),
        "nodes": NODES,
        "inputs": digest,
    })
    folder = site / SEARCH_DIR
    for rel, data in files.items():
        report.written += write_bytes_atomic(folder / rel, data)
        report.bytes += len(data)
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.relative_to(folder).as_posix() not in files:
            path.unlink()
            report.removed += 1
    report.chunks, report.terms, report.shards = len(records), len(quantised), shards
    return report


def _vectors_meta(model: str | None, centroids: bytes | None, files: dict[str, bytes]) -> dict | None:
    """``meta.json``'s ``vectors``: the centroids inline (base64) while they are small, since every
    hybrid query needs them and a request fewer is worth a few kB; else ``centroids.bin``, added
    to ``files`` (a site of hundreds of topics must not make every query's meta.json heavy)."""
    if not centroids:
        return None
    if len(centroids) <= CENTROIDS_INLINE_BYTES:
        return {"model": model, "centroids": base64.b64encode(centroids).decode("ascii")}
    files[CENTROIDS] = centroids
    return {"model": model, "href": CENTROIDS}


def _bundles(quantised: dict[str, list[tuple[int, int]]], topics: list[dict]) -> dict[int, dict]:
    """{topic position: its postings ({term: [deltas, impacts]}, chunk numbers as in the site-wide
    shards)} for the topics of at most ``BUNDLE_POSTINGS`` postings. One pass over the postings."""
    starts = [t["start"] for t in topics]
    split: list[dict[str, list[tuple[int, int]]]] = [defaultdict(list) for _ in topics]
    for term, entries in quantised.items():
        for chunk, impact in entries:
            split[bisect.bisect_right(starts, chunk) - 1][term].append((chunk, impact))
    out = {}
    for i, postings in enumerate(split):
        if sum(len(e) for e in postings.values()) > BUNDLE_POSTINGS:
            continue
        out[i] = {}
        for term in sorted(postings):
            ids = [c for c, _ in postings[term]]
            out[i][term] = [[ids[0]] + [b - a for a, b in zip(ids, ids[1:])], [q for _, q in postings[term]]]
    return out


def _matching(index_json: Path) -> tuple[bool, int | None]:
    """(the topic's prompt hashes use our SimHash, its published radius or None)."""
    from pipeline.simhash import ALGORITHM

    try:
        matching = orjson.loads(index_json.read_bytes()).get("prompt_matching")
    except (OSError, orjson.JSONDecodeError):
        return True, None
    matching = matching if isinstance(matching, dict) else {}
    value = matching.get("max_distance")
    radius = value if isinstance(value, int) and not isinstance(value, bool) else None
    return matching.get("algorithm", ALGORITHM) == ALGORITHM, radius
