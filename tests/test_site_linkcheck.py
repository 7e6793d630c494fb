"""Links in a built site: chunk files relocate relative links (parsing/links.py) and the link
check (site/linkcheck.py) finds every broken one."""

from __future__ import annotations

import re
from urllib.parse import quote

import orjson
import pytest

from conftest import write_tree
from pipeline.client import open_site
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


# -- odd names (issue 35.4): no false broken links, no raw escapes on the terminal -------------

ODD_NAMES = ["h#1.md", "q?x.md", "p%41.md", "p%2e%2e.md", "tab\tname.md", "new\nline.md", "sp ace.md", "back\\slash.md", "é.md"]


def test_names_with_hash_question_percent_tab_and_newline_have_no_broken_link(tmp_path):
    """Every such document (its index entry, ``source`` and chunk files) and a markdown link to
    each, written as an author writes it (percent-encoded, or raw inside ``<>``), resolve."""
    links = "\n".join(f"- [{i}]({quote(name)})" for i, name in enumerate(ODD_NAMES)) + "\n- [raw tab](<tab\tname.md>)"
    files = {f"a#b/{name}": f"# Doc {i}\n\nText {i}.\n" for i, name in enumerate(ODD_NAMES)}
    files["a#b/links.md"] = f"# Links\n\n{links}\n"
    content = write_tree(tmp_path / "content", files)
    site = tmp_path / "site"
    build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    report = check_site(site)
    assert report.broken == [] and report.missing_in_source == []
    assert report.checked > 3 * len(ODD_NAMES)


def test_the_linkcheck_command_shows_names_escaped(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    content = write_tree(tmp_path / "content", {"dir\x1b[31m/doc\tname.md": "# Doc\n\nText.\n"})
    site = tmp_path / "site"
    build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    index = site / "dir\x1b[31m" / "index.json"  # a broken href in an index.json whose folder's name holds an escape
    index.write_bytes(index.read_bytes().replace(b"name-0.md", b"name-9.md"))
    result = CliRunner().invoke(app, ["linkcheck", str(site)])
    assert result.exit_code == 1
    broken = [line for line in result.stderr.splitlines() if line.startswith("broken: ")]
    assert broken and all("\x1b" not in line and "\t" not in line for line in broken), result.stderr
    assert any(line.startswith("broken: dir\\x1b[31m/index.json: ") for line in broken), broken



def test_the_linkcheck_command_given_a_url_says_it_reads_a_folder():
    """The reading commands take a folder or a URL; linkcheck reads files on disk, and a URL
    given to it was reported as "http:/host/docs: site directory not found" (the Path argument
    folds the scheme's slashes), naming neither the URL nor the mistake."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    result = CliRunner().invoke(app, ["linkcheck", "https://example.org/docs/"])
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: https://example.org/docs is a URL; this command reads a local site folder", result.stderr

# -- base URLs (issue 34): every form builds, and readers take it from the site ----------------------

@pytest.mark.parametrize("given", ["/", "/repo/", "repo", "https://example.org/docs/"])
def test_every_base_url_form_builds_and_reads_back_without_repeating_it(tmp_path, given):
    from pipeline.siteformat.hrefs import normalize_base_url

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


def test_a_missing_chunk_file_is_a_broken_link_not_an_aborted_check(tmp_path):
    """A chunk file its manifest lists but the site lacks stopped the whole check with
    'error: ...: file not found' (exit 1, no report) instead of being reported where it is linked."""
    _, site = _build(tmp_path)
    (site / "guide/_chunks/setup-0.md").unlink()
    broken = check_site(site).broken
    assert ("guide/_chunks/setup.manifest.json", "_chunks/setup-0.md") in broken
    assert {link.rsplit("/", 1)[-1] for _, link in broken} == {"setup-0.md"}, broken


@pytest.mark.parametrize("given", ["/repo/", "https://example.org/docs/"])
def test_linkcheck_of_a_sub_path_build_walks_the_listing_pages_and_document_resources(tmp_path, given):
    """Index format 2 and the site's own base URL together: a folder listed over two pages and a
    document whose resource is paged are checked under the base URL the site says, with no false
    broken link, and a page or resource that goes missing is found where it is linked."""
    notes = {f"big/note-{i:02d}.md": f"# Note {i}\n\nSee [the long one](../long.md).\n" for i in range(40)}
    long = "# Long\n\nBack [home](big/note-00.md).\n" + "".join(f"\n## Part {i}\n\nPart {i} of the long document.\n" for i in range(150))
    content = write_tree(tmp_path / "content", {**notes, "long.md": long})
    site = tmp_path / "site"
    build(content, site, SiteConfig(base_url=given, cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert (site / "big/_index/page-2.json").is_file() and (site / "_index/long.doc-3.json").is_file()
    report = check_site(site)
    assert report.ok and report.missing_in_source == [], report.broken
    (site / "big/_index/note-35.doc.json").unlink()  # listed on the folder's second page
    (site / "_index/long.doc-3.json").unlink()  # the second page's next
    broken = {(rel, link.removeprefix(given.rstrip("/"))) for rel, link in check_site(site).broken}
    assert ("big/_index/page-2.json", "/big/_index/note-35.doc.json") in broken
    assert ("_index/long.doc-2.json", "/_index/long.doc-3.json") in broken
