"""Obsidian vaults: wikilinks, embeds and tags parsed with exact offsets, resolved as Obsidian
resolves them, rewritten in chunk files so a static host serves them, tags and aliases as keywords
and filters, authored links and backlinks on the document's HAL resource, and a site whose link
check is clean."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import SiteConfig, load_config
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import parse_markdown
from pipeline.parsing.wikilinks import parse_inner, vault_syntax
from pipeline.site.build import build
from pipeline.site.linkcheck import check_site
from pipeline.siteformat.indexnames import PAGE_BYTES
from pipeline.vault.graph import authored_links
from pipeline.vault.mode import ATTACHMENTS_LEFT_OUT, vault_config
from pipeline.vault.names import VaultNames
from tests.conftest import document_resource, write_tree
from tests.vaultgen import make_vault

VAULT = {
    ".obsidian/app.json": "{}\n",
    "attachments/diagram.png": b"\x89PNG\r\n\x1a\nfake",
    "attachments/spec.pdf": b"%PDF-1.4\n",
    "Home.md": (
        "---\naliases: [Start page, Index]\ntags: [hub, Index]\n---\n# Home\n\n"
        "Welcome. See [[Project Alpha]], [[project alpha#Goals|the goals]] and [[Project Alpha#^summary]].\n"
        "People: [[people/Ada Lovelace|Ada]], [[Grace Hopper]]. Missing: [[Nowhere]].\n\n"
        "![[diagram.png]] ![[diagram.png|300]] ![[spec.pdf]] ![[Project Alpha#Goals]] #index\n\n"
        "## Local\n\nJump to [[#Local]] or read [the project](projects/Project%20Alpha.md). `[[not a link]]`\n"
    ),
    "projects/Project Alpha.md": "# Project Alpha\n\n## Goals\n\nShip it. Back to [[Home]]. #project/alpha\n\nA summary. ^summary\n",
    "people/Ada Lovelace.md": "# Ada Lovelace\n\n> Wrote notes on [[Project Alpha]].\n\n```\n[[in a fence]]\n```\n",
    "people/Grace Hopper.md": "---\ntags: person\n---\nGrace, see [[home]].\n",
}


def vault_site(tmp_path: Path, files: dict = VAULT, **config) -> Path:
    content = write_tree(tmp_path / "vault", files)
    site = tmp_path / "site"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build(content, site, SiteConfig(embedder="hashing", cache_dir=tmp_path / "cache", **config), progress=False)
    (tmp_path / "warnings.txt").write_text("\n".join(str(w.message) for w in caught))
    return site


def chunk_text(site: Path, rel: str) -> str:
    return (site / rel).read_text(encoding="utf-8")


# --- parsing ---------------------------------------------------------------------------------


def test_every_wikilink_form_is_found_where_it_is_written_and_none_in_code():
    text = (VAULT["Home.md"] + "\n- item [[A|b]]\n\n| x | y |\n| - | - |\n| [[T#^c]] | [[U\\|d]] [[V]] |\n\n"
            "```\n[[fence]]\n```\n    [[indented]]\n")
    links, tags, destinations = vault_syntax(parse_markdown(text))
    written = [text[w.start : w.end] for w in links]
    assert written == [
        "[[Project Alpha]]", "[[project alpha#Goals|the goals]]", "[[Project Alpha#^summary]]", "[[people/Ada Lovelace|Ada]]",
        "[[Grace Hopper]]", "[[Nowhere]]", "![[diagram.png]]", "![[diagram.png|300]]", "![[spec.pdf]]",
        "![[Project Alpha#Goals]]", "[[#Local]]", "[[A|b]]", "[[T#^c]]", "[[U\\|d]]", "[[V]]",
    ]  # in a table, Obsidian escapes the alias's pipe
    goals = links[1]
    assert (goals.target, goals.heading, goals.block, goals.alias, goals.embed) == ("project alpha", "Goals", "", "the goals", False)
    assert (links[2].block, links[6].embed, links[10].target, links[10].heading) == ("summary", True, "", "Local")
    assert (links[13].target, links[13].alias) == ("U", "d")
    assert tags == ["index"]  # inline tags; the front matter's are read by vault/notes.py
    assert [text[d.start : d.end] for d in destinations] == ["projects/Project%20Alpha.md"]


def test_parse_inner_splits_target_heading_block_and_alias():
    assert parse_inner("Note#Head|Alias") == ("Note", "Head", "", "Alias")
    assert parse_inner("Note#^abc") == ("Note", "", "abc", "")
    assert parse_inner("#Local") == ("", "Local", "", "")


WORD = st.text(alphabet="abcXYZ 12", min_size=1, max_size=8).filter(lambda s: s.strip())
PIECE = st.one_of(
    st.builds(lambda w: ("link", f"[[{w.strip()}]]"), WORD),
    st.builds(lambda w, a: ("link", f"[[{w.strip()}|{a.strip()}]]"), WORD, WORD),
    st.builds(lambda w: ("link", f"![[{w.strip()}#^b1]]"), WORD),
    st.builds(lambda w: ("code", f"`[[{w.strip()}]]`"), WORD),
    st.builds(lambda w: ("text", w.replace("[", "").replace("]", "")), WORD),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(PIECE, min_size=1, max_size=6), min_size=1, max_size=5), st.sampled_from(["", "> ", "- ", "\r\n"]))
def test_wikilink_offsets_are_exact_in_paragraphs_quotes_and_lists(paragraphs, prefix):
    """``text[w.start:w.end]`` is each wikilink outside code, in order, whatever surrounds it."""
    newline = "\r\n" if prefix == "\r\n" else "\n"
    lead = "" if prefix == "\r\n" else prefix
    text = newline.join(lead + " ".join(p for _, p in pieces) + newline for pieces in paragraphs)
    expected = [p for pieces in paragraphs for kind, p in pieces if kind == "link"]
    links, _, _ = vault_syntax(parse_markdown(text))
    assert [text[w.start : w.end] for w in links] == expected


# --- resolution ------------------------------------------------------------------------------


def test_names_resolve_as_obsidian_does():
    files = ("Home.md", "a/Meeting.md", "b/c/Meeting.md", "b/Other.md", "b/Meeting.md", "img/Diagram.PNG", "v1.2 notes.md")
    names = VaultNames(files, frozenset(files), frozenset(f for f in files if f.endswith(".md")))
    assert names.resolve("home", "b/Other.md") == "Home.md"  # case-insensitive, anywhere
    assert names.resolve("Meeting", "b/c/x.md") == "b/c/Meeting.md"  # the linking note's folder first
    assert names.resolve("Meeting", "Home.md") == "a/Meeting.md"  # then the shortest path, then sort order
    assert names.resolve("c/meeting", "Home.md") == "b/c/Meeting.md"  # the end of a path
    assert names.resolve("b/Meeting", "a/x.md") == "b/Meeting.md"  # a path from the root
    assert names.resolve("Meeting.md", "Home.md") == "a/Meeting.md"
    assert names.resolve("diagram.png", "Home.md") == "img/Diagram.PNG"  # an attachment by its whole name
    assert names.resolve("v1.2 notes", "Home.md") == "v1.2 notes.md"  # a dot in a note's name
    assert names.resolve("Nowhere", "Home.md") is None
    assert names.digest() != VaultNames(files[:-1], frozenset(files), frozenset()).digest()


def test_authored_links_give_backlinks_in_path_order_and_ignore_unknown_targets():
    graph = authored_links([("a.md", "A", ["b.md", "gone.md", "a.md"]), ("b.md", "B", []), ("c.md", "C", ["b.md"]),
                            ("plain.md", "P", None)])
    assert graph["a.md"] == {"links": [{"source": "b.md", "title": "B"}], "backlinks": []}
    assert graph["b.md"]["backlinks"] == [{"source": "a.md", "title": "A"}, {"source": "c.md", "title": "C"}]
    assert "plain.md" not in graph


def test_vault_mode_is_found_by_the_obsidian_folder_and_config(tmp_path):
    plain = write_tree(tmp_path / "plain", {"a.md": "# A\n"})
    vault = write_tree(tmp_path / "v", {".obsidian/app.json": "{}", "a.md": "# A\n"})
    assert vault_config(plain, SiteConfig()).vault is False
    decided = vault_config(vault, SiteConfig(exclude=("drafts/",)))
    assert decided.vault is True and decided.exclude == (*ATTACHMENTS_LEFT_OUT, "drafts/")
    assert vault_config(vault, decided) == decided  # deciding twice changes nothing
    assert vault_config(vault, SiteConfig(vault=False)).vault is False
    assert vault_config(plain, SiteConfig(vault=True, vault_attachments=True)).exclude == ()
    (tmp_path / "site.toml").write_text('vault = "sometimes"\n')
    with pytest.raises(PipelineError, match="vault must be"):
        load_config(tmp_path / "site.toml")


# --- a built vault ---------------------------------------------------------------------------


def test_a_vault_builds_with_wikilinks_rewritten_and_links_resolving(tmp_path):
    site = vault_site(tmp_path)
    home = chunk_text(site, "_chunks/Home-0.md")
    assert "See [Project Alpha](../projects/Project%20Alpha.md), [the goals](../projects/Project%20Alpha.md#goals)" in home
    assert "[Project Alpha > ^summary](../projects/Project%20Alpha.md#%5Esummary)" in home
    assert "[Ada](../people/Ada%20Lovelace.md), [Grace Hopper](../people/Grace%20Hopper.md). Missing: Nowhere." in home
    # attachments are left out by default: their embeds are their names, not links that 404
    assert "diagram.png diagram.png spec.pdf [Project Alpha > Goals](../projects/Project%20Alpha.md#goals)" in home
    local = chunk_text(site, "_chunks/Home-1.md")
    assert "[Local](../Home.md#local)" in local and "`[[not a link]]`" in local
    assert "[Home](../../Home.md)" in chunk_text(site, "projects/_chunks/Project Alpha-0.md")
    assert "[[in a fence]]" in chunk_text(site, "people/_chunks/Ada Lovelace-0.md")
    # the manifest still gives the source span exactly: the rewrite is the chunk file's only
    manifest = json.loads((site / "_chunks" / "Home.manifest.json").read_text())
    source = (tmp_path / "vault" / "Home.md").read_text()
    assert "[[Project Alpha]]" in source[manifest["chunks"][0]["start_offset"] : manifest["chunks"][0]["end_offset"]]
    assert not (site / ".obsidian").exists() and not (site / "attachments").exists()
    assert "Home.md: 1 wikilink(s) name no file of the vault, kept as text: [[Nowhere]]" in (tmp_path / "warnings.txt").read_text()
    report = check_site(site)
    assert report.ok and not report.missing_in_source and report.checked > 20, report.broken


def test_authored_links_and_backlinks_are_on_the_document_resource(tmp_path):
    site = vault_site(tmp_path)
    home = document_resource(site, "", "Home")
    assert [link["href"] for link in home["_links"]["links"]] == [  # the linked notes' resources
        "/projects/_index/Project%20Alpha.doc.json", "/people/_index/Ada%20Lovelace.doc.json",
        "/people/_index/Grace%20Hopper.doc.json"]
    assert home["_links"]["backlinks"] == [{"href": "/people/_index/Grace%20Hopper.doc.json", "title": "Grace Hopper"},
                                           {"href": "/projects/_index/Project%20Alpha.doc.json", "title": "Project Alpha"}]
    assert (home["links"], home["backlinks"]) == (3, 2)  # the counts, on the first page
    project = document_resource(site, "projects", "Project Alpha")
    assert [b["title"] for b in project["_links"]["backlinks"]] == ["Home", "Ada Lovelace"]
    assert project["_links"]["alternate"]["href"] == "/projects/Project%20Alpha.md"  # where a link's target is read whole
    # a link leads to the resource whose own alternate is the source file the author linked
    target = json.loads((site / unquote(home["_links"]["links"][0]["href"].lstrip("/"))).read_text())
    assert target["source"] == "Project Alpha.md" and target["_links"]["self"] == {"href": home["_links"]["links"][0]["href"]}
    assert "related" in project["items"][0]["_links"] or len(project["items"]) == 1  # computed ones beside
    # the topic's listing names the note, its authored links are on the resource only
    listing = json.loads((site / "projects" / "index.json").read_text())
    entry = next(d for d in listing["_embedded"]["documents"] if d["key"] == "Project Alpha")
    assert set(entry["_links"]) == {"self"} and "backlinks" not in entry


def test_a_note_thousands_link_to_lists_every_backlink_over_pages_within_the_budget(tmp_path):
    """A hub note every other note links to: its backlinks continue over its resource's pages
    (``LINK_BYTES`` a page), every file within the budget, none lost, links and backlinks agreeing."""
    notes = 400
    files = {".obsidian/app.json": "{}\n", "Hub.md": "# Hub\n\nThe centre.\n"}
    files |= {f"notes/Note with a fairly long name {i:04d}.md": f"# Note {i}\n\nSee [[Hub]].\n" for i in range(notes)}
    site = vault_site(tmp_path, files)
    hub = document_resource(site, "", "Hub")
    first = json.loads((site / "_index" / "Hub.doc.json").read_text())
    assert first["pages"] > 1 and first["backlinks"] == notes and len(first["_links"]["backlinks"]) < notes
    assert [b["title"] for b in hub["_links"]["backlinks"]] == [f"Note {i}" for i in range(notes)]  # every one, in path order
    assert all(p.stat().st_size <= PAGE_BYTES for p in (site / "_index").glob("Hub.doc*.json"))
    assert check_site(site).ok


def test_tags_and_aliases_are_keywords_and_filters(tmp_path):
    site = vault_site(tmp_path)
    keywords = {k["name"] for k in document_resource(site, "", "Home")["items"][0]["keywords"]}
    assert {"Start page", "Index", "hub"} <= keywords and "index" not in keywords  # one of two spellings
    from pipeline.client import open_site

    agents = open_site(str(site))
    hits = agents.search("ship", k=5, tags=["project/alpha"])
    assert [h.source for h in hits] == ["projects/Project Alpha.md"]
    assert not agents.search("ship", k=5, tags=["hub"])
    assert {h.source for h in agents.search("grace", k=5, tags=["person"])} == {"people/Grace Hopper.md"}
    assert {h.source for h in agents.search("welcome", k=5, keyword="start page")} == {"Home.md"}


def test_a_search_for_an_alias_finds_the_note(tmp_path):
    """An alias is another name of the note (Obsidian's meaning): the search index counts it with
    the note's title, so the lexical ranking, and the page's methods built on it, find it."""
    from pipeline.client import open_site

    agents = open_site(str(vault_site(tmp_path)))
    for method in ("lexical", "hybrid", "auto"):
        hits = agents.search("start page", k=3, method=method)
        assert hits and hits[0].source == "Home.md", (method, [(h.source, h.score) for h in hits])
        assert hits[0].score > 0, method


def test_published_attachments_are_linked_and_resolve(tmp_path):
    site = vault_site(tmp_path, vault_attachments=True)
    home = chunk_text(site, "_chunks/Home-0.md")
    assert ("![diagram.png](../attachments/diagram.png) ![diagram.png](../attachments/diagram.png) "
            "[spec.pdf](../attachments/spec.pdf)") in home
    assert (site / "attachments" / "diagram.png").is_file()
    report = check_site(site)
    assert report.ok and report.checked > 20


@pytest.mark.filterwarnings("ignore:.*wikilink")  # the links to the removed note: reported, as they should be
def test_an_edit_updates_the_backlinks_of_the_note_it_links_to(tmp_path):
    content = write_tree(tmp_path / "vault", VAULT)
    site = tmp_path / "site"
    config = SiteConfig(embedder="hashing", cache_dir=tmp_path / "cache")
    build(content, site, config, progress=False)

    def index_files() -> dict[str, bytes]:
        return {p.relative_to(site).as_posix(): p.read_bytes() for p in [*site.rglob("index.json"), *site.rglob("_index/*.json")]}

    before = index_files()
    build(content, site, config, progress=False)
    assert index_files() == before  # a no-op rebuild: the same bytes
    (content / "projects" / "Project Alpha.md").write_text(VAULT["projects/Project Alpha.md"] + "\nThanks [[Grace Hopper]].\n")
    build(content, site, config, progress=False)
    after = index_files()
    # the change budget: the edited note's resource and its target's (new backlink), no listing page
    assert sorted(rel for rel in after if after[rel] != before.get(rel)) == [
        "people/_index/Grace Hopper.doc.json", "projects/_index/Project Alpha.doc.json"]
    grace = document_resource(site, "people", "Grace Hopper")["_links"]
    assert [b["title"] for b in grace["backlinks"]] == ["Home", "Project Alpha"]
    (content / "projects" / "Project Alpha.md").unlink()  # a removed note: its links go, its name stops resolving
    build(content, site, config, progress=False)
    assert [b["title"] for b in document_resource(site, "people", "Grace Hopper")["_links"]["backlinks"]] == ["Home"]
    assert "Project Alpha" not in json.dumps(document_resource(site, "", "Home")["_links"]["links"])
    assert "See Project Alpha, the goals" in chunk_text(site, "_chunks/Home-0.md")
    assert check_site(site).ok


def test_index_files_with_links_validate_against_the_schemas(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    site = vault_site(tmp_path)
    checked = set()
    for path in [*site.rglob("index.json"), *site.rglob("_index/*.json")]:
        doc = json.loads(path.read_text())
        schema = json.loads((site / doc["_links"]["describedby"]["href"].lstrip("/")).read_text())
        jsonschema.validate(doc, schema)
        checked.add(schema["title"])
    assert len(checked) >= 3  # the root, topics and document resources'
    assert "backlinks" in json.loads((site / "people" / "_index" / "Grace Hopper.doc.json").read_text())["_links"]


def test_a_generated_vault_of_every_form_has_no_broken_link(tmp_path):
    counts = make_vault(tmp_path / "vault", notes=60)
    site = tmp_path / "site"
    build(tmp_path / "vault", site, SiteConfig(embedder="hashing", cache_dir=tmp_path / "cache"), progress=False)
    report = check_site(site)
    assert report.ok and not report.missing_in_source, report.broken[:5]
    assert report.checked > counts["wikilinks"]
    # links and backlinks agree: b lists a as a backlink exactly when a lists b as a link
    forward, backward = set(), set()
    for first in site.rglob("_index/*.doc.json"):
        folder = first.parent.parent.relative_to(site).as_posix()
        doc = document_resource(site, "" if folder == "." else folder, first.name[: -len(".doc.json")])
        me = doc["_links"]["self"]["href"]
        forward |= {(me, link["href"]) for link in doc["_links"]["links"]}
        backward |= {(link["href"], me) for link in doc["_links"]["backlinks"]}
    assert forward and forward == backward
