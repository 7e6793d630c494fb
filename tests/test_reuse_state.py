"""Build state (pipeline/reuse/state.py): a rebuild reuses unchanged results, and any change of an
input gives exactly the site a clean build gives."""

import shutil
import warnings
from pathlib import Path

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.parsing.tokens import counter_for
from pipeline.reuse.state import STATE_FILE, BuildState, Digest, load_state, parse_state, save_state
from pipeline.site.build import build
from sitecheck import built_files

DOC = "# {title}\n\nThe {word} pipeline builds the stripe order index.\n\n" + "".join(
    f"## Part {i}\n\nThe stripe order of part {i} uses the {{word}} cache and the build state file.\n\n" for i in range(6)
)
FILES = {
    "guide/a.md": DOC.format(title="Alpha", word="alpha").replace("{word}", "alpha"),
    "guide/b.md": DOC.format(title="Beta", word="beta").replace("{word}", "beta"),
    "guide/deep/c.md": DOC.format(title="Gamma", word="gamma").replace("{word}", "gamma"),
    "guide/deep/qa-pairs.md": "## Q: How is the stripe order built?\n\n## Q: What does the build state file hold?\n",
    "ref/d.md": "# Delta\n\n## Quick Reference\n\n```bash\nrun it\n```\n\n## Use\n\nUse the delta cache with care.\n",
    "ref/_keywords/words.md": "| keyword | score |\n|---|---|\n| delta cache | 8 |\n",
}


def tree(root: Path) -> dict[str, bytes]:
    """Every file a build of the site made (the state file and the files it keeps one build
    longer for readers of the previous index, ``site/retire.py``, aside) by relative path."""
    return {rel: data for rel, data in built_files(root).items() if not rel.endswith(STATE_FILE)}


def run(content: Path, site: Path, cache: Path, **config):
    cfg = SiteConfig(cache_dir=cache, **config)
    return build(content, site, cfg, embedder=HashingEmbedder(), progress=False)


def assert_like_clean(tmp_path: Path, content: Path, site: Path, **config) -> None:
    """The incremental site equals a clean build of the same content into a new folder."""
    clean = tmp_path / "clean"
    if clean.exists():
        shutil.rmtree(clean)
    run(content, clean, tmp_path / "clean-cache", **config)
    assert tree(site) == tree(clean)


@pytest.fixture
def built(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    run(content, site, tmp_path / "cache")
    return content, site, tmp_path / "cache"


def test_noop_rebuild_reuses_everything_and_writes_nothing(built, monkeypatch):
    content, site, cache = built
    before = tree(site)
    import pipeline.chunking.tool as tool
    import pipeline.topicspec.keywordtables as keywordtables
    import pipeline.topicspec.topicspec as topicspec

    import pipeline.embedding.cache as cache_module
    import pipeline.site.publish as publish

    calls = {"chunk": 0, "extract": 0, "render": 0, "vectors read": 0, "embeddings encoded": 0}
    real_chunk, real_extract, real_render = tool.chunk_document, keywordtables.KeywordExtractor, topicspec.render_topic_spec
    real_read, real_encode = cache_module.EmbeddingCache._read_entry, publish.vectors.encode

    def counted(name, fn):
        def wrapper(*a, **kw):
            calls[name] += 1
            return fn(*a, **kw)

        return wrapper

    monkeypatch.setattr(tool, "chunk_document", counted("chunk", real_chunk))
    monkeypatch.setattr(keywordtables, "KeywordExtractor", counted("extract", real_extract))
    monkeypatch.setattr(topicspec, "render_topic_spec", counted("render", real_render))
    def read_entry(cache, file_hash):
        calls["vectors read"] += cache.strategy_key != topicspec.QUESTIONS_STRATEGY  # questions are few: read
        return real_read(cache, file_hash)

    monkeypatch.setattr(cache_module.EmbeddingCache, "_read_entry", read_entry)
    monkeypatch.setattr(publish.vectors, "encode", counted("embeddings encoded", real_encode))
    counter_for.cache_clear()  # a new process's counter: its tokenizer is loaded only to count
    report = run(content, site, cache)
    assert not HashingEmbedder().counter().loaded  # nothing was counted, so nothing loaded
    # Unchanged topics are recognised by the cache's vector digests: no chunk vector is read.
    assert calls == {"chunk": 0, "extract": 0, "render": 0, "vectors read": 0, "embeddings encoded": 0}
    assert tree(site) == before
    assert "0 files written, 0 removed" in report.summary()


def _edit(content: Path, rel: str, new: str | None) -> None:
    path = content / rel
    if new is None:
        path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new, encoding="utf-8", newline="")


