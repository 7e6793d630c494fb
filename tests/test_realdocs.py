"""Real documentation nobody here wrote (``../shared/realdocs``: FastAPI's and MkDocs' docs)
builds with default settings, and every link of the result resolves (issue 13).

The trees are found at ``<repo>/../shared/realdocs`` (CI clones the repository with ``shared/``
beside it); in a git worktree, beside the main checkout; or where ``PIPELINE_REALDOCS`` points.
Without them the tests skip, saying so. The hashing embedder keeps the two full builds to
seconds; one small real tree is built with the real model (marked ``model``).
"""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import orjson
import pytest

from conftest import ROOT
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from pipeline.site.linkcheck import check_site
from pipeline.topicspec.keywords import is_generated, load_keywords


def realdocs_root() -> Path | None:
    """Where ``PIPELINE_REALDOCS`` points when it is set (only there: a wrong path skips, naming
    it), else ``../shared/realdocs`` beside the repository (or beside a worktree's main checkout)."""
    explicit = os.environ.get("PIPELINE_REALDOCS")
    candidates = [Path(explicit)] if explicit else [ROOT.parent / "shared" / "realdocs"]
    git = ROOT / ".git"
    if not explicit and git.is_file():  # a worktree: ".git" says "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(git.read_text(encoding="utf-8").partition("gitdir:")[2].strip())
        candidates.append(gitdir.parent.parent.parent.parent / "shared" / "realdocs")
    return next((c for c in candidates if (c / "fastapi").is_dir() and (c / "mkdocs").is_dir()), None)


REALDOCS = realdocs_root()
needs_realdocs = pytest.mark.skipif(
    REALDOCS is None,
    reason=f"PIPELINE_REALDOCS={os.environ['PIPELINE_REALDOCS']} holds no fastapi/ and mkdocs/"
    if os.environ.get("PIPELINE_REALDOCS")
    else "../shared/realdocs not found beside the repository (set PIPELINE_REALDOCS to its path)",
)
MACRO_NOISE = re.compile(r"docs_src|\.py\b|\bhl\b|\bln\b|_py3\d|\{[*!#]")


def _build(name: str, tmp_path: Path, **kwargs):
    site = tmp_path / name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = build(REALDOCS / name, site, SiteConfig(cache_dir=tmp_path / "cache"), progress=False, **kwargs)
    return site, report, [str(w.message) for w in caught]


def _walk_titles(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("title", "header_path") and isinstance(value, str):
                yield value
            else:
                yield from _walk_titles(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_titles(value)


@needs_realdocs
@pytest.mark.parametrize("name", ["fastapi", "mkdocs"])
def test_realdocs_build_with_defaults_and_every_link_resolves(tmp_path, name):
    site, report, messages = _build(name, tmp_path, embedder=HashingEmbedder())
    documents = sum(1 for p in (REALDOCS / name).rglob("*.md") if not p.name.startswith(("_", ".")))  # _llm-test.md: hidden
    assert report.chunk.documents == documents and report.chunk.chunks > documents

    links = check_site(site)
    assert links.ok, links.broken[:20]
    assert links.checked > 1000
    # Excused only: links to what the copy left out (images, MkDocs' rendered URLs, template
    # placeholders), each also missing from the source document's own folder.
    assert len(links.missing_in_source) < 40

    indexes = sorted(site.rglob("index.json"))
    for path in indexes:
        if path.parent.name == "_chunks":
            continue
        doc = orjson.loads(path.read_bytes())
        for title in _walk_titles(doc):
            assert "{ #" not in title and "{#" not in title, (path, title)  # attribute lists cleaned
    for table in site.rglob("_keywords/words.md"):
        if is_generated(table):
            noisy = [k.name for k in load_keywords(table) if MACRO_NOISE.search(k.name)]
            assert not noisy, (table, noisy)
    if name == "fastapi":  # its tutorials hold code blocks longer than the model reads
        oversize = [m for m in messages if "the model reads only its first 256" in m]
        assert oversize and all(re.match(r".+\.md:\d+: chunk of \d+ word pieces", m) for m in oversize)


@needs_realdocs
@pytest.mark.model
def test_a_small_real_tree_builds_with_the_real_model(tmp_path):
    content = tmp_path / "small"
    for rel in ("index.md", "getting-started.md"):
        shutil.copyfile(REALDOCS / "mkdocs" / rel, (content / rel) if content.is_dir() else (content.mkdir() or content / rel))
    site = tmp_path / "site"
    report = build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), progress=False)
    assert report.spec.embedded == report.chunk.chunks > 10
    root = orjson.loads((site / "index.json").read_bytes())
    assert root["model"] == "all-MiniLM-L6-v2"
    assert check_site(site).ok
