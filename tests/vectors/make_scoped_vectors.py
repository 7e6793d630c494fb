"""Write tests/vectors/scoped.json: which files Python's client reads for a topic-scoped query
(``SearchIndex.scope``, ``scoped_files``, ``_container``) on manifests whose topics have segments
or their own term shards and record blocks (``_search/`` version 6), on sites of parts, of
records.json or of record blocks, which searchplan.js (``scopeOf``, ``scopedFiles``,
``recordContainer``) must reproduce (tests/js/scoped.test.mjs; tests/test_search_index.py checks
the file is current).

Run from the repository root: ``python tests/vectors/make_scoped_vectors.py``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.client.searchindex import Filters, SearchIndex  # noqa: E402

TERMS = ["cache", "retri", "webhook", "root_path", "été", "naïv", "数据", "x", "configur", "token", "schema", "log"]
IDS = ["", "guide", "guide/install", "guide/installing", "reference", "reference/cli", "reference/api", "blog", "blog/2024"]


def name(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(12))


def ranges(rng: random.Random, first: int, docs: int) -> list[list]:
    """Consecutive runs covering documents first .. first + docs - 1."""
    out, at = [], first
    while at < first + docs:
        n = rng.randint(1, first + docs - at)
        out.append([at, n, name(rng)])
        at += n
    return out


def manifest(rng: random.Random) -> dict:
    """A manifest of topics in site order, each with segments or its own shards (or, rarely, neither)."""
    topics, start, documents = [], 0, []
    kind_of_site = rng.choice(["parts", "records", "blocks"])
    for topic_id in rng.sample(IDS, rng.randint(1, len(IDS))):
        counts = [rng.choice([0, 1, 2, 5, 30]) for _ in range(rng.randint(1, 6))]
        first = len(documents)
        documents += counts
        kind = rng.choices(["segments", "shards", "neither"], [4, 5, 1])[0]
        topics.append({"id": topic_id, "start": start, "count": sum(counts), "first": first, "docs": len(counts),
                       "segments": ranges(rng, first, len(counts)) if kind == "segments" else None,
                       "shards": [name(rng) for _ in range(rng.choice([1, 2, 8]))] if kind == "shards" else None,
                       "blocks": ranges(rng, first, len(counts)) if kind == "shards" or kind_of_site == "blocks" else None})
        start += sum(counts)
    return {"topics": topics, "chunks": start, "documents": documents,
            "records": "records.json" if kind_of_site == "records" else None,
            "parts": ranges(rng, 0, len(documents)) if kind_of_site == "parts" else None,
            "terms": None if kind_of_site == "parts" else [name(rng) for _ in range(4)]}


def main() -> None:
    rng = random.Random(5)
    manifests, cases = [], []
    for k in range(40):
        meta = manifest(rng)
        manifests.append(meta)
        for prefix in [None, "", *rng.sample(IDS, 3), "/guide/", "nowhere"]:
            index = SearchIndex(None, meta)
            scope = index.scope(Filters(topic=prefix))
            terms = rng.sample(TERMS, rng.randint(1, 5))
            numbers = sorted(rng.sample(range(meta["chunks"]), min(meta["chunks"], 6)))
            cases.append({
                "manifest": k, "prefix": prefix, "scope": scope, "terms": terms,
                "files": index.scoped_files(scope, terms) if scope is not None else None,
                # records: the file each number's record comes from ([path, first chunk, chunks], or None: records.json)
                "records": [[n, list(c) if (c := index._container(n, scope)) else None] for n in numbers],
            })
    path = Path(__file__).parent / "scoped.json"
    text = json.dumps({"manifests": manifests, "cases": cases}, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(cases)} cases, {sum(c['scope'] is not None for c in cases)} scoped")


if __name__ == "__main__":
    main()
