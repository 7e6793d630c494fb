"""The search page's query embedder: ``_assets/model/`` as publish writes it (model, vocabulary,
ONNX Runtime Web), and embed.js under Node giving the Python pipeline's vectors (cosine ≥ 0.999)."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.config import SiteConfig
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.onnx import OnnxEmbedder
from pipeline.site.browser_model import MODEL_DIR, ORT_FILES, publish_browser_model

ROOT = Path(__file__).resolve().parent.parent
EMBED = ROOT / "pipeline" / "assets" / "embed.js"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")

QUERIES = [
    "how big is a chunk?",
    "How do I deploy the site to GitHub Pages?",
    "unwrap_or_else root_path",
    "Comment déployer le site ? Größe",
    "如何配置嵌入模型",
    "[SEP] weird input 🚀",
    "x",
    "",
    "word " * 300,
]

SCRIPT = r"""
import { readFileSync } from "node:fs";
import { createEmbedder } from "%(embed)s";
const [folder, queriesJson] = process.argv.slice(1);
const manifest = JSON.parse(readFileSync(`${folder}/model.json`, "utf8"));
const ort = await import(`${folder}/${manifest.runtime}`);
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmBinary = readFileSync(`${folder}/ort-wasm-simd-threaded.wasm`); // no fetch of file: URLs in Node
const embedder = await createEmbedder({
  ort, manifest,
  model: new Uint8Array(readFileSync(`${folder}/${manifest.onnx}`)),
  vocabText: readFileSync(`${folder}/${manifest.vocab}`, "utf8"),
});
const queries = JSON.parse(queriesJson);
const vectors = await Promise.all(queries.map((q) => embedder.embed(q))); // queued, not re-entrant
console.log(JSON.stringify(vectors.map((v) => Array.from(v))));
"""


def embedded_with(site: Path, model: str) -> Path:
    """A site whose topic-spec.md says its vectors come from ``model`` (all publish reads)."""
    from pipeline.topicspec.specfile import DATA_MARKER

    spec = site / "kb" / "topic-spec.md"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(f"# kb\n\n{DATA_MARKER}\n```json\n{json.dumps({'topic': 'kb', 'model': model})}\n```\n", encoding="utf-8")
    return site


@pytest.fixture(scope="module")
def published(onnx_cache, tmp_path_factory):
    site = embedded_with(tmp_path_factory.mktemp("site"), DEFAULT_MODEL.name)
    written, removed = publish_browser_model(site, SiteConfig(search_model=True))
    return site, written


@pytest.mark.model
def test_publish_writes_the_model_runtime_and_vocabulary(published):
    site, written = published
    folder = site / "_assets" / MODEL_DIR
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.json", "model.onnx", "vocab.txt", *ORT_FILES])
    assert written == 5
    manifest = json.loads((folder / "model.json").read_text())
    assert manifest["model"] == DEFAULT_MODEL.name and manifest["onnx_variant"] == "fp16w"
    assert manifest["tokenizer"]["max_tokens"] == 256
    # a second publish rewrites nothing (same bytes: ETags survive a rebuild)
    assert publish_browser_model(site, SiteConfig(search_model=True)) == (0, [])


@pytest.mark.model
def test_opting_out_removes_the_folder(onnx_cache, tmp_path):
    embedded_with(tmp_path, DEFAULT_MODEL.name)
    publish_browser_model(tmp_path, SiteConfig(search_model=True))
    written, removed = publish_browser_model(tmp_path, SiteConfig(search_model=False))
    assert written == 0 and len(removed) == 5
    assert not (tmp_path / "_assets" / MODEL_DIR).exists()


def test_no_local_model_means_no_folder(tmp_path):
    assert publish_browser_model(embedded_with(tmp_path, "hashing-384"), SiteConfig(embedder="hashing", search_model=True)) == (0, [])
    assert not (tmp_path / "_assets" / MODEL_DIR).exists()


def test_a_site_embedded_with_another_model_gets_no_folder(tmp_path):
    # the config says minilm, but the build was given another embedder: its vectors are not MiniLM's
    assert publish_browser_model(embedded_with(tmp_path, "hashing-384"), SiteConfig(search_model=True)) == (0, [])
    assert publish_browser_model(tmp_path / "empty", SiteConfig(search_model=True)) == (0, [])  # nothing embedded at all
    assert not (tmp_path / "_assets" / MODEL_DIR).exists()


def test_missing_runtime_warns_and_ships_nothing(tmp_path, monkeypatch):
    from pipeline.site import vendor

    monkeypatch.setattr(vendor, "node_modules_candidates", lambda: [tmp_path / "nowhere"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert publish_browser_model(embedded_with(tmp_path, DEFAULT_MODEL.name), SiteConfig(search_model=True)) == (0, [])
    assert any("onnxruntime-web" in str(w.message) for w in caught)


@needs_node
@pytest.mark.model
def test_browser_vectors_match_python(published):
    site, _ = published
    folder = site / "_assets" / MODEL_DIR
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT % {"embed": EMBED.as_uri()}, str(folder), json.dumps(QUERIES)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    browser = np.array(json.loads(done.stdout), dtype=np.float32)
    python = OnnxEmbedder(DEFAULT_MODEL).embed(QUERIES)  # fp32: the vectors the build stores
    assert browser.shape == python.shape
    cosine = np.sum(browser * python, axis=1)
    assert cosine.min() >= 0.999, cosine


def test_a_failed_export_warns_and_ships_nothing(tmp_path, monkeypatch):
    from pipeline.embedding import onnx_export
    from pipeline.errors import PipelineError

    def fail(model, variant="fp32"):
        raise PipelineError("exporting needs torch")

    monkeypatch.setattr(onnx_export, "export_onnx", fail)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert publish_browser_model(embedded_with(tmp_path, DEFAULT_MODEL.name), SiteConfig(search_model=True)) == (0, [])
    assert any("needs torch" in str(w.message) for w in caught)
    assert not (tmp_path / "_assets" / MODEL_DIR).exists()
