import pytest

from pipeline.errors import PipelineError
from pipeline.topicspec.keywords import Keyword, keywords_in, parse_keywords

TABLE = "# Keywords\n\n| keyword | score |\n|---|---|\n| stripe order | 9 |\n| Baseline | 4 |\n| cache | 2 |\n"


def test_parses_the_table_lowercased():
    assert parse_keywords(TABLE) == [Keyword("stripe order", 9), Keyword("baseline", 4), Keyword("cache", 2)]


def test_matches_whole_words_across_line_breaks_and_emphasis():
    table = parse_keywords(TABLE)
    text = "The **stripe\norder** puts the _Baseline_ first; caches are not a cache-line."
    assert [k.name for k in keywords_in(text, table)] == ["stripe order", "baseline", "cache"]
    assert keywords_in("the caches and baselines", table) == []


@pytest.mark.parametrize(
    "bad, line, words",
    [
        ("| keyword | score |\n|---|---|\n| a | high |\n", 3, "not a whole number"),
        ("| keyword | score |\n|---|---|\n| a | 3 |\n| A | 4 |\n", 4, "duplicate keyword"),
        ("| keyword | score |\n|---|---|\n| a | 3 | extra |\n", 3, "cells"),
        ("| word | weight |\n|---|---|\n", 1, "header row"),
        ("| keyword | score |\n|---|---|\n| a | 11 |\n", 3, "outside 1-10"),
        ("| keyword | score |\n|---|---|\n| a | \u0667 |\n", 3, "not a whole number"),  # Arabic-Indic 7
        ("| keyword | score |\n| a | 3 |\n", 2, "delimiter row"),
    ],
)
def test_bad_tables_name_the_line(bad, line, words):
    with pytest.raises(PipelineError) as error:
        parse_keywords(bad, "t/_keywords/words.md")
    assert error.value.line == line and words in str(error.value)
    assert str(error.value).startswith(f"t/_keywords/words.md:{line}:")


def test_a_second_table_is_ignored_with_a_warning():
    text = TABLE + "\nMore:\n\n| keyword | score |\n|---|---|\n| pip | 3 |\n"
    with pytest.warns(UserWarning, match=r"words.md:11: only the first table is read"):
        assert [k.name for k in parse_keywords(text, "t/_keywords/words.md")] == ["stripe order", "baseline", "cache"]


@pytest.mark.parametrize(
    "text",
    ["The STRIPE\norder", "the _stripe order_ here", "stripe-order", "ſtripe order", "Stripe Order ünïcode", "no match", "stripes orders"],
)
def test_keywords_in_prefilter_changes_nothing(text):
    import re

    from pipeline.topicspec.keywords import Keyword, keyword_pattern, keywords_in

    table = [Keyword("stripe order", 9), Keyword("ünïcode", 3), Keyword("order", 2)]
    expected = sorted([k for k in table if keyword_pattern(k.name).search(text)], key=lambda k: (-k.score, k.name))
    assert keywords_in(text, table) == expected
    assert isinstance(keyword_pattern("x"), re.Pattern)
