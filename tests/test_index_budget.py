"""Every file a reader fetches fits a budget at any size (issue 30): a flat folder of thousands of
tiny documents, built with the hashing embedder, publishes no JSON file over 32 kB; the seed's
client flow (a topic's index.json -> the first chunks of a document's stripe order) stays three
round trips however deep the document is listed; an edit rewrites that document's resource and
its listing page, and a no-op rebuild rewrites nothing."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from conftest import write_tree
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from pipeline.siteformat.indexnames import LISTING_ENTRIES
from test_client_support import Served

BUDGET = 32 * 1024  # bytes of a file a reader reads whole (~8k tokens)
DOCUMENTS = 3000


def tiny(i: int) -> str:
    return f"# Note {i}\n\nA short note about topic {i % 97} and item {i}.\n\n## Links\n\nSee note {(i * 7) % DOCUMENTS}.\n"


@pytest.fixture(scope="module")
def vault(tmp_path_factory) -> Path:
    """A flat folder of ``DOCUMENTS`` tiny notes (an Obsidian-style vault), built."""
    root = tmp_path_factory.mktemp("vault")
    content = write_tree(root / "content", {f"notes/note-{i:05d}.md": tiny(i) for i in range(DOCUMENTS)})
    build(content, root / "site", SiteConfig(cache_dir=root / "cache"), embedder=HashingEmbedder(), progress=False)
    return root / "site"


def test_no_json_file_a_reader_fetches_is_over_the_budget(vault):
    """Every JSON file of the site but the search index (judged by bytes per query instead) and
    the build's own dot files, which are not published."""
    checked = {}
    for path in vault.rglob("*.json"):
        rel = path.relative_to(vault)
        if rel.parts[0] == "_search" or rel.name.startswith("."):
            continue
        checked[rel.as_posix()] = path.stat().st_size
    assert len(checked) > 2 * DOCUMENTS  # every document's resource and manifest, every listing page
    over = {rel: size for rel, size in checked.items() if size > BUDGET}
    assert not over, f"over {BUDGET} bytes: {sorted(over.items())[:5]}"
    listing = json.loads((vault / "notes/index.json").read_bytes())
    assert listing["documents"] == DOCUMENTS and listing["pages"] == -(-DOCUMENTS // LISTING_ENTRIES)


class Counted:
    """GETs over one HTTP connection, counted."""

    def __init__(self, base: str):
        parts = urlsplit(base)
        self.base, self.requests = base, 0
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)

    def get(self, url: str) -> bytes:
        self.requests += 1
        self.conn.request("GET", urlsplit(url).path)
        response = self.conn.getresponse()
        body = response.read()
        assert response.status == 200, url
        return body


def test_the_seed_flow_reads_a_documents_first_chunks_in_three_requests_from_a_topic(vault):
    """A reader that knows only the format: the topic's index.json, a document's entry there
    (``sample``: the first chunks of its stripe order; ``_links.self``: its resource), the
    chunk files. For a document on the first page: index.json then the chunks; for one the
    listing pages far down: index.json, its resource through the templated ``document`` link,
    the chunks (the Python client does the same in 2 + n requests)."""
    served = Served(vault)
    try:
        reader = Counted(served.url)
        topic = served.url + "notes/index.json"
        first = json.loads(reader.get(topic))
        entry = first["_embedded"]["documents"][0]
        texts = [reader.get(urljoin(topic, s["href"])) for s in entry["sample"]]
        assert len(texts) == min(3, entry["count"]) and reader.requests == 1 + len(texts)  # index.json, the chunks
        assert all(t.startswith(b"# Note") for t in texts)

        reader = Counted(served.url)
        key = f"note-{DOCUMENTS - 1:05d}"  # listed on the last page
        first = json.loads(reader.get(topic))
        assert key not in {d["key"] for d in first["_embedded"]["documents"]}
        resource = json.loads(reader.get(urljoin(topic, first["_links"]["document"]["href"].replace("{key}", key))))
        wanted = [*resource["stripe_order"], 0][:3]
        by_index = {item["index"]: item for item in resource["items"]}
        chunks = [reader.get(urljoin(topic, by_index[i]["href"])) for i in wanted]
        assert reader.requests == 2 + len(wanted) and all(c.startswith(b"# Note") for c in chunks)  # 3 round trips

        site = open_site(served.url).check()
        before = site.transport.requests
        sampled = site.sample("notes", 3, document=key)
        assert [c.ref.index for c in sampled] == [*resource["stripe_order"], 0][:3]
        assert site.transport.requests - before == 2 + len(sampled)
    finally:
        served.close()


def test_an_edit_rewrites_its_documents_resource_and_listing_page_and_a_no_op_nothing(tmp_path):
    files = {f"notes/n-{i:03d}.md": tiny(i) for i in range(100)}
    content = write_tree(tmp_path / "content", files)
    site, config = tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)

    def index_files() -> dict[str, bytes]:
        return {p.relative_to(site).as_posix(): p.read_bytes() for p in [*site.rglob("index.json"), *site.rglob("_index/*.json")]}

    before = index_files()
    again = build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert again.index.written == 0 and index_files() == before
    edited = 70  # on the listing's third page
    (content / f"notes/n-{edited:03d}.md").write_text(tiny(edited) + "\n## More\n\nA new section with new words.\n", encoding="utf-8")
    report = build(content, site, config, embedder=HashingEmbedder(), progress=False)
    after = index_files()
    changed = sorted(rel for rel in after if after[rel] != before.get(rel))
    page = 1 + edited // LISTING_ENTRIES
    assert changed == sorted([f"notes/_index/n-{edited:03d}.doc.json", f"notes/_index/page-{page}.json"])
    assert report.index.written == len(changed)
