"""Sentence boundaries (seed 003): full stops, not abbreviations, decimals, URLs or code."""

from __future__ import annotations

import pytest

from pipeline.chunking.sentences import sentence_ends, sentence_starts


def sentences(text: str) -> list[str]:
    points = [0, *sentence_starts(text), len(text)]
    return [text[a:b].strip() for a, b in zip(points, points[1:])]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One. Two! Three? Four.", ["One.", "Two!", "Three?", "Four."]),
        ("Dr. Smith and Mrs. Jones met. They talked.", ["Dr. Smith and Mrs. Jones met.", "They talked."]),
        ("Use e.g. this, i.e. that. Next.", ["Use e.g. this, i.e. that.", "Next."]),
        ("The U.S. Army grew. Then it shrank.", ["The U.S. Army grew.", "Then it shrank."]),
        ("Pi is 3.14 today. Version v1.2 too.", ["Pi is 3.14 today.", "Version v1.2 too."]),
        ("Visit https://example.com/a.b. Then go.", ["Visit https://example.com/a.b.", "Then go."]),
        ("Visit example.com. Then go.", ["Visit example.com.", "Then go."]),
        ("Call `f(). G` now. Done.", ["Call `f(). G` now.", "Done."]),
        ("Apples, pears, etc. and more. End.", ["Apples, pears, etc. and more.", "End."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("**Note.** Next one.", ["**Note.**", "Next one."]),
        ("1. First item\n2. Second item", ["1. First item\n2. Second item"]),
        ("Wait... what? Yes.", ["Wait... what?", "Yes."]),  # a lowercase word goes on
        ("It ended... Then more.", ["It ended...", "Then more."]),
        ("Line one.\nLine two.", ["Line one.", "Line two."]),
    ],
)
def test_sentence_boundaries(text, expected):
    assert sentences(text) == expected


def test_range_and_ends():
    text = "Skip. One. Two. Skip."
    assert sentence_starts(text, 6, 15) == [11]
    assert sentence_ends("One. Two. Three") == [4, 9]
