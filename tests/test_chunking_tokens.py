"""Seed 002 (``tokens``): AC1-AC4 and its test plan (tests 1-3, edge cases 1-3)."""

from __future__ import annotations

import warnings

import orjson
import pytest

from pipeline.chunking import chunk_text
from pipeline.chunking.cli_chunk import run_chunk
from pipeline.chunking.registry import make_strategy
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.errors import PipelineError
from pipeline.parsing.tokens import TokenCounter

THREE_SECTIONS = """# Title

## Section One
Content for section one.

## Section Two
Content for section two.

## Section Three
Content for section three.
"""

PROSE = (
    "The importer reads every file, checks its encoding and records where each paragraph starts. "
    "Nothing is written until the whole tree has been read without an error. "
)


def tokens(text, counter, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return chunk_text(text, strategy="tokens", counter=counter, **options)


@pytest.fixture(scope="module")
def unclipped():
    """The MiniLM tokenizer with no model limit, so the seed's 500 tokens apply as written."""
    return TokenCounter.from_file(DEFAULT_MODEL.directory() / "tokenizer.json", model_max_tokens=None)


def test_plan_1_basic_header_splitting(counter):
    chunks = tokens(THREE_SECTIONS, counter)
    assert len(chunks) == 3
    assert [c.chunk_index for c in chunks] == [0, 1, 2]
    assert {c.total_chunks for c in chunks} == {3}
    assert [c.heading for c in chunks] == ["## Section One", "## Section Two", "## Section Three"]
    assert [c.header_path for c in chunks] == ["## Section One", "## Section Two", "## Section Three"]
    # Each chunk holds its header; the title before the first ## stays with the first section.
    assert chunks[0].content.startswith("# Title\n\n## Section One\n")
    assert chunks[1].content.splitlines()[0] == "## Section Two"
    assert chunks[2].content.splitlines()[0] == "## Section Three"


def test_h3_stays_with_its_h2(counter):
    text = "## Install\n\nRun it.\n\n### On Linux\n\nUse apt.\n\n#### Details\n\nMore.\n\n## Use\n\nCall it.\n"
    chunks = tokens(text, counter)
    assert [c.heading for c in chunks] == ["## Install", "## Use"]
    assert "### On Linux" in chunks[0].content and "#### Details" in chunks[0].content


def test_plan_2_token_limit_fallback_keeps_the_header(counter):
    section = "## Long Section\n\n" + "\n\n".join(PROSE * 2 for _ in range(12))
    chunks = tokens("# Doc\n\nIntro.\n\n" + section, counter)
    parts = [c for c in chunks if c.heading == "## Long Section"]
    assert len(parts) > 1
    assert all(c.content.startswith("## Long Section\n") for c in parts)
    assert all(c.token_count <= 256 for c in chunks)
    assert all(c.boundary_type == "paragraph" for c in parts)  # cut between paragraphs only


def test_plan_2_with_the_seeds_500_tokens(unclipped):
    section = "## Long Section\n\n" + "\n\n".join(PROSE * 3 for _ in range(20))
    chunks = chunk_text(section, strategy="tokens", counter=unclipped)
    assert len(chunks) > 1
    assert all(c.token_count <= 500 for c in chunks)
    assert max(c.token_count for c in chunks) > 256


def test_max_tokens_above_the_model_is_clipped_with_a_warning_when_asked_for(counter):
    with pytest.warns(UserWarning, match="above what the embedding model reads"):
        strategy = make_strategy("tokens", counter, max_tokens=500)
    assert strategy.max_tokens == 256 and strategy.cache_key() == "tokens-256"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the seed's own default is clipped without a word
        assert make_strategy("tokens", counter).cache_key() == "tokens-256"
    assert make_strategy("tokens", counter, max_tokens=100).cache_key() == "tokens-100"


@pytest.mark.parametrize("bad", [0, -5, 3, "many", 2.5, True])
def test_bad_max_tokens_is_an_error(counter, bad):
    with pytest.raises(PipelineError, match="max_tokens"):
        make_strategy("tokens", counter, max_tokens=bad)


def test_a_paragraph_over_the_limit_is_cut_further(counter):
    # The seed stops at paragraphs; the invariant (every chunk fits) wins.
    text = "## One Paragraph\n\n" + PROSE * 20
    chunks = tokens(text, counter)
    assert len(chunks) > 1 and all(c.token_count <= 256 for c in chunks)
    assert {c.boundary_type for c in chunks} == {"sentence"}


def test_front_matter_is_stripped_and_attached_to_every_chunk(counter):
    text = "---\ntitle: Guide\ndate: 2026-01-31\ntags: [a, b]\n---\n\n## A\n\nOne.\n\n## B\n\nTwo.\n"
    chunks = tokens(text, counter)
    assert len(chunks) == 2
    assert all("title: Guide" not in c.content for c in chunks)
    assert all(c.metadata["front_matter"]["tags"] == ["a", "b"] for c in chunks)
    assert all(c.title in ("A", "B") for c in chunks)


def test_plan_3_cli_json_output(tmp_path):
    path = tmp_path / "test-doc.md"
    path.write_text(THREE_SECTIONS, encoding="utf-8")
    result = run_chunk(str(path), "tokens", {})
    assert result.exit_code == 0
    records = orjson.loads(result.stdout)
    assert isinstance(records, list) and len(records) == 3
    for i, record in enumerate(records):
        assert record["content"] and isinstance(record["content"], str)
        assert record["source_file"] == str(path)
        assert record["chunk_index"] == i and record["total_chunks"] == 3
        assert isinstance(record["header_path"], str)
        assert isinstance(record["token_count"], int) and record["token_count"] > 0
    assert not any("max_tokens" in m for m in result.messages)  # its own default is clipped silently


def test_edge_1_no_headers(counter):
    text = "Plain text without any markers.\n\n" + "\n\n".join(PROSE * 2 for _ in range(10))
    chunks = tokens(text, counter)
    assert len(chunks) > 1
    assert all(c.header_path == "" and c.heading == "" for c in chunks)


@pytest.mark.parametrize("text", ["", "  \n\t\n"])
def test_edge_2_empty_document(counter, tmp_path, text):
    assert tokens(text, counter) == []
    path = tmp_path / "empty.md"
    path.write_text(text, encoding="utf-8")
    result = run_chunk(str(path), "tokens", {"max_tokens": 256})
    assert (result.exit_code, result.stdout, result.messages) == (0, "[]\n", [])


def test_edge_3_code_block_over_the_limit_is_its_own_chunk(counter):
    code = "\n".join(f"value_{i} = compute_something(argument_{i}, other_{i})" for i in range(120))
    text = f"## Code\n\nBefore the code.\n\n```python\n{code}\n```\n\nAfter the code.\n"
    with pytest.warns(UserWarning, match="kept whole as its own chunk"):
        chunks = chunk_text(text, strategy="tokens", counter=counter, max_tokens=256)
    big = [c for c in chunks if c.metadata.get("oversize")]
    assert len(big) == 1
    assert big[0].token_count > 1000 and big[0].is_code
    assert text[big[0].start_offset : big[0].end_offset] == f"```python\n{code}\n```"
    assert big[0].content.startswith("## Code\n\n```python")
    assert [c for c in chunks if not c.metadata.get("oversize")] and all(
        c.token_count <= 256 for c in chunks if not c.metadata.get("oversize")
    )


def test_code_blocks_remain_intact_and_inline_code_is_unaffected(counter):
    code = "\n".join(f"print({i})" for i in range(30))
    text = "## S\n\n" + "Use `a. B` inline. " * 30 + f"\n\n```\n{code}\n```\n\n" + "More `code. Here` text. " * 30
    chunks = tokens(text, counter, max_tokens=64)
    fence = text.index("```\n")
    holder = [c for c in chunks if c.start_offset <= fence < c.end_offset]
    assert len(holder) == 1 and text[holder[0].start_offset : holder[0].end_offset].endswith("```")
