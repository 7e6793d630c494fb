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

This module is the stage: when to rebuild (the input digests), the walk of the topics in site
order, the site-wide numbering, and the order the files are made in. The scoring is
``pipeline.search.scoring``, the files' names and makers ``pipeline.search.layout``, a topic's
share ``pipeline.search.topicpart``; the ``inputs`` digest hashes every ``*.py`` of this package,
so theirs too.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import xxhash

from pipeline.errors import PipelineError
from pipeline.search import layout, scoring, topicpart, vectorshards
from pipeline.search.bodies import BodyTerms
from pipeline.search.layout import BLOCK, META, NODES, RECORDS, SEARCH_DIR, Output, SearchReport, dumps, shard_files, topic_dir, topic_postings, vector_shards, vectors_meta
from pipeline.search.records import Packer
from pipeline.search.scoring import PostingTable
from pipeline.search.text import TOKENIZER
from pipeline.search.topicpart import is_part
# the names the clients, tests and benches import from here, defined in the modules above
from pipeline.search.layout import ALL_TERMS_FACTOR, CENTROIDS, CENTROIDS_INLINE_BYTES, TERM_BYTES_WEIGHT  # noqa: F401, E402
from pipeline.search.scoring import FIELDS, K1, MAX_IMPACT, impacts, quantise  # noqa: F401, E402
from pipeline.search.topicpart import chunk_record  # noqa: F401, E402
from pipeline.site import vectors
from pipeline.site.static_encoder import encoder_names

KEEP = "keep"
"""``build_search_index(encoder=KEEP)``: keep the static encoder the previous manifest names."""

FORMAT = "pipeline-search"
VERSION = 6
"""5: a topic too big for a bundle has its own term shards and record blocks (``topics/<i>/``);
6: records carry their source lines (``records.py`` rows) and ``meta.json`` the site's ``base_url``."""
POSTINGS_PER_SHARD = 3000
"""Target postings per term shard: about 4-8 kB gzipped, so a cold term costs one small file."""
RECORDS_INLINE_BYTES = 800_000
"""Largest records.json, in JSON bytes of its packed records plus TERM_BYTES_WEIGHT times those of
its inline terms (~100 kB gzipped; the records alone fill it at ~11,000 chunks of the synthetic
corpus). Once a session, an unscoped query pays that instead of one ~4 kB block request per hit
(5 hits lie in ~5 of 83 blocks at 10k chunks: nothing clusters them) and one shard request per
rare query term; above it the bytes would outgrow the requests saved, and the blocks serve."""
BUNDLE_POSTINGS = 60000
"""Largest topic bundle, in postings (~50 kB gzipped with its records); a bigger topic has its own
term shards and record blocks instead (``topics/<i>/``), so its scoped queries read no site-wide file."""


def inputs_digest(site: Path, postings_per_shard: int, records_inline_bytes: int = RECORDS_INLINE_BYTES,
                  bundle_postings: int = BUNDLE_POSTINGS) -> str:
    """xxh64 of the index's inputs: site files it reads (names and bytes), the layout's
    parameters and this package's code."""
    return _input_digests(site, postings_per_shard, records_inline_bytes, bundle_postings)[0]


