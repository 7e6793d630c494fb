"""KeywordExtractor: generated authority tables, and how the build writes and keeps them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from pipeline.spec.extract import STOP_WORDS, KeywordExtractor, candidates, count_topic, render_table, segments
from pipeline.spec.keywords import GENERATED_MARKER, is_generated, keywords_in, parse_keywords
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


def test_phrases_are_multiword_or_compound_and_never_start_or_end_with_stop_words():
    counts = candidates("The stripe order of the `is_code` chunks, and index.json: see **the baseline**.")
    assert "stripe order" in counts and "is_code" in counts and "index.json" in counts
    assert "stripe" not in counts and "order" not in counts  # plain single words are never phrases
    assert all(not (set(p.split()) & STOP_WORDS) for p in counts)


def test_code_blocks_links_and_punctuation_break_nothing_into_phrases():
    text = "Read [the stripe order](https://x.invalid/y) now.\n\n```python\nstripe order = 1\n```\n\nStripe, order."
    assert [s for s in segments(text)] == [["read", "the", "stripe", "order", "now"], ["stripe"], ["order"]]


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
    items = load(site / "kb/cache/index.json")["_embedded"]["chunks"]["cache"]["items"]
    assert {"name": "embedding cache", "score": 10} in items[0]["keywords"]
    # the author's table is read, never rewritten
    assert (site / "kb/stripes/_keywords/words.md").read_text() == FILES["kb/stripes/_keywords/words.md"]
    stripes = load(site / "kb/stripes/index.json")["_embedded"]["chunks"]["stripes"]["items"]
    assert {"name": "stripe order", "score": 7} in stripes[0]["keywords"]

    site_before = _snapshot(site)
    _, _, again = _build(tmp_path, files=None)
    assert _snapshot(site) == site_before and _snapshot(content) == before  # sync keeps it; nothing rewritten
    assert again.removed == [] and again.spec.written == 0


def test_an_authors_table_added_later_replaces_the_generated_one_and_removing_it_regenerates(tmp_path):
    content, site, _ = _build(tmp_path)
    write_tree(content, {"kb/cache/_keywords/words.md": "| keyword | score |\n|---|---|\n| cache | 3 |\n"})
    _build(tmp_path, files=None)
    assert not is_generated(site / "kb/cache/_keywords/words.md")
    items = load(site / "kb/cache/index.json")["_embedded"]["chunks"]["cache"]["items"]
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


def _candidates_by_definition(markdown: str):
    """The module docstring's definition, phrase by phrase (what ``candidates`` must equal)."""
    from collections import Counter

    from pipeline.spec.extract import MAX_WORDS, _phrase_ok, segments

    counts = Counter()
    for tokens in segments(markdown):
        for n in range(1, MAX_WORDS + 1):
            for i in range(len(tokens) - n + 1):
                gram = tuple(tokens[i : i + n])
                if _phrase_ok(gram):
                    counts[" ".join(gram)] += 1
    return counts


@pytest.mark.parametrize(
    "text",
    [
        "The stripe order of the base_url and 2 compile-time index.json checks, the 3 hal+json 42 items.",
        "## 1 2 3 go\n\nA b c d e f g h. _links.self is it; a 4 b 5 c 6 d.\n\n`code span` **bold phrase** here",
        "x y z 9 9 9 e.g the first new way of the cache-dir flag and the rate-limit 10 settings",
    ],
)
def test_candidates_match_the_definition(text):
    from pipeline.spec.extract import candidates

    assert candidates(text) == _candidates_by_definition(text)


def test_candidates_match_the_definition_on_random_token_soup():
    import random

    from pipeline.spec.extract import candidates

    rng = random.Random(7)
    words = ["the", "stripe", "order", "of", "a", "1", "22", "x", "base_url", "is", "hal+json", "cache", "v2", "e.g", "-", ","]
    for _ in range(200):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        assert candidates(text) == _candidates_by_definition(text)


# -- MkDocs/FastAPI markup (issue 13) ---------------------------------------------------------

MKDOCS_PAGE = """# Query Parameters { #query-parameters }

/// tip | Query parameters in depth

Query parameters are read from the URL. Query parameters have a default value.

///

{* ../../docs_src/query_params/tutorial001_an_py310.py hl[9] *}

{! ../../docs_src/query_params/tutorial002.py !}

--8<-- "docs/img/plugin-events.svg"

!!! note "Default values"
    A default value makes query parameters optional; see app/routers/items.py and ./docs_src/.

//// tab | Python 3.10+

Query parameters again, in docs_src/query_params/tutorial003_py310.py.

////
"""


def test_macros_paths_attribute_lists_and_admonition_markers_are_no_keywords():
    found = candidates(MKDOCS_PAGE)
    assert {"query parameters", "default value", "query parameters optional"} <= set(found)
    noise = ("docs_src", "query_params", "tutorial00", "py310", "hl", "items.py", "routers", "plugin-events", "svg", "tab", "tip", "query-parameters")
    assert not [p for p in found if any(n in p for n in noise)], sorted(found)
    table = KeywordExtractor({"t": [MKDOCS_PAGE, MKDOCS_PAGE]}).table("t")
    assert table and all(not any(n in k.name for n in noise) for k in table)


