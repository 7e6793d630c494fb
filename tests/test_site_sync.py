"""pipeline.site.sync: CONTENT mirrored into SITE, in one pass or the spec stage's inputs first."""

from __future__ import annotations

import tempfile

import pytest
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.reuse.state import BuildState
from pipeline.site.sync import spec_input, sync_sources

SYNC_TREE = st.dictionaries(
    st.sampled_from(["a.md", "qa-pairs.md", "_keywords/words.md", "img.png", "g/b.md", "g/qa-pairs.md",
                     "g/_keywords/words.md", "g/h/c.md", "g/h/d.txt", "e/only.png", ".hidden/x.md"]),
    st.text(alphabet="ab #|\n", max_size=12), max_size=11,
)


@settings(max_examples=60, deadline=None)
@given(SYNC_TREE)
def test_a_first_build_syncing_the_spec_inputs_first_gets_the_site_of_one_sync(files):
    """``sync_sources(only=...)`` then a whole sync, into an empty SITE, copies the same files,
    makes the same folders and records the same state as one whole sync; after the first call
    SITE has every folder and exactly the spec stage's inputs."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        content = root / "content"
        content.mkdir()
        write_tree(content, files)
        one, two = root / "one", root / "two"
        one.mkdir(), two.mkdir()
        state_one, state_two = BuildState(), BuildState()
        written_one, removed_one = sync_sources(content, one, state=state_one)
        written_two, removed = sync_sources(content, two, state=state_two, only=spec_input)
        listing = lambda site: sorted(p.relative_to(site).as_posix() + ("/" if p.is_dir() else "") for p in site.rglob("*"))  # noqa: E731
        assert [p for p in listing(two) if not p.endswith("/")] == sorted(
            rel for rel in files if spec_input(rel) and not rel.startswith(".")), "only the spec inputs so far"
        assert [p for p in listing(two) if p.endswith("/")] == [p for p in listing(one) if p.endswith("/")]
        assert removed == []
        written, removed = sync_sources(content, two, state=state_two)
        assert listing(two) == listing(one) and removed == removed_one == []
        assert {p: (two / p).read_bytes() for p in listing(two) if not p.endswith("/")} == {
            p: (one / p).read_bytes() for p in listing(one) if not p.endswith("/")}
        assert written_two + written == written_one
        assert state_two.new.get("sources", {}).keys() == state_one.new.get("sources", {}).keys()


@settings(max_examples=60, deadline=None)
@given(SYNC_TREE, st.sets(st.sampled_from(["a.md", "img.png", "g/b.md", "g/h/c.md", "g/h/d.txt", "e/only.png", "g/qa-pairs.md"])))
def test_a_resync_after_removals_makes_the_tree_of_a_fresh_sync(files, gone):
    """Files removed from CONTENT, folders left empty (issue 35.6): SITE ends with the folders a
    sync into an empty SITE makes, none more (a folder with nothing to copy below it is none)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        content, site, fresh = root / "content", root / "site", root / "fresh"
        for folder in (content, site, fresh):
            folder.mkdir()
        write_tree(content, files)
        sync_sources(content, site, state=BuildState())
        for rel in gone & set(files):
            (content / rel).unlink()
        (content / "z" / "empty").mkdir(parents=True)
        sync_sources(content, site, state=BuildState())
        sync_sources(content, fresh, state=BuildState())
        listing = lambda site: sorted(p.relative_to(site).as_posix() + ("/" if p.is_dir() else "") for p in site.rglob("*"))  # noqa: E731
        assert listing(site) == listing(fresh)


@pytest.mark.parametrize("retire", [False, True])
def test_an_emptied_content_folder_leaves_no_folder_in_the_site(tmp_path, retire):
    """A rebuild after a folder's documents were removed gives the fresh build's tree exactly:
    no empty folder where the stages' outputs (``_chunks/``, index.json) were (issue 35.6)."""
    from test_build import FILES, make_site

    from pipeline.site.build import build

    content, site, embedder, _, cfg = make_site(tmp_path, files={**FILES, "reference/img/x.png": b"png"}, retire_removed_files=retire)
    for rel in ("guide/tools/tool.md", "reference/notes.md", "reference/img/x.png"):
        (content / rel).unlink()  # guide/tools/ and reference/img/ stay, empty; reference/ holds only img/
    for _ in range(2 if retire else 1):  # a second build expires what the first kept one build for readers
        build(content, site, cfg, embedder=embedder, progress=False)
    fresh = tmp_path / "fresh"
    build(content, fresh, cfg, embedder=embedder, progress=False)
    listing = lambda root: sorted(  # noqa: E731
        p.relative_to(root).as_posix() + ("/" if p.is_dir() else "") for p in root.rglob("*") if not p.name.startswith(".pipeline"))
    assert listing(site) == listing(fresh)
    assert not (site / "guide" / "tools").exists() and not (site / "reference").exists()
