"""Write tests/vectors/lexical.json: Python's terms and stems, which lexical.js must reproduce.

Run from the repository root: ``python tests/vectors/make_lexical_vectors.py``. Stems: every
distinct a-z word of the repository's markdown (content/, docs/) and of ../shared/realdocs when
present, plus hand-picked words that exercise each Snowball rule. Texts: tokenizer edge cases.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.siteformat.searchtext import TOKENIZER, _STEMMER, fnv1a32, terms  # noqa: E402

RULE_WORDS = """
consign consigned consigning consignment consist consisted consistency consistent consistently
consisting consists consolation consolations consolatory console consoled consoles consolidate
consolidated consolidating consoling consolingly consols consonant consort consorted consorting
conspicuous conspicuously conspiracy conspirator conspirators conspire conspired conspiring
constable constables constance constancy constant knack knackeries knacks knag knave knaves
knavish kneaded kneading knee kneel kneeled kneeling kneels knees knell knelt knew knick knif
knife knight knightly knights knit knits knitted knitting knives knob knobs knock knocked
knocker knockers knocking knocks knopp knot knots generously generate general generation
communism community communication arsenal arsenic pastime past pasted universal university
universe later lateral laterally emergency emerge emerging organ organization organism organic
skis skies dying lying tying idly gently ugly early only singly sky news howe atlas cosmos bias
andes inning innings outing outings canning cannings herring herrings earring earrings proceed
proceeding proceeds exceed exceeding succeed succeeding caresses ponies ties cries gas this gaps
kiwis luxuriating hopping filing hoping fizzed bled agreed feed feedly happy enjoy sky say cry
relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli
vileli analogousli vietnamization predication operator feudalism decisiveness hopefulness
callousness formaliti sensitiviti sensibiliti triplicate formative formalize electriciti
electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable
defensible irritant replacement adjustment dependent adoption homologou communism activate
angulariti homologous effective bowdlerize probate rate cease controll roll yes yellow yield
eyes ayes bye byes aerial abey abeyance ebbed ebbing fluff fluffing ogling logic geology apology
technologist biologist geologists apologist fully fulli ably happily happiness ionization position succession question agency emergence
""".split()


def collect_words() -> list[str]:
    found: set[str] = set(RULE_WORDS)
    places = [ROOT / "content", ROOT / "docs", ROOT.parent / "shared" / "realdocs", Path("/work/shared/realdocs")]
    for place in places:
        if place.is_dir():
            for path in sorted(place.rglob("*.md")):
                found.update(re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="replace").lower()))
    return sorted(w for w in found if 3 <= len(w) <= 30)


TEXTS = [
    "",
    "?!",
    "How do I use unwrap_or_else in Rust?",
    "root_path and ROOT_PATH and __init__ and _private and trailing_",
    "Running runners ran quickly; generously generalized organizations.",
    "FastAPI's dependency-injection: Depends(get_db) -> Session",
    "naïve café Übergrößen ΣΊΣΥΦΟΣ ﬁle ＦＵＬＬ",
    "HTTP/2 3.14 v2_beta 10x 1e-5 0x1F",
    "日本語のテキスト and 中文",
    "a_b_c a__b _ __ ___",
    "the and of is it",
    "x" * 70 + " ok",
    "Emoji 🚀 rockets, tabs\tand\nnew lines",
    "yes yellow 'quoted' it's don't",
]


def rankings() -> dict:
    """``rank.idf_level`` over collections from 1 to 500,000 chunks, and ``rank.lexical_ranking``
    of random postings with and without a filter: lexical.js must give the same integers."""
    import random

    from pipeline.siteformat import searchrank as rank

    rng = random.Random(7)
    idf = []
    for chunks in (1, 2, 3, 10, 97, 1000, 1698, 10583, 42656, 106737, 427412, 500000):
        for df in sorted({1, 2, 3, chunks // 3, chunks // 2, chunks - 1, chunks, rng.randint(1, chunks)} - {0}):
            idf.append([chunks, df, rank.idf_level(chunks, df)])
    cases = []
    for _ in range(30):
        chunks = rng.choice([20, 400, 5000])
        postings = {t: sorted(rng.sample(range(chunks), rng.randint(0, 12))) for t in "abcd"[:rng.randint(1, 4)]}
        postings = {t: [[n, rng.randint(1, 63)] for n in ns] for t, ns in postings.items()}
        lo, hi = sorted(rng.sample(range(chunks + 1), 2))
        for allowed in (None, [lo, hi]):
            ranked = rank.lexical_ranking({t: [tuple(p) for p in ps] for t, ps in postings.items()},
                                          (lambda n: lo <= n < hi) if allowed else (lambda n: True),
                                          chunks=hi - lo if allowed else chunks)
            cases.append({"postings": postings, "allowed": allowed, "chunks": hi - lo if allowed else chunks,
                          "ranked": [list(r) for r in ranked]})
    return {"idf": idf, "ranked": cases}


def main() -> None:
    words = collect_words()
    stems = dict(zip(words, _STEMMER.stemWords(words)))
    vectors = {
        "tokenizer": TOKENIZER,
        "stems": stems,
        "texts": [{"text": t, "terms": terms(t)} for t in TEXTS],
        "fnv1a32": {t: fnv1a32(t) for t in ["", "a", "root_path", "übergrößen", "日本語", "foobar"]},
        "ranking": rankings(),
    }
    out = ROOT / "tests" / "vectors" / "lexical.json"
    out.write_text(json.dumps(vectors, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{out}: {len(stems)} stems, {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
