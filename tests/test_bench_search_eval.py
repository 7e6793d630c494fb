"""The search eval's lexical index is filled as the site's (``build_search_index``) is.

Run: .venv/bin/python -m pytest tests/test_bench_search_eval.py -q   (no model, no data needed)
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from bench import chroma_eval as ce
from bench.search_eval import lexical_index, site_fields
from pipeline.siteformat.searchtext import terms

CORPUS = "# Caching guide\n\nIntro text.\n\n## Setup { #setup }\n\nInstall redis first.\n"


def toy() -> tuple[ce.Dataset, ce.ChunkSet]:
    intro, setup = CORPUS.index("Intro"), CORPUS.index("Install")
    texts = ["# Caching guide\n\nIntro text.", "# Caching guide\n## Setup { #setup }\n\nInstall redis first."]
    ends = [intro + len("Intro text."), setup + len("Install redis first.")]
    return ce.Dataset({"c": CORPUS}, [], "toy"), ce.ChunkSet(["c", "c"], np.array([intro, setup]), np.array(ends), texts)


def test_fields_are_title_header_path_and_chunk_file():
    fields, lengths = site_fields(*toy())
    overview, setup = fields
    assert overview["title"] == Counter(terms("Caching guide"))
    assert overview["heading"] == Counter(terms("Caching guide"))  # no header path: the title
    assert setup["heading"] == Counter(terms("Setup"))  # title line and anchor left out
    assert setup["body"] == Counter(terms("Caching guide Setup setup Install redis first"))
    assert lengths[1]["body"] == sum(setup["body"].values())


def test_the_overview_takes_the_title_as_its_heading():
    index = lexical_index(*toy())
    (a, ia), (b, ib) = sorted(index[terms("caching")[0]])
    # both chunks carry the title (title field, body); only the overview also has it as heading
    assert (a, b) == (0, 1) and ia > ib


def test_a_realdocs_corpus_id_names_its_folder():
    from bench.search_eval import folder

    assert folder("fastapi__tutorial__path_params") == "fastapi__tutorial"
    assert folder("fastapi___llm-test") == "fastapi"  # fastapi/_llm-test.md
    assert folder("apt-readme") == ""


def test_the_budget_keeps_the_documents_of_the_first_shards_in_hit_order():
    import numpy as np

    from bench.search_eval import _document_shards, _within_shards
    from pipeline.search.groups import shard_groups

    rows_of = {"a__x": np.arange(60), "a__y": np.arange(60, 90), "a__z": np.arange(90, 100), "b__w": np.arange(100, 105)}
    shards = _document_shards(list(rows_of), rows_of)
    # folder a's documents in the site's shards of folder a, folder b's in its own
    groups = shard_groups(["a/a__x", "a/a__y", "a/a__z"], [60, 30, 10])
    expected = {c: g for g, (first, n) in enumerate(groups) for c in ["a__x", "a__y", "a__z"][first:first + n]}
    assert shards == {**expected, "b__w": len(groups)}
    fixed = {"a__x": 0, "a__y": 1, "a__z": 1, "b__w": 2}
    assert _within_shards(["b__w", "a__y", "a__x", "a__z"], fixed, 2) == ["b__w", "a__y", "a__z"]
    assert _within_shards(["b__w", "a__y", "a__x", "a__z"], fixed, 1) == ["b__w"]
