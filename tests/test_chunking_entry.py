"""Seed 004 (``entry``): knowledge-base entries chunked by type, with context."""

from __future__ import annotations

import pytest

from conftest import ROOT
from pipeline.chunking import chunk_text
from pipeline.chunking.entry_source import read_entry, snake, to_string
from pipeline.chunking.select import strategy_for
from pipeline.chunking.strategies.entry import summarize
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import parse_markdown

FIXTURES = ROOT / "tests/fixtures/chunking"
SECTIONS = ["overview", "prerequisites", "steps", "issues", "tips"]


def entry_chunks(name: str, counter, **options):
    path = FIXTURES / name
    text = path.read_text(encoding="utf-8")
    return text, chunk_text(text, path=str(path), strategy="entry", counter=counter, document_id="abc123", **options)


@pytest.mark.parametrize("name", ["crm-how-to.yaml", "crm-how-to.json", "crm-how-to.md"])
def test_how_to_entry_has_five_chunks_with_context(counter, name):
    text, chunks = entry_chunks(name, counter)
    assert len(chunks) == 5
    assert [c.metadata["section"] for c in chunks] == SECTIONS
    assert [c.chunk_id for c in chunks] == [f"abc123_chunk_{i}" for i in range(5)]
    for i, c in enumerate(chunks):
        context = c.metadata["context"]
        assert context["position"] == f"{i + 1} of 5"
        assert context["section_name"] == SECTIONS[i]
        assert context["related_chunks"] == [f"abc123_chunk_{j}" for j in range(5) if j != i]
        assert c.metadata["entry_type"] == "how_to"
        assert c.metadata["parent_entry_id"] == "abc123"
        assert c.metadata["parent_title"] == "How to Setup CRM Integration"
        if name.endswith(".md"):  # markdown is shown as it is; YAML/JSON as its rendering
            assert c.content.endswith(text[c.start_offset : c.end_offset]) and "rendered_from" not in c.metadata
        else:
            assert c.metadata["rendered_from"] == name.rsplit(".", 1)[1]
        if i:
            assert context["previous_section"] == SECTIONS[i - 1]
            assert 0 < len(context["previous_summary"]) <= 100
        else:
            assert "previous_section" not in context
        if i < 4:
            assert context["next_section"] == SECTIONS[i + 1]
            assert 0 < len(context["next_summary"]) <= 100
        else:
            assert "next_section" not in context
    assert chunks[1].content.startswith("Prerequisites for How to Setup CRM Integration:\n")
    assert "You need admin access and API key" in chunks[1].content


def test_yaml_spans_are_the_field_values(counter):
    text, chunks = entry_chunks("crm-how-to.yaml", counter)
    assert text[chunks[1].start_offset : chunks[1].end_offset] == "You need admin access and API key"
    assert text[chunks[2].start_offset : chunks[2].end_offset].startswith('- "Step 1: Login to admin panel"')
    assert chunks[0].metadata["category"] == "integrations" and chunks[0].metadata["user_type"] == "internal"
    # The overview is longer than 100 characters: its summary is cut at a sentence end.
    assert chunks[1].metadata["context"]["previous_summary"] == (
        "This guide explains how to integrate the CRM with PropertyEngine."
    )


def test_json_steps_given_as_mappings_are_numbered_in_summaries(counter):
    _, chunks = entry_chunks("crm-how-to.json", counter)
    assert chunks[1].metadata["context"]["next_summary"] == (
        "1. Login to admin panel 2. Navigate to integrations 3. Enter API credentials"
    )


def test_markdown_how_to_sections_come_from_headings(counter):
    text, chunks = entry_chunks("crm-how-to.md", counter)
    assert chunks[0].start_offset == text.index("# How to Setup CRM")  # the title joins the overview
    assert text[chunks[3].start_offset :].startswith("## Common Issues")
    assert "```bash" in chunks[2].content  # the steps keep their code block
    assert chunks[2].metadata["context"]["previous_summary"] == "You need admin access and API key."


def test_definition_and_error_are_one_chunk(counter):
    _, definition = entry_chunks("api-key.yaml", counter)
    assert len(definition) == 1
    assert definition[0].content.startswith("Definition: API Key\n\n**API Key**\n\n")
    assert definition[0].metadata["section_type"] == "full" and "context" not in definition[0].metadata
    _, error = entry_chunks("error-401.json", counter)
    assert len(error) == 1 and error[0].content.startswith("Error: Error 401: Unauthorized\n")
    assert error[0].metadata["entry_type"] == "error"


