"""Chunk context: position, neighbours' summaries, prev/next and related links in index.json."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree, document_resources
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from pipeline.topicspec.context import plain_text, position, related, summarize
from test_build import load


def test_summarize_cuts_at_the_last_sentence_end_that_fits():
    text = "This is a long paragraph about CRM integration. It has multiple sentences."
    assert summarize(text) == text  # fits in 100
    assert summarize(text, 60) == "This is a long paragraph about CRM integration."
    long = "First sentence here. " + "Second sentence is much longer and goes on and on and on and on and on. Third sentence pushes it past the limit."
    assert summarize(long) == "First sentence here. Second sentence is much longer and goes on and on and on and on and on."


def test_summarize_falls_back_to_words_and_an_ellipsis():
    text = "word " * 40
    out = summarize(text)
    assert out.endswith("...") and len(out) <= 100 and not out[:-3].endswith(" ")
    assert summarize("x" * 150) == "x" * 97 + "..."


def test_a_long_first_sentence_is_cut_at_a_clause_break_when_one_keeps_half_the_room():
    text = ("The index lists every chunk of every document in the topic, with its title, header path and "
            "similarity to the baseline, in stripe order.")
    assert summarize(text) == "The index lists every chunk of every document in the topic, with its title..."  # not "... and..."
    clause = "Every chunk file starts with its heading context; the rest is the exact source span of the chunk, byte for byte."
    assert summarize(clause) == "Every chunk file starts with its heading context; the rest is the exact source span of the chunk..."
    early = "Note: " + "word " * 30
    assert summarize(early).startswith("Note: word word") and summarize(early).endswith("word...")


def test_abbreviations_and_decimals_are_not_sentence_ends():
    text = "Use a tool, e.g. the CLI, or version 3.11 of Python for this build which takes about forty minutes to finish on CI."
    assert summarize(text).endswith("...")


@given(st.text(max_size=400))
def test_summaries_never_exceed_100_characters(text):
    assert len(summarize(text)) <= 100


def test_plain_text_drops_headings_code_and_markup():
    md = (
        "## Setup\n\nInstall **the** package with `pip install x` and read [the docs](http://x.invalid).\n\n"
        "```bash\nrm -rf /\n```\n\n- one item\n> quoted _text_ with `_links`\n"
    )
    assert plain_text(md) == "Install the package with pip install x and read the docs. one item quoted text with _links"
    assert plain_text("| a | b |\n|---|---|\n| 1 | 2 |\n") == ""  # a table is not prose: the caller takes the title
    assert plain_text("Fields:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n") == "Fields:"


def test_related_excludes_self_and_orders_by_similarity_then_row():
    v = np.array([[1, 0], [1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    out = related(v, 2)
    assert out[0] == [(1, 1.0), (2, 0.6)]
    assert out[3] == [(2, 0.8), (0, 0.0)]
    assert related(v[:1], 3) == [[]] and related(v, 0) == [[], [], [], []]


def test_position_is_one_based():
    assert position(1, 5) == "2 of 5"


# -- in index.json ---------------------------------------------------------------------------

GUIDE = "# Guide\n\nThe guide overview. It is short.\n\n" + "".join(
    f"## Step {i}\n\nStep {i} does thing {i}. More words follow here for step {i}.\n\n" for i in range(1, 6)
)
FAQ = "# FAQ\n\nCommon questions about the guide.\n\n## Steps\n\nHow the steps thing works.\n"


@pytest.mark.parametrize("related_k", [3, 1])
def test_every_item_links_its_neighbours_and_related_chunks(tmp_path, related_k):
    content = write_tree(tmp_path / "content", {"kb/guide.md": GUIDE, "kb/faq.md": FAQ})
    site = tmp_path / "site"
    build(content, site, SiteConfig(cache_dir=tmp_path / "c", related_k=related_k), embedder=HashingEmbedder(), progress=False)
    chunks = document_resources(site, "kb")
    all_hrefs = {item["_links"]["self"]["href"] for c in chunks.values() for item in c["items"]}
    absolute = lambda item: "/kb/" + item["href"]  # noqa: E731 - _links hrefs are absolute (index/hal.py)
    seen_other_document = False
    for stem, chunk_set in chunks.items():
        items = chunk_set["items"]
        for i, item in enumerate(items):
            links = item["_links"]
            assert item["position"] == f"{i + 1} of {len(items)}"
            if i == 0:
                assert "prev" not in links and "prev_summary" not in item
            else:
                assert links["prev"] == {"href": absolute(items[i - 1]), "title": items[i - 1]["title"]}
                assert 0 < len(item["prev_summary"]) <= 100
            if i == len(items) - 1:
                assert "next" not in links and "next_summary" not in item
            else:
                assert links["next"]["href"] == absolute(items[i + 1])
            rel = links["related"]
            assert len(rel) == min(related_k, len(all_hrefs) - 1)
            assert absolute(item) not in {r["href"] for r in rel} and {r["href"] for r in rel} <= all_hrefs
            assert [r["similarity"] for r in rel] == sorted((r["similarity"] for r in rel), reverse=True)
            seen_other_document |= any(not r["href"].startswith(f"/kb/_chunks/{stem}-") for r in rel)
            for link in [*rel, links.get("prev"), links.get("next")]:
                if link:
                    assert (site / link["href"].lstrip("/")).is_file()
            assert "related" not in item  # moved into _links
    assert seen_other_document  # related chunks come from the whole topic
    guide = chunks["guide"]["items"]
    assert guide[1]["prev_summary"] == "The guide overview. It is short."  # the neighbour's text, no heading
    assert guide[0]["next_summary"] == "Step 1 does thing 1. More words follow here for step 1."


def test_related_matches_a_full_sort_with_ties_and_rounding():
    """The candidate cut in ``related`` never changes its answer (ties after rounding included)."""
    import numpy as np

    from pipeline.topicspec.context import related

    rng = np.random.default_rng(3)
    for n, k, dim in [(2, 3, 4), (5, 4, 3), (40, 5, 3), (120, 5, 8), (60, 10, 2)]:
        vectors = rng.normal(size=(n, dim))
        vectors[n // 2] = vectors[0]  # exact ties
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        sims = vectors @ vectors.T
        expected = []
        for i in range(n):
            scored = sorted(((round(float(sims[i, j]), 4), j) for j in range(n) if j != i), key=lambda p: (-p[0], p[1]))
            expected.append([(j, s) for s, j in scored[:k]])
        assert related(vectors, k) == expected


# -- no n x n matrix (issue 15) -----------------------------------------------------------------


def _reference_related(vectors, k):
    """The former implementation: the whole n x n similarity matrix at once."""
    sims = np.asarray(vectors, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T
    out = []
    for i in range(len(vectors)):
        scored = sorted(((round(float(sims[i, j]), 4), j) for j in range(len(vectors)) if j != i), key=lambda p: (-p[0], p[1]))
        out.append([(j, s) for s, j in scored[:k]])
    return out


@pytest.mark.parametrize("k", [1, 3, 10])
def test_related_blockwise_equals_the_full_matrix(monkeypatch, k):
    import pipeline.topicspec.context as context

    rng = np.random.default_rng(7)
    v = rng.normal(size=(57, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[5] = v[9]  # exact ties go to the lower row
    expected = _reference_related(v, k)
    monkeypatch.setattr(context, "RELATED_BLOCK_CELLS", 57 * 4)  # blocks of 4 rows
    assert related(v, k) == expected


@given(
    st.lists(st.lists(st.integers(-3, 3), min_size=4, max_size=4), min_size=1, max_size=40),
    st.integers(0, 6),
    st.sampled_from([2, 3, 16]),
    st.sampled_from([1, 7, 1 << 22]),
)
@settings(max_examples=300, deadline=None)
def test_related_screened_in_float32_is_the_exact_answer(rows, k, group, cells):
    # Small integer components: every similarity is exact in float32 and float64 alike, so ties
    # (duplicate rows, equal sums) are everywhere and the answer is known without rounding doubt.
    # Groups and blocks far smaller than a real topic's exercise the screen's every branch.
    import pipeline.topicspec.context as context

    vectors = np.array(rows, dtype=np.float32) / 4
    expected = _reference_related(vectors, k)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(context, "_SCREEN_GROUP", group)
        patch.setattr(context, "RELATED_BLOCK_CELLS", cells)
        assert related(vectors, k) == expected


def test_related_screen_keeps_what_float32_misorders_or_rounding_ties(monkeypatch):
    # A tie after rounding that float32 orders the other way: 0.5 and 0.50004 both round to
    # 0.5, and the lower row wins; a screen at the float32 best alone would keep only row 2.
    v = np.array([[1, 0], [0.5, 0.75**0.5], [0.50004, (1 - 0.50004**2) ** 0.5]], dtype=np.float64)
    assert related(v, 1)[0] == [(1, 0.5)]
    # Long vectors: float32 misses by more than a unit of the 4th decimal (similarities ~1e4);
    # the screen's margin grows with the norms, and the answer is still the float64 one.
    rng = np.random.default_rng(11)
    long = rng.normal(size=(60, 8)) * 1000
    long[7] = long[3]
    expected = _reference_related(long, 5)
    assert related(long, 5) == expected
    import pipeline.topicspec.context as context

    monkeypatch.setattr(context, "_SCREEN_GROUP", 1)  # the screen at each row's float32 k-th itself
    assert related(long, 5) == expected
    # Near a long row, similarities ~8e6 apart by ~0.1: below float32's step there (0.5), so
    # float32 orders them at random; float64 tells them apart.
    near = np.full((40, 8), 1000.0) + rng.normal(size=(40, 8)) * 1e-4
    assert related(near, 5) == _reference_related(near, 5)


def test_related_never_allocates_an_n_by_n_matrix(monkeypatch):
    import tracemalloc

    import pipeline.topicspec.context as context

    n = 3000  # an n x n float64 matrix would be 72 MB
    rng = np.random.default_rng(3)
    v = rng.normal(size=(n, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    monkeypatch.setattr(context, "RELATED_BLOCK_CELLS", n * 50)  # 1.2 MB of similarities at once
    tracemalloc.start()
    try:
        out = related(v, 3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(out) == n and all(len(r) == 3 for r in out)
    assert peak < 8 * n * n / 10  # far below the full matrix (numpy reports to tracemalloc)


# -- one edit in a big topic: the related lists updated, not recomputed ---------------------------


@given(
    st.lists(st.lists(st.integers(-3, 3), min_size=4, max_size=4), min_size=1, max_size=40),
    st.lists(st.lists(st.integers(-3, 3), min_size=4, max_size=4), min_size=0, max_size=6),
    st.lists(st.integers(0, 39), max_size=6),
    st.lists(st.integers(0, 45), max_size=6),
    st.lists(st.tuples(st.integers(0, 45), st.integers(0, 45)), max_size=2),
    st.integers(0, 6),
    st.sampled_from([5, 1 << 22]),
)
@settings(max_examples=500, deadline=None)
def test_related_update_equals_related_after_any_edit(rows, added, removed, places, moves, k, cells):
    # Integer components (exact similarities, ties everywhere, duplicate rows): rows removed,
    # rows inserted anywhere (an edited document's chunks) and rows moved (a renamed document's
    # chunks, sorted elsewhere); the update must be exactly what ``related`` computes from scratch.
    from pipeline.topicspec.context import related_update, row_keys

    old = np.array(rows, dtype=np.float32) / 4
    new_rows = [r for i, r in enumerate(rows) if i not in set(removed)]
    for row, at in zip(added, places):
        new_rows.insert(min(at, len(new_rows)), row)
    for source, target in moves:
        if new_rows:
            new_rows.insert(min(target, len(new_rows) - 1), new_rows.pop(source % len(new_rows)))
    new = np.array(new_rows, dtype=np.float32).reshape(-1, 4) / 4
    previous = (row_keys(old), related(old, k))
    import pipeline.topicspec.context as context

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(context, "RELATED_BLOCK_CELLS", cells)  # blocks of a row or two: every boundary
        assert related_update(new, k, row_keys(new), previous) == _reference_related(new, k)


def test_related_update_reuses_the_lists_of_rows_kept(monkeypatch):
    # One row edited among 300: only the new row and the rows that listed the old one are
    # computed in full; the others keep their lists, merged with the new row.
    import pipeline.topicspec.context as context
    from pipeline.topicspec.context import related_update, row_keys

    rng = np.random.default_rng(5)
    old = rng.normal(size=(300, 8)).astype(np.float32)
    old /= np.linalg.norm(old, axis=1, keepdims=True)
    previous = (row_keys(old), related(old, 3))
    new = old.copy()
    new[150] = rng.normal(size=8)
    new[150] /= np.linalg.norm(new[150])
    computed: list[int] = []
    real = context._related_of
    monkeypatch.setattr(context, "_related_of", lambda exact, rows, k: computed.extend(rows.tolist()) or real(exact, rows, k))
    assert related_update(new, 3, row_keys(new), previous) == _reference_related(new, 3)
    listed_old = {r for r in range(300) if any(j == 150 for j, _ in previous[1][r])}
    assert sorted(computed) == sorted({150} | listed_old) and len(computed) < 20
