"""Related chunks of a big topic: the inverted file of ``topicspec/relatedivf.py`` (threshold lowered)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pipeline.topicspec.context as context
import pipeline.topicspec.relatedivf as relatedivf
from pipeline.topicspec.context import related, related_update, row_keys
from test_context import _reference_related


def _clustered(seed: int, n: int, dim: int = 16, clusters: int = 30, noise: float = 0.35) -> np.ndarray:
    """Unit rows around ``clusters`` random centres: topics have neighbourhoods, as chunks do."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    rows = centres[rng.integers(0, clusters, size=n)] + noise * rng.normal(size=(n, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _reference_ivf(vectors, k):
    """The definition: each row's k best (rounded float64, ties to the lower row) among the rows
    of the lists it probes, with the whole similarity matrix."""
    exact = np.asarray(vectors, dtype=np.float64)
    keys = row_keys(exact)
    lists = relatedivf.Lists(exact, keys, relatedivf.fitted_on(keys))
    sims = exact @ exact.T
    out = []
    for i in range(len(exact)):
        candidates = sorted({int(j) for c in lists.probes[i] for j in lists.members[c]} - {i})
        scored = sorted(((round(float(sims[i, j]), 4), j) for j in candidates), key=lambda p: (-p[0], p[1]))
        out.append([(j, s) for s, j in scored[:k]])
    return out


def _recall(approx, exact) -> float:
    found = sum(len({j for j, _ in a} & {j for j, _ in e}) for a, e in zip(approx, exact))
    return found / max(1, sum(len(e) for e in exact))


@pytest.fixture
def approximate(monkeypatch):
    monkeypatch.setattr(relatedivf, "APPROXIMATE_ROWS", 8)


def test_small_topics_stay_exact(monkeypatch):
    vectors = _clustered(1, 300)
    calls = []
    monkeypatch.setattr(context, "_related_of_ivf", lambda *a: calls.append(a))
    assert related(vectors, 3) == _reference_related(vectors, 3) and not calls


@given(st.integers(0, 10_000), st.integers(1, 6), st.sampled_from([7, 300, 1 << 22]))
@settings(max_examples=40, deadline=None)
def test_approximate_related_is_the_k_best_of_the_lists_probed(seed, k, cells):
    # Blocks of any size (a row at a time included) give the definition's answer exactly.
    vectors = _clustered(seed, 200, dim=8)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relatedivf, "APPROXIMATE_ROWS", 8)
        patch.setattr(context, "RELATED_BLOCK_CELLS", cells)
        assert related(vectors, k) == _reference_ivf(vectors, k)


@given(st.lists(st.lists(st.integers(-3, 3), min_size=4, max_size=4), min_size=8, max_size=60), st.integers(0, 5))
@settings(max_examples=150, deadline=None)
def test_approximate_related_with_ties_and_duplicates_is_the_definition(rows, k):
    # Integer components: exact similarities, ties and duplicate rows everywhere.
    vectors = np.array(rows, dtype=np.float32) / 4
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relatedivf, "APPROXIMATE_ROWS", 8)
        patch.setattr(relatedivf, "PROBES", 2)
        got = related(vectors, k)
        assert got == related(vectors.copy(), k)  # the same answer every time
        if k and relatedivf.fitted_on(row_keys(vectors)) is not None:
            assert got == _reference_ivf(vectors, k)


@given(st.integers(0, 10_000))
@settings(max_examples=15, deadline=None)
def test_approximate_related_finds_most_of_the_exact_neighbours(seed):
    vectors = _clustered(seed, 1500)
    exact = related(vectors, 3)  # below the threshold: exact (test_context.py)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relatedivf, "APPROXIMATE_ROWS", 8)
        approx = related(vectors, 3)
    assert _recall(approx, exact) >= 0.9
    # a row's list only names other rows, best first, at their exact similarity
    sims = vectors @ vectors.T
    for i, listed in enumerate(approx):
        assert i not in [j for j, _ in listed] and len(listed) == 3
        assert all(s == round(float(sims[i, j]), 4) for j, s in listed)
        assert [s for _, s in listed] == sorted((s for _, s in listed), reverse=True)


