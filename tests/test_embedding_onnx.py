"""The ONNX export and the torch-free backends: same vectors as torch fp32, length-bucketed
batching that never changes a vector, run-time backend choice, and no torch on the query path
(speed is measured in bench/speed/backends.py and docs/BENCHMARKS.md, never asserted here)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

from pipeline.embedding.backends import BACKENDS, choose_backend
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.onnx import OnnxEmbedder, OpenVinoEmbedder, length_buckets
from pipeline.embedding.registry import make_embedder, split_backend
from pipeline.errors import PipelineError

TEXTS = [
    "Stripe orders spread the first chunks a reader fetches across the whole document.",
    "how big is a chunk?",
    "```python\nfrom pipeline.client import open_site\nsite = open_site('site')\n```",
    "Ein Satz auf Deutsch, damit nicht nur Englisch vorkommt: Größe, Übung, naïve café.",
    "日本語のテキストと emoji 🚀 and [SEP] a special token inside text",
    "x",
    "",
    "word " * 400,  # longer than max_seq_length: truncated exactly as sentence-transformers does
]


@given(st.lists(st.integers(0, 300), max_size=200), st.integers(1, 40))
def test_length_buckets_cover_every_index_once_longest_first(lengths, size):
    batches = length_buckets(lengths, size)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(1 <= len(b) <= size for b in batches)
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)


def test_length_buckets_reject_empty_batches():
    with pytest.raises(ValueError):
        length_buckets([1, 2], 0)


@pytest.mark.parametrize(
    ("bf16", "installed", "expected"),
    [
        (True, {"openvino", "onnxruntime", "torch"}, "openvino-bf16"),
        (False, {"openvino", "onnxruntime", "torch"}, "openvino"),
        (False, {"onnxruntime", "torch"}, "onnx"),
        (True, {"onnxruntime", "torch"}, "bf16"),
        (True, {"onnxruntime"}, "onnx"),
        (False, {"torch"}, "torch"),
        (True, {"torch"}, "bf16"),
    ],
)
def test_backend_follows_the_cpu_and_what_is_installed(bf16, installed, expected):
    assert choose_backend(native_bf16=bf16, installed=installed.__contains__) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_suffixes_keep_the_model_name(backend):
    embedder = make_embedder(f"minilm+{backend}")
    assert embedder.name == DEFAULT_MODEL.name
    assert split_backend(f"local:/x/y+{backend}") == ("local:/x/y", backend)


def test_no_suffix_means_auto():
    assert split_backend("minilm") == ("minilm", "auto")
    assert split_backend("minilm+fp16") == ("minilm+fp16", "auto")
    with pytest.raises(PipelineError, match="unknown embedder"):
        make_embedder("minilm+fp16")


def test_unknown_openvino_precision_is_an_error():
    with pytest.raises(PipelineError, match="precision"):
        OpenVinoEmbedder(DEFAULT_MODEL, precision="int4")


@pytest.fixture(scope="module")
def torch_vectors():
    return make_embedder("minilm+torch").embed(TEXTS)


@pytest.mark.model
def test_export_is_cached_per_model_files(onnx_cache):
    from pipeline.embedding.onnx_export import cached_onnx, export_onnx, model_key

    path = cached_onnx(DEFAULT_MODEL)
    assert path is not None and path.parent.name == f"{DEFAULT_MODEL.name}-{model_key(DEFAULT_MODEL)}"
    before = path.stat().st_mtime_ns
    assert export_onnx(DEFAULT_MODEL) == path and path.stat().st_mtime_ns == before  # not re-exported
    assert not list(path.parent.glob(".tmp-*"))


@pytest.mark.model
@pytest.mark.parametrize(
    ("make", "floor"),
    [
        (lambda: OnnxEmbedder(DEFAULT_MODEL), 0.9999),
        (lambda: OnnxEmbedder(DEFAULT_MODEL, variant="fp16w"), 0.9999),
        (lambda: OpenVinoEmbedder(DEFAULT_MODEL, precision="fp32"), 0.9999),
        (lambda: OpenVinoEmbedder(DEFAULT_MODEL, precision="bf16"), 0.999),
    ],
    ids=["onnx-fp32", "onnx-fp16-weights", "openvino-fp32", "openvino-bf16"],
)
def test_backends_agree_with_torch_fp32(onnx_cache, torch_vectors, make, floor):
    vectors = make().embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == torch_vectors.shape
    assert np.sum(vectors * torch_vectors, axis=1).min() >= floor
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_batching_never_changes_a_vector(onnx_cache):
    embedder = OnnxEmbedder(DEFAULT_MODEL, batch_size=3)
    together = embedder.embed(TEXTS)
    alone = np.vstack([embedder.embed([t]) for t in TEXTS])
    assert np.sum(together * alone, axis=1).min() >= 0.99999
    reversed_ = embedder.embed(TEXTS[::-1])[::-1]  # order restored whatever the input order
    assert np.sum(together * reversed_, axis=1).min() >= 0.99999



@pytest.mark.model
def test_windows_keep_input_order(onnx_cache, monkeypatch):
    import pipeline.embedding.onnx as onnx_module

    embedder = OnnxEmbedder(DEFAULT_MODEL, batch_size=2)
    whole = embedder.embed(TEXTS)
    monkeypatch.setattr(onnx_module, "WINDOW", 3)  # windows of 3 texts, the last one short
    windowed = embedder.embed(TEXTS)
    assert np.sum(whole * windowed, axis=1).min() >= 0.99999


@pytest.mark.model
def test_the_query_path_imports_no_torch(onnx_cache):
    code = (
        "import sys\n"
        "from pipeline.client.site import embedder_for\n"
        "v = embedder_for('all-MiniLM-L6-v2').embed(['how big is a chunk?'])\n"
        "assert v.shape == (1, 384), v.shape\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    env = dict(os.environ, PIPELINE_MODEL_CACHE=str(onnx_cache))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.model
def test_export_is_byte_identical_when_made_again(onnx_cache, tmp_path, monkeypatch):
    # the site ships the export (fp16w), so a fresh cache must not change a rebuilt site's bytes
    from pipeline.embedding.onnx_export import export_onnx

    first = export_onnx(DEFAULT_MODEL, "fp16w").read_bytes()
    monkeypatch.setenv("PIPELINE_MODEL_CACHE", str(tmp_path))
    again = export_onnx(DEFAULT_MODEL, "fp16w")
    assert again.parent.parent == tmp_path
    assert again.read_bytes() == first


@pytest.mark.model
def test_concurrent_first_exports_make_one_export(tmp_path):
    # a build's encoder and its browser-model publisher ask at once on a fresh machine; in a
    # fresh process (torch not yet imported) a second concurrent torch import used to fail
    code = (
        "import threading\n"
        "from pipeline.embedding.models import DEFAULT_MODEL\n"
        "from pipeline.embedding.onnx_export import export_onnx\n"
        "paths, errors = [], []\n"
        "def run(variant):\n"
        "    try:\n"
        "        paths.append(export_onnx(DEFAULT_MODEL, variant).name)\n"
        "    except Exception as error:\n"
        "        errors.append(repr(error))\n"
        "threads = [threading.Thread(target=run, args=(v,)) for v in ('fp32', 'fp16w')]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(sorted(paths), errors)\n"
    )
    env = dict(os.environ, PIPELINE_MODEL_CACHE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "['fp16w.onnx', 'fp32.onnx'] []", done.stderr
    assert done.stderr.count("exporting") == 1, done.stderr


def test_export_without_torch_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    from pipeline.embedding.onnx_export import export_onnx

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setenv("PIPELINE_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(PipelineError, match="needs torch") as caught:
        export_onnx(DEFAULT_MODEL)
    assert str(tmp_path) in str(caught.value)
    assert not list(tmp_path.rglob("*.onnx"))  # nothing half-written


@pytest.mark.model
def test_pipeline_search_embeds_the_query_without_importing_torch(onnx_cache, tmp_path):
    from conftest import ROOT, write_tree
    from pipeline.config import SiteConfig
    from pipeline.site.build import build

    content = write_tree(tmp_path / "content", {
        "kb/cats.md": "# Cats\n\nCats are small domestic felines.\n\n## Food\n\nCats eat fish and meat.\n\n"
                      "## Databases\n\nPostgreSQL stores rows in tables.\n",
    })
    build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache", search_model=False), progress=False)
    env = dict(os.environ, PIPELINE_MODEL_CACHE=str(onnx_cache))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipeline", "search", str(tmp_path / "site"), "where are rows stored?",
         "--method", "embedding", "--embedder", "full", "-k", "1", "--json"],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Databases" in done.stdout  # the embedding search found the right chunk
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "onnxruntime" in imported
    assert not {m for m in imported if m.split(".")[0] in ("torch", "transformers", "sentence_transformers")}


class _FakeSession(OnnxEmbedder):
    """The real tokenizer and batching, a stand-in model (no export, no runtime): the first
    piece id of each text as its vector."""

    def session(self):
        return None

    def _run(self, session, ids, mask):
        return np.stack([ids[:, 0].astype(np.float32) + 1, mask.sum(axis=1).astype(np.float32)], axis=1)


def test_progress_is_the_clis_one_bar_ended_by_a_newline(capsys, monkeypatch):
    # It printed "\rencoded 32/161" with no newline between updates: in a log, one run-on line.
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    _FakeSession(DEFAULT_MODEL).embed([f"text number {i}" for i in range(161)], progress=True)
    err = capsys.readouterr().err
    assert "encoded" not in err
    assert err.rstrip("\n").rsplit("\r", 1)[-1].startswith("embedding: 100%")
    assert "161/161" in err and err.endswith("\n") and err.count("\n") == 1


def test_progress_is_silent_under_quiet(capsys, monkeypatch):
    import pipeline.quiet

    monkeypatch.setattr(pipeline.quiet, "_quiet", True)  # what -q sets (set_quiet)
    _FakeSession(DEFAULT_MODEL).embed([f"text number {i}" for i in range(70)], progress=True)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("backend", ["onnx", "openvino-bf16", "torch"])
def test_threads_reach_the_backend(backend):
    # The Ray executor's actors own one CPU each: the cap must reach the runtime's settings.
    assert make_embedder(f"minilm+{backend}", threads=1).threads == 1
    assert make_embedder(f"minilm+{backend}").threads is None


@pytest.mark.model
def test_openvino_compiles_with_the_thread_cap(onnx_cache):
    session = make_embedder("minilm+openvino", threads=1).session()
    assert int(session.get_property("INFERENCE_NUM_THREADS")) == 1


@pytest.mark.model
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_two_openvino_streams_give_one_streams_vectors_bit_for_bit(onnx_cache, precision):
    # Two batches in flight on two streams: the bytes of a site must not depend on it.
    texts = TEXTS * 3  # batches of 2: twelve batches, each request reused several times
    one = OpenVinoEmbedder(DEFAULT_MODEL, precision=precision, streams=1, batch_size=2)
    two = OpenVinoEmbedder(DEFAULT_MODEL, precision=precision, streams=2, batch_size=2)
    assert int(two.session().get_property("NUM_STREAMS")) == 2
    assert np.array_equal(one.embed(texts), two.embed(texts))


@pytest.mark.model
def test_concurrent_openvino_calls_take_their_own_requests(onnx_cache):
    # A server embeds queries from several threads: no call may read another's output.
    from concurrent.futures import ThreadPoolExecutor

    embedder = OpenVinoEmbedder(DEFAULT_MODEL, streams=2, batch_size=1)
    alone = [embedder.embed([t]) for t in TEXTS]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda t: embedder.embed([t]), TEXTS * 4))
    for k, vectors in enumerate(together):
        assert np.array_equal(vectors, alone[k % len(TEXTS)])


@pytest.mark.model
def test_openvino_keeps_its_compiled_model_and_recompiles_over_a_broken_one(onnx_cache):
    from pipeline.embedding.onnx_export import compiled_cache

    folder = compiled_cache(DEFAULT_MODEL, "bf16")
    first = OpenVinoEmbedder(DEFAULT_MODEL, precision="bf16").embed(TEXTS)
    blobs = list(folder.glob("*.blob"))
    assert blobs  # kept for the next process
    assert np.array_equal(OpenVinoEmbedder(DEFAULT_MODEL, precision="bf16").embed(TEXTS), first)  # loaded from it
    for blob in blobs:  # as a process killed while writing it would leave it
        blob.chmod(0o600)
        blob.write_bytes(blob.read_bytes()[:1000])
    assert np.array_equal(OpenVinoEmbedder(DEFAULT_MODEL, precision="bf16").embed(TEXTS), first)
    assert all(blob.stat().st_size > 1000 for blob in folder.glob("*.blob"))  # written again whole


@pytest.mark.model
def test_openvino_does_not_pin_its_threads(onnx_cache):
    # Pinned, every process put its threads on the first cores: Ray's actors shared one core.
    session = make_embedder("minilm+openvino", threads=1).session()
    assert session.get_property("ENABLE_CPU_PINNING") is False
