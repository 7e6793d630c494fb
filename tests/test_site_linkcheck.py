"""Links in a built site: chunk files relocate relative links (parsing/links.py) and the link
check (site/linkcheck.py) finds every broken one."""

from __future__ import annotations

from urllib.parse import quote

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
