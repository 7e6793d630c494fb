"""Write tests/vectors/lexdocs.json: Python's choice of vector documents from a lexical ranking
(``SearchIndex.lexical_documents``), its decoding of vector shard rows
(``vectorshards.decode_rows``) and its ranking when the budget leaves some documents without
vectors (``rank.within_slots``), which searchplan.js, searchrankings.js and lexical.js must reproduce (tests/js/lexdocs.test.mjs,
tests/test_vectorshards.py).

Run from the repository root: ``python tests/vectors/make_lexdocs_vectors.py``.
"""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.client.searchindex import SearchIndex  # noqa: E402
from pipeline.siteformat import searchrank as rank  # noqa: E402
from pipeline.siteformat import vectorshards  # noqa: E402


def choose(counts: list[int], lexical: list[list[int]]) -> list[list[int]]:
    meta = {"topics": [], "documents": counts, "vectors": {"shards": [[0, len(counts), "x"]]}}
    return [list(d) for d in SearchIndex(None, meta).lexical_documents([tuple(x) for x in lexical])]


def main() -> None:
    rng = random.Random(11)
    cases = []
    for shape in ([1], [3, 1, 4], [200, 300, 150, 2], [700, 5, 5], [1] * 12):
        total = sum(shape)
        for _ in range(4):
            hits = rng.sample(range(total), min(total, rng.randint(1, 15)))
            lexical = [[n, 100 - i] for i, n in enumerate(hits)]
            cases.append({"documents": shape, "lexical": lexical, "chosen": choose(shape, lexical)})
    cases.append({"documents": [2, 2], "lexical": [], "chosen": choose([2, 2], [])})
    gen = np.random.default_rng(11)
    dimension = 8
    matrix = gen.normal(size=(5, dimension)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    present = np.array([True, True, False, True, True])
    matrix[4] = 0.0  # present but zero: no vector
    data = vectorshards.encode_rows(matrix, present)
    rows, held = vectorshards.decode_rows(data, dimension)
    slots = []
    for size in (0, 1, 5, 12, 40):
        for _ in range(3):
            numbers = rng.sample(range(400), size)
            lexical = sorted(((n, rng.randint(1, 60)) for n in numbers), key=lambda t: (-t[1], t[0]))
            vector = sorted(((n, round(rng.uniform(-0.2, 0.9), 6)) for n in rng.sample(range(400), min(400, size + 8))),
                            key=lambda t: (-t[1], t[0]))
            covered = sorted({n for n, _ in vector})
            fused = rank.fuse(lexical, vector, rng.choice(["score", "rrf"]))
            slots.append({"lexical": lexical, "fused": fused, "covered": covered,
                          "ranked": rank.within_slots(lexical, fused, set(covered))})
    out = {
        "within_slots": slots,
        "documents": cases,
        "rows": {"dimension": dimension, "base64": base64.b64encode(data).decode("ascii"),
                 "present": held.astype(int).tolist(), "vectors": rows.astype(float).tolist()},
    }
    path = Path(__file__).parent / "lexdocs.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