def test_admonition_titles_stay_as_prose_of_their_own():
    segs = segments('/// note | Technical Details\n\nBody text here.\n\n!!! warning "Breaking change"\n    Old text.\n')
    assert ["technical", "details"] in segs and ["breaking", "change"] in segs
    assert not any("note" in s or "warning" in s for s in segs)


@given(st.lists(st.sampled_from(["docs_src", "sql_databases", "app_an_py310", "tutorial004_py310.py", "x.py"]), min_size=2, max_size=4), st.integers(0, 9))
def test_a_macro_or_path_never_gives_a_candidate(parts, line):
    path = "/".join(parts)
    text = f"Words before the include.\n\n{{* ../../{path} hl[{line}] *}}\n\nSee {path} and ./{path} for more words.\n"
    found = candidates(text)
    assert not [p for p in found if any(part.split(".")[0] in p for part in parts)], sorted(found)


def test_code_in_quotes_and_lists_is_no_keyword_material_and_a_leading_rule_is_no_front_matter():
    text = (
        "> Note the plugin option.\n>\n> ```yaml\n> extra_javascript:\n>   - https://x.js\n> ```\n\n"
        "- A list item.\n\n  ```\n  secret_setting = 1\n  ```\n\n"
        "A paragraph.\n\n    indented_code_name = 2\n"
    )
    found = candidates(text)
    assert "plugin option" in found
    assert not [p for p in found if "extra_javascript" in p or "secret_setting" in p or "indented_code_name" in p], sorted(found)
    rule = "---\nnot: [valid yaml\n---\n\nThe plugin option again.\n"
    assert "plugin option" in candidates(rule)  # parsed as a thematic break, never as front matter


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "is_code", "x.y"]), min_size=1, max_size=4), min_size=1, max_size=30))
def test_inner_phrases_are_exactly_the_shorter_phrases_contains_finds(phrases):
    # stats() looks nested phrases up by _inner_phrases instead of testing every pair: same pairs
    from pipeline.spec.extract import _contains, _inner_phrases

    vocabulary = {" ".join(p) for p in phrases}
    for longer in vocabulary:
        brute = {s for s in vocabulary if s != longer and len(s) < len(longer) and _contains(longer, s)}
        assert brute == _inner_phrases(longer) & vocabulary


_MARKDOWNISH = st.lists(
    st.sampled_from(["a", "b c", " ", "  ", "   ", "\t", "\n", "\n\n", "`", "``", "~", "~~", ">", "> ", "- ", "* ",
                     "1. ", "1) ", "#", "## ", "<pre>", "|", "---", "\r\n", "\r", "\u00a0", "\x0b", "\x0c"]),
    max_size=30,
).map("".join)


@given(_MARKDOWNISH)
@settings(max_examples=400)
def test_text_the_quick_check_clears_has_no_code_line_for_the_parser(text):
    """``_prose_lines`` skips parsing what ``_may_hold_code`` clears: the parser must agree."""
    from pipeline.parsing.markdown import parse_markdown
    from pipeline.spec.extract import _may_hold_code

    assert _may_hold_code(text) or not parse_markdown("\n" + text).code_lines()


def test_code_still_hides_its_phrases():
    for text in ("```\nsecret phrase here\n```", "    secret phrase here", "> ~~~\n> secret phrase here", "-\tx\n\n\t\tsecret phrase here"):
        assert "secret phrase" not in candidates(text), text
    assert "secret phrase" in candidates("secret phrase here")


_MARKUPISH = st.lists(
    st.sampled_from(["a b", " ", "\n", "{", "}", "*", "!", "?", "/", "///", "!!!", "???", "+", "#", ".", "~", "_",
                     "--8<--", "<", ">", "<b>", "<!--", "-->", "[", "]", "(", ")", "](", "http", "://", "www.", "x.py",
                     '"', "|", ":", "-", "8", "tip"]),
    max_size=25,
).map("".join)


@given(_MARKUPISH)
@settings(max_examples=500)
def test_markup_is_stripped_as_by_running_every_pattern(text):
    """``strip_markup`` and ``prose`` skip a pattern where its literal is absent: same text as
    running every pattern (the definition, written out here)."""
    from pipeline.spec import extract as ex

    full = ex._MACRO.sub("\n", text)
    full = ex._ADMONITION.sub(lambda m: (m.group(1) or m.group(2) or "").strip() + "\n", full)
    full = ex._ATTR_LIST.sub(" ", full)
    full = ex._PATH.sub(lambda m: " \n " if ex._is_path(m.group(0)) else m.group(0), full)
    assert ex.strip_markup(text) == full

    lines = text.split("\n")
    kept = []
    for line in lines:
        if not line.strip():
            kept.append("\n")
        elif ex._HEADING.match(line):
            kept.append("\n" + ex._HEADING.sub("", line).rstrip("# \t") + "\n")
        elif ex._BLOCK_START.match(line):
            kept.append("\n" + ex._BLOCK_START.sub("", line) + " ")
        else:
            kept.append(line + " ")
    reference = ex._URL.sub(" \n ", ex._IMAGE_OR_LINK.sub(r"\1", ex._HTML.sub(" \n ", "".join(kept))))
    assert ex.prose(text, lines) == reference
