"""One build of ``_search/`` (``pipeline.search.index`` decides when): every topic's share read in
site order (from the memo, a draft, or made afresh: ``topicpart``), then every file made from
them (``makers``), each written as soon as it is made, the manifest last; files of an earlier
build this one did not write are removed. Deterministic: the same site gives the same bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.errors import PipelineError
from pipeline.search import layout, makers, scoring, topicpart, wordrows
from pipeline.siteformat import vectorshards
from pipeline.search.layout import Output, Postings, SearchReport, dumps, vectors_meta
from pipeline.siteformat.searchrank import IDF_SCALE
from pipeline.siteformat.packedrecords import Packer
from pipeline.search.scoring import PostingTable
from pipeline.siteformat.searchtext import TOKENIZER
from pipeline.search.topicpart import is_part
from pipeline.siteformat import vectors
from pipeline.siteformat.reader import read_site
from pipeline.siteformat.readerrors import SiteError
from pipeline.siteformat.searchlayout import FORMAT, META, NODES, RECORDS, SEARCH_DIR, VERSION, encoder_names

SEGMENT_ROWS = 200
"""A segment's chunks on average (``groups``: ~120 kB of JSON, ~35 kB gzipped): an edit rewrites
one segment of its topic; a query scoped to the topic reads them all."""
BLOCK_ROWS = 128
"""A record block's chunks on average (``groups``)."""


