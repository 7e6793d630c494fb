"""pipeline.search.topicpart: a topic's share of the search index drafted while a build encodes
(no vector yet) and completed from the final index.json is the share made afresh from the built
site; a draft that no longer fits its index.json is not used."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.search import topicpart
from pipeline.search.index import SEARCH_DIR, build_search_index
from pipeline.site import build as build_module
from test_search_index import files_of, topic_content

# Questions that repeat a chunk's words: the hashing embedder puts them close enough to that
# chunk (cosine above the policy's threshold), so the topics carry prompt hashes, the one part
# of a share that needs the vectors.
QUESTIONS = "## Q: Text about alpha and alpha with code?\n\nA.\n\n## Q: Words bravo charlie delta echo foxtrot?\n\nB.\n"
FILES = {
    **topic_content(4),
    "section0/topic0/qa-pairs.md": QUESTIONS,
    "section1/topic1/qa-pairs.md": QUESTIONS.replace("alpha", "bravo"),
    # names a URL quotes (space, non-ASCII): the draft reads hrefs back as the final index does
    "section0/topic2/a ü doc.md": "---\ntags: [x]\n---\n# Spaced é\n\n## One alpha\n\nalpha text\n\n## Two\n\nbravo text\n",
}


def build_site(root: Path, *, drafts: bool = True) -> tuple[Path, dict[str, tuple], int]:
    """Build ``FILES`` into ``root/site``: the site, the drafts the build made (none with
    ``drafts=False``) and how many of them it completed."""
    made: dict[str, tuple] = {}
    completed = []
    real, complete = build_module.draft_parts, topicpart.complete_part

    def spy(site, specs, bodies=None):
        found = real(site, specs, bodies) if drafts else {}
        made.update(copy.deepcopy(found))  # the build completes (changes) its own
        return found

    content = write_tree(root / "content", FILES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build_module, "draft_parts", spy)
        mp.setattr(topicpart, "complete_part", lambda draft, doc: completed.append(complete(draft, doc)) or completed[-1])
        build_module.build(content, root / "site", SiteConfig(title="T", cache_dir=root / "cache", embedder="hashing"),
                           embedder=HashingEmbedder(), progress=False)
    return root / "site", made, sum(part is not None for part in completed)


@pytest.fixture(scope="module")
def drafted(tmp_path_factory) -> tuple[Path, dict[str, tuple]]:
    site, drafts, completed = build_site(tmp_path_factory.mktemp("drafted"))
    assert len(drafts) == completed == 4  # every topic drafted while it encoded, and completed
    return site, drafts


def test_drafted_shares_make_the_index_that_shares_made_afresh_make(drafted, tmp_path):
    site, drafts = drafted
    plain, none, _ = build_site(tmp_path, drafts=False)
    assert none == {}
    assert files_of(site) == files_of(plain)
    meta = orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes())
    assert meta["prompts"], "no topic carries prompt hashes: the completion is not exercised"
    # and completing the drafts again, from the built site's index.json files, gives each share
    from pipeline.client import open_site

    reader = open_site(site)
    for node in reader.topics():
        assert topicpart.complete_part(copy.deepcopy(drafts[node.path]), reader.index_document(node)) == topicpart.topic_part(site, reader, node)


def test_a_draft_that_does_not_fit_its_index_json_is_not_completed_and_the_share_is_made_afresh(drafted, tmp_path):
    site, drafts = drafted
    path, draft = next((p, d) for p, d in drafts.items() if len(d[0]) > 1)
    doc = orjson.loads((site / path).read_bytes())
    chunk_sets = doc["_embedded"]["chunks"]
    chunk_sets.pop(next(iter(chunk_sets)))  # a document the draft has is gone
    assert topicpart.complete_part(copy.deepcopy(draft), doc) is None
    malformed = orjson.loads((site / path).read_bytes())
    next(iter(malformed["_embedded"]["chunks"].values()))["items"][0]["prompt_hashes_hex"] = ["not hex"]
    assert topicpart.complete_part(copy.deepcopy(draft), malformed) is None  # made afresh: that says where
    before = files_of(site)
    stale = copy.deepcopy(draft)
    stale[0][0][1] += 1  # the draft counts one chunk more than the index.json lists
    again = Path(shutil.copytree(site, tmp_path / "site"))
    shutil.rmtree(again / SEARCH_DIR)
    build_search_index(again, drafts={path: stale})
    assert files_of(again) == before


def test_drafts_stop_at_the_budget(drafted):
    site, _ = drafted
    specs = [("section0/topic0", [{"items": [{}] * 7}]), ("section1/topic1", [{"items": [{}] * 7}]), ("x", [])]
    calls, read = [], []

    def pairs():
        for pair in specs:
            read.append(pair[0])
            yield pair

    real = topicpart.draft_part
    try:
        topicpart.draft_part = lambda s, d, sp, b=None: calls.append(d) or ("draft",)
        assert list(topicpart.draft_parts(site, pairs(), budget=10)) == ["section0/topic0/index.json"]
        assert read == ["section0/topic0", "section1/topic1"]  # nothing after the pair over the budget is made
        assert list(topicpart.draft_parts(site, specs, budget=14)) == ["section0/topic0/index.json", "section1/topic1/index.json", "x/index.json"]
    finally:
        topicpart.draft_part = real
    assert calls == ["section0/topic0", "section0/topic0", "section1/topic1", "x"]
