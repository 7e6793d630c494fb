"""The llms files' pages (site/llmspages.py, issue 30): every llms file fits a reader's budget,
following links from /llms.txt reaches every document's text once, and a one-document edit
rewrites the page holding it (and the list lines that changed), not its topic's text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site import llmstext
from pipeline.site.build import build
from pipeline.site.llmspages import Block, page_file, paginate

blocks = st.lists(
    st.builds(Block, st.text(max_size=30), st.text(alphabet=st.characters(codec="utf-8"), max_size=400),
              st.text(max_size=30)),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(blocks, st.integers(1, 8), st.integers(40, 300))
def test_pages_hold_every_block_once_within_room_and_in_fixed_groups(items, group, room):
    pages = paginate(items, group, room)
    whole = "".join(b.head + b.body for b in items)
    # the pieces after a block's first open with ``again``: with none they join back to the blocks
    plain = [Block(b.head, b.body, "") for b in items]
    assert "".join(p.body for p in paginate(plain, group, room)) == whole
    for page in pages:
        # a head longer than the room is the one case a page may exceed it, and then alone
        longest_head = max([len(b.head.encode()) for b in items] + [len(b.again.encode()) for b in items])
        assert len(page.body.encode()) <= max(room, longest_head + 4)
        assert page.first // group + 1 == page.group  # a page never leaves its group
    assert [(p.group, p.part) for p in pages] == sorted({(p.group, p.part) for p in pages})
    assert {p.group for p in pages} == {i // group + 1 for i in range(len(items))}


def test_a_block_bigger_than_a_page_is_cut_at_lines_and_a_line_between_characters():
    block = Block("H\n", "".join(f"line {i}\n" for i in range(50)) + "é" * 300 + "\n", "H again\n")
    pages = paginate([block, Block("next\n")], 10, 100)
    assert len(pages) > 3 and all(len(p.body.encode()) <= 100 for p in pages)
    assert pages[0].body.startswith("H\nline 0\n") and all(p.body.startswith("H again\n") for p in pages[1:-1])
    assert "".join(p.body.removeprefix("H again\n") for p in pages[1:]).endswith("é\nnext\n")
    assert [p.continued for p in pages] == [False] + [True] * (len(pages) - 1)
    assert page_file("full", 1) == "llms-full.txt" and page_file("full", 3, 2) == "_llms/full-3-2.txt"
    assert page_file("topics", 1) == "llms.txt" and page_file("documents", 1) == "_llms/documents-1.txt"


BUDGET = 4_000
FLAT = 300
BIG = "# Big\n\n" + "".join(f"Line {i} of a big document, ünïcödé.\n" for i in range(300)) + "x" * 6_000 + "\n"


def note(i: int, words: str = "Some text") -> str:
    return f"---\ntitle: Note {i}\n---\n# Note {i}\n\n{words} about note {i}.\n"


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of 4 kB, 8 documents a text group, 32 a list page, 2 topics a root page: a few
    hundred documents take the shapes tens of thousands would."""
    monkeypatch.setattr(llmstext, "PAGE_BYTES", BUDGET)
    monkeypatch.setattr(llmstext, "TEXT_GROUP", 8)
    monkeypatch.setattr(llmstext, "LISTING_GROUP", 32)
    monkeypatch.setattr(llmstext, "TOPICS_GROUP", 2)


def make(tmp_path: Path, name: str = "site"):
    files = {f"notes/n{i:03d}.md": note(i) for i in range(FLAT)}
    files |= {f"t{t}/a.md": f"# A{t}\n\nHello {t}.\n" for t in range(3)}
    files["big.md"] = BIG
    content = write_tree(tmp_path / "content", files) if not (tmp_path / "content").exists() else tmp_path / "content"
    config = SiteConfig(title="Flat", cache_dir=tmp_path / "cache", retire_removed_files=False)
    build(content, tmp_path / name, config, embedder=HashingEmbedder(), progress=False)
    return content, tmp_path / name, config


def llms_files(site: Path) -> dict[str, bytes]:
    return {rel: p.read_bytes() for p in site.rglob("*")
            if p.is_file() and (rel := p.relative_to(site).as_posix()).split("/")[-1] in ("llms.txt", "llms-full.txt")
            or p.is_file() and "_llms" in p.relative_to(site).parts}


LINK = re.compile(r"\]\((/[^)\s]+)\)")
SECTION = re.compile(r"\n## (.+)\n\nSource: (\S+)\n\n")
NEXT = re.compile(r"\nNext: \[[^\]]+\]\((/[^)]+)\)\n\Z")


