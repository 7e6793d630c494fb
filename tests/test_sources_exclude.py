"""``exclude`` globs (gitignore-style, as MkDocs' ``exclude_docs``) and folders without documents."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig, load_config
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from pipeline.sources.exclude import Exclude


@pytest.mark.parametrize(
    "patterns, rel, is_dir, excluded",
    [
        (["drafts/"], "drafts", True, True),
        (["drafts/"], "drafts/a.md", False, True),
        (["drafts/"], "guide/drafts/a.md", False, True),  # no inner slash: any depth
        (["drafts/"], "drafts.md", False, False),  # trailing slash: folders only
        (["/drafts/"], "guide/drafts/a.md", False, False),  # leading slash: anchored
        (["guide/old.md"], "guide/old.md", False, True),
        (["guide/old.md"], "x/guide/old.md", False, False),  # inner slash: anchored
        (["*.tmp.md"], "a/b/c.tmp.md", False, True),
        (["*.md"], "a/b.md", False, True),
        (["a/*.md"], "a/b/c.md", False, False),  # * stays in one part
        (["a/**/c.md"], "a/c.md", False, True),
        (["a/**/c.md"], "a/x/y/c.md", False, True),
        (["**/c.md"], "x/c.md", False, True),
        (["a/**"], "a/x/y.md", False, True),
        (["a/**"], "a.md", False, False),
        (["doc?.md"], "doc1.md", False, True),
        (["doc?.md"], "doc10.md", False, False),
        (["doc[0-2].md"], "doc1.md", False, True),
        (["doc[!0-2].md"], "doc1.md", False, False),
        (["*.md", "!keep.md"], "keep.md", False, False),  # last match wins
        (["*.md", "!keep.md", "keep.md"], "keep.md", False, True),
        (["drafts/", "!drafts/keep.md"], "drafts/keep.md", False, True),  # a parent folder excluded: as git
        (["# a comment", "", "  "], "a.md", False, False),
        ([".*"], "dir/.hidden.md", False, True),
    ],
)
def test_gitignore_semantics(patterns, rel, is_dir, excluded):
    assert Exclude(tuple(patterns)).excludes(rel, is_dir=is_dir) is excluded


def test_config_reads_a_list_or_a_string_a_pattern_a_line(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('exclude = ["drafts/", "*.tmp.md"]\n', encoding="utf-8")
    assert load_config(path).exclude == ("drafts/", "*.tmp.md")
    path.write_text('exclude = """\ndrafts/\n!drafts/keep.md\n"""\n', encoding="utf-8")
    assert load_config(path).exclude == ("drafts/", "!drafts/keep.md")
    path.write_text("exclude = 3\n", encoding="utf-8")
    with pytest.raises(PipelineError, match="exclude must be a list") as info:
        load_config(path)
    assert str(path) in str(info.value)


FILES: dict[str, str | bytes] = {
    "index.md": "# Home\n\nWelcome.\n",
    "guide/setup.md": "# Setup\n\nInstall it.\n",
    "guide/img/shot.png": b"\x89PNG fake",
    "img/logo.png": b"\x89PNG fake",
    "css/site.css": "body { color: red }\n",
    "js/nested/app.js": "console.log(1)\n",
    "deep/only/assets/x.svg": "<svg/>",
    "deep/docs/page.md": "# Page\n\nA page.\n",
    "drafts/wip.md": "# WIP\n\nNot ready.\n",
    "guide/notes.tmp.md": "# Tmp\n\nScratch.\n",
}


def _index_dirs(site: Path) -> list[str]:
    return sorted(p.parent.relative_to(site).as_posix() for p in site.rglob("index.json") if "_" not in p.parent.name[:1])


def test_folders_without_documents_are_no_topics_and_excluded_files_are_left_out(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    cfg = SiteConfig(cache_dir=tmp_path / "cache", exclude=("drafts/", "*.tmp.md"), retire_removed_files=False)
    report = build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    assert _index_dirs(site) == [".", "deep", "deep/docs", "guide"]
    assert report.chunk.documents == 3
    root = orjson.loads((site / "index.json").read_bytes())
    assert [t["id"] for t in root["_embedded"]["topics"]] == ["deep", "guide"]
    guide = orjson.loads((site / "guide/index.json").read_bytes())
    assert [d["key"] for d in guide["_embedded"]["documents"]] == ["setup"] and not guide["_embedded"].get("topics")
    assert (site / "img/logo.png").is_file() and (site / "guide/img/shot.png").is_file()  # assets still copied
    assert not (site / "drafts").exists() and not (site / "guide/notes.tmp.md").exists()
    assert not (site / "guide/_chunks/notes.tmp.manifest.json").exists()

    # A folder that loses its last document stops being a node; its index.json goes.
    (content / "deep/docs/page.md").unlink()
    build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    assert _index_dirs(site) == [".", "guide"]
    # Un-excluding brings a document in.
    build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert _index_dirs(site) == [".", "drafts", "guide"]
    assert (site / "guide/_chunks/notes.tmp.manifest.json").is_file()


def test_an_excluded_folder_is_never_read_so_its_broken_inputs_do_not_stop_the_build(tmp_path):
    files = {**FILES, "drafts/qa-pairs.md": "## Q: \n", "drafts/_keywords/words.md": "| keyword | score |\n|---|---|\n| x | 99 |\n"}
    content = write_tree(tmp_path / "content", files)
    with pytest.raises(PipelineError):
        build(content, tmp_path / "site0", SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    cfg = SiteConfig(cache_dir=tmp_path / "cache", exclude=("drafts/",))
    build(content, tmp_path / "site", cfg, embedder=HashingEmbedder(), progress=False)
    assert not (tmp_path / "site/drafts").exists()
