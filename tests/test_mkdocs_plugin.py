"""The MkDocs plugin (``plugins: [pipeline]``): ``mkdocs build`` writes the agent site into
``site_dir/agents/``, and every chunk's ``page_url`` (document resource items, search hits) names an HTML
page MkDocs wrote, with its anchor present there; ``mkdocs serve`` rebuilds it on save.

MkDocs runs as a user runs it (a subprocess, the plugin found through its entry point). A venv
installed before the entry point existed lacks it: ``entry_point_path`` then declares it, from
pyproject.toml, in a temporary distribution on the subprocess's path.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.conftest import ROOT, document_resources, write_tree
from tests.test_realdocs import REALDOCS, needs_realdocs

mkdocs = pytest.importorskip("mkdocs", reason="the mkdocs extra is not installed (pip install '.[mkdocs]')")

from pipeline.mkdocs_plugin.anchors import Heading, match_anchors, page_headings  # noqa: E402
from pipeline.parsing.markdown import parse_markdown  # noqa: E402
from pipeline.sources.pages import PageLocation  # noqa: E402

DOCS = {
    "index.md": "# Home\n\nWelcome to the handbook. It covers setup and usage.\n",
    "guide/setup.md": (
        "# Setting up\n\nInstall the tool first.\n\n"
        "## Install with pip { #pip-install }\n\nRun pip install handbook in a fresh virtual environment.\n\n"
        "## Example\n\nThe first example shows the configuration file.\n\n"
        "## Configure `settings.toml`\n\nEdit the settings file and set the cache folder.\n\n"
        "## Example\n\nThe second example repeats the heading, so MkDocs numbers its anchor.\n"
    ),
    "guide/usage.md": "# Usage\n\nRun the tool on a folder.\n\n### Deep heading\n\nLevels may skip.\n",
    "drafts/secret.md": "# Secret\n\nNot published by MkDocs, so not by the plugin.\n",
}


@pytest.fixture(scope="module")
def entry_point_path(tmp_path_factory) -> str:
    """A PYTHONPATH under which ``mkdocs`` finds the ``pipeline`` plugin and this checkout's code."""
    paths = [str(ROOT)]
    found = importlib.metadata.entry_points(group="mkdocs.plugins", name="pipeline")
    if not found:
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["mkdocs.plugins"]
        dist = tmp_path_factory.mktemp("entry-point") / "pipeline_mkdocs_entry-0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pipeline-mkdocs-entry\nVersion: 0\n")
        (dist / "entry_points.txt").write_text("[mkdocs.plugins]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
        paths.append(str(dist.parent))
    return os.pathsep.join(paths)


def mkdocs_run(args: list[str], config: Path, path: str, **kwargs):
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-m", "mkdocs", *args, "-f", str(config)], env=env, capture_output=True,
                          text=True, timeout=600, **kwargs)


def write_config(folder: Path, docs: Path, max_tokens: int = 24, **extra) -> Path:
    lines = ["site_name: Handbook", f"docs_dir: {docs}", f"site_dir: {folder / 'site'}"]
    lines += [f"{k}: {json.dumps(v)}" for k, v in extra.items()]
    # a pipeline site.toml (the plugin's ``config``): small chunks (the small tree: one section each)
    (folder / "site.toml").write_text(f"[chunking]\nmax_tokens = {max_tokens}\n")
    lines += ["plugins:", "  - pipeline:", "      embedder: hashing", f"      cache_dir: {folder / 'cache'}",
              f"      config: {folder / 'site.toml'}"]
    config = folder / "mkdocs.yml"
    config.write_text("\n".join(lines) + "\n")
    return config


def page_file(site: Path, url: str, base: str = "/") -> Path:
    """The HTML file MkDocs wrote for ``url`` (``guide/setup/`` or ``guide/setup.html``)."""
    path = unquote(urlsplit(url).path)
    assert path.startswith(base), url
    rel = path[len(base):]
    return site / rel / "index.html" if rel == "" or rel.endswith("/") else site / rel


def anchors_of(html_file: Path) -> dict[str, str]:
    return {h.anchor: h.text for h in page_headings(html_file.read_text(encoding="utf-8"))}