def test_a_definition_reads_as_its_term_and_its_text(counter):
    text, chunks = entry_chunks("api-key.yaml", counter)
    assert chunks[0].content == (
        "Definition: API Key\n\n**API Key**\n\nA unique identifier used for authentication\n\n"
        "**Context:** Used in PropertyEngine integrations\n\n**Examples:**\n\n- sk_live_xxx\n- pk_test_yyy"
    )
    # the span runs from the term's value to the last example, exactly as in the file
    span = text[chunks[0].start_offset : chunks[0].end_offset]
    assert span.startswith("API Key\n  definition:") and span.endswith("[sk_live_xxx, pk_test_yyy]")
    assert chunks[0].metadata["rendered_from"] == "yaml"


def test_an_error_reads_as_its_code_cause_and_fix(counter):
    text, chunks = entry_chunks("error-401.json", counter)
    assert chunks[0].content == (
        "Error: Error 401: Unauthorized\n\n**Code:** 401\n\n**Description:** Authentication failed\n\n"
        "**Symptoms:** API calls return 401 status\n\n**Fix:** Check API key validity\n\n"
        "**Causes:**\n\n- Expired key\n- Wrong environment\n\n**Prevention:** Rotate keys quarterly"
    )
    # from the first key shown (its label traces to it) to the last value, quotes included
    assert text[chunks[0].start_offset : chunks[0].end_offset].startswith('"errorCode": "401"')
    assert text[chunks[0].start_offset : chunks[0].end_offset].endswith('"Rotate keys quarterly"')
    assert (chunks[0].start_line, chunks[0].end_line) == (6, 11)


@pytest.mark.parametrize("name", ["crm-how-to.yaml", "crm-how-to.json"])
def test_steps_read_as_a_numbered_list(counter, name):
    text, chunks = entry_chunks(name, counter)
    steps = chunks[2]
    assert steps.content == (
        "Steps for How to Setup CRM Integration:\n\n1. Login to admin panel\n2. Navigate to integrations\n3. Enter API credentials"
    )
    span = text[steps.start_offset : steps.end_offset]
    assert span.endswith(('"Step 3: Enter API credentials"', '{"action": "Enter API credentials"}]'))
    assert not steps.is_code


def test_a_yaml_entry_with_a_bom_keeps_exact_offsets(counter):
    text = "\ufeffid: b\ntype: error\ntitle: Bom\nerrorCode: E1\nsolution: Restart the service\n"
    chunks = chunk_text(text, path="bom.yaml", strategy="entry", counter=counter)
    assert chunks[0].content == "Error: Bom\n\n**Code:** E1\n\n**Fix:** Restart the service"
    assert text[chunks[0].start_offset : chunks[0].end_offset] == "errorCode: E1\nsolution: Restart the service"


@pytest.mark.parametrize(
    "text",
    [
        "id: x\ntype: announcement\ntitle: News\nbody: Something happened.\n",
        "---\ntype: how_to\ntitle: No sections\n---\n\nJust text, no section headings.\n",
        "A markdown file with no front matter at all.\n",
    ],
)
def test_unknown_types_and_how_to_without_sections_are_one_chunk(counter, text):
    path = "entry.yaml" if text.startswith("id:") else "entry.md"
    chunks = chunk_text(text, path=path, strategy="entry", counter=counter)
    assert len(chunks) == 1
    assert chunks[0].metadata["section_type"] == "full"