@pytest.mark.parametrize(
    "rel, new",
    [
        ("guide/a.md", DOC.format(title="Alpha", word="omega").replace("{word}", "omega")),  # source text
        ("guide/a.md", "---\nchunking:\n  strategy: paragraph\n---\n" + FILES["guide/a.md"]),  # front matter
        ("guide/_chunking.toml", 'strategy = "markdown"\nmax_tokens = 64\n'),  # directory chunking
        ("guide/b.md", None),  # a deleted document
        ("guide/deep/c.md", None),  # a topic loses its only document
        ("guide/new.md", "# New\n\nA new stripe order document about the alpha cache.\n"),  # an added one
        ("ref/_keywords/words.md", "| keyword | score |\n|---|---|\n| delta cache | 3 |\n| quick reference | 5 |\n"),
        ("ref/_keywords/words.md", None),  # the author's table deleted: a generated one
        ("guide/_keywords/words.md", "| keyword | score |\n|---|---|\n| stripe order | 7 |\n"),  # one added
        ("guide/deep/qa-pairs.md", "## Q: Which cache does gamma use?\n"),
        ("guide/deep/qa-pairs.md", None),
    ],
)
def test_any_input_change_gives_the_clean_build(tmp_path, built, rel, new):
    content, site, cache = built
    _edit(content, rel, new)
    run(content, site, cache)
    assert_like_clean(tmp_path, content, site)


@pytest.mark.parametrize(
    "option",
    [{"strategy_options": {"max_tokens": 64}}, {"related_k": 1}, {"title": "Other"}, {"base_url": "/docs/"}],
)
def test_a_site_option_change_gives_the_clean_build(tmp_path, built, option):
    content, site, cache = built
    run(content, site, cache, **option)
    assert_like_clean(tmp_path, content, site, **option)


def test_another_model_gives_the_clean_build(tmp_path, built):
    content, site, cache = built
    cfg = SiteConfig(cache_dir=cache)
    build(content, site, cfg, embedder=HashingEmbedder(dimension=64), progress=False)
    clean = tmp_path / "clean"
    build(content, clean, SiteConfig(cache_dir=tmp_path / "c2"), embedder=HashingEmbedder(dimension=64), progress=False)
    assert tree(site) == tree(clean)


@pytest.mark.parametrize(
    "victim",
    [
        "guide/_chunks/a-1.md",
        "guide/_chunks/a.manifest.json",
        "guide/topic-spec.md",
        "guide/_spec/a.md",
        "guide/index.json",
        "index.json",
        "guide/_keywords/words.md",
        "guide/deep/_embeddings.bin",
        "_assets/client.js",
    ],
)
@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_a_deleted_or_corrupted_site_file_is_rebuilt(tmp_path, built, victim, damage):
    content, site, cache = built
    before = tree(site)
    path = site / victim
    if damage == "delete":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:-7] + b"garbage")
    run(content, site, cache)
    assert tree(site) == before


def test_a_deleted_cache_is_refilled_without_changing_the_site(built):
    content, site, cache = built
    before = tree(site)
    shutil.rmtree(cache)
    report = run(content, site, cache)
    assert report.spec.embedded > 0 and tree(site) == before


