"""Links in a built site: chunk files relocate relative links (parsing/links.py) and the link
check (site/linkcheck.py) finds every broken one."""

from __future__ import annotations

import orjson

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.fsutil import read_text
from pipeline.site.build import build
from pipeline.site.linkcheck import check_site

FILES: dict[str, str | bytes] = {
    "index.md": "# Home\n\nStart with [the guide](guide/setup.md#install) or [alternatives](alternatives.md).\n\n"
    "## Logo\n\n![logo](img/logo.png) and a [missing picture](img/gone.png).\n",
    "alternatives.md": "# Alternatives\n\nBack to [home](index.md#logo), or [this page's top](#alternatives).\n",
    "guide/setup.md": "# Setup\n\n## Install\n\nRead [home](../index.md) first. `[not a link](x.md)`\n\n"
    "> Quoted: see [alternatives](../alternatives.md).\n",
    "img/logo.png": b"\x89PNG fake",
}


def _build(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    return content, site


def test_chunk_links_resolve_and_the_manifest_keeps_the_exact_span(tmp_path):
    _, site = _build(tmp_path)
    report = check_site(site)
    assert report.ok, report.broken
    assert [link for _, link in report.missing_in_source] == ["../img/gone.png"]
    assert report.checked > 10
    chunk = "".join(read_text(p) for p in sorted(site.glob("guide/_chunks/setup-*.md")))
    assert "[home](../../index.md)" in chunk and "`[not a link](x.md)`" in chunk
    assert "[alternatives](../../alternatives.md)" in chunk
    assert "[this page's top](../alternatives.md#alternatives)" in read_text(site / "_chunks/alternatives-0.md")
    for folder, key in (("", "index"), ("", "alternatives"), ("guide/", "setup")):
        manifest = orjson.loads((site / f"{folder}_chunks/{key}.manifest.json").read_bytes())
        source = read_text(site / folder / manifest["source"])
        for record in manifest["chunks"]:
            text = read_text(site / folder / record["href"])
            span = source[record["start_offset"] : record["end_offset"]]
            # The file is the heading context + the span with "../" before relative destinations.
            undo = lambda t: t.replace(f"../{manifest['source']}#", "#").replace("../", "")  # noqa: E731
            assert undo(text).endswith(undo(span))


def test_a_rebuild_reuses_the_chunk_files_unchanged(tmp_path):
    content, site = _build(tmp_path)
    before = {p: p.read_bytes() for p in site.rglob("_chunks/*")}
    report = build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert report.chunk.written == 0 and report.spec.embedded == 0
    assert {p: p.read_bytes() for p in site.rglob("_chunks/*")} == before


def test_the_check_reports_a_broken_chunk_link_and_a_broken_href(tmp_path):
    _, site = _build(tmp_path)
    chunk = next(p for p in site.glob("guide/_chunks/setup-*.md") if "../../index.md" in read_text(p))
    chunk.write_text(read_text(chunk).replace("../../index.md", "../index.md"), encoding="utf-8")
    index = site / "guide/index.json"
    index.write_bytes(index.read_bytes().replace(b'"_chunks/setup-0.md"', b'"_chunks/setup-9.md"', 1))
    report = check_site(site)
    assert (chunk.relative_to(site).as_posix(), "../index.md") in report.broken
    assert ("guide/index.json", "_chunks/setup-9.md") in report.broken


def test_the_linkcheck_command_exits_1_on_a_broken_link(tmp_path):
    import subprocess
    import sys

    _, site = _build(tmp_path)

    def run():
        return subprocess.run([sys.executable, "-m", "pipeline", "linkcheck", str(site)], capture_output=True, text=True)

    ok = run()
    assert ok.returncode == 0 and "0 broken, 1 missing in the content too" in ok.stderr, ok.stderr
    index = site / "guide/index.json"
    index.write_bytes(index.read_bytes().replace(b'"_chunks/setup-0.md"', b'"_chunks/setup-9.md"', 1))
    bad = run()
    assert bad.returncode == 1 and "broken: guide/index.json: _chunks/setup-9.md" in bad.stderr, bad.stderr


# -- base URLs (issue 34): every form builds, and readers take it from the site ----------------------

import re  # noqa: E402

import pytest  # noqa: E402

from pipeline.client import open_site  # noqa: E402


@pytest.mark.parametrize("given", ["/", "/repo/", "repo", "https://example.org/docs/"])
def test_every_base_url_form_builds_and_reads_back_without_repeating_it(tmp_path, given):
    from pipeline.index.hrefs import normalize_base_url

    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    build(content, site, SiteConfig(base_url=given, cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    base = normalize_base_url(given)
    root = orjson.loads((site / "index.json").read_bytes())
    assert root["_links"]["self"]["href"] == base + "index.json"
    report = check_site(site)  # no base URL given: the site's own
    assert report.ok and report.checked > 20, report.broken
    reader = open_site(site)  # a client on a local copy reads every topic and chunk
    assert reader.base_url == base
    chunks = [c for node in reader.topics() for doc in reader.topic(node).documents for c in doc.items]
    assert len(chunks) >= 4 and all(chunk.text.strip() for chunk in reader.read_all(chunks))
    sitemap = site / "sitemap.xml"
    if base.startswith("https://"):  # sitemaps.org wants absolute <loc> URLs: only then is there one
        locs = re.findall(r"<loc>([^<]*)</loc>", sitemap.read_text())
        assert locs and all(loc.startswith(base) for loc in locs)
    else:
        assert not sitemap.exists()


def test_linkcheck_of_a_sub_path_build_needs_no_base_url_and_still_finds_breaks(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    build(content, site, SiteConfig(base_url="/repo/", cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert check_site(site).ok
    assert not check_site(site, "/").ok  # the wrong base URL given on purpose: every absolute link is off
    (site / "guide/_chunks/setup.manifest.json").unlink()
    assert {link for _, link in check_site(site).broken} == {"/repo/guide/_chunks/setup.manifest.json"}
