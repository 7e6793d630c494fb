"""pipeline.search.groups: content-defined groups of whole documents, whose boundaries an edit of
one document moves only around it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.search.groups import groups

RUNS = st.lists(st.integers(0, 40), min_size=1, max_size=120)


def tile(found: list[tuple[int, int]], n: int) -> bool:
    at = 0
    for first, count in found:
        if first != at or count < 1:
            return False
        at += count
    return at == n


@settings(max_examples=200, deadline=None)
@given(RUNS, st.sampled_from([8, 32, 128]))
def test_groups_tile_the_run_within_the_cap(rows, target):
    keys = [f"t/{i}" for i in range(len(rows))]
    found = groups(keys, rows, target)
    assert tile(found, len(rows)) and found == groups(keys, rows, target)
    assert all(sum(rows[f:f + n]) <= 4 * target or n == 1 for f, n in found)


@settings(max_examples=300, deadline=None)
@given(RUNS, st.integers(0, 119), st.integers(-3, 3), st.sampled_from([8, 32]))
def test_an_edit_of_one_document_moves_no_boundary_far_from_it(rows, edited, change, target):
    keys = [f"topic/{i}" for i in range(len(rows))]
    edited %= len(rows)
    after = list(rows)
    after[edited] = max(0, after[edited] + change)
    before_groups, after_groups = groups(keys, rows, target), groups(keys, after, target)
    # the groups that end before the edited document's group begins are the same, and once both
    # agree on a boundary after it, every later group is the same: only a run around it differs
    begins = max(f for f, _ in before_groups if f <= edited)
    assert [g for g in before_groups if g[0] + g[1] <= begins] == [g for g in after_groups if g[0] + g[1] <= begins]
    common = sorted({f for f, _ in before_groups} & {f for f, _ in after_groups} - set(range(begins + 1)))
    if common:
        assert [g for g in before_groups if g[0] >= common[0]] == [g for g in after_groups if g[0] >= common[0]]


def test_a_typical_edit_leaves_every_group_but_its_own():
    import random

    rng = random.Random(3)
    rows = [max(1, int(rng.lognormvariate(1.5, 0.8))) for _ in range(2000)]
    keys = [f"docs/page-{i}" for i in range(len(rows))]
    base = set(groups(keys, rows, 32))
    moved = 0
    for _ in range(200):
        d = rng.randrange(len(rows))
        after = list(rows)
        after[d] += 1  # a document gains a chunk
        moved += len(set(groups(keys, after, 32)) - base) > 1  # more than its own group changed
    assert moved <= 10  # a boundary moves after a few edits in a hundred, and then one or two groups
