"""Chunk texts' index terms counted ahead (search/bodies.py): exactly ``Counter(terms(text))``,
keys in the same order, within a budget; the search index built with them is the same bytes."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.handoff import BuildHandoff
from pipeline.search.bodies import BodyTerms
from pipeline.search.index import SEARCH_DIR, build_search_index
from pipeline.siteformat.searchtext import terms
from searchsites import SMALL, built, encoder_of, files_of  # noqa: F401 - the fixture

TEXTS = st.lists(
    st.text(alphabet=st.sampled_from("ab_ c.Zé9\nthe running runs"), max_size=60), max_size=12
)


@given(TEXTS)
@settings(max_examples=200, deadline=None)
def test_counts_are_those_of_terms_in_first_occurrence_order(texts):
    bodies = BodyTerms()
    bodies.add(texts)
    for text in texts:
        got, want = bodies.counts(text), Counter(terms(text))
        assert got == want and list(got) == list(want)
    assert bodies.counts("a text never added: zulu") is None


def test_the_budget_bounds_what_is_kept():
    bodies = BodyTerms(budget=5)
    bodies.add(["alpha bravo charlie", "delta echo foxtrot", "golf"])
    assert bodies.counts("alpha bravo charlie") == Counter(terms("alpha bravo charlie"))
    assert bodies.counts("delta echo foxtrot") is None  # 3 + 3 pairs would pass 5: counted later
    assert bodies.size <= 5


def test_the_index_built_with_counted_bodies_is_the_same_bytes(built, tmp_path):  # noqa: F811
    copy = Path(shutil.copytree(built, tmp_path / "s"))
    before, encoder = files_of(copy), encoder_of(copy)
    shutil.rmtree(copy / SEARCH_DIR)
    bodies = BodyTerms()
    bodies.add(p.read_text(encoding="utf-8") for p in sorted(copy.rglob("_chunks/*.md")))
    asked = []
    counts = bodies.counts
    bodies.counts = lambda text: asked.append(text) or counts(text)
    build_search_index(copy, **SMALL, encoder=encoder, handoff=BuildHandoff(bodies=bodies))
    assert files_of(copy) == before
    assert asked and all(counts(text) is not None for text in asked)  # every chunk's counts came from here
