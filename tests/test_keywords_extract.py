"""KeywordExtractor: generated authority tables, and how the build writes and keeps them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitecheck import built_files
from conftest import write_tree, document_resources
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from pipeline.topicspec.extract import KeywordExtractor, count_topic, render_table
from pipeline.topicspec.keywords import GENERATED_MARKER, is_generated, keywords_in, parse_keywords
from test_build import load

CACHE = [
    "# Embedding cache\n\nThe embedding cache keeps vectors. The embedding cache is keyed by **content hash**.",
    "## Layout\n\nEach entry of the embedding cache is a folder named by the content hash.",
    "## Pruning\n\nThe embedding cache forgets sources that vanished; stale entries go.",
]
STRIPES = [
    "# Stripes\n\nA stripe order samples the document. The stripe order uses the baseline.",
    "## Factor\n\nThe stripe factor sets the stripe order width; the content hash is not involved.",
]


def test_specific_and_widespread_phrases_score_higher():
    extractor = KeywordExtractor({"cache": CACHE, "stripes": STRIPES})
    stats = {s.name: s for s in extractor.stats("cache")}
    assert stats["embedding cache"].specificity == 1.0 and stats["embedding cache"].chunks == 3
    assert stats["embedding cache"].score == 10  # only here, in every chunk
    assert stats["content hash"].specificity < 1.0  # also used by the stripes topic
    assert stats["content hash"].score < stats["embedding cache"].score
    assert all(1 <= s.score <= 10 for s in stats.values())
    stripes = {s.name: s.score for s in extractor.stats("stripes")}
    assert stripes["stripe order"] == 10 and "embedding cache" not in stripes


def test_every_generated_keyword_matches_a_chunk_and_the_table_round_trips():
    extractor = KeywordExtractor({"cache": CACHE, "stripes": STRIPES})
    table = extractor.table("cache")
    assert table and all(any(keywords_in(text, [k]) for text in CACHE) for k in table)
    text = render_table("cache", extractor.stats("cache"))
    assert text.startswith(GENERATED_MARKER + "\n")
    assert parse_keywords(text) == table


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz.-_*`#\n|", max_size=80), min_size=1, max_size=4))
def test_extraction_is_deterministic_and_always_yields_a_valid_table(texts):
    first = KeywordExtractor({"t": texts, "u": texts[:1]})
    second = KeywordExtractor({"u": texts[:1], "t": texts})
    assert first.stats("t") == second.stats("t")
    table = first.table("t")
    assert parse_keywords(render_table("t", first.stats("t"))) == table
    assert all(1 <= k.score <= 10 for k in table)


_PHRASES = ["stripe order", "cache entry", "build state", "is_code", "index.json", "alpha", "the", "and"]


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "b/c", "d"]),
        st.lists(st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=12).map(" ".join), min_size=1, max_size=5),
        min_size=1,
    ),
    st.data(),
)
def test_from_counts_gives_the_stats_of_the_texts(topics, data):
    # what a build does with memoised counts: the same stats as from the texts, whichever
    # phrases' chunk counts it already knows, and the texts are read only for unknown ones
    whole = KeywordExtractor(topics)
    counts = {t: count_topic(texts) for t, texts in topics.items()}
    known, termhood = {t: {} for t in topics}, {}
    for topic in data.draw(st.permutations(sorted(topics))):
        reads = []
        extractor = KeywordExtractor.from_counts(counts, lambda t: reads.append(t) or topics[t], chunk_counts=known,
                                                 termhood=termhood)
        assert extractor.stats(topic) == whole.stats(topic)
        assert topic in termhood
        again = KeywordExtractor.from_counts(counts, lambda t: pytest.fail("read again"), chunk_counts=known,
                                             termhood=dict(termhood))
        assert again.stats(topic) == whole.stats(topic)
        assert set(reads) <= {topic}


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.lists(st.lists(st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=12).map(" ".join), max_size=4),
                 min_size=1, max_size=4),
        min_size=1,
    ),
)
def test_chunk_counts_summed_by_document_give_the_stats_of_the_texts(topics):
    # A big topic's d(p) is summed from its documents' counts (keywordtables._ChunkCountsByDocument):
    # the same stats as counting the topic's texts, which are then never read.
    from pipeline.topicspec.extract import chunk_count, lowered_texts

    texts = {t: [span for doc in docs for span in doc] for t, docs in topics.items()}
    whole = KeywordExtractor(texts)
    counts = {t: count_topic(spans) for t, spans in texts.items()}
    counters = {t: (lambda phrase, docs=docs: sum(chunk_count(phrase, doc, lowered_texts(doc)) for doc in docs))
                for t, docs in topics.items()}
    extractor = KeywordExtractor.from_counts(counts, lambda t: pytest.fail("texts read"), chunk_counters=counters)
    for topic in sorted(topics):
        assert extractor.stats(topic) == whole.stats(topic)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=12).map(" ".join), max_size=4), max_size=6),
    st.sampled_from(["", "**", "`"]),
)
def test_a_topics_counts_are_the_sum_of_its_documents_counts(documents, mark):
    # A build keeps each document's counts and sums them (topicspec/keywordtables.py): the sum must be
    # the topic's counts, its phrases in the same order (a dict's order reaches the tables).
    from collections import Counter

    from pipeline.topicspec.extract import TopicCounts, count_part, sum_counts
    from pipeline.topicspec.phrases import count_candidates, marked, prose_lines, segments

    documents = [[f"{mark}{span}{mark}" if i % 2 else span for i, span in enumerate(doc)] for doc in documents]
    spans = [span for doc in documents for span in doc]
    total, size, salient = Counter(), 0, set()  # every span in turn, as a topic was counted whole
    for text in spans:
        lines = prose_lines(text)
        segs = segments(text, lines)
        total.update(count_candidates(segs))
        size += sum(len(tokens) for tokens in segs)
        salient |= marked(text, lines)
    whole = TopicCounts(len(spans), size, dict(total), frozenset(salient))
    for counted in (sum_counts(len(spans), [count_part(doc) for doc in documents]), count_topic(spans)):
        assert counted == whole and list(counted.totals.items()) == list(whole.totals.items())


# -- in the build ----------------------------------------------------------------------------

FILES = {
    "kb/cache/cache.md": "\n\n".join(CACHE) + "\n",
    "kb/stripes/stripes.md": "\n\n".join(STRIPES) + "\n",
    "kb/stripes/_keywords/words.md": "| keyword | score |\n|---|---|\n| stripe order | 7 |\n",
}


def _build(tmp_path, files=FILES):
    content = write_tree(tmp_path / "content", files) if files else tmp_path / "content"
    # Removed files go at once, as the stages remove them (retiring them is site/retire.py's test).
    cfg = SiteConfig(cache_dir=tmp_path / "cache", retire_removed_files=False)
    report = build(content, tmp_path / "site", cfg, embedder=HashingEmbedder(), progress=False)
    return content, tmp_path / "site", report


def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_topic_without_a_table_gets_one_in_the_site_never_in_content(tmp_path):
    content, site, report = _build(tmp_path)
    before = _snapshot(content)
    generated = site / "kb/cache/_keywords/words.md"
    assert is_generated(generated) and not (content / "kb/cache/_keywords").exists()
    assert report.spec.keywords_generated == 1
    items = document_resources(site, "kb/cache")["cache"]["items"]
    assert {"name": "embedding cache", "score": 10} in items[0]["keywords"]
    # the author's table is read, never rewritten
    assert (site / "kb/stripes/_keywords/words.md").read_text() == FILES["kb/stripes/_keywords/words.md"]
    stripes = document_resources(site, "kb/stripes")["stripes"]["items"]
    assert {"name": "stripe order", "score": 7} in stripes[0]["keywords"]

    site_before = built_files(site)
    _, _, again = _build(tmp_path, files=None)
    assert built_files(site) == site_before and _snapshot(content) == before  # sync keeps it; nothing rewritten
    assert again.removed == [] and again.spec.written == 0


def test_an_authors_table_added_later_replaces_the_generated_one_and_removing_it_regenerates(tmp_path):
    content, site, _ = _build(tmp_path)
    write_tree(content, {"kb/cache/_keywords/words.md": "| keyword | score |\n|---|---|\n| cache | 3 |\n"})
    _build(tmp_path, files=None)
    assert not is_generated(site / "kb/cache/_keywords/words.md")
    items = document_resources(site, "kb/cache")["cache"]["items"]
    assert items[0]["keywords"] == [{"name": "cache", "score": 3}]
    (content / "kb/cache/_keywords/words.md").unlink()
    _build(tmp_path, files=None)
    assert is_generated(site / "kb/cache/_keywords/words.md")


def test_a_generated_table_goes_with_its_topic(tmp_path):
    content, site, _ = _build(tmp_path)
    (content / "kb/cache/cache.md").unlink()
    (content / "kb/cache").rmdir()
    _build(tmp_path, files=None)
    assert not (site / "kb/cache").exists()


def test_a_bad_authors_table_still_fails_with_file_and_line(tmp_path):
    files = dict(FILES)
    files["kb/stripes/_keywords/words.md"] = "| keyword | score |\n|---|---|\n| a | 3 |\n| A | 4 |\n"
    with pytest.raises(PipelineError, match=r"words\.md:4: duplicate keyword"):
        _build(tmp_path, files)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "is_code", "x.y"]), min_size=1, max_size=4), min_size=1, max_size=30))
def test_inner_phrases_are_exactly_the_shorter_phrases_contains_finds(phrases):
    # stats() looks nested phrases up by _inner_phrases instead of testing every pair: same pairs
    from pipeline.topicspec.extract import _contains, _inner_phrases

    vocabulary = {" ".join(p) for p in phrases}
    for longer in vocabulary:
        brute = {s for s in vocabulary if s != longer and len(s) < len(longer) and _contains(longer, s)}
        assert brute == _inner_phrases(longer) & vocabulary