class IndexBuild:
    """One build of ``_search/``: the topics read in site order (``read``), then the files made
    from them (``write``)."""

    def __init__(self, site, report, postings_per_shard, records_inline_bytes, bundle_postings, part_weight, memo, bodies,
                 drafts, folder_digests, encoder, written=None):
        self.site, self.report, self.part_weight = site, report, part_weight
        self.encoder = encoder  # (manifest entry, files or None: kept from the last build) or None
        self.postings_per_shard, self.records_inline_bytes, self.bundle_postings = postings_per_shard, records_inline_bytes, bundle_postings
        self.memo, self.bodies, self.drafts, self.folder_digests = memo, bodies, drafts, folder_digests
        self.written = written  # each drafted topic's ``index.tool.written_prompts``, by index.json path
        self.table = PostingTable()
        self.topics: list[dict] = []
        self.prompts: list[list] = []
        self.counts: list[int] = []  # each document's chunks, site order
        self.keys: list[str] = []  # each document's key (topic id / name), site order
        self.segment_records: dict[int, list[dict]] = {}  # records of the topics small enough for segments
        self.blocks: dict[int, list[tuple[int, int, bytes]]] = {}  # each topic's record blocks (first doc, docs, bytes)
        self.packer: Packer | None = Packer()  # every record packed for records.json or parts, until they are too many
        self.centroid_rows: list[tuple[str, np.ndarray]] = []
        self.model = None
        self.dimension = None
        self.topic_vectors: list[bytes | None] = []  # each topic's vectorshards rows (None: none yet)
        self.words: set[str] = set()  # the chunks' words (``topicpart.text_words``), for the word rows

    def run(self, digest: str) -> SearchReport:
        try:
            reader = read_site(self.site)
            all_nodes = reader.nodes()
            topic_nodes = reader.topics()
        except SiteError as exc:
            raise PipelineError(f"cannot read the built site for the search index: {exc}", path=self.site) from None
        for node in topic_nodes:
            self.read(reader, node)
        return self.write(all_nodes, digest, reader.base_url)

    # --- reading ----------------------------------------------------------------------------------

    def read(self, reader, node) -> None:
        """Add one topic's share (from the memo, a draft, or made afresh) to the site's."""
        memo, site = self.memo, self.site
        dir_rel = Path(node.path).parent.as_posix()
        dir_rel = "" if dir_rel == "." else dir_rel
        key = memo.key("search-topic", node.path, self.folder_digests[dir_rel]) if memo is not None and dir_rel in self.folder_digests else None
        part = memo.get("search-topic", key) if key is not None else None
        if not is_part(part):
            draft = self.drafts.pop(node.path, None) if self.drafts else None
            written = self.written.pop(node.path, None) if self.written else None
            part = topicpart.complete_part(draft, reader, node, written) if draft is not None else None
            if part is None:
                part = topicpart.topic_part(site, reader, node, self.bodies, memo)  # nothing is written before the loop ends
            if key is not None:
                memo.put("search-topic", key, part)
        else:
            topicpart.keep_documents(memo, node.path, part[0])  # a big topic's, for its next edit
        documents, table_part, records, topic_prompts, ours, radius, words = part
        self.words.update(words)
        table = self.table
        i, start, postings_before, first = len(self.topics), table.chunks, len(table.chunk), len(self.counts)
        table.extend(table_part)
        if ours:  # another algorithm's hashes cannot be matched: left out
            self.prompts.extend([h, start + n] for h, n in topic_prompts)
        keys = [f"{node.id}/{name}" for name, _ in documents]
        rows = [count for _, count in documents]
        self.keys += keys
        self.counts += rows
        if self.packer is not None:
            for record in records:
                self.packer.add(record, node.id)
            if self.packer.size > self.records_inline_bytes:
                self.packer = None
        self.blocks[i] = makers.record_blocks(records, keys, rows, first, node.id, BLOCK_ROWS)
        if len(table.chunk) - postings_before <= self.bundle_postings:
            self.segment_records[i] = records
        embeddings = site / Path(node.path).parent / vectors.FILE_NAME
        stored = vectors.read(lambda name: _read_or_none(embeddings.parent / name), locate=lambda name: str(embeddings.parent / name))
        if stored is not None and len(stored.vectors):
            self.model = self.model or stored.model
            centre = stored.vectors.mean(axis=0)
            norm = float(np.linalg.norm(centre))
            self.centroid_rows.append((node.id, (centre / norm if norm else centre).reshape(1, -1)))
            self.dimension = self.dimension or stored.vectors.shape[1]
        self.topic_vectors.append(vectorshards.topic_rows(stored, documents, self.dimension) if self.dimension else None)
        self.topics.append({
            "id": node.id,
            "start": start,
            "count": table.chunks - start,
            "first": first,
            "docs": len(documents),
            # null when the vector rows are the topic's chunks in order (the usual case): the
            # per-document list is only needed to map rows of a table that disagrees with the index
            "documents": None if stored is not None and [list(d) for d in stored.documents] == documents else documents,
            "index": node.path,
            "radius": radius,
            "embeddings": embeddings.relative_to(site).as_posix() if stored is not None else None,
            "segments": None,
            "shards": None,
            "blocks": None,
        })

    # --- writing ----------------------------------------------------------------------------------

    def _encoder_file(self, rel: str) -> bytes:
        """The bytes of the static encoder's file ``rel`` (under ``_search/``): this build's, or
        the one a kept encoder left on disk."""
        made = self.encoder[1]
        if made is not None:
            return made[rel]
        try:
            return (self.site / SEARCH_DIR / rel).read_bytes()
        except OSError as exc:
            raise PipelineError(f"cannot read the static encoder's {rel}: {exc.strerror}; rebuild the site", path=self.site / SEARCH_DIR / rel) from None

    def write(self, all_nodes, digest: str, base_url: str) -> SearchReport:
        """Every file, each written as soon as it is made, then the manifest; then the files of an
        earlier build this one did not write are removed."""
        folder = self.site / SEARCH_DIR
        files = Output(folder, self.report)
        table = self.table
        chunk_count, term_count = table.chunks, len(table.term_ids)
        avglen = table.average_lengths()
        chunks, levels, bounds = table.sorted_postings()
        postings = Postings(chunks, levels, bounds, list(table.term_ids), self.counts)
        del table, self.table, chunks, levels
        packer = self.packer
        weight = None
        if packer is not None:  # every term's lists at once, only on a site this small
            weight = packer.size + sum(layout.term_weight(t, e) for t, e in postings.entries(base=0).items())
        small = weight is not None and weight <= layout.ALL_TERMS_FACTOR * self.records_inline_bytes
        parts = makers.parts(files, postings, packer.packed(), self.counts, weight, self.part_weight) if small else None
        site_entries = postings.entries() if packer is not None and not small else None
        word_rows = None
        if self.encoder:
            try:
                word_rows = wordrows.site_word_rows(self.words, postings.names, self.encoder[0], self._encoder_file)
            except ValueError as exc:  # a kept encoder's file cut short: publish it again
                raise PipelineError(f"{exc}; delete {self.site / SEARCH_DIR / 'encoder'} and build again", path=self.site / SEARCH_DIR) from None
        self.words = set()
        terms = None if small else makers.term_shards(files, postings, site_entries, self.postings_per_shard, word_rows)
        words = "terms" if terms is not None else None
        if word_rows and terms is None:
            words = makers.word_files(files, word_rows)
        inline = {}
        if site_entries is not None:
            candidates = [(len(e[0]), t, e) for t, e in site_entries.items()]
            inline = layout.inline_terms(packer.size, candidates, self.records_inline_bytes)
        del site_entries
        makers.topic_files(files, postings, self.topics, self.keys, self.counts, self.segment_records, self.blocks,
                           segment_rows=SEGMENT_ROWS, per_shard=self.postings_per_shard, every_block=packer is None,
                           site_shards=terms is not None)
        self.segment_records, self.blocks = {}, {}
        del postings
        centroids = vectors.encode(self.model, self.centroid_rows, dtype="int8") if self.centroid_rows and self.model else None
        shards = None
        if centroids:
            shards = {"dimension": self.dimension,
                      "shards": makers.vector_shards(files, self.topics, self.topic_vectors, self.keys, self.counts, self.dimension)}
        self.topic_vectors = []
        files[NODES] = dumps([
            {"id": n.id, "title": n.title, "documents": n.documents, "path": n.path, "parent": n.parent, "children": list(n.children)}
            for n in all_nodes
        ])
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "tokenizer": TOKENIZER,
            "chunks": chunk_count,
            "terms_count": term_count,
            "documents": self.counts,
            "scoring": {"method": "bm25f-levels", "k1": scoring.K1, "fields": {f: {"weight": w, "b": b} for f, (w, b) in scoring.FIELDS.items()},
                        "avglen": avglen, "length_steps": scoring.LENGTH_STEPS, "levels": scoring.MAX_IMPACT, "idf_scale": IDF_SCALE, "scale": scoring.score_scale()},
            "topics": self.topics,
            "prompts": self.prompts,
            "vectors": vectors_meta(self.model, centroids, files, shards),
            "nodes": NODES,
            "base_url": base_url,  # where public links start (citations), as the root index.json says
            "parts": parts,
            "records": RECORDS if packer is not None and not small else None,
            "terms": terms,
            "encoder": _encoder_entry(self.encoder[0], words if word_rows else None) if self.encoder else None,
            "inputs": digest,
        }
        if self.encoder and self.encoder[1] is not None:
            for rel, data in self.encoder[1].items():
                files[rel] = data
        files[META] = dumps(manifest)
        files[RECORDS] = dumps({"meta": manifest, "records": packer.packed() if packer is not None and not small else None,
                                "terms": inline})
        kept = set(encoder_names(self.encoder[0])) if self.encoder and self.encoder[1] is None else set()
        for path in sorted(folder.rglob("*"), reverse=True):  # files before their folders
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and rel not in files and rel not in kept:
                path.unlink()
                self.report.removed += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        self.report.chunks, self.report.terms = chunk_count, term_count
        self.report.shards = len(terms or parts or ())
        return self.report


def _read_or_none(path: Path) -> bytes | None:
    """A vector page's bytes, None when the topic has none."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _encoder_entry(entry: dict, words: str | list[str] | None) -> dict:
    """The manifest's ``encoder`` entry: ``entry`` (this build's or the kept one's), saying where
    the site's word rows are (``wordrows``; ``"words"``: ``"terms"``, or the word files' names),
    the most pieces such a word has (``"word_pieces"``) and how a row is stored (``"word_dtype"``)."""
    out = {k: v for k, v in entry.items() if k not in ("words", "word_pieces", "word_dtype")}
    if words:
        out["words"], out["word_pieces"], out["word_dtype"] = words, wordrows.MAX_WORD_PIECES, wordrows.WORD_DTYPE
    return out
