"""A big topic's ``TopicText`` from each document's, kept in the build memo.

``topic_text`` (``topicspec/topicdata.py``) summarises every chunk of a topic and finds the keyword
table's keywords in every chunk span: in one folder of 10,000 documents (42,656 chunks) that was
~2.5 s of a one-edit rebuild, and it read every document's source. Both are per chunk, so for a
topic of ``BIG_TOPIC_CHUNKS`` chunks or more the memo keeps them per document (by manifest
digest, which names the document's chunk spans and titles): the summaries (``SUMMARIES_MEMO``),
and which entries of the table each chunk holds (``KEYWORDS_IN_MEMO``, keyed by the table's
keyword names too, since a table of other names finds others). The keywords are then taken from
the current table and ordered by its scores, as ``keywords_in`` orders them.

Guarantee: ``memo_topic_text(topic, table, memo) == topic_text(topic, table)``.
"""

from __future__ import annotations

from pipeline.reuse import memo as site_memo
from pipeline.topicspec.keywords import Keyword, keywords_in
from pipeline.topicspec.records import chunk_summaries
from pipeline.topicspec.topicdata import TopicText, topic_text
from pipeline.topicspec.topicinputs import Doc, Topic

SUMMARIES_MEMO = "summaries-documents"  # reuse/memo.py: a big topic's chunk summaries per document
KEYWORDS_IN_MEMO = "keywords-in-documents"  # reuse/memo.py: the table rows each chunk holds, per document


def memo_topic_text(topic: Topic, table: tuple[str, list[Keyword]], memo: site_memo.Memo | None) -> TopicText:
    """``topic_text(topic, table)``; for a big topic with a memo, from the documents' parts the
    memo holds, computing (and storing) only the others'."""
    keys = _keys(memo, topic, table[1])
    if keys is None:
        return topic_text(topic, table)
    keywords = table[1]
    summaries_memo = site_memo.DocumentMemo(memo, SUMMARIES_MEMO, keys[0], _is_summaries)
    found_memo = site_memo.DocumentMemo(memo, KEYWORDS_IN_MEMO, keys[1], lambda v: _is_rows(v, len(keywords)))
    row_of = {id(k): i for i, k in enumerate(keywords)}
    summaries: list[str] = []
    found: list[list[list[Keyword]]] = []
    for doc in topic.docs:
        chunks = len(doc.hashes)
        doc_summaries = summaries_memo.value(doc.manifest_digest, lambda doc=doc: chunk_summaries([doc.manifest], [doc.spans]))
        rows = found_memo.value(doc.manifest_digest, lambda doc=doc: _table_rows(doc, keywords, row_of))
        if len(doc_summaries) != chunks or len(rows) != chunks:  # a stored value of another shape: not used
            doc_summaries, rows = chunk_summaries([doc.manifest], [doc.spans]), _table_rows(doc, keywords, row_of)
        summaries.extend(doc_summaries)
        # ``keywords_in``'s order: the table's rows that occur, by score, then by name (a stable sort)
        found.append([sorted((keywords[i] for i in chunk_rows), key=lambda k: (-k.score, k.name)) for chunk_rows in rows])
    summaries_memo.store()
    found_memo.store()
    return TopicText(summaries, found)


def keep_topic_text(memo: site_memo.Memo | None, topic: Topic, table: tuple[str, list[Keyword]]) -> None:
    """Keep a big topic's entries past the memo's prune when its page was not rewritten (for the
    topic's next edit)."""
    keys = _keys(memo, topic, table[1])
    if keys is not None:
        memo.keep(SUMMARIES_MEMO, keys[0])
        memo.keep(KEYWORDS_IN_MEMO, keys[1])


def _keys(memo, topic: Topic, keywords: list[Keyword]) -> tuple[str, str] | None:
    """The memo keys of a big topic's summaries and table rows, or None (no memo, or a topic of
    fewer than ``BIG_TOPIC_CHUNKS`` chunks: computed whole)."""
    if memo is None or not site_memo.is_big(topic.chunks):
        return None
    return (memo.key(SUMMARIES_MEMO, topic.dir_rel),
            memo.key(KEYWORDS_IN_MEMO, topic.dir_rel, [k.name for k in keywords]))


def _table_rows(doc: Doc, keywords: list[Keyword], row_of: dict[int, int]) -> list[list[int]]:
    """For each chunk span of ``doc``, the rows of ``keywords`` that ``keywords_in`` finds in it,
    in table order (``row_of``: each keyword object's row)."""
    return [sorted(row_of[id(k)] for k in keywords_in(span, keywords)) for span in doc.spans]


def _is_summaries(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _is_rows(value: object, table_rows: int) -> bool:
    return isinstance(value, list) and all(
        isinstance(rows, list) and all(isinstance(i, int) and 0 <= i < table_rows for i in rows) for rows in value
    )
