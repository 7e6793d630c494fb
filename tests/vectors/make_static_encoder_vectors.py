"""Regenerate ``tests/vectors/static_encoder.json``: a small static encoder's site files and the
pieces and vectors both clients must give for the texts of ``make_wordpiece_vectors``.

Run ``python tests/vectors/make_static_encoder_vectors.py`` after changing the encoder's file
format or its tokenisation; ``tests/test_static_encoder.py`` fails while the file and the
Python client disagree, and ``tests/js/staticencoder.test.mjs`` checks ``staticencoder.js``
against every vector under Node.

The encoder is the test embedder's table (``staticfit.hashing_table``: deterministic, no model
run) cut down to the vocabulary entries the texts can meet: every token that is a substring of
one of their normalised words (the only entries greedy WordPiece ever looks up for them), so
tokenising with it gives the model tokenizer's pieces (the test checks that too), and the
files stay small. Four rows a shard, so the shards a text needs are a real choice.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().with_name("static_encoder.json")
ROWS_PER_SHARD = 4
DIMENSION = 32  # the test embedder at 32 dimensions: small files, the same code paths


def needed_tokens(tokenizer, texts: list[str], prefix: str) -> set[str]:
    """Every substring of every normalised, pre-tokenised word of ``texts``, as a first piece and
    as a continuing one."""
    needed = set()
    for text in texts:
        words = [w for w, _ in tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(text))]
        for word in set(words):
            for i in range(len(word)):
                for j in range(i + 1, len(word) + 1):
                    needed.add(word[i:j] if i == 0 else prefix + word[i:j])
    return needed


class FilesTransport:
    """A transport over a dict of files (path under the site root -> bytes)."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.got: list[str] = []

    def get(self, rel: str) -> bytes:
        self.got.append(rel)
        return self.files[rel]

    def locate(self, rel: str) -> str:
        return rel


def make() -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_wordpiece_vectors import TEXTS

    from pipeline.client.staticembed import SiteStaticEncoder
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx import OnnxEmbedder
    from pipeline.embedding.staticfit import hashing_table
    from pipeline.embedding.statictable import StaticTable
    from pipeline.site.static_encoder import encoder_files

    table = hashing_table(DIMENSION, DEFAULT_MODEL)
    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    needed = needed_tokens(tokenizer, TEXTS, table.tokenizer["continuing_subword_prefix"]) | {table.tokenizer["unk_token"]}
    keep = [i for i, t in enumerate(table.tokens) if t in needed]
    small = StaticTable(table.model, [table.tokens[i] for i in keep], table.rows[keep], table.tokenizer,
                        sum(1 for i in keep if i < table.ascii), table.dtype, table.source)
    entry, files = encoder_files(small, rows_per_shard=ROWS_PER_SHARD)
    encoder = SiteStaticEncoder(FilesTransport({f"_search/{rel}": data for rel, data in files.items()}), entry)
    cases = []
    for text in TEXTS:
        ids = encoder.pieces(text)
        vector = encoder.embed([text])[0]
        cases.append({"text": text, "pieces": [small.tokens[i] for i in ids], "vector": [round(float(x), 7) for x in vector]})
    return {
        "entry": entry,
        "files": {rel: (data.decode("utf-8") if rel.endswith(".txt") else base64.b64encode(data).decode("ascii"))
                  for rel, data in sorted(files.items())},
        "cases": cases,
    }


def render(document: dict) -> str:
    return json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(make()), encoding="utf-8")
    print(f"wrote {OUT}")
