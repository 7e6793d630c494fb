"""The static query encoder: its table (reachable vocabulary, file format, quantisation), its site
files (``_search/encoder/``), and both clients embedding a query with it: the same pieces and
vectors (tests/vectors/static_encoder.json), only the rows of the query's pieces fetched, hybrid
hits, and no model runtime imported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pipeline.client import open_site
from pipeline.client.staticembed import SiteStaticEncoder
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.staticfit import hashing_table, tokenizer_json
from pipeline.embedding.statictable import (StaticTable, decode, decode_rows, encode, encode_rows, query_vector,
                                            reachable_tokens)
from pipeline.site.static_encoder import encoder_files
from pipeline.siteformat.frontcode import front_code, front_decode
from pipeline.search.wordrows import MAX_WORD_PIECES
from pipeline.siteformat.searchlayout import encoder_names
from pipeline.siteformat.searchtext import word_term
from test_client_support import fixture_site, served_site  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors" / "static_encoder.json"
CLIENT = ROOT / "pipeline" / "assets" / "client.js"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")


@pytest.fixture(scope="module")
def model_tokenizer():
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(DEFAULT_MODEL.directory() / "tokenizer.json"))
    tokenizer.no_truncation()
    return tokenizer


@pytest.fixture(scope="module")
def table():
    return hashing_table(384, DEFAULT_MODEL)


def model_pieces(tokenizer, text: str, zero=(), max_tokens: int = 256) -> list[str]:
    """The model tokenizer's pieces of ``text``, as the encoder uses them: no special token but
    the unknown one, cut where the model cuts, the ``zero`` tokens (rows of zeros) left out."""
    dropped = {"[CLS]", "[SEP]", "[PAD]", "[MASK]", *zero}
    tokens = tokenizer.encode(text, add_special_tokens=False).tokens[: max_tokens - 2]
    return [t for t in tokens if t not in dropped]


# --- the table ----------------------------------------------------------------------------------


def test_reachable_tokens_drop_only_what_no_text_produces(table):
    vocab = tokenizer_json(DEFAULT_MODEL)["model"]["vocab"]
    kept = set(table.tokens)
    assert "[UNK]" in kept and "[CLS]" not in kept and "[unused7]" not in kept
    assert {"the", "##ing", "chunk", "?", "中"} <= kept
    assert not {"A", "é", "##!", "##中"} & kept  # uppercase, accented, punctuation or CJK continuing a word
    assert len(vocab) - 2_000 < len(kept) < len(vocab)
    assert table.tokens[: table.ascii] == sorted(table.tokens[: table.ascii])
    assert all(t.isascii() for t in table.tokens[: table.ascii]) and not any(t.isascii() for t in table.tokens[table.ascii:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
       | st.lists(st.sampled_from(["Chunk", "size", "émbed", "naïve", "中文", "?", "##", "[SEP]", "ßx", "İ", "unwrap_or"]),
                  max_size=8).map(" ".join))
def test_the_reachable_vocabulary_tokenises_like_the_model(model_tokenizer, text):
    entry, files = _encoder_site_files()
    encoder = SiteStaticEncoder(_Files(files), entry)
    tokens = encoder.tokens(other=True)
    assert [tokens[i] for i in encoder.pieces(text)] == model_pieces(model_tokenizer, text, entry["zero"])


_SITE_FILES = {}


def _encoder_site_files():
    if not _SITE_FILES:
        entry, files = encoder_files(hashing_table(384, DEFAULT_MODEL))
        _SITE_FILES.update(entry=entry, files={f"_search/{k}": v for k, v in files.items()})
    return _SITE_FILES["entry"], _SITE_FILES["files"]


class _Files:
    def __init__(self, files):
        self.files, self.got = files, []

    def get(self, rel):
        self.got.append(rel)
        return self.files[rel]

    def locate(self, rel):
        return rel


def _affine_world(seed: int, tokens: int = 120, dimension: int = 8, covered: int = 60, texts: int = 400):
    """A fit problem whose true rows are an affine image of the prior: texts are means of 3
    tokens among the first ``covered``; the rest never occur."""
    from scipy.sparse import csr_matrix

    rng = np.random.default_rng(seed)
    prior = rng.normal(size=(tokens, dimension))
    truth = prior @ rng.normal(size=(dimension, dimension)) + rng.normal(size=dimension)
    picks = np.stack([rng.choice(covered, 3, replace=False) for _ in range(texts)])
    a = csr_matrix((np.full(picks.size, 1 / 3), (np.repeat(np.arange(texts), 3), picks.ravel())), shape=(texts, tokens))
    return prior, truth, a, a @ truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tokens_the_corpus_never_shows_get_their_prior_mapped_as_the_fit_moved_the_others(seed):
    from pipeline.embedding.staticfit import fit_rows

    prior, truth, a, targets = _affine_world(seed)
    none = np.zeros(len(prior), dtype=bool)
    unseen = slice(60, None)
    kept = fit_rows(prior, a, targets, none, rounds=0)  # the regression alone leaves them their prior
    assert np.array_equal(kept[unseen], prior[unseen])
    mapped = fit_rows(prior, a, targets, none)
    error = lambda rows: np.linalg.norm(rows[unseen] - truth[unseen]) / np.linalg.norm(truth[unseen])  # noqa: E731
    assert error(mapped) < 0.25 < error(kept)
    left_out = np.zeros(len(prior), dtype=bool)
    left_out[[3, 90]] = True  # skipped tokens stay zero, covered or not
    assert not fit_rows(prior, a, targets, left_out)[[3, 90]].any()


def test_the_table_file_round_trips_byte_for_byte(table):
    small = StaticTable(table.model, table.tokens[:50], table.rows[:50], table.tokenizer, 50, "int8", {"x": 1})
    data = encode(small)
    back = decode(data)
    assert back.tokens == small.tokens and back.dtype == "int8" and back.source == {"x": 1}
    assert encode(back) == data  # decoded rows quantise to the same bytes
    with pytest.raises(Exception, match="not a static encoder"):
        decode(b"PIPEVEC1" + data[8:])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(-4, 4, allow_nan=False, width=32), min_size=8, max_size=8), min_size=1, max_size=12),
       st.sampled_from(["int8", "float32"]))
def test_quantised_rows_decode_within_half_a_step(rows, dtype):
    rows = np.array(rows, dtype=np.float32)
    back = decode_rows(encode_rows(rows, dtype), dtype, 8)
    step = np.abs(rows).max(axis=1, keepdims=True) / 127 if dtype == "int8" else 0
    assert np.all(np.abs(back - rows) <= step / 2 + 1e-6)


@given(st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1, max_size=12),
                unique=True))
def test_front_coding_round_trips(tokens):
    tokens = sorted(tokens)
    assert front_decode(front_code(tokens)) == tokens


def test_query_vector_is_the_unit_sum_of_its_rows():
    rows = np.array([[1, 0], [0, 2], [0, 0]], dtype=np.float32)
    assert query_vector(rows, [0, 1, 1]).tolist() == pytest.approx([1 / 17 ** 0.5, 4 / 17 ** 0.5])
    assert query_vector(rows, []).tolist() == [0, 0] and query_vector(rows, [2]).tolist() == [0, 0]


# --- the shared vectors (tests/js/staticencoder.test.mjs reads the same file) -----------------------


def test_shared_vectors_are_current_and_tokenise_like_the_model(model_tokenizer):
    sys.path.insert(0, str(VECTORS.parent))
    from make_static_encoder_vectors import make, render

    assert VECTORS.read_text(encoding="utf-8") == render(make()), "run tests/vectors/make_static_encoder_vectors.py"
    document = json.loads(VECTORS.read_text(encoding="utf-8"))
    assert len(document["cases"]) > 40
    for case in document["cases"]:
        assert case["pieces"] == model_pieces(model_tokenizer, case["text"], document["entry"]["zero"]), case["text"]
        norm = float(np.linalg.norm(case["vector"]))
        assert norm == pytest.approx(1, abs=1e-5) or (norm == 0 and not case["pieces"])


@needs_node
def test_staticencoder_js_gives_the_shared_vectors():
    result = subprocess.run([NODE, "--test", str(ROOT / "tests" / "js" / "staticencoder.test.mjs")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


# --- the site -----------------------------------------------------------------------------------


def test_a_site_publishes_its_encoder_and_a_rebuild_writes_it_again_byte_for_byte(fixture_site, tmp_path):  # noqa: F811
    meta = orjson.loads((fixture_site / "_search" / "meta.json").read_bytes())
    entry = meta["encoder"]
    assert entry["model"] == meta["vectors"]["model"] == "hashing-384"
    names = encoder_names(entry)
    assert all((fixture_site / "_search" / n).is_file() for n in names)
    expected_entry, files = encoder_files(hashing_table(384, DEFAULT_MODEL))
    assert {k: v for k, v in entry.items() if k not in ("words", "word_pieces", "word_dtype")} == expected_entry
    assert all((fixture_site / "_search" / rel).read_bytes() == data for rel, data in files.items())
    assert sorted(names) == sorted(files)
    # a small site (parts, no term shards): its words' rows in word files the entry names
    assert meta["parts"] and entry["word_pieces"] == MAX_WORD_PIECES and entry["word_dtype"] == "int4"
    assert entry["words"] and all((fixture_site / "_search" / "words" / f"{h}.json").is_file() for h in entry["words"])


def test_search_encoder_false_publishes_none(tmp_path):
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.site.build import build

    content = tmp_path / "content" / "guide"
    content.mkdir(parents=True)
    (content / "a.md").write_text("# Chunks\n\nA chunk is a piece of a document.\n", encoding="utf-8")
    site = tmp_path / "site"
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache", search_encoder=False), embedder=HashingEmbedder(),
          progress=False)
    assert orjson.loads((site / "_search" / "meta.json").read_bytes())["encoder"] is None
    assert not (site / "_search" / "encoder").exists()
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert orjson.loads((site / "_search" / "meta.json").read_bytes())["encoder"]["model"] == "hashing-384"


def test_a_rebuild_keeps_the_recorded_encoder_without_reading_the_table(tmp_path, monkeypatch):
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.site import static_encoder
    from pipeline.site.build import build

    content = tmp_path / "content" / "guide"
    content.mkdir(parents=True)
    (content / "a.md").write_text("# Chunks\n\nA chunk is a piece of a document.\n", encoding="utf-8")
    site = tmp_path / "site"
    config = SiteConfig(cache_dir=tmp_path / "cache")
    rebuild = lambda: build(tmp_path / "content", site, config, embedder=HashingEmbedder(), progress=False)  # noqa: E731
    rebuild()
    first = orjson.loads((site / "_search" / "meta.json").read_bytes())["encoder"]
    names = encoder_names(first)
    reads = []
    real = static_encoder.site_static_table
    monkeypatch.setattr(static_encoder, "site_static_table", lambda *a: reads.append(a) or real(*a))
    rebuild()  # nothing changed
    (content / "a.md").write_text("# Chunks\n\nA chunk is a piece of a longer document.\n", encoding="utf-8")
    rebuild()  # the index is written again, the encoder's files kept
    assert reads == []
    again = orjson.loads((site / "_search" / "meta.json").read_bytes())["encoder"]
    assert again["href"] == first["href"] and again["words"] != first["words"]  # "longer" has a row now
    (site / "_search" / names[-1]).unlink()  # a file the record names is gone: made again
    rebuild()
    assert len(reads) == 1
    assert all((site / "_search" / n).is_file() for n in names)


def test_site_search_embeds_with_the_static_encoder_by_default(fixture_site, table):  # noqa: F811
    site = open_site(fixture_site)
    hits = site.search("how do I rebuild the embedding cache", 5, method="hybrid")
    assert hits and {h.method for h in hits} == {"hybrid"}
    encoder = site._static
    assert encoder is not None and encoder.name == "hashing-384"
    text = "how do I rebuild the embedding cache"
    tokens = encoder.tokens(other=False)
    pieces = [tokens[i] for i in encoder.pieces(text)]
    stored = decode_rows(encode_rows(table.rows, "int8"), "int8", 384)  # what the site holds
    index = table.index()
    assert np.allclose(encoder.embed([text])[0], query_vector(stored, [index[p] for p in pieces]), atol=1e-6)
    # the full model (here: the test embedder the vectors came from) only when asked for
    full = site.search(text, 5, method="hybrid", embedder="full")
    assert {h.method for h in full} == {"hybrid"}


def test_a_cold_query_reads_its_words_rows_and_only_the_other_words_pieces_shards(served_site):  # noqa: F811
    site = open_site(served_site.url)
    fetched: list[str] = []
    original = site.transport.get
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    query = "how big is a chunk?"
    site.search(query, 5, method="hybrid")
    index = site.search_index()
    entry = index.meta["encoder"]
    folder = f"_search/{entry['href']}"
    mine = [r for r in fetched if r.startswith(folder)]
    tokens = site._static.tokens(other=False)
    ids = site._static.pieces(query)
    assert [tokens[i] for i in ids] == ["how", "big", "is", "a", "chunk"]  # "?": a zero row, never fetched
    assert "?" in entry["zero"]
    # "chunk" has a row in its word file; "how", "is", "a" (stop words: no term, but rows in the
    # test embedder's table) and "big" (not in the site) are read from the encoder's own shards
    home = site._static._word_home(index)
    assert {w for w in ("how", "big", "is", "a", "chunk") if word_term(w) and w in index.term_rows(home(word_term(w)))} == {"chunk"}
    assert home("chunk") in fetched and home(word_term("big")) in fetched
    others = [i for w in ("how", "big", "is", "a") for i in site._static.pieces(w)]
    assert sorted(mine) == sorted([folder + "vocab.txt", *{f"{folder}{i // entry['rows']}.bin" for i in others}])
    assert site._static.fetches == len(mine)
    # the same vector as the pieces' rows: every word here is one token, its row the same bytes
    whole = SiteStaticEncoder(site.transport, entry)
    assert np.array_equal(site._static.embed([query], index=index)[0], whole.embed([query])[0])
    fetched.clear()
    cold = open_site(served_site.url)
    cold.transport.get = lambda rel: fetched.append(rel) or original(rel)
    cold.search("chunk cache document", 5, method="hybrid")  # every word has a row: no encoder file at all
    assert fetched and not [r for r in fetched if r.startswith(folder)]
    fetched.clear()
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    fetched.clear()
    site.search(query, 5, method="hybrid")  # warm: nothing of the encoder again
    assert not [r for r in fetched if r.startswith(folder)]
    site.search("how big is the chunk cache?", 5, method="hybrid")  # only the new piece's shard, if any
    new = [r for r in fetched if r.startswith(folder)]
    cache_shard = f"{folder}{tokens.index('cache') // entry['rows']}.bin"
    the_shard = f"{folder}{tokens.index('the') // entry['rows']}.bin"
    assert set(new) <= {cache_shard, the_shard} and len(new) == len(set(new))


@pytest.mark.parametrize("method", ["hybrid", "embedding"])
def test_pipeline_search_imports_no_model_runtime(fixture_site, method):  # noqa: F811
    # pydantic too: typer 0.29 coerces every option through it (+80 ms a search, pyproject's pin)
    script = ("import sys; from pipeline.cli import app; sys.argv = ['pipeline', 'search', sys.argv[1], 'how big is a chunk', "
              "'--method', sys.argv[2], '--json'];\ntry:\n    app()\nexcept SystemExit:\n    pass\n"
              "print('RUNTIMES', sorted(m for m in ('torch', 'onnxruntime', 'openvino', 'sentence_transformers', 'pydantic') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", script, str(fixture_site), method], capture_output=True, text=True, timeout=120,
                            cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "RUNTIMES []" in result.stdout, result.stdout[-2000:]
    assert f'"{method}"' in result.stdout


# --- the JS client under Node -------------------------------------------------------------------

NODE_SEARCH = r"""
import { openSite } from "%(client)s";
const [url, query] = process.argv.slice(1);
const site = await openSite(url);
const seen = [];
const get = site._get.bind(site);
site._get = (rel, as) => { seen.push(rel); return get(rel, as); };
const hits = await site.search(query, { k: 5, method: "hybrid" });
const lexical = await site.search(query, { k: 5, method: "hybrid", staticEncoder: false });
console.log(JSON.stringify({ hits: hits.map((h) => [h.topic, h.chunk.document, h.index, h.method, h.score]),
  lexical: lexical.map((h) => h.method), seen, fetches: site._staticEncoder.fetches }));
"""


@needs_node
def test_node_hybrid_search_through_the_js_client_matches_python(served_site):  # noqa: F811
    query = "how do I rebuild the embedding cache"
    result = subprocess.run([NODE, "--input-type=module", "-e", NODE_SEARCH % {"client": CLIENT.as_uri()}, served_site.url, query],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    js = json.loads(result.stdout)
    assert js["hits"] and {h[3] for h in js["hits"]} == {"hybrid"}
    assert set(js["lexical"]) == {"lexical"}  # the encoder turned off, no vector: lexical
    site = open_site(served_site.url)
    py = [[h.topic, h.chunk.document, h.chunk.index, h.method] for h in site.search(query, 5, method="hybrid")]
    assert [h[:4] for h in js["hits"]] == py
    assert [h[4] for h in js["hits"]] == pytest.approx([h.score for h in site.search(query, 5, method="hybrid")], abs=1e-6)
    encoder_files_seen = [r for r in js["seen"] if "/encoder/" in r]
    assert len(encoder_files_seen) == js["fetches"] == site._static.fetches  # the same files in both languages
