"""Regenerate ``tests/vectors/wordpiece.json`` from the model's tokenizer (the reference).

Run ``python tests/vectors/make_wordpiece_vectors.py`` after changing the model or the list
below; ``tests/test_wordpiece.py`` fails while the file and the tokenizer disagree, and checks
``pipeline/assets/wordpiece.js`` against every vector under Node.

Each vector holds ``text`` and ``ids``: what ``tokenizers`` gives for the model's
``tokenizer.json`` with [CLS]/[SEP] and truncation at the model's ``max_seq_length``, exactly
what ``pipeline.embedding.onnx.OnnxEmbedder`` feeds the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().with_name("wordpiece.json")

TEXTS: list[str] = [
    "",
    " ",
    "how big is a chunk?",
    "How do I configure the embedding model?",
    "WHAT IS THE MAXIMUM CHUNK SIZE?!?",
    "unwrap_or_else root_path __init__.py",
    "C++ & C#: a->b, x<=y; {key: [1, 2]} $HOME ~user `code` ^caret |pipe| 100%",
    "e-mail: someone@example.com, https://example.com/a/b?c=d#e",
    "3.14159 1,000,000 2026-11-23T13:08:43Z",
    "Comment déployer le site ? Größe, Übung, naïve café, façade",
    "Comment de\u0301ployer le site ?",  # combining accent
    "Straße oder STRASSE; ẞ capital sharp s",
    "İstanbul ıi",  # dotted capital I lowercases to i + U+0307
    "ΟΔΥΣΣΕΥΣ ὈΔΥΣΣΕΎΣ Σίσυφος σίσυφοσ",  # no final-sigma rule per character
    "Как настроить модель?",
    "如何配置嵌入模型？野口里佳 Noguchi Rika",
    "日本語のテキストとカタカナ、ひらがな",
    "한국어 문장도 있습니다",
    "مرحبا بالعالم، كيف حالك؟",
    "שלום עולם",
    "हिन्दी में वाक्य",
    "ไทยไม่มีช่องว่าง",
    "emoji 🚀🔥👍🏽 and 🥲 and 🫠",
    "[SEP] a special token inside [CLS] text [MASK][PAD][UNK]",
    "[sep] lower-case is not special; [SEP is not closed",
    "tab\there\nnewline\r\ncarriage\u000bvtab\u000cformfeed",
    "nbsp\u00a0thin\u2009ideographic\u3000space\u2028line\u2029para\u0085nel",
    "zero\u200bwidth\u200djoiner\u2060word\ufeffbom\u00adsoft-hyphen",
    "private \ue000\uf8ff use and \U000f0000 plane 15",
    "nul\x00char \ufffd replacement \x7f del \x1b escape",
    "unassigned \u0378 \U0001fffe code points",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 100,
    "b" * 101,  # longer than max_input_chars_per_word: one [UNK]
    "x" * 40 + "é" * 61,
    "«guillemets» „quotes“ ‘single’ — dash – en ‐ hyphen … ellipsis",
    "math ∑∫√∞ ≠ ≤ ± × ÷ ° µ ² ½",
    "currency € £ ¥ ₹ ₿ ¢",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ　１２３",
    "ﬁ ligature ﬀ ﬃ and Ⅻ roman and ① circled",
    "𝐛𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐 math letters",
    "𠀀𠀁 CJK extension B and 丽 compatibility",
    "Vietnamese: Tiếng Việt có dấu",
    "word " * 300,  # truncated at max_seq_length
    "The embedding cache keeps one vector per chunk, keyed by the chunk's content hash. " * 12,
]


def make(texts: list[str] = TEXTS) -> dict:
    sys.path.insert(0, str(ROOT))
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx import OnnxEmbedder

    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    return {
        "model": DEFAULT_MODEL.name,
        "max_tokens": DEFAULT_MODEL.max_tokens(),
        "vectors": [{"text": t, "ids": tokenizer.encode(t).ids} for t in texts],
    }


def render(document: dict) -> str:
    return json.dumps(document, ensure_ascii=False, indent=1) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(make()), encoding="utf-8")
    print(f"wrote {OUT}")
