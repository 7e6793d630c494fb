"""pipeline.topicspec.textmemo: a big topic's summaries and keywords from each document's, kept in
the memo, are ``topic_text``'s; a document whose part is kept has its source left unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_tree
from pipeline.chunking.tool import plan_chunks, write_chunks
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.reuse import memo as site_memo
from pipeline.topicspec import textmemo
from pipeline.topicspec.keywords import Keyword
from pipeline.topicspec.topicdata import topic_text
from pipeline.topicspec.topicgather import gather_topics

FILES = {
    "kb/a.md": "# Stripe orders\n\nThe stripe order spreads chunks.\n\n## Build state\n\nThe build state keeps *stripe* order digests.\n",
    "kb/b.md": "# Cache\n\nThe embedding cache keeps vectors.\n\n## Pruning\n\nOld cache entries go; the stripe order stays.\n",
    "kb/c.md": "# Notes\n\nNothing of the table here.\n",
}
# a name twice (an author's table may list one twice), and scores that tie
TABLE = ("author", [Keyword("stripe order", 5), Keyword("cache", 7), Keyword("build state", 5), Keyword("cache", 2),
                    Keyword("vectors", 1)])


def gathered_topic(tmp_path):
    site = write_tree(tmp_path / "site", FILES)
    config = SiteConfig(cache_dir=tmp_path / "cache")
    embedder = HashingEmbedder()
    write_chunks(site, plan_chunks(site, config, embedder.counter()))
    gathered = gather_topics(site, config, embedder, progress=False)
    topic = gathered.finish()["kb"]
    gathered.wait_written()
    return topic


@pytest.fixture
def spans_read(monkeypatch):
    """The sources read for their chunk spans (``Doc.spans``), by name."""
    import pipeline.topicspec.topicinputs as topicinputs

    read: list[str] = []
    real = topicinputs.read_text
    monkeypatch.setattr(topicinputs, "read_text", lambda path, *a, **k: read.append(Path(path).name) or real(path, *a, **k))
    monkeypatch.setattr(site_memo, "BIG_TOPIC_CHUNKS", 0)  # every topic is big
    return read


def fresh(topic):
    """The topic with no document's spans read yet (``Doc.spans`` keeps them once read)."""
    for doc in topic.docs:
        doc.__dict__.pop("spans", None)
    return topic


def test_a_big_topics_text_from_its_documents_parts_is_topic_text(tmp_path, spans_read):
    topic = gathered_topic(tmp_path)
    expected = topic_text(topic, TABLE)
    assert any(len(found) > 1 for doc in expected.keywords for found in doc)  # orders to keep
    spans_read.clear()
    assert textmemo.memo_topic_text(fresh(topic), TABLE, site_memo.Memo(tmp_path / "memo")) == expected
    assert sorted(spans_read) == ["a.md", "b.md", "c.md"]
    spans_read.clear()
    # read back by a later build: no source read
    assert textmemo.memo_topic_text(fresh(topic), TABLE, site_memo.Memo(tmp_path / "memo")) == expected
    assert spans_read == []
    # the same names with other scores: the kept rows, ordered by the new scores
    rescored = (TABLE[0], [Keyword(k.name, 10 - k.score) for k in TABLE[1]])
    text = textmemo.memo_topic_text(fresh(topic), rescored, site_memo.Memo(tmp_path / "memo"))
    assert spans_read == [] and text == topic_text(topic, rescored) != expected
    # a table of other names finds other rows: found again (the summaries are kept)
    other = (TABLE[0], TABLE[1][:2] + [Keyword("old cache entries", 3)])
    spans_read.clear()
    assert textmemo.memo_topic_text(fresh(topic), other, site_memo.Memo(tmp_path / "memo")) == topic_text(topic, other)
    assert sorted(spans_read) == ["a.md", "b.md", "c.md"]


def test_a_small_topic_is_computed_whole_and_keeps_nothing(tmp_path, spans_read, monkeypatch):
    topic = gathered_topic(tmp_path)
    monkeypatch.setattr(site_memo, "BIG_TOPIC_CHUNKS", 10_000)
    assert textmemo.memo_topic_text(topic, TABLE, site_memo.Memo(tmp_path / "memo")) == topic_text(topic, TABLE)
    assert not (tmp_path / "memo").exists()