def agent_items(agents: Path) -> list[dict]:
    """Every chunk item of every document resource of the agent site (index format 2)."""
    out = []
    for index in sorted(agents.rglob("index.json")):
        folder = index.parent.relative_to(agents).as_posix()
        if any(part.startswith("_") for part in index.relative_to(agents).parts[:-1]):
            continue
        for name, resource in document_resources(agents, "" if folder == "." else folder).items():
            out += [dict(item, document=f"{folder}/{name}") for item in resource["items"]]
    return out


def check_page_urls(site: Path, urls: list[str], base: str = "/") -> int:
    """Every URL names a page MkDocs wrote and, with a fragment, an id on it; returns how many
    carried an anchor."""
    anchored = 0
    for url in urls:
        html_file = page_file(site, url, base)
        assert html_file.is_file(), f"{url}: no page {html_file}"
        fragment = urlsplit(url).fragment
        if fragment:
            anchored += 1
            assert unquote(fragment) in anchors_of(html_file), f"{url}: no id {fragment!r} on {html_file}"
    return anchored


@pytest.mark.parametrize("directory_urls", [True, False])
def test_mkdocs_build_writes_the_agent_site_with_page_urls_and_anchors(tmp_path, entry_point_path, directory_urls):
    docs = write_tree(tmp_path / "docs", DOCS)
    config = write_config(tmp_path, docs, use_directory_urls=directory_urls, markdown_extensions=["attr_list"],
                          exclude_docs="drafts/")
    result = mkdocs_run(["build", "--strict"], config, entry_point_path)
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr
    site = tmp_path / "site"
    agents = site / "agents"
    for rel in ("index.json", "llms.txt", "_search/meta.json", "guide/_chunks/setup-0.md", "guide/index.json"):
        assert (agents / rel).is_file(), rel
    assert not (agents / "drafts").exists() and not (agents / ".pipeline-state.json").exists()
    root = json.loads((agents / "index.json").read_text())
    assert root["_links"]["self"]["href"] == "/agents/index.json"

    items = agent_items(agents)
    assert {i["document"] for i in items} == {"./index", "guide/setup", "guide/usage"}
    assert check_page_urls(site, [i["page_url"] for i in items]) == len(items)  # every chunk under a heading
    setup = {i["header_path"].rsplit(" > ", 1)[-1]: i["page_url"] for i in items if i["document"] == "guide/setup"}
    page = "/guide/setup/" if directory_urls else "/guide/setup.html"
    assert setup["## Install with pip"] == f"{page}#pip-install"  # the attribute list's id
    assert setup["## Configure `settings.toml`"] == f"{page}#configure-settingstoml"  # MkDocs' slugify
    examples = list(dict.fromkeys(i["page_url"] for i in items if i["header_path"].endswith("## Example")))
    assert examples == [f"{page}#example", f"{page}#example_1"]  # a repeated heading: MkDocs' numbered id

    # search hits carry the same URLs (the Python client through _search/)
    from pipeline.client import open_site

    hits = open_site(str(agents)).search("second example repeats the heading", k=5, method="lexical")
    assert hits and hits[0].chunk.page_url == f"{page}#example_1"
    assert check_page_urls(site, [h.chunk.page_url for h in hits]) == len(hits)
    assert hits[0].to_dict()["page_url"] == hits[0].chunk.page_url  # `pipeline search --json`
    # and the HAL walk reads them from the document's resource (index format 2)
    walked = open_site(str(agents)).document("guide", "setup")
    assert [c.page_url for c in walked.items] == [i["page_url"] for i in sorted(
        (i for i in items if i["document"] == "guide/setup"), key=lambda i: i["index"])]
    from pipeline.agents.tools import SiteTools

    found = SiteTools(open_site(str(agents))).describe(hits[0].chunk)  # an MCP hit
    assert found["page_url"] == hits[0].chunk.page_url


