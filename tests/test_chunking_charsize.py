"""Seed 003: ``character``, ``sentence`` and ``paragraph``: sizes in characters, boundary types,
sentence rules, and the model's token limit on top."""

from __future__ import annotations

import pytest

from pipeline.chunking import chunk_text
from pipeline.chunking.registry import make_strategy
from pipeline.errors import PipelineError

SENTENCES = [
    "Dr. Smith reviewed the results on Monday.",
    "The error rate fell to 3.14 percent, e.g. in the U.S. cluster.",
    "See https://example.com/docs/v1.2. for the details.",
    "Call `cfg.load(). Then` before anything else!",
    "Was it worth it?",
    "The team agreed, i.e. nobody objected.",
]
PROSE = " ".join(SENTENCES)


def chunks_of(text, strategy, counter, **options):
    return chunk_text(text, strategy=strategy, counter=counter, **options)


@pytest.mark.parametrize("strategy", ["character", "sentence", "paragraph"])
@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_chunk_size": 99}, "max_chunk_size must be an integer from 100 to 10000"),
        ({"max_chunk_size": 10_001}, "max_chunk_size"),
        ({"min_chunk_size": 9}, "min_chunk_size must be an integer from 10 to 1000"),
        ({"min_chunk_size": 1001}, "min_chunk_size"),
        ({"max_chunk_size": "1200"}, "max_chunk_size"),
        ({"max_chunk_size": 200, "min_chunk_size": 300}, "above max_chunk_size"),
        ({"max_tokens": 5}, "max_tokens"),
    ],
)
def test_out_of_range_options_are_rejected(counter, strategy, options, message):
    with pytest.raises(PipelineError, match=message):
        make_strategy(strategy, counter, **options)


@pytest.mark.parametrize("strategy", ["character", "sentence", "paragraph"])
def test_defaults_and_cache_key(counter, strategy):
    chosen = make_strategy(strategy, counter)
    assert (chosen.max_chunk_size, chosen.min_chunk_size, chosen.max_tokens) == (1200, 100, 256)
    assert chosen.cache_key() == f"{strategy}-1200-100-256"


def test_character_windows_are_fixed_and_exact(counter):
    text = "abcdefghij" * 95  # 950 characters, no spaces: every window is full
    chunks = chunks_of(text, "character", counter, max_chunk_size=100, min_chunk_size=10)
    assert [c.end_offset - c.start_offset for c in chunks] == [100] * 9 + [50]
    assert all(c.content == text[c.start_offset : c.end_offset] for c in chunks)
    assert {c.boundary_type for c in chunks} == {"character"}


def test_character_short_tail_shares_the_last_two_windows(counter):
    text = "x" * 1230
    chunks = chunks_of(text, "character", counter, max_chunk_size=1200, min_chunk_size=100)
    assert [c.end_offset - c.start_offset for c in chunks] == [615, 615]


def test_character_windows_stop_at_the_token_limit(counter):
    text = " ".join(str(1000 + i) for i in range(2000))  # ~2 tokens a number: 1200 chars is ~480 tokens
    chunks = chunks_of(text, "character", counter)
    assert len(chunks) > len(text) // 1200 + 1
    assert all(c.token_count <= 256 for c in chunks)
    assert all(c.end_offset - c.start_offset <= 1200 for c in chunks)


def test_sentence_boundaries_skip_abbreviations_decimals_urls_and_code(counter):
    text = " ".join(SENTENCES * 3)
    chunks = chunks_of(text, "sentence", counter, max_chunk_size=100, min_chunk_size=10)
    ends = {text[: c.end_offset] for c in chunks}
    for chunk in chunks:
        span = text[chunk.start_offset : chunk.end_offset]
        assert span.endswith((".", "!", "?")), span
        assert chunk.boundary_type == "sentence"
    for wrong in ("Dr.", "e.g.", "U.S.", "3.", "v1.", "cfg.load().", "i.e."):
        assert not any(end.endswith(wrong) for end in ends), wrong


def test_sentences_are_combined_up_to_the_maximum(counter):
    text = " ".join(SENTENCES * 10)
    chunks = chunks_of(text, "sentence", counter, max_chunk_size=400, min_chunk_size=10)
    sizes = [c.end_offset - c.start_offset for c in chunks]
    assert max(sizes) <= 400 and sum(sizes) > 0
    assert len(chunks) <= len(text) // 200 + 1  # combined, not one sentence a chunk


def test_a_sentence_over_the_maximum_falls_back_to_character(counter):
    long_sentence = " ".join(["word"] * 80) + "."
    text = f"Short one. {long_sentence} Short two."
    chunks = chunks_of(text, "sentence", counter, max_chunk_size=100, min_chunk_size=10)
    assert "character" in {c.boundary_type for c in chunks}
    assert all(c.end_offset - c.start_offset <= 100 for c in chunks)


def test_sentence_never_cuts_a_fence(counter):
    code = "\n".join(f"x = {i}. Y = {i}!" for i in range(40))
    text = f"Before. Text here.\n\n```\n{code}\n```\n\nAfter. More."
    chunks = chunks_of(text, "sentence", counter, max_chunk_size=100, min_chunk_size=10)
    fence = [c for c in chunks if "```" in c.content]
    assert len(fence) == 1 and fence[0].content.count("```") == 2
    assert fence[0].end_offset - fence[0].start_offset > 100  # a code block may exceed the maximum


DOC = """# Guide

Intro paragraph for the guide.

## Install

Install it with the package manager. It takes a minute.

## Configure

{long}

## Notes

{huge}
"""


def test_paragraph_boundary_types(counter):
    long = "\n\n".join(f"Paragraph {i} explains one setting in a few words." for i in range(12))
    huge = " ".join(f"Sentence {i} of one very long paragraph." for i in range(40))
    text = DOC.format(long=long, huge=huge)
    chunks = chunks_of(text, "paragraph", counter, max_chunk_size=300, min_chunk_size=10)
    by_heading: dict[str, set[str]] = {}
    for c in chunks:
        by_heading.setdefault(c.heading, set()).add(c.boundary_type)
    assert by_heading["## Install"] == {"section"}
    assert by_heading["## Configure"] == {"paragraph"}
    assert by_heading["## Notes"] == {"sentence"}
    # Headings are section boundaries: every section starts a chunk.
    starts = {c.start_offset for c in chunks}
    for heading in ("## Install", "## Configure", "## Notes"):
        assert text.index(heading) in starts
    assert all(c.end_offset - c.start_offset <= 300 for c in chunks)


def test_paragraph_merges_chunks_under_the_minimum(counter):
    text = "## A\n\nTiny.\n\n## B\n\nAlso tiny.\n\n## C\n\n" + "A normal sized paragraph of text. " * 5
    merged = chunks_of(text, "paragraph", counter, max_chunk_size=1200, min_chunk_size=100)
    apart = chunks_of(text, "paragraph", counter, max_chunk_size=1200, min_chunk_size=10)
    assert len(apart) == 3 and len(merged) < 3
    assert merged[0].heading == "## A"


def test_character_sized_chunks_also_fit_the_model(counter):
    dense = " ".join(f"id{i:05d}x" for i in range(400))  # many word pieces per character
    for strategy in ("sentence", "paragraph"):
        chunks = chunks_of(dense, strategy, counter, max_chunk_size=10_000, min_chunk_size=10)
        assert len(chunks) > 1 and all(c.token_count <= 256 for c in chunks)
    capped = chunks_of(dense, "sentence", counter, max_chunk_size=10_000, max_tokens=64)
    assert all(c.token_count <= 64 for c in capped)