def _input_digests(site: Path, postings_per_shard: int, records_inline_bytes: int,
                   bundle_postings: int = BUNDLE_POSTINGS, encoder: str | None = None) -> tuple[str, dict[str, str]]:
    """(``inputs_digest``, {directory: xxh64 of its index files and chunk manifests}) from one
    read of each file. A directory's digest names every input of its topic's share of the index
    (``topic_part``): its index files (``index.json``, ``_index/``), and through the manifests
    each chunk file's text (``content_xxh64``) and front matter."""
    from pipeline.index.names import INDEX_DIR
    from pipeline.site.tree import CHUNKS_DIR, INDEX_FILE, site_dirs

    h = xxhash.xxh64()
    h.update(f"{FORMAT}/{VERSION}/{TOKENIZER}/{postings_per_shard}/{bundle_postings}/{layout.CENTROIDS_INLINE_BYTES}/{records_inline_bytes}/{layout.TERM_BYTES_WEIGHT}/{layout.ALL_TERMS_FACTOR}/{encoder}\0".encode())
    for code in sorted(Path(__file__).parent.glob("*.py")):  # every module of the package: scoring, layout, topicpart...
        h.update(code.name.encode() + b"\0" + code.read_bytes())
    folders: dict[str, str] = {}
    for dir_rel in site_dirs(site):
        folder = site / dir_rel
        names = [INDEX_FILE, vectors.FILE_NAME] + sorted(
            f"{sub}/{p.name}" for sub in (CHUNKS_DIR, INDEX_DIR) for p in (folder / sub).glob("*.json")
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


def _kept_encoder(folder: Path) -> dict | None:
    """The ``encoder`` entry of ``folder``'s manifest when every file it names is there."""
    try:
        entry = orjson.loads((folder / META).read_bytes()).get("encoder")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    try:
        names = encoder_names(entry)
    except (KeyError, TypeError):
        return None
    return entry if names and all((folder / name).is_file() for name in names) else None


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
    wanted += encoder_names(meta.get("encoder"))
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    return present == {META, *wanted}


def build_search_index(site: Path, *, postings_per_shard: int = POSTINGS_PER_SHARD, state=None,
                       records_inline_bytes: int = RECORDS_INLINE_BYTES, memo=None,
                       bundle_postings: int | None = None, bodies: BodyTerms | None = None,
                       drafts: dict[str, tuple] | None = None, encoder: tuple[dict, dict[str, bytes]] | None | str = KEEP) -> SearchReport:
    """Write ``site/_search/`` from the built site (module docstring). Raises PipelineError on a
    site the client cannot read.

    With ``state`` (a build's ``BuildState``, after the index stage and the embeddings), the
    index is neither read nor hashed when this build's ``documents``, ``index`` and
    ``embeddings`` digests (which name every input ``inputs_digest`` reads) are those of the
    previous build and ``meta.json`` is still what it wrote, with every file present: reading
    and hashing every manifest was a large part of a no-op rebuild.

    With ``memo`` (``site/memo.py``; a build passes its state's), each topic's share of the index
    (its chunks' term counts, records and prompts: ``topic_part``) is taken from the memo while
    the topic's ``index.json`` and manifests are those it was computed from, so a rebuild after
    one edit tokenises and reads only the edited topic's chunks. The global scoring (document
    frequencies, average lengths, the impact scale) is recomputed from every share, so the files
    are those a build without a memo writes.

    ``bundle_postings`` (default ``BUNDLE_POSTINGS``): the largest topic, in postings, that gets a
    bundle; a bigger one gets its own term shards and record blocks (tests lower it).

    ``bodies`` (a build: ``search/bodies.py``, counted while it encoded): chunk texts whose
    terms are counted already; the same counts, so the same files. ``drafts`` (a build:
    ``topicpart.draft_parts``, made while it encoded): topic shares by index.json path, completed
    from the final index.json (``topicpart.complete_part``) instead of made afresh; the same
    shares, so the same files.

    ``encoder`` (``site.static_encoder.site_encoder``): the static query encoder's manifest entry
    and files (under ``_search/``), written with the index and named by the manifest's
    ``encoder``; None: no encoder (null); ``KEEP`` (the default, a caller that does not publish
    one): the encoder the previous manifest names, when its files are all there."""
    from pipeline.client import SiteError, open_site
    from pipeline.site.state import Digest, file_hash

    site = Path(site)
    report = SearchReport()
    bundle_postings = BUNDLE_POSTINGS if bundle_postings is None else bundle_postings
    if encoder == KEEP:
        entry = _kept_encoder(site / SEARCH_DIR)
        encoder = (entry, None) if entry else None  # None: its files are there already
    if state is not None:
        key = Digest(postings_per_shard, records_inline_bytes, bundle_postings, encoder[0]["href"] if encoder else None,
                     *(state.recorded_all(s) for s in ("documents", "index", "embeddings"))).hex()
        entry = state.get("search", META, key)
        if entry is not None and file_hash(site / SEARCH_DIR / META) == entry.get("output") and _unchanged(site / SEARCH_DIR, None):
            state.put("search", META, key, output=entry["output"])
            return report
        report = build_search_index(site, postings_per_shard=postings_per_shard, records_inline_bytes=records_inline_bytes,
                                    memo=state.memo, bundle_postings=bundle_postings, bodies=bodies, drafts=drafts,
                                    encoder=encoder)
        output = file_hash(site / SEARCH_DIR / META)
        if output is not None:
            state.put("search", META, key, output=output)
        return report
    digest, folder_digests = _input_digests(site, postings_per_shard, records_inline_bytes, bundle_postings,
                                            encoder[0]["href"] if encoder else None)
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
        if not is_part(part):
            draft = drafts.pop(node.path, None) if drafts else None
            part = topicpart.complete_part(draft, reader, node) if draft is not None else None
            if part is None:
                part = topicpart.topic_part(site, reader, node, bodies, memo)  # nothing is written before the loop ends
            if key is not None:
                memo.put("search-topic", key, part)
        else:
            topicpart.keep_documents(memo, node.path, part[0])  # a big topic's, for its next edit
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
                chunk_files.append(dumps(block))
                block = []
        topic_shards = None  # a topic too big for a bundle: its own term shards (written below)
        if len(table.chunk) - postings_before <= bundle_postings:
            bundle_records[len(topics_meta)] = topic_records
        else:
            topic_shards = max(1, math.ceil((len(table.chunk) - postings_before) / postings_per_shard))
            for b in range(0, len(topic_records), BLOCK):  # its blocks now: no records kept for later
                topic_blocks[f"{topic_dir(len(topics_meta))}/chunks/{b // BLOCK}.json"] = dumps(topic_records[b:b + BLOCK])
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
        chunk_files.append(dumps(block))
    # every input is read: from here each file is written as soon as it is made
    files = Output(site / SEARCH_DIR, report)
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
    files.update(shard_files("terms", site_terms, shards))
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
        mine = topic_postings(ids, levels, term_of, names, by_topic[topic_bounds[i]:topic_bounds[i + 1]])
        topic["bundle"] = f"topics/{i}.json" if i in bundle_records else None
        if i in bundle_records:
            files[topic["bundle"]] = dumps({"terms": mine, "records": bundle_records.pop(i)})
        else:
            files.update(shard_files(f"{topic_dir(i)}/terms", mine, topic["shards"]))
    del term_of, by_topic
    centroids = vectors.encode(model, centroid_rows, dtype="int8") if centroid_rows and model else None
    shard_meta = vector_shards(topic_vectors, dimension, files) if centroids else None
    del topic_vectors
    files[NODES] = dumps([
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
        "scoring": {"method": "bm25f-impact", "k1": scoring.K1, "fields": {f: {"weight": w, "b": b} for f, (w, b) in scoring.FIELDS.items()},
                    "scale": scale},
        "topics": topics_meta,
        "prompts": prompts,
        "vectors": vectors_meta(model, centroids, files, shard_meta),
        "nodes": NODES,
        "records": RECORDS if packer is not None else None,
        "base_url": reader.base_url,  # where public links start (citations), as the root index.json says
        "encoder": encoder[0] if encoder else None,
        "inputs": digest,
    }
    if encoder and encoder[1] is not None:
        files.update(encoder[1])
    files[META] = dumps(manifest)
    inline_terms = layout.inline_terms(packer.size, inline_candidates, records_inline_bytes) if packer is not None else {}
    del inline_candidates
    files[RECORDS] = dumps({"meta": manifest, "records": packer.packed() if packer is not None else None,
                             "terms": inline_terms, "all_terms": len(inline_terms) == term_count})
    folder = site / SEARCH_DIR
    kept = set(encoder_names(encoder[0])) if encoder and encoder[1] is None else set()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.relative_to(folder).as_posix() not in files and path.relative_to(folder).as_posix() not in kept:
            path.unlink()
            report.removed += 1
    report.chunks, report.terms, report.shards = chunk_count, term_count, shards
    return report
