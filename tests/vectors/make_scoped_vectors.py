"""Write tests/vectors/scoped.json: which files Python's client reads for a topic-scoped query
(``SearchIndex.scope``, ``scoped_files``, ``_record_file``) on manifests whose topics have a
bundle or their own term shards and record blocks (``_search/`` version 5), which
searchindex.js (``scopeOf``, ``scopedFiles``, ``topicRecordFile``) must reproduce
(tests/js/scoped.test.mjs; tests/test_search_index.py checks the file is current).

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


def manifest(rng: random.Random) -> dict:
    """A manifest of topics in site order, each with a bundle or its own shards (or, rarely, neither)."""
    topics, start = [], 0
    for i, topic_id in enumerate(rng.sample(IDS, rng.randint(1, len(IDS)))):
        count = rng.choice([0, 1, 5, 127, 128, 129, 300, 1000])
        kind = rng.choices(["bundle", "shards", "neither"], [4, 5, 1])[0]
        topics.append({"id": topic_id, "start": start, "count": count,
                       "bundle": f"topics/{i}.json" if kind == "bundle" else None,
                       "shards": rng.choice([1, 2, 7, 40]) if kind == "shards" else None})
        start += count
    return {"topics": topics, "block": 128, "chunks": start, "records": rng.choice(["records.json", None])}


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
                # records: the file each number's record comes from (no bundle held)
                "records": [[n, index._record_file(n, scope)] for n in numbers],
            })
    path = Path(__file__).parent / "scoped.json"
    text = json.dumps({"manifests": manifests, "cases": cases}, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(cases)} cases, {sum(c['scope'] is not None for c in cases)} scoped")


if __name__ == "__main__":
    main()