@pytest.mark.parametrize("damage", ["delete", "corrupt", "truncate", "foreign"])
def test_a_lost_or_bad_state_file_only_costs_a_recomputation(tmp_path, built, damage):
    content, site, cache = built
    before = tree(site)
    state = site / STATE_FILE
    if damage == "delete":
        state.unlink()
    elif damage == "corrupt":
        state.write_bytes(b"{not json")
    elif damage == "truncate":
        state.write_bytes(state.read_bytes()[: len(state.read_bytes()) // 2])
    else:  # a state that lies: every recorded digest and output hash matches nothing
        data = orjson.loads(state.read_bytes())
        for section in data["sections"].values():
            for entry in section.values():
                entry["digest"] = "0" * 16
        state.write_bytes(orjson.dumps(data))
    _edit(content, "guide/a.md", FILES["guide/a.md"] + "\nOne more stripe order line.\n")
    run(content, site, cache)
    assert_like_clean(tmp_path, content, site)
    assert tree(site) != before


def test_state_of_other_code_is_ignored(tmp_path, built, monkeypatch):
    content, site, cache = built
    import pipeline.reuse.state as state_mod

    assert load_state(site).old  # this build's state is read back
    monkeypatch.setattr(state_mod, "code_digest", lambda: "another-version")
    assert load_state(site).old == {}


def test_bad_input_still_fails_on_a_rebuild(tmp_path, built):
    content, site, cache = built
    _edit(content, "guide/a.md", "# Alpha\n\n```bash\nnever closed\n")
    with pytest.raises(PipelineError, match="never closed"):
        run(content, site, cache)
    _edit(content, "guide/a.md", FILES["guide/a.md"])
    run(content, site, cache, allow_unclosed_fences=True)
    _edit(content, "guide/a.md", "# Alpha\n\n```bash\nnever closed\n")
    run(content, site, cache, allow_unclosed_fences=True)
    with pytest.raises(PipelineError, match="never closed"):
        run(content, site, cache)  # reuse must not skip validation when the option changes


def test_chunking_warnings_are_said_once_and_counted_on_a_rebuild(tmp_path):
    """Issue 34: a rebuild repeated every warning of documents it did not chunk again; it keeps
    them (a document's warnings stay in the state) and counts them instead."""
    files = dict(FILES)
    files["guide/_chunking.toml"] = 'strategy = "markdown"\nmax_tokens = 5000\n'
    content = write_tree(tmp_path / "content", files)
    site = tmp_path / "site"
    with pytest.warns(UserWarning, match="max_tokens") as first:
        report = run(content, site, tmp_path / "cache")
    said = [w for w in first if "max_tokens" in str(w.message)]
    assert report.chunk.repeated_warnings == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the unchanged documents warn nothing again
        report = run(content, site, tmp_path / "cache")
    assert report.chunk.repeated_warnings == len(said) and report.chunk.repeated_warning_documents == len(said)
    assert report.chunk.repeats_note().startswith(f"{len(said)} warning")


def test_state_round_trip_and_digest():
    state = BuildState()
    state.put("topics", "guide", "abc", output="123")
    again = parse_state(state.to_bytes())
    assert again.get("topics", "guide", "abc") == {"digest": "abc", "output": "123"}
    assert again.get("topics", "guide", "abd") is None
    assert parse_state(b"[]").old == {} and parse_state(b"").old == {}
    # parts are length-prefixed: no two different sequences collide by concatenation
    assert Digest("ab", "c").hex() != Digest("a", "bc").hex()
    assert Digest(b"x").hex() != Digest("x").hex()


def test_stamps_travel_in_their_own_file_and_attach_only_as_stamps_of_the_same_digest():
    state = BuildState()
    state.put("documents", "a.md", "d", manifest="m", files=[[1, 2, 3, 4]])
    state.put("documents", "b.md", "e", manifest="n")
    plain = state.to_bytes()
    assert b"files" not in plain  # stamps are of this machine's files: never in the site
    loaded = parse_state(plain)
    loaded.merge_stamps(state.stamps_bytes())
    assert loaded.old["documents"] == {"a.md": {"digest": "d", "manifest": "m", "files": [[1, 2, 3, 4]]},
                                       "b.md": {"digest": "e", "manifest": "n"}}
    # a stamps file edited by hand or left by another generation adds stamps, never other fields
    forged = orjson.loads(state.stamps_bytes())
    forged["sections"]["documents"]["a.md"]["manifest"] = "forged"
    forged["sections"]["documents"]["b.md"] = {"digest": "other", "files": [[9, 9, 9, 9]]}
    again = parse_state(plain)
    again.merge_stamps(orjson.dumps(forged))
    assert again.old["documents"] == {"a.md": {"digest": "d", "manifest": "m", "files": [[1, 2, 3, 4]]},
                                      "b.md": {"digest": "e", "manifest": "n"}}


def test_save_state_is_atomic_and_skips_unchanged(tmp_path):
    state = BuildState()
    state.put("documents", "a.md", "d", manifest="m")
    assert save_state(tmp_path, state) is True
    assert save_state(tmp_path, state) is False
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("embeddings", "size", "many"),
        ("embeddings", "size", 1.5),
        ("embeddings", "output", 12),
        ("documents", "manifest", ["x"]),
        ("documents", "warnings", "oops"),
        ("keywords", "stats", {"guide": [["x", "1", 1, 0.5, 0.5, 1.0, 3]]}),
        ("keywords", "stats", {"guide": 4}),
        ("topics", "digest", None),
        ("index", "output", {"a": 1}),
    ],
)
def test_a_state_field_of_the_wrong_type_is_recomputed_with_a_warning(tmp_path, built, section, field, value):
    content, site, cache = built
    state = site / STATE_FILE
    data = orjson.loads(state.read_bytes())
    for entry in data["sections"][section].values():
        entry[field] = value
    state.write_bytes(orjson.dumps(data))
    with pytest.warns(UserWarning, match=f"build state entry {section}/.* is corrupt"):
        run(content, site, cache)
    assert_like_clean(tmp_path, content, site)
    # and the state written by that build is sound again
    assert all(
        isinstance(entry, dict) and isinstance(entry["digest"], str)
        for entries in orjson.loads(state.read_bytes())["sections"].values()
        for entry in entries.values()
    )


