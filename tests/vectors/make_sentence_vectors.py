"""Write tests/vectors/sentences.json: Python's ``rank.sentences`` splits and ``rank.sentence_rerank``
orders, which lexical.js must reproduce (tests/js/lexical.test.mjs, tests/test_search_rank.py).

Run from the repository root: ``python tests/vectors/make_sentence_vectors.py``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.siteformat import searchrank as rank  # noqa: E402

TEXTS = [
    "",
    "short.",
    "# Title\n## Section > sub\nThe first sentence is here. The second one follows!  And a third?\tYes, a fourth one too.",
    "Windows line ends work too.\r\nSo does this second line of text.\r\n\r\n",
    "No split after e.g. an abbreviation without a space.Or here.\n- a bullet that is long enough to count\n- short",
    "Unicode: Größe ändern ist möglich. 日本語の文も一つの文として数えます。 Émoji 🎉 count as one code point each here!",
    "   leading and trailing spaces are stripped from every sentence piece.   \n\t\ttabs too, on this line here.\t",
    "Ellipsis... then more words follow here. Version 1.2.3 is not split because no space follows the dots.",
    "```python\nprint('code lines split at line breaks like any other line')\n```",
]


def rerank_cases(n: int = 40) -> list[dict]:
    rng = random.Random(11)
    out = []
    for _ in range(n):
        chunks = rng.sample(range(60), rng.randint(1, 25))
        lexical = sorted(((c, rng.randint(1, 400)) for c in rng.sample(chunks, rng.randint(0, len(chunks)))), key=lambda t: (-t[1], t[0]))
        vector = sorted(((c, round(rng.uniform(-0.2, 0.9), 6)) for c in rng.sample(chunks, rng.randint(1, len(chunks)))), key=lambda t: (-t[1], t[0]))
        fused = rank.fuse(lexical, vector, "score")
        best = {c: round(rng.uniform(-0.1, 1.0), 6) for c, _ in fused[:12] if rng.random() < 0.8}
        depth = rng.choice([rank.RERANK_DEPTH, 3, len(fused)])
        out.append({"lexical": lexical, "vector": vector, "best": sorted(best.items()), "depth": depth,
                    "expected": rank.sentence_rerank(fused, lexical, vector, best, depth=depth)})
    return out


def main() -> None:
    data = {"texts": [{"text": t, "sentences": rank.sentences(t)} for t in TEXTS], "rerank": rerank_cases()}
    out = ROOT / "tests" / "vectors" / "sentences.json"
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
