"""Candidate key phrases (topicspec/phrases.py): segments, tokens, markup that is no prose, and the
fast paths checked against their definitions."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.topicspec.extract import KeywordExtractor
from pipeline.topicspec.phrases import STOP_WORDS, candidates, segments


def test_phrases_are_multiword_or_compound_and_never_start_or_end_with_stop_words():
    counts = candidates("The stripe order of the `is_code` chunks, and index.json: see **the baseline**.")
    assert "stripe order" in counts and "is_code" in counts and "index.json" in counts
    assert "stripe" not in counts and "order" not in counts  # plain single words are never phrases
    assert all(not (set(p.split()) & STOP_WORDS) for p in counts)


def test_code_blocks_links_and_punctuation_break_nothing_into_phrases():
    text = "Read [the stripe order](https://x.invalid/y) now.\n\n```python\nstripe order = 1\n```\n\nStripe, order."
    assert [s for s in segments(text)] == [["read", "the", "stripe", "order", "now"], ["stripe"], ["order"]]


def _candidates_by_definition(markdown: str):
    """The module docstring's definition, phrase by phrase (what ``candidates`` must equal)."""
    from collections import Counter

    from pipeline.topicspec.phrases import MAX_WORDS, _phrase_ok, segments

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
    assert candidates(text) == _candidates_by_definition(text)


def test_candidates_match_the_definition_on_random_token_soup():
    import random

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
    from pipeline.topicspec.phrases import _may_hold_code

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
    from pipeline.topicspec import phrases as ex

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
