"""topicspec/specfile.py: a topic's documents on ``topic-spec.md`` and its list pages
(``_spec/_documents-<n>.md``): read back whole and in order at any count, each page within a
reader's budget, and the topic page's size independent of the topic's documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import PipelineError
from pipeline.topicspec.specfile import (
    PAGING_FIELDS, SPEC_ENTRIES, list_page, pages_intact, read_topic_spec, read_topic_summary, render_topic_spec,
)

BUDGET = 32_000  # bytes a reader reads whole (siteformat/indexnames.py: every file within 32 kB)


def document(i: int) -> dict:
    """A document's spec as ``topicdata.topic_data`` makes it (two chunks, one related link)."""
    items = [{"index": c, "href": f"_chunks/doc{i:05d}-{c}.md", "title": f"Part {c} | of {i}", "is_code": c == 1,
              "token_count": 40 + c, "similarity_conceptual": 0.5 + c / 10, "keywords": [{"name": "lantern", "score": 2}],
              "prompt_hashes": [i * 7 + c], "related": [{"href": f"_chunks/doc{(i + 1):05d}-0.md", "similarity": 0.25}]}
             for c in range(2)]
    return {"source": f"doc{i:05d}.md", "title": f"Document {i}", "count": 2, "strategy": "markdown-224",
            "promotion_level": "standard", "baseline_conceptual": 0, "items": items}


def topic(n: int) -> dict:
    return {"topic": "notes", "model": "hashing-384", "pipeline_version": "0.1.0",
            "keywords": {"origin": "generated", "table": [{"name": "lantern", "score": 2}]},
            "prompt_matching": {"algorithm": "simhash-64", "per_question": 3, "threshold": 0.5, "max_distance": 14},
            "questions": [], "documents": [document(i) for i in range(n)]}


def write(folder: Path, pages: dict[str, str]) -> Path:
    for rel, text in pages.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder / "topic-spec.md"


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=4 * SPEC_ENTRIES + 3))
def test_the_pages_read_back_as_the_data_in_order(tmp_path_factory, n):
    data = topic(n)
    pages = render_topic_spec(data)
    path = write(tmp_path_factory.mktemp("topic"), pages)
    assert read_topic_spec(path) == data  # every document, in order, though paged
    summary = read_topic_summary(path)
    groups = -(-n // SPEC_ENTRIES)
    assert [d["source"] for d in summary["documents"]] == [d["source"] for d in data["documents"][:SPEC_ENTRIES]]
    lists = sorted(rel for rel in pages if rel.startswith("_spec/_documents-"))
    assert lists == sorted(list_page(p) for p in range(2, groups + 1))
    if groups <= 1:  # a small topic's pages are those it had before list pages: no paging field
        assert not set(PAGING_FIELDS) & set(summary)
    else:
        assert summary["document_count"] == n and summary["document_pages"]["pages"] == groups
    assert len(pages) == n + 1 + len(lists)
    assert pages_intact(path.parent) is not None


def test_the_topic_page_does_not_grow_with_its_documents():
    small, big = render_topic_spec(topic(SPEC_ENTRIES + 1)), render_topic_spec(topic(3_000))
    sizes = {rel: len(text.encode()) for rel, text in big.items()}
    assert abs(sizes["topic-spec.md"] - len(small["topic-spec.md"].encode())) < 100
    assert max(sizes.values()) <= BUDGET, max(sizes.items(), key=lambda kv: kv[1])
    # each list page holds its documents' rows and names the next page
    assert sum(rel.startswith("_spec/_documents-") for rel in big) == -(-3_000 // SPEC_ENTRIES) - 1
    assert "[next](../_spec/_documents-4.md)" in big[list_page(3)] and "[previous](../topic-spec.md)" in big[list_page(2)]


def test_an_edit_changes_its_document_page_its_list_page_and_the_topic_page(tmp_path):
    data = topic(5 * SPEC_ENTRIES)
    before = render_topic_spec(data)
    data["documents"][2 * SPEC_ENTRIES + 5]["items"][0]["token_count"] += 1  # on list page 3
    after = render_topic_spec(data)
    assert {rel for rel in after if before[rel] != after[rel]} == {
        "topic-spec.md", list_page(3), f"_spec/doc{2 * SPEC_ENTRIES + 5:05d}.md"}
    data["documents"][3]["title"] = "Renamed"  # on the topic page's own rows
    again = render_topic_spec(data)
    assert {rel for rel in again if after[rel] != again[rel]} == {"topic-spec.md", "_spec/doc00003.md"}


def test_a_list_page_that_is_not_the_one_named_is_an_error(tmp_path):
    path = write(tmp_path, render_topic_spec(topic(3 * SPEC_ENTRIES)))
    page = tmp_path / list_page(3)
    page.write_text(page.read_text().replace("Document 70", "Document seventy"))
    with pytest.raises(PipelineError, match="list pages are not those topic-spec.md names"):
        read_topic_spec(path)
    assert pages_intact(tmp_path) is None
    page.unlink()
    with pytest.raises(PipelineError, match="_documents-3.md.*missing"):
        read_topic_spec(path)
