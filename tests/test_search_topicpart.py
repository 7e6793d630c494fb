"""pipeline.search.topicpart: a topic's share of the search index drafted while a build encodes
(no vector yet) and completed from the final index files is the share made afresh from the built
site; a draft that no longer fits them is not used."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.handoff import BuildHandoff
from pipeline.search import topicpart
from pipeline.search.index import SEARCH_DIR, build_search_index
from pipeline.site import build as build_module
from searchsites import encoder_of, files_of, topic_content

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

    def spy(site, specs, bodies=None, memo=None):
        found = real(site, specs, bodies, memo=memo) if drafts else {}
        made.update(copy.deepcopy(found))  # the build completes (changes) its own
        return found

    content = write_tree(root / "content", FILES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build_module, "draft_parts", spy)
        mp.setattr(topicpart, "complete_part", lambda draft, reader, node, written=None: completed.append(
            _checked_completion(complete, draft, reader, node, written)) or completed[-1])
        build_module.build(content, root / "site", SiteConfig(title="T", cache_dir=root / "cache", embedder="hashing"),
                           embedder=HashingEmbedder(), progress=False)
    return root / "site", made, sum(part is not None for part in completed)


def _checked_completion(complete, draft, reader, node, written):
    """``complete_part`` as the build calls it, after checking that the build handed what
    reading the topic's document resources back gives (``index.tool.written_prompts``)."""
    assert written is not None, "the index stage handed no prompt hashes for a drafted topic"
    index = reader.topic(node)
    assert written == ([[d.name, len(d.items)] for d in index.documents],
                       [[f"{h:016x}" for h in ref.prompt_hashes] for d in index.documents for ref in d.items])
    assert complete(copy.deepcopy(draft), reader, node) == complete(copy.deepcopy(draft), reader, node, written)
    return complete(draft, reader, node, written)


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
        assert topicpart.complete_part(copy.deepcopy(drafts[node.path]), reader, node) == topicpart.topic_part(site, reader, node)


def test_a_draft_that_does_not_fit_its_index_files_is_not_completed_and_the_share_is_made_afresh(drafted, tmp_path):
    from dataclasses import replace

    from pipeline.client import open_site

    site, drafts = drafted
    path, draft = next((p, d) for p, d in drafts.items() if len(d[0]) > 1)
    reader = open_site(site)
    node = next(n for n in reader.topics() if n.path == path)
    whole = reader.topic(node)
    reader._topics[node.id] = replace(whole, documents=whole.documents[1:])  # a document the draft has is gone
    assert topicpart.complete_part(copy.deepcopy(draft), reader, node) is None
    broken = Path(shutil.copytree(site, tmp_path / "broken"))
    resource = next((broken / path).parent.glob("_index/*.doc.json"))
    malformed = orjson.loads(resource.read_bytes())
    malformed["items"][0]["prompt_hashes_hex"] = ["not hex"]
    resource.write_bytes(orjson.dumps(malformed))
    fresh = open_site(broken)
    node = next(n for n in fresh.topics() if n.path == path)
    assert topicpart.complete_part(copy.deepcopy(draft), fresh, node) is None  # made afresh: that says where
    before = files_of(site)
    stale = copy.deepcopy(draft)
    stale[0][0][1] += 1  # the draft counts one chunk more than the index.json lists
    again = Path(shutil.copytree(site, tmp_path / "site"))
    encoder = encoder_of(again)
    shutil.rmtree(again / SEARCH_DIR)
    build_search_index(again, encoder=encoder, handoff=BuildHandoff(drafts={path: stale}))
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
        topicpart.draft_part = lambda s, d, sp, b=None, m=None: calls.append(d) or ("draft",)
        assert list(topicpart.draft_parts(site, pairs(), budget=10)) == ["section0/topic0/index.json"]
        assert read == ["section0/topic0", "section1/topic1"]  # nothing after the pair over the budget is made
        assert list(topicpart.draft_parts(site, specs, budget=14)) == ["section0/topic0/index.json", "section1/topic1/index.json", "x/index.json"]
    finally:
        topicpart.draft_part = real
    assert calls == ["section0/topic0", "section0/topic0", "section1/topic1", "x"]


def test_a_big_topics_share_from_its_documents_parts_is_the_share_made_whole(drafted, tmp_path, monkeypatch):
    # A topic of BIG_TOPIC_CHUNKS chunks or more is made from each document's part (term counts
    # and record metadata) that the memo keeps, so an edit reads only the edited documents: the
    # share must be the one made whole, when the parts are made and when they are read back.
    from pipeline.client import open_site
    from pipeline.reuse import memo as site_memo

    site, _ = drafted
    reader = open_site(site)
    nodes = reader.topics()
    whole = {node.path: topicpart.topic_part(site, reader, node) for node in nodes}
    monkeypatch.setattr(site_memo, "BIG_TOPIC_CHUNKS", 0)
    made = []
    real = topicpart._document_part
    monkeypatch.setattr(topicpart, "_document_part", lambda root, doc, *rest: made.append(doc.name) or real(root, doc, *rest))
    memo = site_memo.Memo(tmp_path / "memo")
    assert {node.path: topicpart.topic_part(site, reader, node, memo=memo) for node in nodes} == whole
    documents = sum(len(share[0]) for share in whole.values())
    assert len(made) == documents > len(nodes)  # every document's part made once, several a topic
    made.clear()
    kept = site_memo.Memo(tmp_path / "memo")
    assert {node.path: topicpart.topic_part(site, reader, node, memo=kept) for node in nodes} == whole
    assert made == []  # every part read back
    # a document whose manifest changed has its part made again, the others are read
    node = next(n for n in nodes if len(whole[n.path][0]) > 1)
    index = reader.topic(node)
    manifest = next((site / node.path).parent.glob("_chunks/*.manifest.json"))
    manifest.write_bytes(manifest.read_bytes() + b" ")
    assert topicpart.topic_part(site, reader, node, memo=site_memo.Memo(tmp_path / "memo")) == whole[node.path]
    assert len(made) == 1 and made[0] in {d.name for d in index.documents}
