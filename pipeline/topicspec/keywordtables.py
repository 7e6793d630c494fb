"""Each topic's keyword table: the author's ``_keywords/words.md``, else one generated from the whole site.

One job: ``keyword_tables`` gives every topic its (origin, table), writing a generated table
(marked) where the author wrote none. The generated tables' statistics (``generated_stats``,
``topicspec/extract.py``) span every topic's chunk spans; they are the previous build's while those
spans are unchanged (build state ``keywords``), and each topic's candidate counts come from the
build memo while its own spans are unchanged (``_topic_counts``), so one edit counts one topic.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pipeline.fsutil import write_text_atomic
from pipeline.reuse import memo as site_memo
from pipeline.reuse.memo import DocumentMemo, Memo
from pipeline.reuse.state import BuildState, Digest
from pipeline.siteformat.tree import KEYWORDS_FILE
from pipeline.topicspec.extract import (
    MAX_KEYWORDS, KeywordExtractor, PhraseStats, TopicCounts, chunk_count, count_part, count_topic, lowered_texts,
    render_table, sum_counts,
)
from pipeline.topicspec.keywords import Keyword
from pipeline.topicspec.topicinputs import SpecReport, Topic


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
            state.keep("keywords", "site", entry)
            return stats
    counts, chunk_counts, termhood, stored = _topic_counts(topics, state.memo)
    counters = {name: _ChunkCountsByDocument(state.memo, topics[name]) for name in need
                if state.memo is not None and site_memo.is_big(topics[name].chunks)}
    extractor = KeywordExtractor.from_counts(
        counts, lambda name: [s for d in topics[name].docs for s in d.spans], chunk_counts=chunk_counts, termhood=termhood,
        chunk_counters=counters,
    )
    stats = {t: extractor.stats(t) for t in need}
    for counter in counters.values():
        counter.store()
    if state.memo is not None:
        for name, (memo_key, known, had_termhood) in stored.items():
            # new counts, chunk counts found for more phrases, or the termhood computed now
            if chunk_counts[name] != known or (name in termhood and not had_termhood):
                c = counts[name]
                state.memo.put(KEYWORDS_MEMO, memo_key, (c.chunks, c.tokens, c.totals, sorted(c.marked), chunk_counts[name],
                                                         termhood.get(name)))
    state.put("keywords", "site", key, stats={t: [list(dataclasses.astuple(s)) for s in rows] for t, rows in stats.items()})
    return stats


KEYWORDS_MEMO = "keywords-topic"  # reuse/memo.py: each topic's TopicCounts and the chunk counts of its phrases
# reuse/memo.py: each big topic's documents' candidate counts by manifest digest, so an edited big
# topic counts its edited documents only (10,000 documents in one folder: 13 s a topic count)
DOCUMENTS_MEMO = "keywords-documents"


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
        documents_key = memo.key(DOCUMENTS_MEMO, name) if memo is not None and site_memo.is_big(topics[name].chunks) else None
        if _is_counts(entry):
            chunks, tokens, totals, salient, known, cvalues = entry
            counts[name] = TopicCounts(chunks, tokens, totals, frozenset(salient))
            chunk_counts[name] = dict(known)
            if cvalues is not None:
                termhood[name] = cvalues
            if documents_key is not None:
                memo.keep(DOCUMENTS_MEMO, documents_key)  # for the topic's next edit
        else:
            counts[name] = _count_by_document(topics[name], memo, documents_key)
            chunk_counts[name] = {}
            known = None
        if key is not None:
            stored[name] = (key, known, name in termhood)
    return counts, chunk_counts, termhood, stored


def _count_by_document(topic: Topic, memo: Memo | None, key: str | None) -> TopicCounts:
    """``count_topic`` of the documents' chunk spans, from each document's counts the memo
    holds under ``key`` (by manifest digest: it names the document's spans) where it has them:
    one edited document of a big topic is counted, not the topic. Stores what changed. No
    ``key`` (a topic of fewer than ``site_memo.BIG_TOPIC_CHUNKS`` chunks): the topic is counted whole."""
    if key is None:
        return count_topic([s for d in topic.docs for s in d.spans])
    by_document = DocumentMemo(memo, DOCUMENTS_MEMO, key, _is_part)
    # only a document without a stored count has its source read (``doc.spans``)
    parts = [by_document.value(doc.manifest_digest, lambda doc=doc: count_part(doc.spans)) for doc in topic.docs]
    by_document.store()
    return sum_counts(topic.chunks, parts)


# reuse/memo.py: each big topic's documents' chunk counts d(p) of the phrases its ranking asked for
CHUNK_COUNTS_MEMO = "keyword-chunks-documents"


class _ChunkCountsByDocument:
    """d(p) of a big topic's phrases (``extract.chunk_count`` over its spans) as the sum of its
    documents' counts, kept per document by manifest digest: after an edit only the edited
    documents' spans are read, for the phrases the ranking asks for (``from_counts``'
    ``chunk_counters``). ``store`` keeps what was counted for the next build."""

    def __init__(self, memo: Memo, topic: Topic):
        self.memo, self.docs = memo, topic.docs
        self.key = memo.key(CHUNK_COUNTS_MEMO, topic.dir_rel)
        self.by_document: DocumentMemo | None = None  # read when a count is first asked for
        self.known: list[dict[str, int]] = []
        self.lowered: dict[int, list[str | None]] = {}  # a document's spans lowercased, once asked for

    def __call__(self, phrase: str) -> int:
        if self.by_document is None:
            self.by_document = DocumentMemo(self.memo, CHUNK_COUNTS_MEMO, self.key, _is_chunk_counts)
            self.known = [self.by_document.value(doc.manifest_digest, dict) for doc in self.docs]
        total = 0
        for i, (doc, known) in enumerate(zip(self.docs, self.known)):
            chunks = known.get(phrase)
            if chunks is None:
                if i not in self.lowered:
                    self.lowered[i] = lowered_texts(doc.spans)
                chunks = known[phrase] = chunk_count(phrase, doc.spans, self.lowered[i])
                self.by_document.grew()
            total += chunks
        return total

    def store(self) -> None:
        """Write what grew; an entry not read (every count was known) is kept as it is."""
        if self.by_document is None:
            self.memo.keep(CHUNK_COUNTS_MEMO, self.key)
        else:
            self.by_document.store()


def _is_chunk_counts(value: object) -> bool:
    """True when a memo value maps phrases to chunk counts (checked, never trusted)."""
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, int) for k, v in value.items())


def _is_part(part: object) -> bool:
    """True when a memo value has the shape of ``count_part``'s (checked, never trusted)."""
    return (
        isinstance(part, tuple) and len(part) == 3 and isinstance(part[0], int) and isinstance(part[1], dict)
        and isinstance(part[2], list)
    )


def _is_counts(entry: object) -> bool:
    """True when a memo entry has the shape ``_topic_counts`` stores (checked, never trusted)."""
    return (
        isinstance(entry, tuple) and len(entry) == 6 and isinstance(entry[0], int) and isinstance(entry[1], int)
        and isinstance(entry[2], dict) and isinstance(entry[3], list) and isinstance(entry[4], dict)
        and (entry[5] is None or isinstance(entry[5], list) and all(
            isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], float) for row in entry[5]
        ))
    )


def keyword_tables(
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
