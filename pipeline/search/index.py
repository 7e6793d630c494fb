"""Build ``_search/``: the static lexical index, the chunk records and the topic centroids.

Runs after publish (it reads what readers read: every ``index.json``, the chunk files, each
topic's ``_embeddings.bin``) and writes, under ``SITE/_search/``::

    meta.json           the root manifest, all that every query needs: counts, scoring constants,
                        topic ranges, SimHash prompts, shard count, and the topic centroids inline
                        (base64 of the _embeddings.bin format, one "document" per topic),
                        or a link to centroids.bin when they exceed CENTROIDS_INLINE_BYTES
    terms/<s>.json      {term: [chunk-number deltas, impacts]} for the terms with fnv1a32(term) % S == s
    records.json        {"meta": meta.json's manifest, "records": every chunk record, packed
                        (``pipeline.search.records``), "terms": {term: postings} of the rarest
                        terms, "all_terms": whether that is every term}: what an unscoped query
                        reads instead of meta.json, so one request brings the manifest, the
                        records of any hit and the postings of the terms most queries' rare
                        words need. The records go in while they pack under
                        RECORDS_INLINE_BYTES (else "records" is null, the blocks below hold
                        them, and "terms" is empty); then every term when the whole fits
                        ALL_TERMS_FACTOR times that, else terms in order of (document frequency,
                        term) while the whole stays under it, a term's bytes counted
                        TERM_BYTES_WEIGHT times. Those terms stay in their shards too.
    chunks/<b>.json     the records of chunk numbers b*BLOCK ... b*BLOCK+BLOCK-1 (only when
                        records.json holds none)
    nodes.json          the site's folder tree for a page's navigation: [{id, title, documents,
                        path, parent, children}] in breadth-first order (what a walk of every
                        index.json finds), so the page lists topics with one request
    vectors/<i>.bin     every chunk's int8 vector in site order, a row's scale beside its values
                        (one document's rows: one contiguous range), whole documents of one
                        topic a file, at most ~16 kB (``pipeline.search.vectorshards``); the
                        manifest's ``vectors`` says each document's rows and each shard's range.
                        A hybrid query reads the shards of its first lexical hits' documents
    topics/<i>.json     topic i's bundle: {"terms": its postings, "records": its chunk records}, for
                        topics of at most BUNDLE_POSTINGS postings: a topic-scoped query fetches
                        this one file instead of site-wide shards and record blocks
    topics/<i>/terms/<s>.json   a bigger topic's own term shards (its manifest entry's ``shards``
    topics/<i>/chunks/<b>.json  of them, ~POSTINGS_PER_SHARD postings each, hashed as the site-wide
                        ones) and its record blocks (chunks start+b*BLOCK ...): a query scoped to
                        it fetches the shards of its terms and the blocks of its hits, never a
                        site-wide or other topic's file, and bytes that grow with the query, not
                        with the topic. Every topic has a bundle or these.

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
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import orjson
import xxhash

from pipeline.errors import PipelineError
from pipeline.fsutil import write_bytes_atomic
from pipeline.search.bodies import BodyTerms
from pipeline.search.records import Packer
from pipeline.search.text import TOKENIZER, clean_heading, shard_of, terms
from pipeline.search import vectorshards
from pipeline.site import vectors

SEARCH_DIR = "_search"
META = "meta.json"
RECORDS = "records.json"
NODES = "nodes.json"  # the folder tree for a page's navigation (one request instead of every index.json)
CENTROIDS = "centroids.bin"
FORMAT = "pipeline-search"
VERSION = 5
"""5: a topic too big for a bundle has its own term shards and record blocks (``topics/<i>/``)."""
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
RECORDS_INLINE_BYTES = 800_000
"""Largest records.json, in JSON bytes of its packed records plus TERM_BYTES_WEIGHT times those of
its inline terms (~100 kB gzipped; the records alone fill it at ~11,000 chunks of the synthetic
corpus). Once a session, an unscoped query pays that instead of one ~4 kB block request per hit
(5 hits lie in ~5 of 83 blocks at 10k chunks: nothing clusters them) and one shard request per
rare query term; above it the bytes would outgrow the requests saved, and the blocks serve."""
TERM_BYTES_WEIGHT = 3
"""Postings compress ~3x worse than packed records (gzip: 2.6x against 8.1x, measured on the 10k
synthetic site), so a budget of JSON bytes that stands for gzipped bytes counts theirs 3 times."""
ALL_TERMS_FACTOR = 2
"""records.json carries every term's postings when the records and all of them fit this many
times RECORDS_INLINE_BYTES (1.6 MB of weighted JSON, ~200 kB gzipped: the sites up to ~2,500
chunks of real documentation): then a query's lexical side is one request, whatever its terms,
where the rarest-first rule left the frequent terms (those most queries use: "file", "app",
"use") to 2-8 shard requests (docs/DECISIONS.md "Requests of a cold hybrid query"). Above it,
inlining frequent terms one by one would cost ~15 kB gzipped each to spare one request for the
queries that use that very term, so the rarest-first rule under RECORDS_INLINE_BYTES stays."""
BUNDLE_POSTINGS = 60000
"""Largest topic bundle, in postings (~50 kB gzipped with its records); a bigger topic has its own
term shards and record blocks instead (``topics/<i>/``), so its scoped queries read no site-wide file."""


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


def _front_matter(site: Path, ref, last: dict | None = None) -> dict:
    """The chunk's front matter from its manifest (``metadata.front_matter``; for an entry file
    its ``entry_type`` as ``type``), or {}. ``last`` (a dict the caller keeps) holds the last
    manifest read: a document's chunks come one after another, so each manifest is read once."""
    from pipeline.site.tree import manifest_name

    manifest = site / Path(ref.path).parent / manifest_name(ref.document)
    try:
        if last is not None and last.get("path") == manifest:
            data = last["data"]
        else:
            data = orjson.loads(manifest.read_bytes())
            if last is not None:
                last.update(path=manifest, data=data)
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