@given(
    st.integers(0, 10_000),
    st.lists(st.integers(0, 299), max_size=4),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 300)), max_size=4),
    st.integers(1, 5),
)
@settings(max_examples=60, deadline=None)
def test_related_update_of_a_big_topic_equals_related(approximate_seed, removed, added, k):
    # An edit (rows removed, rows inserted anywhere): the update is what ``related`` computes
    # from scratch, whether or not the edit changed the rows the centroids are fitted to.
    old = _clustered(approximate_seed, 300, dim=8)
    new_rows = [r for i, r in enumerate(old) if i not in set(removed)]
    for seed, at in added:
        new_rows.insert(min(at, len(new_rows)), _clustered(seed, 1, dim=8)[0])
    new = np.array(new_rows)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relatedivf, "APPROXIMATE_ROWS", 8)
        previous = (row_keys(old), related(old, k))
        assert related_update(new, k, row_keys(new), previous) == related(new, k)


def test_related_update_of_a_big_topic_recomputes_only_what_the_edit_touched(approximate, monkeypatch):
    old = _clustered(5, 3000)
    keys = row_keys(old)
    sample = set(relatedivf.fitted_on(keys)[1])
    edited = next(i for i in range(1500, 3000) if keys[i] not in sample)
    new = old.copy()
    new[edited] = _clustered(99, 1)[0]
    assert relatedivf.fitted_on(row_keys(new)) == relatedivf.fitted_on(keys)  # the same centroids
    previous = (keys, related(old, 3))
    computed: list[int] = []
    real = context._related_of_ivf
    monkeypatch.setattr(context, "_related_of_ivf", lambda exact, rows, k, lists: computed.extend(rows.tolist()) or real(exact, rows, k, lists))
    assert related_update(new, 3, row_keys(new), previous) == real(new, np.arange(3000), 3, relatedivf.Lists(
        new, row_keys(new), relatedivf.fitted_on(row_keys(new))))
    listed_old = {r for r in range(3000) if any(j == edited for j, _ in previous[1][r])}
    assert sorted(computed) == sorted({edited} | listed_old) and len(computed) < 30


def _notes(count: int) -> dict[str, str]:
    """``count`` documents of three sections each, in one folder, from a small vocabulary."""
    import random

    rng = random.Random(7)
    words = "stripe order cache vector index chunk topic query budget token page build edit search".split()
    files = {}
    for i in range(count):
        sections = [f"## Part {s}\n\n" + " ".join(rng.choice(words) for _ in range(60)) + ".\n" for s in range(3)]
        files[f"notes/n{i:03}.md"] = f"# Note {i}\n\n" + "\n".join(sections)
    return files


def test_a_big_topics_edit_rebuild_updates_its_related_lists_and_equals_a_clean_build(tmp_path, monkeypatch):
    # End to end, threshold lowered: a build's lists are reused by the next one (rows searched
    # fewer than the topic's, for some edit that left the centroids' sample alone), and every
    # rebuild's site is byte for byte a clean build's.
    from conftest import write_tree
    from test_reuse_state import assert_like_clean, run

    monkeypatch.setattr(relatedivf, "APPROXIMATE_ROWS", 8)
    monkeypatch.setattr(relatedivf, "SAMPLE_BITS", 0)  # centroids are the sample: 1 row in 2**level
    content = write_tree(tmp_path / "content", _notes(40))
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    searched: list[tuple[int, int]] = []
    real = context._related_of_ivf
    monkeypatch.setattr(context, "_related_of_ivf", lambda exact, rows, k, lists: searched.append((len(exact), len(rows))) or real(exact, rows, k, lists))
    for i in (5, 17, 29):
        path = content / f"notes/n{i:03}.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nOne more sentence about the stripe order.\n", encoding="utf-8")
        run(content, site, cache)
        assert_like_clean(tmp_path, content, site)
    assert searched and all(topic >= 100 for topic, _ in searched)  # the lists were approximate
    assert any(rows < topic // 4 for topic, rows in searched)  # an edit's update, not a recompute
