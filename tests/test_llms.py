"""llms.txt (llmstxt.org) and sitemap.xml at the site root, an llms-full.txt per topic: structure,
links that resolve under base_url, every document listed once, deterministic across rebuilds."""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from xml.sax import saxutils

from hypothesis import given
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site import llms
from pipeline.site.build import build
from pipeline.site.llmstext import Doc, Topic

FILES = {
    "guide/setup.md": "---\ntitle: Setting [it] up\npromotion_level: important\n---\n# Setup\n\nInstall the tool.\n\n## Next\n\nRun it.\n",
    "guide/chunking/strategies.md": "# Strategies\n\nHow chunks are cut.\n\n## Markdown\n\nBy headings.\n",
    "faq.md": "# FAQ\n\nQuestions and answers.\n",
}
BASE = "/repo/"
ABSOLUTE = "https://example.org/repo/"
LINK = re.compile(r"^- \[(?P<name>[^\]]*(?:\\\][^\]]*)*)\]\((?P<url>[^)]+)\): (?P<note>.+)$")


def make(tmp_path, base_url=BASE):
    content = write_tree(tmp_path / "content", FILES)
    config = SiteConfig(title="Demo Docs", base_url=base_url, cache_dir=tmp_path / "cache")
    build(content, tmp_path / "site", config, embedder=HashingEmbedder(), progress=False)
    return content, tmp_path / "site", config


def read(site, name):
    return (site / name).read_text(encoding="utf-8")


def test_llms_txt_follows_the_convention_and_links_every_document_once(tmp_path):
    _, site, _ = make(tmp_path)
    lines = read(site, "llms.txt").splitlines()
    assert lines[0] == "# Demo Docs" and lines[1] == "" and lines[2].startswith("> 3 documents in 3 topics")
    sections = [line for line in lines if line.startswith("## ")]
    assert sections == ["## Demo Docs", "## Guide", "## Chunking (guide/chunking)"]
    links = [LINK.match(line) for line in lines if line.startswith("- ")]
    assert all(links)
    urls = [m["url"] for m in links]
    full = [BASE + "llms-full.txt", BASE + "guide/llms-full.txt", BASE + "guide/chunking/llms-full.txt"]
    assert sorted(urls) == sorted([BASE + rel for rel in FILES] + full)
    # each section starts with its topic's full text
    assert [m["url"] for m in links if m["name"].endswith(": full text")] == full
    assert links[2]["name"] == "Guide: full text" and links[2]["note"] == "1 document in one file"
    for m in links:
        assert (site / m["url"].removeprefix(BASE)).is_file()
    setup = next(m for m in links if m["url"].endswith("setup.md"))
    assert setup["name"] == "Setting \\[it\\] up" and setup["note"] == "2 chunks, promotion level important"
    assert not [line for line in lines if line.startswith("#") and not line.startswith(("# ", "## "))]


def test_each_topics_llms_full_txt_holds_its_documents_text_without_front_matter(tmp_path):
    _, site, _ = make(tmp_path)
    texts = {rel: read(site, rel) for rel in ("llms-full.txt", "guide/llms-full.txt", "guide/chunking/llms-full.txt")}
    guide = texts["guide/llms-full.txt"]
    assert guide.startswith("# Demo Docs: Guide\n\n> The text of the 1 document of the topic `guide` ([index.json](/repo/guide/index.json))")
    assert "[llms.txt](/repo/llms.txt)" in guide
    for rel in FILES:  # each document in its own topic's file, and only there
        holders = [name for name, text in texts.items() if f"Source: {BASE}{rel}\n" in text]
        assert holders == [rel.rsplit("/", 1)[0] + "/llms-full.txt" if "/" in rel else "llms-full.txt"]
    assert "Install the tool.\n\n## Next\n\nRun it.\n" in guide and "By headings." in texts["guide/chunking/llms-full.txt"]
    assert "promotion_level" not in guide and "\n---\n" not in guide


def test_an_edit_rewrites_its_topics_full_text_only_and_a_folder_without_documents_loses_it(tmp_path):
    content, site, config = make(tmp_path)
    names = ("llms-full.txt", "guide/llms-full.txt", "guide/chunking/llms-full.txt")
    mtimes = {name: (site / name).stat().st_mtime_ns for name in names}
    (content / "guide/chunking/strategies.md").write_text("# Strategies\n\nHow chunks are cut, again.\n")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert [n for n in names if (site / n).stat().st_mtime_ns != mtimes[n]] == ["guide/chunking/llms-full.txt"]
    (content / "guide/setup.md").unlink()  # guide keeps a subfolder, no document of its own
    config = SiteConfig(title="Demo Docs", base_url=BASE, cache_dir=tmp_path / "cache", retire_removed_files=False)
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert not (site / "guide/llms-full.txt").exists() and "guide/llms-full.txt" not in read(site, "llms.txt")


def test_sitemap_lists_the_pages_indexes_and_documents_under_base_url(tmp_path):
    _, site, _ = make(tmp_path, ABSOLUTE)
    root = ET.fromstring(read(site, "sitemap.xml"))
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [e.text for e in root.findall("s:url/s:loc", ns)]
    assert locs[0] == ABSOLUTE and len(locs) == len(set(locs))
    for loc in locs[1:]:
        assert loc.startswith(ABSOLUTE) and (site / loc.removeprefix(ABSOLUTE)).is_file(), loc
    assert {f"{ABSOLUTE}{rel}" for rel in FILES} <= set(locs) and f"{ABSOLUTE}guide/chunking/index.json" in locs


NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def _locs(text: str, path: str) -> list[str]:
    return [e.text for e in ET.fromstring(text).findall(path, NS)]


def test_a_sitemap_past_the_protocols_limits_is_an_index_of_files_within_them():
    topics = [Topic(id="", title="T", documents=tuple(Doc(path=f"d{i}.md", title=f"D{i}", chunks=1, promotion_level="standard")
                                                 for i in range(25)))]
    whole = llms.render_sitemaps(ABSOLUTE, topics, [""])
    every = _locs(whole["sitemap.xml"], "s:url/s:loc")
    assert list(whole) == ["sitemap.xml"] and len(every) == 29  # search page, llms.txt, llms-full.txt, index.json
    for max_urls, max_bytes in ((10, llms.SITEMAP_BYTES), (llms.SITEMAP_URLS, 800), (7, 600)):
        files = llms.render_sitemaps(ABSOLUTE, topics, [""], max_urls=max_urls, max_bytes=max_bytes)
        index = _locs(files["sitemap.xml"], "s:sitemap/s:loc")
        assert index == [f"{ABSOLUTE}sitemap-{n}.xml" for n in range(1, len(files))] and len(index) >= 2
        pages = [files[f"sitemap-{n}.xml"] for n in range(1, len(files))]
        assert all(len(_locs(p, "s:url/s:loc")) <= max_urls and len(p.encode()) <= max_bytes for p in pages)
        assert [loc for p in pages for loc in _locs(p, "s:url/s:loc")] == every  # the same URLs, in order


@given(st.text())
def test_sitemap_text_is_escaped_as_xml_sax_escapes_it(text):
    assert llms._xml_text(text) == saxutils.escape(text)


def test_a_rebuild_writes_and_removes_a_sitemap_index_as_the_url_count_needs(tmp_path, monkeypatch):
    content, site, config = make(tmp_path, ABSOLUTE)
    every = _locs(read(site, "sitemap.xml"), "s:url/s:loc")
    monkeypatch.setattr(llms, "render_sitemaps", functools.partial(llms.render_sitemaps, max_urls=4))
    (content / "faq.md").write_text("# FAQ\n\nQuestions and answers, edited.\n")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    index = _locs(read(site, "sitemap.xml"), "s:sitemap/s:loc")
    assert len(index) == -(-len(every) // 4)
    assert [loc for u in index for loc in _locs(read(site, u.removeprefix(ABSOLUTE)), "s:url/s:loc")] == every
    monkeypatch.undo()
    (content / "faq.md").write_text("# FAQ\n\nQuestions and answers.\n")
    for _ in range(2):  # the first rebuild may keep the retired pages one build longer (site/retire.py)
        build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert _locs(read(site, "sitemap.xml"), "s:url/s:loc") == every and not list(site.glob("sitemap-*.xml"))


def test_a_site_built_for_a_path_has_no_sitemap_whose_urls_the_protocol_forbids(tmp_path):
    """sitemaps.org: every <loc> is an absolute URL. Built for ``/repo/``, a site has no host to
    give, so no sitemap (llms.txt links stay root-relative); one an earlier build wrote goes."""
    content, site, config = make(tmp_path, ABSOLUTE)
    assert (site / "sitemap.xml").is_file()
    for _ in range(2):  # the first build retires it (served one build longer: site/retire.py)
        build(content, site, SiteConfig(title="Demo Docs", base_url=BASE, cache_dir=config.cache_dir), embedder=HashingEmbedder(), progress=False)
    assert not (site / "sitemap.xml").exists()
    assert f"]({BASE}faq.md)" in read(site, "llms.txt")


def test_rebuilds_keep_the_same_bytes_and_follow_the_content(tmp_path):
    content, site, config = make(tmp_path, ABSOLUTE)
    before = {name: (site / name).read_bytes() for name in ("llms.txt", "llms-full.txt", "guide/llms-full.txt", "sitemap.xml")}
    mtimes = {name: (site / name).stat().st_mtime_ns for name in before}
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert {name: (site / name).read_bytes() for name in before} == before
    assert {name: (site / name).stat().st_mtime_ns for name in before} == mtimes  # untouched, not rewritten
    (content / "faq.md").unlink()
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert "faq.md" not in read(site, "llms.txt") and "faq.md" not in read(site, "sitemap.xml")


def test_a_rebuild_repairs_a_changed_file_and_follows_an_edited_text(tmp_path):
    # an unchanged rebuild skips the three files only while each still hashes to what it wrote
    content, site, config = make(tmp_path)
    full = read(site, "llms-full.txt")
    (site / "llms-full.txt").write_text("tampered\n", encoding="utf-8")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert read(site, "llms-full.txt") == full
    (content / "faq.md").write_text("# FAQ\n\nQuestions, answers and more.\n", encoding="utf-8")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert "answers and more" in read(site, "llms-full.txt")
