"""IndexTool (pipeline/index/tool.py): every node's index.json from the topic pages, each page
parsed once and one held at a time."""

import gc
import weakref

import orjson

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.index import tool
from pipeline.site.build import build

# a tree two levels deep: the root's children and a child's own children
FILES = {
    "intro.md": "# Intro\n\nThe start.\n",
    "guide/setup.md": "# Setup\n\nInstall it.\n",
    "guide/usage.md": "# Usage\n\nUse it.\n",
    "guide/advanced/tuning.md": "# Tuning\n\nTune it.\n",
    "guide/advanced/scaling.md": "# Scaling\n\nScale it.\n",
    "guide/advanced/limits.md": "# Limits\n\nKnow them.\n",
    "reference/api.md": "# API\n\nThe calls.\n",
}


class _Page(dict):
    """A parsed page that a weak reference can watch."""


def test_each_page_is_parsed_once_and_one_is_held_at_a_time_with_the_same_output(tmp_path, monkeypatch):
    site = tmp_path / "site"
    build(write_tree(tmp_path / "content", FILES), site, SiteConfig(cache_dir=tmp_path / "c"), embedder=HashingEmbedder(), progress=False)
    nodes = [p for p in site.rglob("index.json") if p.parent == site or (p.parent / "topic-spec.md").exists()]
    indexes = {p.relative_to(site).as_posix(): p.read_bytes() for p in nodes}
    assert len(indexes) == 4
    read = tool.read_topic_spec
    parsed: list[str] = []
    pages: list[weakref.ref] = []
    most = []

    def watched(path):
        gc.collect()
        most.append(sum(ref() is not None for ref in pages))  # pages still held when the next is parsed
        parsed.append(path.parent.relative_to(site).as_posix())
        page = _Page(read(path))
        pages.append(weakref.ref(page))
        return page

    monkeypatch.setattr(tool, "read_topic_spec", watched)
    for path in nodes:
        path.unlink()
    tool.run_index(site, SiteConfig(cache_dir=tmp_path / "c"))
    assert sorted(parsed) == sorted(set(parsed)) == sorted(["guide", "guide/advanced", "reference", "."])
    assert max(most) == 0
    assert {p: (site / p).read_bytes() for p in indexes} == indexes
    root = orjson.loads((site / "index.json").read_bytes())
    guide = orjson.loads((site / "guide/index.json").read_bytes())
    children = lambda doc: {c["id"]: c["documents"] for c in doc["_embedded"]["topics"]}  # noqa: E731
    assert children(root) == {"guide": 2, "reference": 1}
    assert children(guide) == {"guide/advanced": 3}
