"""Counts in the CLI's sentences agree with their number."""

from __future__ import annotations

from hypothesis import given, strategies as st

from pipeline.wording import counted


def test_one_takes_the_singular_and_every_other_count_the_plural():
    assert counted(1, "chunk") == "1 chunk"
    assert counted(0, "chunk") == "0 chunks"
    assert counted(2, "index.json file") == "2 index.json files"
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"


@given(st.integers(min_value=-5, max_value=10**9))
def test_the_number_is_shown_as_given(n):
    text = counted(n, "topic")
    assert text.split(" ")[0] == str(n) and text.endswith("topic" if n == 1 else "topics")
