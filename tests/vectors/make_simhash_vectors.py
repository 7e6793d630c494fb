"""Regenerate ``tests/vectors/simhash.json`` from ``pipeline.simhash`` (the reference).

Run ``python tests/vectors/make_simhash_vectors.py`` after a deliberate change to the hash;
``tests/test_simhash.py`` fails while the file and the code disagree, and
``tests/js/simhash.test.mjs`` checks ``pipeline/assets/simhash.js`` against every vector.

Each vector holds ``text``, its ``features``, and the hash three ways: ``value`` (a JSON
integer, as ``index.json`` publishes it, which JavaScript's ``JSON.parse`` may round),
``decimal`` (the same integer as a string, exact for ``BigInt``) and ``hex``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().with_name("simhash.json")

TEXTS: list[str] = [
    "",
    " ",
    "?!...",
    "___",
    "a",
    "the",
    "How do I?",
    "What is the maximum chunk size?",
    "max chunk size",
    "maximum size of chunks",
    "How do I configure the embedding model?",
    "how to configure embedding model",
    "configuring embeding models",
    "Where is the index.json file written?",
    "Can I deploy the site to GitHub Pages?",
    "WHAT IS THE MAXIMUM CHUNK SIZE?",
    "wHaT iS tHe MaXiMuM cHuNk SiZe",
    "Which Python 3.11 version is required?",
    "error 404 at line 12",
    "Comment déployer le site ?",
    "Comment de\u0301ployer le site ?",  # combining accent: NFKC composes it
    "Straße oder STRASSE",
    "ẞ capital sharp s",
    "İstanbul ıi",
    "ΟΔΥΣΣΕΥΣ ὈΔΥΣΣΕΎΣ",
    "Σίσυφος σίσυφοσ",
    "Wie konfiguriere ich das Modell?",
    "Как настроить модель?",
    "如何配置嵌入模型？",
    "配置嵌入模型",
    "埋め込みモデルを設定するには？",
    "임베딩 모델은 어떻게 설정하나요?",
    "كيف أقوم بتكوين النموذج؟",
    "मॉडल कैसे कॉन्फ़िगर करें?",
    "🙂🚀",
    "deploy 🚀 the site 🙂 now",
    "ﬁle ｆｕｌｌｗｉｄｔｈ ①②③ ²",
    "tab\tnew\nline\r\nend",
    "snake_case and kebab-case",
    "𝐁𝐨𝐥𝐝 math letters 𝟙𝟚𝟛",
    "𠀀𠀁 supplementary CJK",
    " ".join(
        ["A long text about chunking markdown into sections and hashing prompts"] * 3
        + ["with repeated words words words, numbers 1 2 3 and punctuation!"] * 5
    ),
    "chunk " * 300,  # a trigram weight of 300: past the simhash package's uint8 overflow
]


def build() -> dict:
    """The vectors document for TEXTS, as computed by ``pipeline.simhash`` now."""
    sys.path.insert(0, str(ROOT))
    from pipeline import simhash

    vectors = []
    for text in TEXTS:
        h = simhash.simhash64(text)
        vectors.append(
            {
                "text": text,
                "features": simhash.features(text),
                "value": h,
                "decimal": str(h),
                "hex": simhash.to_hex(h),
            }
        )
    return {"algorithm": simhash.ALGORITHM, "vectors": vectors}


def render(document: dict) -> str:
    return json.dumps(document, ensure_ascii=False, indent=1) + "\n"


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from pipeline.fsutil import write_text_atomic

    changed = write_text_atomic(OUT, render(build()))
    print(f"{'wrote' if changed else 'unchanged'} {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
