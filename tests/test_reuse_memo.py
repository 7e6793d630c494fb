"""The memo beside the site (pipeline/reuse/memo.py): a rebuild after an edit recomputes the
keyword counts and the search-index share of the edited topics only, and the site is still
exactly what a clean build of the same content gives."""

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.reuse.memo import Memo
from pipeline.site.staging import sibling
from test_reuse_state import FILES, assert_like_clean, run, tree

import pipeline.search.topicpart as topicpart
import pipeline.site.llms as llms
import pipeline.topicspec.keywordtables as keywordtables
import pipeline.reuse.memo as site_memo


def memo_dir(site: Path) -> Path:
    return sibling(site.resolve(), "memo")


def test_memo_round_trip_and_unreadable_entries_read_as_missing(tmp_path):
    memo = Memo(tmp_path / "memo")
    key = memo.key("kind", [1, 2])
    value = ([["a", 3]], (b"\x00\x01", [b"x"]), {"t": 1, "u": None}, 2.5, True)
    memo.put("kind", key, value)
    assert Memo(tmp_path / "memo").get("kind", key) == value
    assert memo.key("kind", [1, 2]) == key and memo.key("kind", [2, 1]) != key
    path = tmp_path / "memo" / "kind" / key
    data = path.read_bytes()
    other = memo.key("other")
    (tmp_path / "memo" / "kind" / other).write_bytes(data)  # an entry under another key's name
    assert memo.get("kind", other) is None
    for damaged in (data[: len(data) // 2], data[:-3], b"", b"garbage" * 9):
        path.write_bytes(damaged)
        assert memo.get("kind", key) is None
    assert Memo(None).get("kind", key) is None  # no folder: finds nothing, keeps nothing
    Memo(None).put("kind", key, value)


def test_prune_keeps_what_the_build_used_and_kinds_it_did_not_touch(tmp_path):
    first = Memo(tmp_path)
    for name in ("a", "b"):
        first.put("used", first.key(name), name)
    first.put("untouched", first.key("c"), "c")
    second = Memo(tmp_path)
    assert second.get("used", second.key("a")) == "a"
    second.put("used", second.key("d"), "d")
    assert second.prune() == 1
    assert sorted(p.name for p in (tmp_path / "used").iterdir()) == sorted([second.key("a"), second.key("d")])
    assert len(list((tmp_path / "untouched").iterdir())) == 1
    third = Memo(tmp_path)
    third.keep("used", third.key("a"))  # kept without being read: a result found unchanged
    third.put("used", third.key("e"), "e")
    assert third.prune() == 1
    assert sorted(p.name for p in (tmp_path / "used").iterdir()) == sorted([third.key("a"), third.key("e")])


@pytest.fixture
def counted(monkeypatch):
    """How many documents had their keyword candidates counted, and which topics had their
    search share computed (made from the built site, or drafted while the build encoded)."""
    calls = {"counted": 0, "search": [], "llms": [], "indexed": 0}
    real_count, real_part, real_draft, real_topic = keywordtables.count_part, topicpart.topic_part, topicpart.draft_part, llms._topic
    real_document = topicpart._document_part

    def count(texts):
        calls["counted"] += 1
        return real_count(texts)

    def document(root, doc, *rest):
        calls["indexed"] += 1
        return real_document(root, doc, *rest)

    def part(site, reader, node, *rest):
        calls["search"].append(node.path)
        return real_part(site, reader, node, *rest)

    def draft(site, dir_rel, *rest):
        calls["search"].append(f"{dir_rel}/index.json" if dir_rel else "index.json")
        return real_draft(site, dir_rel, *rest)

    def topic(site, dir_rel):
        calls["llms"].append(dir_rel)
        return real_topic(site, dir_rel)

    monkeypatch.setattr(keywordtables, "count_part", count)
    monkeypatch.setattr(site_memo, "BIG_TOPIC_CHUNKS", 0)  # every topic's counts and search parts kept per document
    monkeypatch.setattr(topicpart, "_document_part", document)
    monkeypatch.setattr(llms, "_topic", topic)
    monkeypatch.setattr(topicpart, "topic_part", part)
    monkeypatch.setattr(topicpart, "draft_part", draft)
    return calls


def test_one_edit_recounts_and_reindexes_only_its_topic(tmp_path, counted):
    content = write_tree(tmp_path / "content", FILES)
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    # every topic's documents are counted (ref has its author's table, but the specificity of a
    # phrase sums every topic's rate) and every topic indexed
    assert counted["counted"] == 4 and sorted(counted["search"]) == ["guide/deep/index.json", "guide/index.json", "ref/index.json"]
    assert sorted(counted["llms"]) == ["", "guide", "guide/deep", "ref"]
    assert counted["indexed"] == 4  # each document's search part
    counted.update(counted=0, search=[], llms=[], indexed=0)
    path = content / "guide" / "a.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nThe omega cache builds another stripe order.\n", encoding="utf-8")
    run(content, site, cache)
    # guide/deep's table is recomputed (the specificity of its phrases changed) from its counts,
    # and of guide only the edited document is counted and indexed again (guide/b.md's are kept)
    assert counted == {"counted": 1, "search": ["guide/index.json"], "llms": ["guide"], "indexed": 1}
    assert_like_clean(tmp_path, content, site)
    # a big topic's per-document entries outlive builds that leave its page alone
    import pipeline.topicspec.topicspec as topicspec

    kinds = ("keywords-documents", "search-documents", "summaries-documents", "keywords-in-documents")
    entries = {kind: len(list((memo_dir(site) / kind).iterdir())) for kind in kinds}
    assert entries == dict.fromkeys(kinds, 3)  # guide, guide/deep, ref
    kept_pages: list[str] = []
    keep = topicspec.keep_topic_text
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topicspec, "keep_topic_text", lambda memo, topic, table: kept_pages.append(topic.dir_rel) or keep(memo, topic, table))
        path = content / "ref" / "d.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nThe delta cache keeps one more entry.\n", encoding="utf-8")
        run(content, site, cache)
    assert kept_pages and "ref" not in kept_pages
    assert {kind: len(list((memo_dir(site) / kind).iterdir())) for kind in kinds} == entries


