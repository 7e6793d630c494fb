"""Build ``_search/``: the static lexical index, the chunk records and the topic centroids.

Runs after publish (it reads what readers read: every ``index.json``, the chunk files, each
topic's ``_embeddings.bin``) and writes, under ``SITE/_search/`` (docs/ARCHITECTURE.md
"`_search/`")::

    meta.json           the root manifest, all that every query needs: counts, each document's
                        chunk count, scoring constants, topics (their chunk and document ranges
                        and files), SimHash prompts, the names of the content-named files, and
                        the topic centroids inline (base64 of the _embeddings.bin format, one
                        "document" per topic) or the name of a centroids file
    records.json        {"meta": meta.json's manifest, "records": every chunk record packed
                        (``pipeline.siteformat.packedrecords``) or null, "terms": {term: postings} of the
                        rarest terms}: what an unscoped query reads instead of meta.json. The
                        records and terms go in on a site whose records pack under
                        RECORDS_INLINE_BYTES but whose records and every term would not fit
                        ALL_TERMS_FACTOR times that (terms in order of (document frequency, term)
                        while the whole stays under it, a term's bytes counted TERM_BYTES_WEIGHT
                        times; they stay in their shards too)
    nodes.json          the site's folder tree for a page's navigation: [{id, title, documents,
                        path, parent, children}] in breadth-first order
    parts/<h>.json      a site small enough for every term: {"records", "terms"} of a run of
                        documents (the site's documents cut into ceil(weight / PART_WEIGHT) runs
                        of equal document counts); an unscoped query reads them all, no term shard
    terms/<h>.json      {term: postings} of the terms with fnv1a32(term) % S == s, shard s the
                        manifest's terms[s] (every site but a small one), and under "" the
                        static encoder's rows of those terms' words (``wordrows``)
    words/<h>.json      a small site's word rows, {"": {word: row}}, hashed by term as the
                        term shards (named in the manifest's encoder entry, ``words``)
    segments/<h>.json   a topic of at most BUNDLE_POSTINGS postings: {"records", "terms"} of a
                        content-defined group of its documents (``pipeline.search.groups``, about
                        SEGMENT_ROWS chunks): a query scoped to it reads its segments
    topics/<h>.json     a bigger topic's own term shards, hashed as the site-wide ones: a query
                        scoped to it reads the shards of its terms, then its hits' blocks
    blocks/<h>.json     packed records of a content-defined group of one topic's documents
                        (about BLOCK_ROWS chunks): every topic's on a site too big for records.json
                        to hold its records, else a big topic's
    vectors/<h>.bin     every chunk's vector at 4 bits a value, a row's scale beside its values (one
                        document's rows: one contiguous range), content-defined groups of whole
                        documents of one topic (``pipeline.siteformat.vectorshards``). A hybrid query
                        reads the shards of its first lexical hits' documents
    centroids/<h>.bin   the centroids when too big to inline

Every file but the first three is named by a hash of its bytes (``layout``), so an edit rewrites
the files whose bytes change and a host may let readers cache the others for good.

Postings (``layout.Postings``): ``[chunk deltas, levels]`` per term in a part or segment, chunk
numbers counted from the file's first chunk; ``[document deltas, chunk indexes, levels]`` in a
site-wide term shard, records.json and a big topic's own term shards, a chunk named by its
document (counted from the site's or the topic's first) and its index there, so a document that
gains a chunk changes no other document's postings. A level is the chunk's BM25F
term-frequency part, quantised (``scoring``); the reader multiplies it by the term's idf, which
it counts from the postings it reads (``rank.lexical_ranking``): no file holds a number that
depends on chunks it does not hold, but for the average field lengths, on a grid an edit almost
never crosses.

Site order: topics as the client's breadth-first walk meets them, documents as each topic lists
them, chunks by index (chunk numbers, document numbers). Scoring is BM25F (docs/ARCHITECTURE.md);
a query's score is an integer sum, so both clients rank identically without float drift.

Guarantees: deterministic bytes (sorted keys, fixed separators); files are written atomically
and only when changed; files of an earlier build that this one does not write are removed.
``meta.json`` records ``inputs``, the xxh64 of everything the index is made from (every
``index.json``, chunk manifest and ``_embeddings.bin``, and the code of this package and of
``pipeline.siteformat``); when it still matches and every file is present, nothing is read or
written (a no-op rebuild stays fast).
Chunk texts enter through the manifests' ``content_xxh64``.

This module is the stage: when to rebuild (the input digests) and what a site's index holds;
``pipeline.search.assemble`` the walk of the topics in site order, the site-wide numbering, which
kinds of files a site gets and the order they are made in.
The scoring is ``pipeline.search.scoring``, the files' names ``pipeline.siteformat.searchlayout``
and contents ``pipeline.search.layout``, their makers ``pipeline.search.makers``, a topic's share
``pipeline.search.topicpart``; the ``inputs`` digest hashes every ``*.py`` of this package and of
``pipeline.siteformat`` (``_CODE``), so theirs too.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import xxhash

from pipeline.handoff import BuildHandoff
from pipeline.reuse.state import Digest, file_hash
from pipeline.search import layout
from pipeline.search.assemble import IndexBuild
from pipeline.search.layout import SearchReport
from pipeline.siteformat.searchtext import TOKENIZER
from pipeline.siteformat import vectors
from pipeline.siteformat.indexnames import INDEX_DIR
from pipeline.siteformat.searchlayout import (BLOCKS, FORMAT, META, PARTS, RECORDS, SEARCH_DIR, SEGMENTS, TERMS, TOPIC_SHARDS,
                                              VECTORS, VERSION, WORDS, content_path, encoder_names)
from pipeline.siteformat.tree import CHUNKS_DIR, INDEX_FILE, site_dirs
# the names the clients, tests and benches import from here, defined in the modules above
from pipeline.search.layout import ALL_TERMS_FACTOR, CENTROIDS_INLINE_BYTES, TERM_BYTES_WEIGHT  # noqa: F401, E402
from pipeline.search.scoring import FIELDS, K1, MAX_IMPACT, impacts, quantise  # noqa: F401, E402
from pipeline.search.topicpart import chunk_record  # noqa: F401, E402
from pipeline.siteformat.searchlayout import CENTROIDS  # noqa: F401, E402

_CODE = sorted(Path(__file__).parent.glob("*.py")) + sorted((Path(__file__).parent.parent / "siteformat").glob("*.py"))
"""The code the index's bytes depend on, in ``inputs_digest``: every module of this package
(scoring, layout, topicpart...) and of the format package (the files' names, the reader)."""

KEEP = "keep"
"""``build_search_index(encoder=KEEP)``: keep the static encoder the previous manifest names."""

POSTINGS_PER_SHARD = 4000
"""Most postings a term shard holds on average (a power of two of shards: ``layout.shard_count``;
~2,000-4,000, about 4-8 kB gzipped, so a cold term costs one small file)."""
RECORDS_INLINE_BYTES = 800_000
"""Largest records.json, in JSON bytes of its packed records plus TERM_BYTES_WEIGHT times those of
its inline terms (~100 kB gzipped; the records alone fill it at ~11,000 chunks of the synthetic
corpus). Once a session, an unscoped query pays that instead of one ~4 kB block request per hit
(5 hits lie in ~5 of 83 blocks at 10k chunks: nothing clusters them) and one shard request per
rare query term; above it the bytes would outgrow the requests saved, and the blocks serve."""
BUNDLE_POSTINGS = 60000
"""Largest topic, in postings, whose scoped queries read its segments (postings and records of
its documents, ~50 kB gzipped a topic at most); a bigger topic has its own term shards and record
blocks instead, so its scoped queries read bytes that grow with the query, not with the topic."""


def inputs_digest(site: Path, postings_per_shard: int, records_inline_bytes: int = RECORDS_INLINE_BYTES,
                  bundle_postings: int = BUNDLE_POSTINGS, part_weight: int = layout.PART_WEIGHT) -> str:
    """xxh64 of the index's inputs: site files it reads (names and bytes), the layout's
    parameters and the code (``_CODE``)."""
    return _input_digests(site, postings_per_shard, records_inline_bytes, bundle_postings, part_weight)[0]


def _input_digests(site: Path, postings_per_shard: int, records_inline_bytes: int,
                   bundle_postings: int = BUNDLE_POSTINGS, part_weight: int = layout.PART_WEIGHT,
                   encoder: str | None = None) -> tuple[str, dict[str, str]]:
    """(``inputs_digest``, {directory: xxh64 of its index files and chunk manifests}) from one
    read of each file. A directory's digest names every input of its topic's share of the index
    (``topic_part``): its index files (``index.json``, ``_index/``), and through the manifests
    each chunk file's text (``content_xxh64``) and front matter."""
    h = xxhash.xxh64()
    h.update(f"{FORMAT}/{VERSION}/{TOKENIZER}/{postings_per_shard}/{bundle_postings}/{layout.CENTROIDS_INLINE_BYTES}/{records_inline_bytes}/{layout.TERM_BYTES_WEIGHT}/{layout.ALL_TERMS_FACTOR}/{part_weight}/{encoder}\0".encode())
    for code in _CODE:
        h.update(f"{code.parent.name}/{code.name}".encode() + b"\0" + code.read_bytes())
    folders: dict[str, str] = {}
    for dir_rel in site_dirs(site):
        folder = site / dir_rel
        names = [INDEX_FILE, vectors.FILE_NAME] + sorted(
            f"{sub}/{p.name}" for sub in (CHUNKS_DIR, INDEX_DIR) for p in (folder / sub).glob("*.json")
        ) + sorted(f"{INDEX_DIR}/{p.name}" for p in (folder / INDEX_DIR).glob("*.bin") if vectors.is_page_file(p.name))
        mine = xxhash.xxh64()
        for name in names:
            path = folder / name
            if path.is_file():
                data = f"{dir_rel}/{name}\0".encode() + path.read_bytes() + b"\0"
                h.update(data)
                if not name.endswith(".bin"):  # the vectors' centroid is computed afresh: not part of a topic's share
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


def listed_files(meta: dict) -> set[str]:
    """Every file below ``_search/`` the manifest ``meta`` names (itself and records.json too)."""
    return set(listed_spans(meta))


def listed_spans(meta: dict) -> dict[str, tuple[int, int] | None]:
    """Every file below ``_search/`` the manifest ``meta`` names, with the chunk numbers its data
    covers, ``(first, end)``: one topic's (its segments, term shards, record blocks, vector
    shards), or None for a file of the whole site (the manifests, term shards, parts, centroids,
    nodes.json)."""
    starts = [0]
    for count in meta["documents"]:
        starts.append(starts[-1] + count)
    span = lambda first, n: (starts[first], starts[first + n])  # noqa: E731
    files: dict[str, tuple[int, int] | None] = {META: None, RECORDS: None}
    if isinstance(meta.get("nodes"), str):
        files[meta["nodes"]] = None
    files.update((content_path(TERMS, h), None) for h in meta.get("terms") or ())
    files.update((content_path(PARTS, h), None) for _, _, h in meta.get("parts") or ())
    for t in meta["topics"]:
        files.update((content_path(SEGMENTS, h), span(f, n)) for f, n, h in t.get("segments") or ())
        files.update((content_path(TOPIC_SHARDS, h), (t["start"], t["start"] + t["count"])) for h in t.get("shards") or ())
        files.update((content_path(BLOCKS, h), span(f, n)) for f, n, h in t.get("blocks") or ())
    info = meta.get("vectors") or {}
    files.update((content_path(VECTORS, h), span(f, n)) for f, n, h in info.get("shards") or ())
    if info.get("href"):
        files[info["href"]] = None
    files.update((name, None) for name in encoder_names(meta.get("encoder")))  # the static query encoder's
    words = (meta.get("encoder") or {}).get("words")
    files.update((content_path(WORDS, h), None) for h in (words if isinstance(words, list) else ()))
    return files


def _unchanged(folder: Path, digest: str | None) -> bool:
    """True when ``folder`` holds a complete index built from inputs with ``digest`` (any
    inputs when None: the caller vouched for them)."""
    try:
        meta = orjson.loads((folder / META).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    if not isinstance(meta, dict) or meta.get("version") != VERSION or (digest is not None and meta.get("inputs") != digest):
        return False
    try:
        wanted = listed_files(meta)
    except (KeyError, TypeError, ValueError, IndexError):
        return False
    present = set()
    for root, _, names in os.walk(folder):  # scandir below: a fifth of pathlib's rglob at 10k documents
        prefix = os.path.relpath(root, folder).replace(os.sep, "/")
        present.update(names if prefix == "." else (f"{prefix}/{n}" for n in names))
    return present == wanted


def build_search_index(site: Path, *, postings_per_shard: int = POSTINGS_PER_SHARD,
                       records_inline_bytes: int = RECORDS_INLINE_BYTES, bundle_postings: int | None = None,
                       part_weight: int | None = None, encoder: tuple[dict, dict[str, bytes]] | None | str = KEEP,
                       state=None, handoff: BuildHandoff | None = None) -> SearchReport:
    """Write ``site/_search/`` from the built site (module docstring). Raises PipelineError on a
    site whose index files cannot be read.

    ``bundle_postings`` (default ``BUNDLE_POSTINGS``): the largest topic, in postings, that gets
    segments; a bigger one gets its own term shards and record blocks (tests lower it).
    ``part_weight`` (default ``layout.PART_WEIGHT``): a small site's weighted bytes a part (tests
    lower it).

    ``encoder`` (``site.static_encoder.site_encoder``): the static query encoder's manifest entry
    and files (under ``_search/``), written with the index and named by the manifest's
    ``encoder``; None: no encoder (null); ``KEEP`` (the default, a caller that does not publish
    one): the encoder the previous manifest names, when its files are all there.

    With ``state`` (a build's ``BuildState``, after the index stage and the embeddings), the
    index is neither read nor hashed when this build's ``documents``, ``index`` and
    ``embeddings`` digests (which name every input ``inputs_digest`` reads) are those of the
    previous build and ``meta.json`` is still what it wrote, with every file present: reading
    and hashing every manifest was a large part of a no-op rebuild. Its memo (``reuse/memo.py``)
    then gives each topic's share of the index (its chunks' term counts, records and prompts:
    ``topic_part``) while the topic's ``index.json`` and manifests are those it was computed from,
    so a rebuild after one edit tokenises and reads only the edited topic's chunks. The site-wide
    statistics (the average field lengths) are recomputed from every share, so the files are
    those a build without a memo writes.

    ``handoff`` (a build, ``handoff.py``): its ``bodies`` (term counts), ``drafts`` (topic
    shares) and ``prompts`` (the drafted topics' prompt hashes) stand in for reading the chunk
    files and document resources; the same shares, so the same files."""
    site = Path(site)
    bundle_postings = BUNDLE_POSTINGS if bundle_postings is None else bundle_postings
    part_weight = layout.PART_WEIGHT if part_weight is None else part_weight
    if encoder == KEEP:
        entry = _kept_encoder(site / SEARCH_DIR)
        encoder = (entry, None) if entry else None  # None: its files are there already
    encoder_href = encoder[0]["href"] if encoder else None
    knobs = (postings_per_shard, records_inline_bytes, bundle_postings, part_weight)
    handoff = handoff or BuildHandoff()
    if state is None:
        return _write_index(site, knobs, encoder, None, handoff)
    key = Digest(*knobs, encoder_href, *(state.recorded_all(s) for s in ("documents", "index", "embeddings"))).hex()
    whole = lambda entry: {} if _unchanged(site / SEARCH_DIR, None) else None  # noqa: E731
    if state.reuse("search", META, key, whole, output=site / SEARCH_DIR / META) is not None:
        return SearchReport()
    report = _write_index(site, knobs, encoder, state.memo, handoff)
    output = file_hash(site / SEARCH_DIR / META)
    if output is not None:
        state.put("search", META, key, output=output)
    return report


def _write_index(site: Path, knobs: tuple[int, int, int, int], encoder, memo, handoff: BuildHandoff) -> SearchReport:
    """``build_search_index`` from its inputs' digest on: nothing written when ``_search/`` holds
    the index of these inputs, whole."""
    postings_per_shard, records_inline_bytes, bundle_postings, part_weight = knobs
    encoder_href = encoder[0]["href"] if encoder else None
    digest, folder_digests = _input_digests(site, postings_per_shard, records_inline_bytes, bundle_postings, part_weight, encoder_href)
    if _unchanged(site / SEARCH_DIR, digest):
        return SearchReport()
    return IndexBuild(site, SearchReport(), postings_per_shard, records_inline_bytes, bundle_postings, part_weight, memo,
                      handoff.bodies, handoff.drafts, folder_digests, encoder, handoff.prompts).run(digest)