class PostingTable:
    """Every (term, chunk) of a site with its term frequency per field, in flat typed arrays
    (about 20 bytes a posting; a Counter per chunk and field, as ``impacts`` takes, costs ten
    times that, the largest structure of a big build). ``quantised`` gives exactly
    ``quantise(impacts(fields, lengths))`` (``tests/test_search_index.py`` checks it)."""

    def __init__(self) -> None:
        self.term_ids: dict[str, int] = {}
        self.chunk = array("i")  # chunk number of each posting; postings are added in chunk order
        self.term = array("i")  # term id of each posting
        self.tf = {f: array("i") for f in FIELDS}  # its term frequency in each field (0: absent)
        self.lengths = {f: array("q") for f in FIELDS}  # terms in each field of each chunk

    @property
    def chunks(self) -> int:
        return len(self.lengths["body"])

    def add(self, per_field: dict[str, Counter]) -> None:
        """The next chunk's term counts per field (the ``fields`` item ``impacts`` takes)."""
        number = self.chunks
        counts = [per_field[f] for f in FIELDS]
        # the chunk's terms first seen in field order, as ``impacts``; a term id is given as a
        # term is first met (the same ids, in the same order, as a loop over the fields)
        seen = list(dict.fromkeys(chain.from_iterable(counts)))
        ids = self.term_ids
        self.term.extend([ids.setdefault(term, len(ids)) for term in seen])
        self.chunk.extend([number] * len(seen))
        for f, field_counts in zip(FIELDS, counts):
            self.lengths[f].append(sum(field_counts.values()))
            self.tf[f].extend([field_counts.get(term, 0) for term in seen])  # 0: absent from the field

    def to_part(self) -> tuple:
        """This table as plain values (``site/memo.py`` stores them): its terms in id order,
        then the bytes of every array."""
        return (list(self.term_ids), self.chunk.tobytes(), self.term.tobytes(),
                [self.tf[f].tobytes() for f in FIELDS], [self.lengths[f].tobytes() for f in FIELDS])

    def extend(self, part: tuple) -> None:
        """Append the chunks of a table given by ``to_part``, as if each had been ``add``-ed
        here in order: its chunk numbers follow this table's, its terms take this table's ids
        (a term new here gets the next id, in the order the part first met it, as ``add``)."""
        names, chunk, term, tfs, lengths = part
        offset = self.chunks
        ids = np.array([self.term_ids.setdefault(name, len(self.term_ids)) for name in names], dtype=np.int32)
        self.chunk.frombytes((np.frombuffer(chunk, dtype=np.int32) + offset).astype(np.int32).tobytes())
        self.term.frombytes(ids[np.frombuffer(term, dtype=np.int32)].tobytes())
        for f, data in zip(FIELDS, tfs):
            self.tf[f].frombytes(data)
        for f, data in zip(FIELDS, lengths):
            self.lengths[f].frombytes(data)

    def quantised(self) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], float]:
        """({term: (chunk numbers ascending, impacts 1..255)}, scale): ``impacts`` then ``quantise``
        with the same float operations in the same order, element by element, so the same bits."""
        chunks, levels, bounds, scale = self.sorted_postings()
        return {name: (chunks[bounds[tid] : bounds[tid + 1]], levels[bounds[tid] : bounds[tid + 1]])
                for name, tid in self.term_ids.items()}, scale

    def sorted_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """``quantised`` as flat arrays: (chunk numbers, impacts, bounds, scale), the postings
        sorted by term id and then chunk number, term id ``t``'s at ``bounds[t]:bounds[t + 1]``."""
        n = self.chunks
        chunk = np.frombuffer(self.chunk, dtype=np.int32)
        term = np.frombuffer(self.term, dtype=np.int32)
        weighted = np.zeros(len(chunk), dtype=np.float64)
        for f, (weight, b) in FIELDS.items():
            length = np.frombuffer(self.lengths[f], dtype=np.int64)
            avg = (int(length.sum()) / n if n else 0.0) or 1.0
            norm = 1 - b + b * length.astype(np.float64) / avg  # per chunk, as ``impacts``
            tf = np.frombuffer(self.tf[f], dtype=np.int32).astype(np.float64)
            # ``impacts`` adds only the fields a term occurs in; adding 0.0 changes no bit
            weighted += weight * tf / norm[chunk]
        df = np.bincount(term, minlength=len(self.term_ids))
        # math.log per term, not np.log: numpy's vectorised log may differ in the last bit
        idf = np.array([math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float64)
        scores = idf[term] * weighted * (K1 + 1) / (K1 + weighted)
        top = float(scores.max()) if len(scores) else 0.0
        scale = top / MAX_IMPACT if top > 0 else 1.0
        # np.rint rounds half to even, as Python's round
        levels = np.clip(np.rint(scores / scale), 1, MAX_IMPACT).astype(np.int32)
        order = np.argsort(term, kind="stable")  # stable: each term's postings stay in chunk order
        bounds = np.concatenate(([0], np.cumsum(df)))
        return chunk[order], levels[order], bounds, scale


def inputs_digest(site: Path, postings_per_shard: int, records_inline_bytes: int = RECORDS_INLINE_BYTES,
                  bundle_postings: int = BUNDLE_POSTINGS) -> str:
    """xxh64 of the index's inputs: site files it reads (names and bytes), the layout's
    parameters and this package's code."""
    return _input_digests(site, postings_per_shard, records_inline_bytes, bundle_postings)[0]


def _input_digests(site: Path, postings_per_shard: int, records_inline_bytes: int,
                   bundle_postings: int = BUNDLE_POSTINGS) -> tuple[str, dict[str, str]]:
    """(``inputs_digest``, {directory: xxh64 of its ``index.json`` and chunk manifests}) from one
    read of each file. A directory's digest names every input of its topic's share of the index
    (``_topic_part``): its index.json, and through the manifests each chunk file's text
    (``content_xxh64``) and front matter."""
    from pipeline.site.tree import CHUNKS_DIR, INDEX_FILE, site_dirs

    h = xxhash.xxh64()
    h.update(f"{FORMAT}/{VERSION}/{TOKENIZER}/{postings_per_shard}/{bundle_postings}/{CENTROIDS_INLINE_BYTES}/{records_inline_bytes}/{TERM_BYTES_WEIGHT}/{ALL_TERMS_FACTOR}\0".encode())
    for code in sorted(Path(__file__).parent.glob("*.py")):
        h.update(code.name.encode() + b"\0" + code.read_bytes())
    folders: dict[str, str] = {}
    for dir_rel in site_dirs(site):
        folder = site / dir_rel
        names = [INDEX_FILE, vectors.FILE_NAME] + sorted(
            f"{CHUNKS_DIR}/{p.name}" for p in (folder / CHUNKS_DIR).glob("*.json")
        )
        mine = xxhash.xxh64()
        for name in names:
            path = folder / name
            if path.is_file():
                data = f"{dir_rel}/{name}\0".encode() + path.read_bytes() + b"\0"
                h.update(data)
                if name != vectors.FILE_NAME:  # the centroid is computed afresh: not part of a topic's share
                    mine.update(data)
        folders[dir_rel] = mine.hexdigest()
    return h.hexdigest(), folders


def _unchanged(folder: Path, digest: str | None) -> bool:
    """True when ``folder`` holds a complete index built from inputs with ``digest`` (any
    inputs when None: the caller vouched for them)."""
    try:
        meta = orjson.loads((folder / META).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    if not isinstance(meta, dict) or (digest is not None and meta.get("inputs") != digest):
        return False
    wanted = [f"terms/{s}.json" for s in range(meta["shards"])] + [RECORDS]
    if not meta.get("records"):
        wanted += [f"chunks/{b}.json" for b in range(math.ceil(meta["chunks"] / meta["block"]))]
    wanted += [t["bundle"] for t in meta["topics"] if t.get("bundle")]
    for i, t in enumerate(meta["topics"]):
        if t.get("shards"):
            wanted += [f"{topic_dir(i)}/terms/{s}.json" for s in range(t["shards"])]
            wanted += [f"{topic_dir(i)}/chunks/{b}.json" for b in range(math.ceil(t["count"] / meta["block"]))]
    wanted += [meta["vectors"]["href"]] if (meta.get("vectors") or {}).get("href") else []
    wanted += [meta["nodes"]] if isinstance(meta.get("nodes"), str) else []
    wanted += [f"{vectorshards.VECTORS_DIR}/{i}.bin" for i in range(len((meta.get("vectors") or {}).get("shards") or []))]
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    return present == {META, *wanted}


def build_search_index(site: Path, *, postings_per_shard: int = POSTINGS_PER_SHARD, state=None,
                       records_inline_bytes: int = RECORDS_INLINE_BYTES, memo=None,
                       bundle_postings: int | None = None, bodies: BodyTerms | None = None) -> SearchReport:
    """Write ``site/_search/`` from the built site (module docstring). Raises PipelineError on a
    site the client cannot read.

    With ``state`` (a build's ``BuildState``, after the index stage and the embeddings), the
    index is neither read nor hashed when this build's ``documents``, ``index`` and
    ``embeddings`` digests (which name every input ``inputs_digest`` reads) are those of the
    previous build and ``meta.json`` is still what it wrote, with every file present: reading
    and hashing every manifest was a large part of a no-op rebuild.

    With ``memo`` (``site/memo.py``; a build passes its state's), each topic's share of the index
    (its chunks' term counts, records and prompts: ``_topic_part``) is taken from the memo while
    the topic's ``index.json`` and manifests are those it was computed from, so a rebuild after
    one edit tokenises and reads only the edited topic's chunks. The global scoring (document
    frequencies, average lengths, the impact scale) is recomputed from every share, so the files
    are those a build without a memo writes.

    ``bundle_postings`` (default ``BUNDLE_POSTINGS``): the largest topic, in postings, that gets a
    bundle; a bigger one gets its own term shards and record blocks (tests lower it).

    ``bodies`` (a build: ``search/bodies.py``, counted while it encoded): chunk texts whose
    terms are counted already; the same counts, so the same files."""
    from pipeline.client import SiteError, open_site
    from pipeline.site.state import Digest, file_hash

    site = Path(site)
    report = SearchReport()
    bundle_postings = BUNDLE_POSTINGS if bundle_postings is None else bundle_postings
    if state is not None:
        key = Digest(postings_per_shard, records_inline_bytes, bundle_postings,
                     *(state.recorded_all(s) for s in ("documents", "index", "embeddings"))).hex()
        entry = state.get("search", META, key)
        if entry is not None and file_hash(site / SEARCH_DIR / META) == entry.get("output") and _unchanged(site / SEARCH_DIR, None):
            state.put("search", META, key, output=entry["output"])
            return report
        report = build_search_index(site, postings_per_shard=postings_per_shard, records_inline_bytes=records_inline_bytes,
                                    memo=state.memo, bundle_postings=bundle_postings, bodies=bodies)
        output = file_hash(site / SEARCH_DIR / META)
        if output is not None:
            state.put("search", META, key, output=output)
        return report
    digest, folder_digests = _input_digests(site, postings_per_shard, records_inline_bytes, bundle_postings)
    if _unchanged(site / SEARCH_DIR, digest):
        return report
    try:
        reader = open_site(site)
        all_nodes = reader.nodes()
        topic_nodes = reader.topics()
    except SiteError as exc:
        raise PipelineError(f"cannot read the built site for the search index: {exc}", path=site) from None
    table = PostingTable()
    chunk_files: list[bytes] = []  # chunks/<b>.json, encoded as each block fills: no record list for the whole site
    block: list[dict] = []
    bundle_records: dict[int, list[dict]] = {}  # records of the topics small enough for a bundle
    topic_blocks: dict[str, bytes] = {}  # big topics' own record blocks, written once every input is read
    topics_meta = []
    prompts = []
    centroid_rows: list[tuple[str, np.ndarray]] = []
    model = None
    dimension = None
    topic_vectors: list[tuple[bytes | None, list[list]]] = []  # each topic's vectorshards rows (None: none yet)
    packer: Packer | None = Packer()  # every record packed for records.json, until they are too many
    for node in topic_nodes:
        dir_rel = Path(node.path).parent.as_posix()
        dir_rel = "" if dir_rel == "." else dir_rel
        key = memo.key("search-topic", node.path, folder_digests[dir_rel]) if memo is not None and dir_rel in folder_digests else None
        part = memo.get("search-topic", key) if key is not None else None
        if not _is_part(part):
            part = _topic_part(site, reader, node, bodies)  # nothing is written before the loop ends
            if key is not None:
                memo.put("search-topic", key, part)
        documents, table_part, topic_records, topic_prompts, ours, radius = part
        start, postings_before = table.chunks, len(table.chunk)
        table.extend(table_part)
        if ours:  # another algorithm's hashes cannot be matched: left out
            prompts.extend([h, start + i] for h, i in topic_prompts)
        for record in topic_records:
            block.append(record)
            if packer is not None:
                packer.add(record, node.id)
                if packer.size > records_inline_bytes:
                    packer = None
            if len(block) == BLOCK:
                chunk_files.append(_dumps(block))
                block = []
        topic_shards = None  # a topic too big for a bundle: its own term shards (written below)
        if len(table.chunk) - postings_before <= bundle_postings:
            bundle_records[len(topics_meta)] = topic_records
        else:
            topic_shards = max(1, math.ceil((len(table.chunk) - postings_before) / postings_per_shard))
            for b in range(0, len(topic_records), BLOCK):  # its blocks now: no records kept for later
                topic_blocks[f"{topic_dir(len(topics_meta))}/chunks/{b // BLOCK}.json"] = _dumps(topic_records[b:b + BLOCK])
        embeddings = site / Path(node.path).parent / vectors.FILE_NAME
        stored = vectors.decode(embeddings.read_bytes(), source=str(embeddings)) if embeddings.is_file() else None
        if stored is not None and len(stored.vectors):
            model = model or stored.model
            centre = stored.vectors.mean(axis=0)
            norm = float(np.linalg.norm(centre))
            centroid_rows.append((node.id, (centre / norm if norm else centre).reshape(1, -1)))
            dimension = dimension or stored.vectors.shape[1]
        topic_vectors.append((vectorshards.topic_rows(stored, documents, dimension) if dimension else None, documents))
        topics_meta.append({
            "id": node.id,
            "start": start,
            "count": table.chunks - start,
            # null when the vector rows are the topic's chunks in order (the usual case): the
            # per-document list is only needed to map rows of a table that disagrees with the index
            "documents": None if stored is not None and [list(d) for d in stored.documents] == documents else documents,
            "index": node.path,
            "radius": radius,
            "embeddings": embeddings.relative_to(site).as_posix() if stored is not None else None,
            "shards": topic_shards,
        })
    if block:
        chunk_files.append(_dumps(block))
    # every input is read: from here each file is written as soon as it is made
    files = _Output(site / SEARCH_DIR, report)
    files.update(topic_blocks)
    del topic_blocks
    chunk_count = table.chunks
    ids, levels, bounds, scale = table.sorted_postings()
    term_ids = table.term_ids
    postings, term_count = len(table.chunk), len(term_ids)
    del table
    shards = max(1, math.ceil(postings / postings_per_shard))
    site_terms: dict[str, list] = {}
    inline_candidates: list[tuple[int, str, list]] = []  # (document frequency, term, postings)
    # Every term's chunk-number deltas (the first of a term is the chunk number itself), for all
    # terms at once: a numpy call per term cost more than its postings.
    deltas = np.diff(ids, prepend=0)
    firsts = bounds[:-1]
    deltas[firsts] = ids[firsts]
    for term in sorted(term_ids):
        tid = term_ids[term]
        lo, hi = int(bounds[tid]), int(bounds[tid + 1])
        entry = site_terms[term] = [deltas[lo:hi].tolist(), levels[lo:hi].tolist()]
        if packer is not None:
            inline_candidates.append((hi - lo, term, entry))
    del deltas
    files.update(_shard_files("terms", site_terms, shards))
    del site_terms
    if packer is None:  # too many records for records.json: the blocks hold them
        for b, data in enumerate(chunk_files):
            files[f"chunks/{b}.json"] = data
    del chunk_files
    # each topic's postings (the same impacts and site-wide chunk numbers): a bundle with its
    # records, or its own shards, made one topic at a time so only one topic's lists exist at once
    names = list(term_ids)  # term ids are given in insertion order
    term_of = np.repeat(np.arange(len(names), dtype=np.int32), np.diff(bounds))
    owners = np.searchsorted(np.array([t["start"] for t in topics_meta], dtype=np.int64), ids, side="right") - 1
    by_topic = np.argsort(owners, kind="stable")  # stable: (term, chunk) order within a topic
    topic_bounds = np.concatenate(([0], np.cumsum(np.bincount(owners, minlength=len(topics_meta))))).tolist()
    del owners
    for i, topic in enumerate(topics_meta):
        mine = _topic_postings(ids, levels, term_of, names, by_topic[topic_bounds[i]:topic_bounds[i + 1]])
        topic["bundle"] = f"topics/{i}.json" if i in bundle_records else None
        if i in bundle_records:
            files[topic["bundle"]] = _dumps({"terms": mine, "records": bundle_records.pop(i)})
        else:
            files.update(_shard_files(f"{topic_dir(i)}/terms", mine, topic["shards"]))
    del term_of, by_topic
    centroids = vectors.encode(model, centroid_rows, dtype="int8") if centroid_rows and model else None
    shard_meta = _vector_shards(topic_vectors, dimension, files) if centroids else None
    del topic_vectors
    files[NODES] = _dumps([
        {"id": n.id, "title": n.title, "documents": n.documents, "path": n.path, "parent": n.parent, "children": list(n.children)}
        for n in all_nodes
    ])
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "tokenizer": TOKENIZER,
        "chunks": chunk_count,
        "terms": term_count,
        "shards": shards,
        "block": BLOCK,
        "scoring": {"method": "bm25f-impact", "k1": K1, "fields": {f: {"weight": w, "b": b} for f, (w, b) in FIELDS.items()},
                    "scale": scale},
        "topics": topics_meta,
        "prompts": prompts,
        "vectors": _vectors_meta(model, centroids, files, shard_meta),
        "nodes": NODES,
        "records": RECORDS if packer is not None else None,
        "inputs": digest,
    }
    files[META] = _dumps(manifest)
    inline_terms = _inline_terms(packer.size, inline_candidates, records_inline_bytes) if packer is not None else {}
    del inline_candidates
    files[RECORDS] = _dumps({"meta": manifest, "records": packer.packed() if packer is not None else None,
                             "terms": inline_terms, "all_terms": len(inline_terms) == term_count})
    folder = site / SEARCH_DIR
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.relative_to(folder).as_posix() not in files:
            path.unlink()
            report.removed += 1
    report.chunks, report.terms, report.shards = chunk_count, term_count, shards
    return report


class _Output:
    """The files of ``_search/`` as they are made: each written at once (``write_bytes_atomic``:
    atomically, and not at all when unchanged) and only its name kept, so the index (~180 MB at
    100k chunks) is never whole in memory; ``rel in output`` tells the files to keep."""

    def __init__(self, folder: Path, report: SearchReport):
        self.folder, self.report, self.names = folder, report, set()

    def __setitem__(self, rel: str, data: bytes) -> None:
        self.report.written += write_bytes_atomic(self.folder / rel, data)
        self.report.bytes += len(data)
        self.names.add(rel)

    def update(self, files: dict[str, bytes]) -> None:
        for rel, data in files.items():
            self[rel] = data

    def __contains__(self, rel: str) -> bool:
        return rel in self.names


def topic_dir(i: int) -> str:
    """The folder of topic ``i``'s own term shards and record blocks (a topic without a bundle)."""
    return f"topics/{i}"


def _shard_files(folder: str, entries: dict[str, list], shards: int) -> dict[str, bytes]:
    """``{folder}/<s>.json`` for s in 0..shards-1, each {term: entry} of the terms of ``entries``
    with ``shard_of(term, shards) == s`` (an empty object when none): the site-wide term shards
    and a big topic's own are the same files, hashed alike."""
    by_shard: dict[int, dict] = defaultdict(dict)
    for term, entry in entries.items():
        by_shard[shard_of(term, shards)][term] = entry
    return {f"{folder}/{s}.json": _dumps(by_shard.get(s, {})) for s in range(shards)}


def _topic_postings(ids: np.ndarray, levels: np.ndarray, term_of: np.ndarray, names: list[str], at: np.ndarray) -> dict[str, list]:
    """{term: [chunk-number deltas, impacts]} of the postings at positions ``at`` (one topic's,
    in term then chunk order) of the sorted arrays (``PostingTable.sorted_postings``; ``term_of``:
    each posting's term id, ``names``: the terms by id). As in the site-wide shards, a term's
    first delta is its chunk number: the entries are the shards' restricted to the topic."""
    if not len(at):
        return {}
    chunks, tids = ids[at], term_of[at]
    deltas = np.diff(chunks, prepend=0)
    firsts = np.flatnonzero(np.diff(tids, prepend=-1))  # each term's first posting in the topic
    deltas[firsts] = chunks[firsts]
    cuts = [*firsts.tolist(), len(at)]
    delta_list, level_list = deltas.tolist(), levels[at].tolist()
    return {names[tid]: [delta_list[a:b], level_list[a:b]] for tid, a, b in zip(tids[firsts].tolist(), cuts, cuts[1:])}


def _inline_terms(records_size: int, candidates: list[tuple[int, str, list]], records_inline_bytes: int) -> dict[str, list]:
    """The terms records.json carries: every one when the records and all the postings fit
    ``ALL_TERMS_FACTOR * records_inline_bytes`` (postings counted TERM_BYTES_WEIGHT times), so a
    query's lexical side is that one request; else the rarest, in order of (document frequency,
    term), while the whole stays under ``records_inline_bytes``. ``candidates``: (document
    frequency, term, postings) of every term."""
    weights = [TERM_BYTES_WEIGHT * (len(orjson.dumps(entry)) + len(orjson.dumps(term)) + 2) for _, term, entry in candidates]
    if records_size + sum(weights) <= ALL_TERMS_FACTOR * records_inline_bytes:
        return {term: entry for _, term, entry in candidates}
    inline: dict[str, list] = {}
    room = records_inline_bytes - records_size
    for weight, (_, term, entry) in sorted(zip(weights, candidates), key=lambda c: (c[1][0], c[1][1])):
        room -= weight
        if room < 0:
            break
        inline[term] = entry
    return inline


def _topic_part(site: Path, reader, node, bodies: BodyTerms | None = None) -> tuple:
    """One topic's share of the index, from its ``index.json``, manifests and chunk files, as
    plain values (``site/memo.py`` stores them): (its documents ``[[name, chunks]]``, its chunks'
    term counts as a ``PostingTable.to_part`` numbered from 0, its chunk records, its prompts
    ``[[hash, chunk number from 0]]``, whether its prompt hashes use our SimHash, its radius).
    ``bodies``: chunk texts whose term counts are known already (the same counts)."""
    from pipeline.client import SiteError

    try:
        index = reader.topic(node)
    except SiteError as exc:
        raise PipelineError(f"cannot read the built site for the search index: {exc}", path=site) from None
    table = PostingTable()
    records: list[dict] = []
    prompts: list[list] = []
    last_manifest: dict = {}
    ours, radius = _matching(site / node.path)
    counted: dict[str, Counter] = {}  # each title's and heading's terms, counted once (``add`` only reads them)

    def count(text: str) -> Counter:
        if text not in counted:
            counted[text] = Counter(terms(text))
        return counted[text]

    for document in index.documents:
        for ref in document.items:
            text = (site / ref.path).read_text(encoding="utf-8")
            body = bodies.counts(text) if bodies is not None else None
            table.add({
                "title": count(document.title),
                "heading": count(clean_heading(ref.header_path) or ref.title),
                "body": body if body is not None else Counter(terms(text)),
            })
            if ours:
                prompts.extend([f"{h:016x}", table.chunks - 1] for h in ref.prompt_hashes)
            records.append(chunk_record(ref, document, _front_matter(site, ref, last_manifest)))
    documents = [[d.name, len(d.items)] for d in index.documents]
    return documents, table.to_part(), records, prompts, ours, radius


def _is_part(value: object) -> bool:
    """True when ``value`` has the shape ``_topic_part`` returns (a memo entry is checked, never trusted)."""
    return (
        isinstance(value, tuple) and len(value) == 6 and isinstance(value[0], list) and isinstance(value[1], tuple)
        and len(value[1]) == 5 and isinstance(value[2], list) and isinstance(value[3], list)
        and isinstance(value[4], bool) and (value[5] is None or isinstance(value[5], int))
    )


def _vector_shards(topic_vectors: list[tuple[bytes | None, list[list]]], dimension: int, files: _Output) -> dict:
    """The ``vectors/<i>.bin`` shard files (``pipeline.search.vectorshards``), added to ``files``,
    and what the manifest says of them: dimension, each document's rows, each shard's range."""
    width = vectorshards.row_bytes(dimension)
    shards = vectorshards.shard_layout([[c for _, c in docs] for _, docs in topic_vectors], dimension)
    topic_starts = np.cumsum([0] + [sum(c for _, c in docs) for _, docs in topic_vectors]).tolist()
    for i, (start, count) in enumerate(shards):
        # a shard never crosses a topic: a slice of that topic's rows (no copy of the site's)
        t = bisect.bisect_right(topic_starts, start) - 1
        data, offset = topic_vectors[t][0], (start - topic_starts[t]) * width
        files[f"{vectorshards.VECTORS_DIR}/{i}.bin"] = bytes(count * width) if data is None else data[offset:offset + count * width]
    documents = [c for _, docs in topic_vectors for _, c in docs if c]
    return {"dimension": dimension, "documents": documents, "shards": shards}


def _vectors_meta(model: str | None, centroids: bytes | None, files: _Output, shards: dict | None = None) -> dict | None:
    """``meta.json``'s ``vectors``: the centroids inline (base64) while they are small, since every
    hybrid query needs them and a request fewer is worth a few kB; else ``centroids.bin``, added
    to ``files`` (a site of hundreds of topics must not make every query's meta.json heavy).
    With ``shards`` (``_vector_shards``), its dimension, documents and shards too."""
    if not centroids:
        return None
    extra = shards or {}
    if len(centroids) <= CENTROIDS_INLINE_BYTES:
        return {"model": model, "centroids": base64.b64encode(centroids).decode("ascii"), **extra}
    files[CENTROIDS] = centroids
    return {"model": model, "href": CENTROIDS, **extra}


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
