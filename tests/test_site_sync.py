"""pipeline.site.sync: CONTENT mirrored into SITE, in one pass or the spec stage's inputs first."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.site.state import BuildState
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
