"""The browser's WordPiece tokenizer (assets/wordpiece.js, under Node) gives exactly the token
ids of the ``tokenizers`` library running the model's tokenizer.json: on the shared vectors
(tests/vectors/wordpiece.json: unicode, punctuation, long words, special tokens, controls) and
on random text; its Unicode tables are the library's own."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.onnx import OnnxEmbedder
from pipeline.site.browser_model import tokenizer_files

ROOT = Path(__file__).resolve().parent.parent
WORDPIECE = ROOT / "pipeline" / "assets" / "wordpiece.js"
VECTORS = ROOT / "tests" / "vectors" / "wordpiece.json"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")

SCRIPT = r"""
import { readFileSync } from "node:fs";
import { WordPieceTokenizer } from "%(module)s";
const { vocab, config, texts } = JSON.parse(readFileSync(0, "utf8"));
const tokenizer = new WordPieceTokenizer(readFileSync(vocab, "utf8").split("\n").slice(0, -1), config);
console.log(JSON.stringify(texts.map((t) => tokenizer.encode(t))));
"""


@pytest.fixture(scope="module")
def browser_tokenizer(tmp_path_factory):
    settings_, vocab = tokenizer_files(DEFAULT_MODEL)
    path = tmp_path_factory.mktemp("wordpiece") / "vocab.txt"
    path.write_bytes(vocab)
    return str(path), settings_


def js_ids(browser_tokenizer, texts: list[str]) -> list[list[int]]:
    vocab, config = browser_tokenizer
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT % {"module": WORDPIECE.as_uri()}],
        input=json.dumps({"vocab": vocab, "config": config, "texts": texts}),
        capture_output=True, text=True, encoding="utf-8", timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def python_ids(texts: list[str]) -> list[list[int]]:
    tokenizer = OnnxEmbedder(DEFAULT_MODEL).tokenizer()
    return [e.ids for e in tokenizer.encode_batch(texts)]


def test_vectors_file_matches_the_tokenizer():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_wordpiece_vectors", VECTORS.with_name("make_wordpiece_vectors.py"))
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    assert VECTORS.read_text(encoding="utf-8") == maker.render(maker.make())


def test_vectors_cover_the_hard_cases():
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]
    ids = [v["ids"] for v in vectors]
    assert any(len(i) == DEFAULT_MODEL.max_tokens() for i in ids)  # truncated
    assert any(100 in i for i in ids)  # [UNK]: an over-long word
    assert any(i.count(102) > 1 for i in ids)  # [SEP] typed in the text
    assert any(any(ord(c) > 0xFFFF for c in v["text"]) for v in vectors)  # astral characters
    assert len(vectors) >= 40


def test_unicode_tables_are_the_librarys():
    from pipeline.embedding.wordpiece_tables import ASSET, render_tables_js, unicode_tables

    assert ASSET.read_text(encoding="utf-8") == render_tables_js(unicode_tables())


def test_browser_settings_come_from_tokenizer_json():
    config, vocab = tokenizer_files(DEFAULT_MODEL)
    assert config["max_tokens"] == 256 and config["lowercase"] and config["strip_accents"]
    assert set(config["special_tokens"]) == {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    lines = vocab.decode().split("\n")
    assert lines[101] == "[CLS]" and lines[102] == "[SEP]" and lines[-1] == ""


@needs_node
def test_javascript_matches_every_vector(browser_tokenizer):
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]
    got = js_ids(browser_tokenizer, [v["text"] for v in vectors])
    for vector, ids in zip(vectors, got):
        assert ids == vector["ids"], repr(vector["text"])


# Characters from everywhere (no lone surrogates: they cannot reach either side as UTF-8),
# weighted towards the classes the tokenizer treats specially.
_PIECE = st.one_of(
    st.characters(exclude_categories=("Cs",)),
    st.sampled_from(list(" \t\n.,;:!?-_()[]{}'\"`$^|~#@%&*+=<>/\\é日本🚀\u200b\u00a0\u0301İΣि्")),
    st.sampled_from(["[SEP]", "[CLS]", "[MASK]", "##", "ing", "un", "embedding"]),
)
_TEXT = st.lists(_PIECE, max_size=40).map("".join)


@needs_node
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_TEXT, min_size=40, max_size=40))
def test_javascript_matches_python_on_random_text(browser_tokenizer, texts):
    # one Node process per example: 40 texts at once keeps the test to a few seconds
    assert js_ids(browser_tokenizer, texts) == python_ids(texts)
