"""promotion_level: read from front matter, inherited by every chunk everywhere a chunk is
published, filterable in search, and changed without re-embedding anything."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import write_tree, document_resources
from test_export import manifest_path
from pipeline.cli import app
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.promotion import DEFAULT_LEVEL, LEVELS, check_level, promotion_level
from pipeline.site.build import build

DOC = "# Guide\n\nIntro to the guide.\n\n" + "".join(f"## Part {i}\n\nText of part {i} about caching.\n\n" for i in range(6))


def with_level(level: str | None) -> str:
    return (f"---\ntitle: Guide\npromotion_level: {level}\n---\n" if level else "---\ntitle: Guide\n---\n") + DOC


def make(tmp_path, level: str | None, embedder=None):
    content = write_tree(tmp_path / "content", {"t/guide.md": with_level(level), "t/other.md": "# Other\n\nOther text.\n"})
    embedder = embedder or HashingEmbedder()
    report = build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache"), embedder=embedder, progress=False)
    return content, tmp_path / "site", embedder, report


def levels_published(site) -> dict[str, set[str]]:
    """Every place a chunk's level is published, per document key."""
    index = document_resources(site, "t")
    out = {}
    for key, chunk_set in index.items():
        manifest = orjson.loads(manifest_path(site, "t", key).read_bytes())
        out[key] = (
            {chunk_set["promotion_level"], manifest["promotion_level"]}
            | {item["promotion_level"] for item in chunk_set["items"]}
            | {record["promotion_level"] for record in manifest["chunks"]}
        )
    return out


def test_absent_means_standard_and_values_are_checked():
    assert promotion_level(None) == promotion_level({"title": "x"}) == DEFAULT_LEVEL == "standard"
    assert promotion_level({"promotion_level": " Critical "}) == "critical"
    with pytest.raises(PipelineError) as info:
        promotion_level({"promotion_level": "urgent"}, path="a.md", text="---\ntitle: A\npromotion_level: urgent\n---\n")
    assert info.value.line == 3 and "a.md:3" in str(info.value) and "standard, important, critical" in str(info.value)


@given(st.one_of(st.text(max_size=12), st.integers(), st.booleans(), st.lists(st.text(max_size=3), max_size=2)))
def test_only_the_three_levels_are_accepted(value):
    if isinstance(value, str) and value.strip().lower() in LEVELS:
        assert check_level(value) == value.strip().lower()
    else:
        with pytest.raises(ValueError):
            check_level(value)


def test_every_chunk_inherits_its_documents_level(tmp_path):
    _, site, _, _ = make(tmp_path, "important")
    assert levels_published(site) == {"guide": {"important"}, "other": {"standard"}}


def test_a_bad_level_stops_the_build_naming_file_and_line(tmp_path):
    with pytest.raises(PipelineError) as info:
        make(tmp_path, "urgent")
    assert info.value.path.endswith("guide.md") and info.value.line == 3
    assert not (tmp_path / "site" / "t" / "index.json").exists()


def test_changing_the_level_updates_every_chunk_and_re_embeds_nothing(tmp_path):
    content, site, embedder, _ = make(tmp_path, None)
    assert levels_published(site)["guide"] == {"standard"}
    calls = embedder.calls
    (content / "t/guide.md").write_text(with_level("critical"), encoding="utf-8")
    report = build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=embedder, progress=False)
    assert report.spec.embedded == 0 and embedder.calls == calls
    assert levels_published(site) == {"guide": {"critical"}, "other": {"standard"}}


def test_search_filters_by_level_in_the_client_and_the_cli(tmp_path):
    _, site, _, _ = make(tmp_path, "critical")
    opened = open_site(site)
    hits = opened.search("part caching guide", 50, method="keyword", promotion_level="critical")
    assert hits and {h.chunk.document for h in hits} == {"guide"}
    assert all(h.to_dict()["promotion_level"] == "critical" for h in hits)
    assert opened.search("part caching guide", 50, method="keyword", promotion_level="important") == []
    result = CliRunner().invoke(app, ["search", str(site), "part caching guide", "--method", "keyword", "--json",
                                      "--promotion-level", "critical"])
    assert result.exit_code == 0, result.output
    assert {h["promotion_level"] for h in orjson.loads(result.stdout)} == {"critical"}