def read_by_links(site: Path) -> tuple[set[str], dict[str, str], dict[str, int]]:
    """Follow every link to an llms file from /llms.txt: (the files reached, each document's text
    joined from its sections in reading order, how many sections open each document)."""
    reached, queue = set(), ["llms.txt"]
    texts: dict[str, str] = {}
    opened: dict[str, int] = {}
    while queue:
        rel = queue.pop(0)
        if rel in reached:
            continue
        reached.add(rel)
        text = (site / rel).read_text(encoding="utf-8")
        queue += [u[1:] for u in LINK.findall(text) if u.endswith((".txt",)) and ("llms" in u)]
        tail = NEXT.search(text)  # the Next line ends the page, and only a page with more after it
        if tail:
            text = text[:tail.start()]
        if "full" not in rel:
            continue
        parts = SECTION.split(text)
        for title, source, body in zip(parts[1::3], parts[2::3], parts[3::3]):
            doc = source[1:]
            if not title.endswith(" (continued)"):
                opened[doc] = opened.get(doc, 0) + 1
            texts[doc] = texts.get(doc, "") + body
    return reached, texts, opened


def expected_text(content: Path, rel: str) -> str:
    text = (content / rel).read_text(encoding="utf-8")
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    return text.strip("\n") + "\n"


def test_every_llms_file_fits_and_the_links_from_llms_txt_reach_every_text_once(tmp_path, small_pages):
    content, site, _ = make(tmp_path)
    files = llms_files(site)
    assert max(len(data) for data in files.values()) <= BUDGET
    assert len([rel for rel in files if rel.startswith("notes/_llms/full-")]) >= FLAT // 8 - 1
    root = files["llms.txt"].decode()
    assert root.startswith("# Flat\n\n> 304 documents in 5 topics") and "Note 7" not in root  # topics, not documents
    assert "- [Notes: documents](/notes/_llms/documents-1.txt): 300 documents listed in 10 files" in root
    reached, texts, opened = read_by_links(site)
    assert reached == set(files)  # every page is linked, and no link leads elsewhere than a page
    documents = sorted(p.relative_to(content).as_posix() for p in content.rglob("*.md"))
    assert sorted(opened) == documents and set(opened.values()) == {1}
    for rel in documents:
        assert texts[rel] == expected_text(content, rel), rel
    # the big document runs over several pages of the root topic's text, cut at lines
    assert len([rel for rel in files if rel.startswith("_llms/full-1-")]) >= 2
    # each text page of notes/ holds the documents of one group of 8: the text of n100 on page 13
    page13 = files["notes/_llms/full-13.txt"].decode()
    assert [s for s in SECTION.findall(page13)] == [(f"Note {i}", f"/notes/n{i:03d}.md") for i in range(96, 104)]


def test_an_edit_rewrites_the_page_holding_the_document_and_a_rebuild_the_same_bytes(tmp_path, small_pages):
    content, site, config = make(tmp_path)
    before = llms_files(site)
    mtimes = {rel: (site / rel).stat().st_mtime_ns for rel in before}
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert llms_files(site) == before and {rel: (site / rel).stat().st_mtime_ns for rel in before} == mtimes

    (content / "notes/n100.md").write_text(note(100, "Other words"), encoding="utf-8")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    after = llms_files(site)
    assert {rel for rel in after if after[rel] != before.get(rel)} == {"notes/_llms/full-13.txt"}
    assert set(after) == set(before)

    # a section more: one chunk more, so the document's line in its list page changes too
    (content / "notes/n100.md").write_text(note(100) + "\n## More\n\n" + "Another part. " * 80 + "\n", encoding="utf-8")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    again = llms_files(site)
    changed = {rel for rel in again if again[rel] != after.get(rel)}
    assert "notes/_llms/full-13.txt" in changed
    assert changed <= {"notes/_llms/full-13.txt", "notes/_llms/full-13-2.txt", "notes/_llms/documents-4.txt"}
    assert re.search(r"Note 100\]\(/notes/n100\.md\): [2-9] chunks\n", again["notes/_llms/documents-4.txt"].decode())

    # a fresh build of the same content writes the same bytes as the incremental one
    _, fresh, _ = make(tmp_path, "fresh")
    assert llms_files(fresh) == again


def test_a_site_that_shrinks_loses_the_pages_it_no_longer_needs(tmp_path, small_pages):
    content, site, config = make(tmp_path)
    for i in range(8, FLAT):
        (content / f"notes/n{i:03d}.md").unlink()
    (content / "big.md").unlink()
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    files = llms_files(site)
    # 8 notes, 3 small topics: every document listed in llms.txt, one text file a topic
    assert not [rel for rel in files if "_llms" in rel] and not (site / "notes/_llms").exists()
    assert "- [Note 7](/notes/n007.md): 1 chunk" in files["llms.txt"].decode()
    assert "- [Notes: full text](/notes/llms-full.txt): 8 documents in one file" in files["llms.txt"].decode()