def test_a_rebuild_reuses_the_kept_build_and_the_embedding_cache(tmp_path, entry_point_path):
    docs = write_tree(tmp_path / "docs", DOCS)
    config = write_config(tmp_path, docs, exclude_docs="drafts/")
    assert mkdocs_run(["build"], config, entry_point_path).returncode == 0
    second = mkdocs_run(["build"], config, entry_point_path)
    assert second.returncode == 0, second.stderr
    assert "(0 embedded," in second.stderr  # every vector from the cache
    assert (tmp_path / "site" / "agents" / "index.json").is_file()  # copied again after MkDocs emptied site_dir


def test_the_material_theme_with_permalinks_gives_the_same_anchors(tmp_path, entry_point_path):
    pytest.importorskip("material", reason="mkdocs-material is not installed (the mkdocs extra pins it)")
    docs = write_tree(tmp_path / "docs", DOCS)
    config = write_config(tmp_path, docs, theme={"name": "material"}, exclude_docs="drafts/",
                          markdown_extensions=["attr_list", {"toc": {"permalink": True}}])
    result = mkdocs_run(["build", "--strict"], config, entry_point_path)
    assert result.returncode == 0, result.stderr
    site = tmp_path / "site"
    items = agent_items(site / "agents")
    assert check_page_urls(site, [i["page_url"] for i in items]) == len(items)
    assert "/guide/setup/#pip-install" in {i["page_url"] for i in items}
    assert 'class="headerlink"' in (site / "guide" / "setup" / "index.html").read_text()  # the sign is not heading text


def test_without_attr_list_the_anchors_are_the_ones_mkdocs_wrote(tmp_path, entry_point_path):
    docs = write_tree(tmp_path / "docs", DOCS)
    config = write_config(tmp_path, docs, exclude_docs="drafts/")
    result = mkdocs_run(["build", "--strict"], config, entry_point_path)
    assert result.returncode == 0, result.stderr
    site = tmp_path / "site"
    items = agent_items(site / "agents")
    check_page_urls(site, [i["page_url"] for i in items])
    pip = next(i["page_url"] for i in items if "Install with pip" in i["header_path"])
    assert pip == "/guide/setup/#install-with-pip-pip-install"  # the braces are heading text then


def test_a_site_url_makes_page_urls_absolute_and_the_agent_site_lives_under_its_path(tmp_path, entry_point_path):
    docs = write_tree(tmp_path / "docs", DOCS)
    config = write_config(tmp_path, docs, site_url="https://docs.example.org/handbook/", exclude_docs="drafts/")
    result = mkdocs_run(["build", "--strict"], config, entry_point_path)
    assert result.returncode == 0, result.stderr
    agents = tmp_path / "site" / "agents"
    assert json.loads((agents / "index.json").read_text())["_links"]["self"]["href"] == "/handbook/agents/index.json"
    urls = [i["page_url"] for i in agent_items(agents)]
    assert all(u.startswith("https://docs.example.org/handbook/") for u in urls)
    check_page_urls(tmp_path / "site", urls, base="/handbook/")