def test_state_entries_of_any_json_type_never_raise():
    for junk in ([], 3, "x", None, {"digest": 5}, {"digest": "d", "size": -1}, {"digest": "d", "other": 1}):
        state = BuildState(old={"index": {"k": junk}})
        with pytest.warns(UserWarning, match="corrupt"):
            assert state.get("index", "k", "d") is None


def test_the_reuse_interface_checks_inputs_output_and_carries_entries(tmp_path):
    """``get`` gives the previous entry only for the same inputs and, with ``output=``, only while
    that file still hashes to what ``put(data=...)`` recorded; ``keep`` carries it into this build
    with fresh values; ``previous`` ignores the digest but not a corrupt entry."""
    first = BuildState()
    first.put("topics", "guide", "d1", data=b"spec page", pages=[[1, 2, 3, 4]])
    target = tmp_path / "topic-spec.md"
    target.write_bytes(b"spec page")
    state = parse_state(first.to_bytes())

    assert state.get("topics", "guide", "d2") is None
    entry = state.get("topics", "guide", "d1", output=target)
    assert entry is not None and state.previous("topics", "guide") == entry
    state.keep("topics", "guide", entry, pages=[[5, 6, 7, 8]])
    assert state.recorded("topics", "guide") == "d1"
    assert state.new["topics"]["guide"] == {**entry, "pages": [[5, 6, 7, 8]]}

    target.write_bytes(b"spec page, edited by hand")
    assert state.get("topics", "guide", "d1", output=target) is None
    target.unlink()
    assert state.get("topics", "guide", "d1", output=target) is None
    assert state.get("topics", "guide", "d1") == entry  # without output= the inputs alone decide

    state.old["topics"]["broken"] = {"digest": "d1", "output": 7}
    with pytest.warns(UserWarning, match="topics/broken is corrupt"):
        assert state.previous("topics", "broken") is None
    assert state.previous_keys("topics") == ["guide"]


def test_reuse_keeps_an_entry_only_when_its_check_confirms_it(tmp_path):
    """``reuse``: the entry for the same inputs whose ``intact`` check passes, carried into this
    build with the fresh values the check gave; anything else is None and carries nothing."""
    first = BuildState()
    first.put("index", "guide", "d1", data=b"index", names=["index.json"], files=[[1, 2, 3, 4]])
    target = tmp_path / "index.json"
    target.write_bytes(b"index")
    state = parse_state(first.to_bytes())
    seen = []

    def intact(entry):
        seen.append(entry["names"])
        return {"files": [[5, 6, 7, 8]]}

    assert state.reuse("index", "guide", "d2", intact) is None and seen == []  # other inputs: not even checked
    assert state.reuse("index", "guide", "d1", lambda entry: None) is None
    assert state.recorded("index", "guide") is None
    kept = state.reuse("index", "guide", "d1", intact, output=target)
    assert seen == [["index.json"]]
    assert kept == state.new["index"]["guide"] == {**state.previous("index", "guide"), "files": [[5, 6, 7, 8]]}
    assert state.reuse("index", "guide", "d1", lambda entry: {}) == state.previous("index", "guide")
    target.write_bytes(b"edited")
    assert state.reuse("index", "guide", "d1", intact, output=target) is None and len(seen) == 1