def test_in_a_big_topic_an_edit_reads_only_the_edited_documents_sources(tmp_path, monkeypatch):
    # With every topic big, each per-topic result an edit needs is summed or assembled from its
    # documents' (keyword counts and chunk counts, summaries and keyword rows, search parts):
    # the spec stage reads the chunk spans of the edited document only.
    import pipeline.topicspec.topicinputs as topicinputs

    monkeypatch.setattr(site_memo, "BIG_TOPIC_CHUNKS", 0)
    content = write_tree(tmp_path / "content", FILES)
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    read: list[str] = []
    real = topicinputs.read_text
    monkeypatch.setattr(topicinputs, "read_text", lambda path, *a, **k: read.append(Path(path).name) or real(path, *a, **k))
    path = content / "guide" / "a.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nThe omega cache builds another stripe order.\n", encoding="utf-8")
    run(content, site, cache)
    assert read == ["a.md"]
    assert_like_clean(tmp_path, content, site)


def test_one_edit_updates_its_topics_related_lists_instead_of_recomputing_them(tmp_path, monkeypatch):
    # The related search is quadratic in a topic's chunks (27 s of a 52 s one-edit rebuild of
    # 10,000 documents in one folder): after an edit only the rows the edit touched are searched,
    # from the lists the memo kept, also through builds that left the topic alone.
    import pipeline.topicspec.context as context

    content = write_tree(tmp_path / "content", FILES)
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    searched: list[tuple[int, int]] = []  # (rows of the topic, rows searched)
    real = context._related_of
    monkeypatch.setattr(context, "_related_of", lambda exact, rows, k: searched.append((len(exact), len(rows))) or real(exact, rows, k))
    for rel, line in (("guide/deep/c.md", "The gamma index keeps one more stripe."),  # guide is left alone
                      ("guide/a.md", "The omega cache builds another stripe order.")):
        searched.clear()
        path = content / rel
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
        run(content, site, cache)
        assert_like_clean(tmp_path, content, site)
    assert searched and all(rows < topic for topic, rows in searched)  # guide's last edit


@pytest.mark.parametrize("damage", ["delete", "truncate", "swap"])
def test_a_lost_or_damaged_memo_only_costs_a_recount(tmp_path, damage):
    content = write_tree(tmp_path / "content", FILES)
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    files = sorted(p for p in memo_dir(site).rglob("*") if p.is_file())
    kinds = sorted(p.parent.name for p in files)
    # three topics counted and indexed; four folders with an index.json for llms-full.txt
    # (no topic of 10,000 chunks: none keeps its keyword counts per document)
    assert kinds == ["keywords-topic"] * 3 + ["llms-topic"] * 4 + ["related-topic"] * 3 + ["search-topic"] * 3
    if damage == "delete":
        shutil.rmtree(memo_dir(site))
    elif damage == "truncate":
        for p in files:
            p.write_bytes(p.read_bytes()[:-5])
    else:  # each entry's bytes under another entry's name
        data = [p.read_bytes() for p in files]
        for p, d in zip(files, data[1:] + data[:1]):
            p.write_bytes(d)
    (content / "guide" / "b.md").unlink()
    run(content, site, cache)
    assert_like_clean(tmp_path, content, site)


LEAN = {"search_encoder": False}  # the static encoder's ~3,600 shards cost seconds a build and are written like any _search file
_DOCS = sorted(rel for rel in FILES if rel.endswith(".md") and "/_" not in rel and not rel.endswith("qa-pairs.md"))
_WORDS = ["stripe order", "build state", "alpha cache", "omega index", "delta cache", "quick reference"]
_EDIT = st.tuples(
    st.sampled_from(_DOCS + ["guide/new.md", "ref/other.md", "top.md"]),
    st.one_of(st.none(), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6)),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_EDIT, min_size=1, max_size=3), st.sampled_from([0, site_memo.BIG_TOPIC_CHUNKS]))
def test_any_sequence_of_edits_gives_the_clean_build(edits, per_document):
    # ``per_document`` 0: every topic keeps its keyword counts per document (a big topic's way)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(site_memo, "BIG_TOPIC_CHUNKS", per_document)
        tmp_path = Path(tmp)
        content = write_tree(tmp_path / "content", FILES)
        site, cache = tmp_path / "site", tmp_path / "cache"
        run(content, site, cache, **LEAN)
        for rel, words in edits:
            path = content / rel
            if words is None:  # delete (or nothing, for a document not there)
                path.unlink(missing_ok=True)
            else:
                body = ". ".join(f"The {w} of {rel} uses the {words[0]}" for w in words)
                head = path.read_text(encoding="utf-8") if path.exists() else f"# {rel}\n\n"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(head + f"\n## Edit\n\n{body}.\n", encoding="utf-8")
            run(content, site, cache, **LEAN)
            before = tree(site)
            assert_like_clean(tmp_path, content, site, **LEAN)
            assert tree(site) == before