def test_bad_input_fails_the_mkdocs_build_naming_the_file(tmp_path, entry_point_path):
    docs = write_tree(tmp_path / "docs", {**DOCS, "broken.md": "# Broken\n\n```python\nnever closed\n"})
    config = write_config(tmp_path, docs)
    result = mkdocs_run(["build"], config, entry_point_path)
    assert result.returncode != 0
    assert "broken.md" in result.stderr and "never closed" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fetch_json(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def test_mkdocs_serve_rebuilds_the_agent_site_on_save(tmp_path, entry_point_path):
    docs = write_tree(tmp_path / "docs", DOCS)
    config = write_config(tmp_path, docs, exclude_docs="drafts/")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": entry_point_path}
    server = subprocess.Popen([sys.executable, "-m", "mkdocs", "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}/agents/guide/"

    def wait_for(rel: str, predicate, seconds: float = 120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            doc = _fetch_json(base + rel)
            if doc is not None and predicate(doc):
                return doc
            assert server.poll() is None, server.stderr.read()
            time.sleep(0.5)
        raise AssertionError("the agent site was not (re)built in time")

    try:
        wait_for("index.json", lambda index: "setup" in {d["key"] for d in index["_embedded"]["documents"]})
        (docs / "guide" / "usage.md").write_text("# Usage\n\nRun the tool.\n\n## Troubleshooting\n\nRead the log.\n")
        usage = wait_for("_index/usage.doc.json", lambda doc: any("Troubleshooting" in i["header_path"] for i in doc["items"]))
        item = next(i for i in usage["items"] if "Troubleshooting" in i["header_path"])
        assert item["page_url"] == f"http://127.0.0.1:{port}/guide/usage/#troubleshooting"  # serve sets site_url
    finally:
        server.terminate()
        server.wait(timeout=30)


# --- the pure parts -------------------------------------------------------------------------


def test_page_headings_reads_ids_and_text_without_the_permalink_sign():
    html = ('<h1 id="title">Title</h1><p>x</p><h2 id="a-b">A <code>b</code><a class="headerlink" href="#a-b">¶</a></h2>'
            '<h3>no id</h3><h2 id="c">C &amp; D</h2>')
    assert [(h.level, h.anchor, h.text) for h in page_headings(html)] == [(1, "title", "Title"), (2, "a-b", "A b"), (2, "c", "C & D")]


def test_match_anchors_pairs_by_text_then_by_position_and_leaves_doubt_unanchored():
    source = [Heading(1, "Intro", line=0), Heading(2, "Use `x` { #use-x }", line=4), Heading(2, "Macro {{ name }}", line=9),
              Heading(2, "Gone", line=12), Heading(2, "Last", line=15)]
    page = [Heading(1, "Intro", "intro"), Heading(2, "Use x", "use-x"), Heading(2, "Macro value", "macro-value"),
            Heading(2, "Last", "last")]
    # "Macro" and "Gone" fall between matched neighbours: two of ours, one of theirs: no guess
    assert match_anchors(source, page) == ((0, "intro"), (4, "use-x"), (15, "last"))
    assert match_anchors(source[:3], page[:3]) == ((0, "intro"), (4, "use-x"), (9, "macro-value"))  # one for one


def test_chunk_urls_take_the_anchor_of_the_last_heading_at_or_before_the_chunk():
    text = "Intro line\n\n# Title\n\nBody\n\n## Part\n\nMore\n"
    document = parse_markdown(text)
    location = PageLocation("/p/", ((2, "title"), (6, "part")))
    starts = [0, text.index("# Title"), text.index("Body"), text.index("More")]
    assert location.chunk_urls(document, starts) == ("/p/", "/p/#title", "/p/#title", "/p/#part")
    assert PageLocation("/p/", ((2, "t"),)).digest() != location.digest()


# --- the real trees -------------------------------------------------------------------------


@needs_realdocs
@pytest.mark.parametrize("tree", ["fastapi", "mkdocs"])
def test_realdocs_build_with_the_plugin_and_every_page_url_resolves(tmp_path, entry_point_path, tree):
    """A minimal mkdocs.yml per tree (FastAPI's headings need ``attr_list``, as its own config
    has). The copies lack images and release notes, so MkDocs' own link checks are told to
    inform; ``--strict`` then fails on any warning, the plugin's included."""
    docs = REALDOCS / tree
    config = write_config(tmp_path, docs, max_tokens=256, markdown_extensions=["attr_list"] if tree == "fastapi" else [],
                          validation={"links": {"not_found": "info", "unrecognized_links": "info"}})
    result = mkdocs_run(["build", "--strict"], config, entry_point_path)
    assert result.returncode == 0, result.stderr[-3000:]
    site = tmp_path / "site"
    items = agent_items(site / "agents")
    assert len(items) > 300
    anchored = check_page_urls(site, [i["page_url"] for i in items])
    assert anchored >= 0.99 * len(items)
    from pipeline.client import open_site

    agents = open_site(str(site / "agents"))
    for query in ("dependencies with yield", "configuration of the theme", "install"):
        hits = agents.search(query, k=5, method="lexical")
        assert hits
        check_page_urls(site, [h.chunk.page_url for h in hits])
    from pipeline.site.linkcheck import check_site

    report = check_site(site / "agents", "/agents/")
    assert report.ok, report.broken[:5]
