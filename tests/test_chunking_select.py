"""Which strategy chunks a document: site -> directory -> front matter."""

from __future__ import annotations

import pytest

from pipeline.chunking.select import merge_chunking, resolve_chunking, strategy_for
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import parse_markdown


def doc(front_matter: str = "", path: str = "guide/page.md"):
    head = f"---\n{front_matter}---\n\n" if front_matter else ""
    return parse_markdown(head + "# Page\n\nText.\n", path)


def test_no_override_uses_the_site_choice(counter):
    chosen = strategy_for(doc(), "markdown", {"max_tokens": 200}, counter)
    assert chosen.name == "markdown" and chosen.max_tokens == 200


def test_same_strategy_merges_options(counter):
    chosen = strategy_for(doc("chunking:\n  max_tokens: 128\n"), "markdown", {"max_tokens": 200, "min_lines": 5}, counter)
    assert (chosen.name, chosen.max_tokens, chosen.min_lines) == ("markdown", 128, 5)


def test_another_strategy_starts_from_its_defaults(counter):
    chosen = strategy_for(doc("chunking:\n  strategy: sentence\n  max_chunk_size: 500\n"), "markdown", {"max_tokens": 200}, counter)
    assert (chosen.name, chosen.max_chunk_size, chosen.max_tokens) == ("sentence", 500, 256)
    assert strategy_for(doc("chunking: paragraph\n"), "markdown", {"max_tokens": 200}, counter).name == "paragraph"


def test_bad_override_names_the_document_and_line(counter):
    with pytest.raises(PipelineError) as error:
        strategy_for(doc("title: T\nchunking:\n  strategy: sentence\n  max_chunk_size: 5\n"), "markdown", {}, counter)
    assert error.value.path == "guide/page.md" and error.value.line == 3
    assert "max_chunk_size" in str(error.value)
    with pytest.raises(PipelineError, match="strategy name or a mapping"):
        strategy_for(doc("chunking: [1, 2]\n"), "markdown", {}, counter)
    with pytest.raises(PipelineError, match="unknown chunking strategy"):
        strategy_for(doc("chunking: nonsense\n"), "markdown", {}, counter)


def test_entries_choose_the_entry_strategy(counter):
    assert strategy_for(doc("type: how_to\n"), "markdown", {}, counter).name == "entry"
    assert strategy_for(doc("type: blog\n"), "markdown", {}, counter).name == "markdown"
    yaml_entry = parse_markdown("id: x\ntype: definition\n", "kb/x.yaml")
    assert strategy_for(yaml_entry, "markdown", {"max_tokens": 100}, counter).name == "entry"


def test_site_directory_document_layers():
    name, options = resolve_chunking(
        [{"strategy": "markdown", "max_tokens": 256}, {"max_tokens": 200}, None, {"strategy": "tokens"}, {"max_tokens": 128}]
    )
    assert (name, options) == ("tokens", {"max_tokens": 128})
    assert merge_chunking("markdown", {"max_tokens": 256}, "markdown") == ("markdown", {"max_tokens": 256})
