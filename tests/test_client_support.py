"""The fixture site the client, publish, JS-parity and browser tests read, and checks that it
has what those tests rely on (stripe orders, a technical baseline, code, a <script> chunk).

Built once per session with the deterministic hashing embedder (no model). No qa-pairs.md, so
the spec stage attaches no prompt hashes: ``PROMPTS`` are added to chosen chunks afterwards,
so SimHash tests do not depend on the spec's attachment policy.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import document_resource, write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.simhash import simhash64, to_hex

TITLE = "Fixture <b>site</b>"
EVIL = '<script>window.__pwned = 1; document.title = "pwned";</script>'
EVIL_IMG = '<img src="x" onerror="window.__pwned = 2">'

SECTIONS = [
    ("Quick Reference", "```bash\npipeline build notes --out site\npipeline serve site\n```\n"),
    ("Installing the Tool", "Install with pip into a virtual environment. The tool needs Python 3.11."),
    ("Writing Notes", "Notes are markdown files. Every heading starts a section of the note."),
    ("Stripe Orders", "A stripe order spreads the first chunks across the whole document."),
    ("Embedding Models", "The embedding model turns each chunk into a vector of numbers."),
    ("Caching Vectors", "Vectors are cached by content hash so a rebuild embeds nothing new."),
    ("Serving the Site", "Any static host serves the site; range requests fetch partial files."),
    ("Searching", "Readers search by question hash first and by embedding second."),
    ("Configuration Files", "```toml\ntitle = \"Notes\"\nbase_url = \"/\"\n[chunking]\nmax_tokens = 256\n```\n"),
    ("Troubleshooting", "When a build fails the error names the file and the line."),
]

ALPHA = "# Alpha Handbook\n\nThe alpha handbook explains how notes become a searchable site.\n\n" + "".join(
    f"## {title}\n\n{body}\n\n" for title, body in SECTIONS
)
BETA = (
    "# Beta Guide\n\nA short guide about deployment.\n\n"
    "## Hosting on Pages\n\nPush the site folder and enable GitHub Pages for deployment.\n\n"
    "## Custom Domains\n\nPoint a CNAME record at the host and set base_url.\n\n"
    "## Cache Headers\n\nSend no-cache for index.json so readers revalidate.\n"
)
EVIL_DOC = (
    "---\npromotion_level: critical\n---\n"  # the one promoted document (filters, exports, MCP)
    "# Unsafe Markup\n\nThis note shows markup that must stay text.\n\n"
    f"## Script Tag\n\nA chunk may contain {EVIL} and {EVIL_IMG} and must show them as text.\n"
)
KEYWORDS = """| keyword | score |
|---|---|
| stripe order | 9 |
| embedding | 7 |
| deployment | 6 |
| cache | 4 |
| markup | 3 |
"""

CONTENT = {
    "handbook/_keywords/words.md": KEYWORDS,
    "handbook/alpha.md": ALPHA,
    "handbook/beta.md": BETA,
    "notes/_keywords/words.md": KEYWORDS,
    "notes/unsafe.md": EVIL_DOC,
}

# (topic, document, chunk index) -> questions whose SimHash the chunk carries
PROMPTS = {
    ("handbook", "alpha", 4): ["How does a stripe order spread chunks across a document?"],
    ("handbook", "alpha", 6): ["Why does a rebuild embed nothing new?", "How are vectors cached?"],
    ("handbook", "beta", 1): ["How do I publish the site on GitHub Pages?"],
}


def add_prompt_hashes(site: Path, prompts: dict = PROMPTS) -> None:
    """Give the chosen chunks ``prompt_hashes``/``prompt_hashes_hex`` for their questions (in
    their documents' resources) and their topics ``prompt_matching``."""
    for (topic, name, index), questions in prompts.items():
        for path in sorted((site / topic / "_index").glob(f"{name}.doc*.json")):
            doc = orjson.loads(path.read_bytes())
            for item in doc["items"]:
                if item["index"] == index:
                    hashes = [simhash64(q) for q in questions]
                    item["prompt_hashes"] = hashes
                    item["prompt_hashes_hex"] = [to_hex(h) for h in hashes]
            path.write_bytes(orjson.dumps(doc))
    for topic in {t for t, _, _ in prompts}:
        path = site / topic / "index.json"
        doc = orjson.loads(path.read_bytes())
        doc.setdefault("prompt_matching", {"algorithm": "simhash64-w3-v1", "max_distance": 12})
        path.write_bytes(orjson.dumps(doc))


def build_fixture_site(root: Path) -> Path:
    """Build ``CONTENT`` into ``root/site`` with the hashing embedder; returns the site."""
    from pipeline.site.build import build

    content = write_tree(root / "content", CONTENT)
    site = root / "site"
    config = SiteConfig(title=TITLE, cache_dir=root / "cache", embedder="hashing")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    add_prompt_hashes(site)
    from pipeline.search.index import build_search_index

    build_search_index(site)  # the prompts added above go into _search/ as a build would put them
    return site


@pytest.fixture(scope="session")
def fixture_site(tmp_path_factory) -> Path:
    """The built fixture site. Read only: copy it (``site_copy``) to change anything."""
    return build_fixture_site(tmp_path_factory.mktemp("fixture"))


@pytest.fixture
def site_copy(fixture_site: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture site that a test may damage."""
    return Path(shutil.copytree(fixture_site, tmp_path / "site"))


class Served:
    """A ``pipeline serve`` server on 127.0.0.1 in a thread; ``url`` ends with ``/``."""

    def __init__(self, site: Path):
        from pipeline.serve import make_server

        self.server = make_server(site, host="127.0.0.1", port=0, log_requests=False)
        self.url = self.server.url
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="session")
def served_site(fixture_site: Path):
    served = Served(fixture_site)
    yield served
    served.close()


# --- the fixture is what the other tests rely on -----------------------------------------


def test_alpha_has_stripes_and_a_technical_baseline(fixture_site):
    alpha = document_resource(fixture_site, "handbook", "alpha")
    assert alpha["count"] == len(SECTIONS) + 1 >= 8
    assert alpha.get("baseline_technical") == 1
    assert alpha["stripe_order_technical"] != alpha["stripe_order"]
    assert any(item["is_code"] for item in alpha["items"]) and not all(item["is_code"] for item in alpha["items"])


def test_unsafe_chunk_holds_the_markup_verbatim(fixture_site):
    text = (fixture_site / "notes" / "_chunks" / "unsafe-1.md").read_text(encoding="utf-8")
    assert EVIL in text and EVIL_IMG in text


def test_prompt_hashes_were_added(fixture_site):
    item = document_resource(fixture_site, "handbook", "alpha")["items"][4]
    assert item["prompt_hashes_hex"] == [to_hex(simhash64(PROMPTS[("handbook", "alpha", 4)][0]))]


@given(st.lists(st.sampled_from(["", ".", "..", "a", "b c", "é", "x.md", "_chunks"]), max_size=6))
@settings(max_examples=300, deadline=None)
def test_local_transport_locates_as_pathlib_joins(segments):
    # locate skips building a Path per call; it must give the path pathlib gives
    from pipeline.siteformat.localfiles import LocalTransport

    transport = LocalTransport(Path("."))
    rel = "/".join(segments)
    assert transport.locate(rel) == str(transport.dir.joinpath(*[p for p in rel.split("/") if p]))

ALPHA_Q = PROMPTS[("handbook", "alpha", 4)][0]
"""A question of the fixture site's alpha document (its prompt hashes hold it)."""


def index_of(site: Path, topic: str) -> dict:
    return orjson.loads((site / topic / "index.json").read_bytes())


def edit_item(site: Path, topic: str, document: str, index: int, change) -> None:
    """Apply ``change(item)`` to chunk ``index``'s item in its document's resource, in place."""
    for path in sorted((site / topic / "_index").glob(f"{document}.doc*.json")):
        doc = orjson.loads(path.read_bytes())
        for item in doc["items"]:
            if item["index"] == index:
                change(item)
                path.write_bytes(orjson.dumps(doc))
                return
    raise AssertionError(f"no item {index} of {document}")
