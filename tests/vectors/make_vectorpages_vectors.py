"""Write tests/vectors/vectorpages.json: which vector pages Python's search client reads for a
topic (``searchplan.topic_pages``), within a page budget (``SearchIndex.vector_files``), and
whether a topic-scoped query reads its topics' pages whole (``SearchIndex.whole_topics``: at most
3 topics, 600 rows and 3 pages), which searchplan.js (``topicPages``, ``vectorFiles``,
``wholeTopics``) must reproduce (tests/js/vectorpages.test.mjs; tests/test_vectorpages.py checks
the file is current).

Run from the repository root: ``python tests/vectors/make_vectorpages_vectors.py``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.client.searchindex import Filters, SearchIndex  # noqa: E402

IDS = ["", "guide", "guide/install", "guide/installing", "reference", "reference/cli", "notes", "blog/2024"]
DOCS = [0, 1, 5, 31, 32, 33, 64, 65, 96, 97, 150, 400]


def manifest(rng: random.Random) -> dict:
    topics, start = [], 0
    for topic_id in rng.sample(IDS, rng.randint(1, len(IDS))):
        docs = rng.choice(DOCS)
        counts = [rng.choice([1, 2, 4, 9]) for _ in range(docs)]
        first = sum(t["docs"] for t in topics)
        embeddings = None if rng.random() < 0.1 else (f"{topic_id}/_embeddings.bin" if topic_id else "_embeddings.bin")
        topics.append({"id": topic_id, "start": start, "count": sum(counts), "first": first, "docs": docs,
                       "documents": None, "embeddings": embeddings, "segments": None, "shards": None, "blocks": None})
        start += sum(counts)
    # "documents": none listed (what these functions read is the topics')
    return {"topics": topics, "chunks": start, "documents": [], "vectors": {"dimension": 384},
            "records": None, "parts": None, "terms": None}


def main() -> None:
    rng = random.Random(11)
    manifests, cases = [], []
    for k in range(40):
        meta = manifest(rng)
        manifests.append(meta)
        index = SearchIndex(None, meta)
        for prefix in [None, "", *rng.sample(IDS, 3), "nowhere"]:
            chosen = rng.sample(range(len(meta["topics"])), rng.randint(1, min(3, len(meta["topics"]))))
            budget = rng.randint(1, 8)
            cases.append({
                "manifest": k, "prefix": prefix, "whole": index.whole_topics(Filters(topic=prefix)),
                "chosen": chosen, "budget": budget,
                "files": index.vector_files([meta["topics"][i] for i in chosen], budget),
                "rows_fit": sum(t["count"] for t in meta["topics"] if Filters(topic=prefix).topic_ok(t["id"])) <= 600,
            })
    path = Path(__file__).parent / "vectorpages.json"
    text = json.dumps({"manifests": manifests, "cases": cases}, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(cases)} cases, {sum(c['whole'] for c in cases)} whole")


if __name__ == "__main__":
    main()