def test_a_section_over_the_limit_is_split_with_context_per_chunk(counter):
    steps = "\n".join(f"    - Step {i}: do the thing number {i} carefully and check it" for i in range(80))
    text = f"id: big\ntype: workflow\ntitle: Big\nrawFormData:\n  overview: Short.\n  steps:\n{steps}\n  tips: Be careful.\n"
    chunks = chunk_text(text, path="big.yaml", strategy="entry", counter=counter, max_tokens=128)
    assert len(chunks) > 3 and all(c.token_count <= 128 for c in chunks)
    steps_parts = [c for c in chunks if c.metadata["section"] == "steps"]
    assert len(steps_parts) > 1 and steps_parts[0].metadata["section_parts"] == len(steps_parts)
    # each part is numbered steps; its span is exactly the YAML items it shows, in order
    numbers = []
    for c in steps_parts:
        shown = c.content.split("\n\n", 1)[1].split("\n")
        numbers += [int(line.split(".", 1)[0]) for line in shown]
        items = [line for line in text[c.start_offset : c.end_offset].split("\n")]
        assert [line.split(". ", 1)[1] for line in shown] == [item.split(": ", 1)[1] for item in items]
    assert numbers == list(range(1, 81))
    assert [c.metadata["context"]["position"] for c in chunks] == [f"{i + 1} of {len(chunks)}" for i in range(len(chunks))]


def test_bad_structured_input_is_an_error_with_a_line(counter):
    with pytest.raises(PipelineError) as error:
        chunk_text('{\n  "id": "x",\n  "type": \n}', path="bad.json", strategy="entry", counter=counter)
    assert error.value.line == 4
    with pytest.raises(PipelineError) as error:
        chunk_text("id: x\ntype: [unclosed\n", path="bad.yaml", strategy="entry", counter=counter)
    assert error.value.path == "bad.yaml" and error.value.line


def test_json_with_a_bom_and_tabs_keeps_exact_offsets(counter):
    text = '\ufeff{\n\t"type": "how_to",\n\t"title": "T",\n\t"overview": "First.",\n\t"tips": "Second."\n}\n'
    chunks = chunk_text(text, path="<stdin>", strategy="entry", counter=counter)
    assert [text[c.start_offset : c.end_offset] for c in chunks] == ['"First."', '"Second."']


def test_summarize_cuts_at_a_sentence_end():
    assert summarize("This is a long paragraph about CRM integration. It has multiple sentences.") == (
        "This is a long paragraph about CRM integration. It has multiple sentences."
    )
    long = "This is a long paragraph about CRM integration. " + "It has many more words after that sentence " * 3
    assert summarize(long) == "This is a long paragraph about CRM integration."
    no_stop = "word " * 40
    cut = summarize(no_stop)
    assert len(cut) <= 100 and cut.endswith("...")


def test_helpers():
    assert to_string(["item1", "item2"]) == "item1\nitem2"
    assert to_string([{"action": "Step 1"}, {"action": "Step 2"}]) == "1. Step 1\n2. Step 2"
    assert to_string({"key1": "value1"}) == "key1: value1"
    assert to_string(None) == ""
    assert snake("userType") == "user_type" and snake("Common Issues") == "common_issues"


def test_front_matter_type_selects_the_entry_strategy(counter):
    text = (FIXTURES / "crm-how-to.md").read_text(encoding="utf-8")
    document = parse_markdown(text, "crm-how-to.md")
    assert strategy_for(document, "markdown", {"max_tokens": 200}, counter).name == "entry"
    opted_out = parse_markdown("---\ntype: how_to\nchunking: markdown\n---\n\n# X\n", "x.md")
    assert strategy_for(opted_out, "semantic", {}, counter).name == "markdown"
    assert read_entry(document).entry_id == "abc123"


def test_related_chunks_of_a_long_entry_are_capped(counter):
    """A 108 KB how-to once listed every chunk as related to every other (63 MB of output)."""
    from pipeline.chunking.strategies.entry import MAX_RELATED_CHUNKS

    steps = "\n".join(f"- Step {i}: run the tool with option {i} and check its output carefully." for i in range(1500))
    text = f"type: how_to\ntitle: Long\nsteps: |\n" + "".join(f"  {line}\n" for line in steps.splitlines())
    chunks = chunk_text(text, path="long.yaml", strategy="entry", counter=counter, document_id="d", max_tokens=64)
    assert len(chunks) > 3 * MAX_RELATED_CHUNKS
    for i, c in enumerate(chunks):
        ids = c.metadata["context"]["related_chunks"]
        assert len(ids) == min(MAX_RELATED_CHUNKS, len(chunks) - 1)
        assert f"d_chunk_{i}" not in ids and ids == sorted(ids, key=lambda s: int(s.rsplit("_", 1)[1]))
        nums = [int(s.rsplit("_", 1)[1]) for s in ids]
        assert max(abs(j - i) for j in nums) <= MAX_RELATED_CHUNKS  # the nearest by position
