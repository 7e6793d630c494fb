"""The publish stage: assets, index.html and per-topic embeddings, kept current across rebuilds."""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest

from conftest import write_tree
from pipeline.chunking.tool import read_manifests
from pipeline.config import SiteConfig
from pipeline.embedding.cache import EmbeddingCache
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from pipeline.site.bundle import page_bundle
from pipeline.site.publish import ASSETS_DIR, publish_site, render_index_html, shipped_assets, topic_vectors
from pipeline.siteformat import vectors
from test_client_support import CONTENT, TITLE, fixture_site, site_copy  # noqa: F401

ASSETS = Path(__file__).resolve().parent.parent / "pipeline" / "assets"


def test_assets_are_the_packaged_files(fixture_site):
    shipped = shipped_assets()
    assert {"client.js", "simhash.js", "app.js", "style.css"} <= shipped.keys()
    for name, data in shipped.items():
        assert (fixture_site / ASSETS_DIR / name).read_bytes() == data == (ASSETS / name).read_bytes()


def test_assets_do_not_become_a_node_of_the_site(fixture_site):
    root = orjson.loads((fixture_site / "index.json").read_bytes())
    assert [t["id"] for t in root["_embedded"]["topics"]] == ["handbook", "notes"]
    assert not (fixture_site / ASSETS_DIR / "index.json").exists()


def test_index_html_escapes_the_title_and_loads_the_module(fixture_site):
    page = (fixture_site / "index.html").read_text(encoding="utf-8")
    assert f"<title>{html.escape(TITLE, quote=False)}</title>" in page
    assert "<b>" not in page
    name, _ = page_bundle()
    assert f'<script type="module" src="_assets/{name}"></script>' in page  # one bundle (site/bundle.py)
    assert page.count("<script") == 1
    assert "script-src 'self'" in page  # inline scripts cannot run even if markup slipped in


def test_the_page_offers_the_query_model_only_when_allowed_and_shipped(site_copy, fixture_site, monkeypatch):
    meta = '<meta name="pipeline-search-model" content="{}">'
    assert meta.format("off") in (fixture_site / "index.html").read_text(encoding="utf-8")  # hashing vectors: no model
    from pipeline.site import browser_model

    def fake_model(site, config, assets_dir):  # stands in for a site embedded with MiniLM (tests/test_embed_js.py)
        folder = site / assets_dir / browser_model.MODEL_DIR
        if not config.search_model:
            shutil.rmtree(folder, ignore_errors=True)
            return 0, []
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.json").write_text("{}", encoding="utf-8")
        return 1, []

    monkeypatch.setattr(browser_model, "publish_browser_model", fake_model)
    config = SiteConfig(title=TITLE, cache_dir=fixture_site.parent / "cache", search_model=True)
    publish_site(site_copy, config)
    assert meta.format("on") in (site_copy / "index.html").read_text(encoding="utf-8")
    publish_site(site_copy, config.with_overrides(search_model=False))
    assert meta.format("off") in (site_copy / "index.html").read_text(encoding="utf-8")


def test_render_index_html_escapes_quotes_and_scripts():
    page = render_index_html(title='"><script>alert(1)</script>')
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page


def test_embeddings_hold_the_cached_vectors_in_index_order(fixture_site):
    cache_root = fixture_site.parent / "cache"
    for topic in ("handbook", "notes"):
        table = vectors.decode((fixture_site / topic / "_embeddings.bin").read_bytes())
        assert table.model == "hashing-384" and table.dtype == vectors.DEFAULT_DTYPE
        manifests = read_manifests(fixture_site, topic)
        assert table.documents == tuple((m["source"].removesuffix(".md"), m["count"]) for m in manifests)
        for manifest in manifests:
            cache = EmbeddingCache(cache_root, manifest["strategy_key"], "hashing-384")
            cached = cache.lookup("", manifest["source_sha256"][:16], [c["content_xxh64"] for c in manifest["chunks"]])
            name = manifest["source"].removesuffix(".md")
            for i, vector in enumerate(cached):
                row = table.vectors[table.row_of(name, i)]
                assert np.abs(row - vector).max() < 0.02
                assert float(row @ vector) > 0.999


def test_embeddings_match_a_fresh_embedding_of_each_chunk(fixture_site):
    table = vectors.decode((fixture_site / "notes" / "_embeddings.bin").read_bytes())
    texts = [(fixture_site / "notes" / "_chunks" / f"unsafe-{i}.md").read_text(encoding="utf-8") for i in range(2)]
    fresh = HashingEmbedder().embed(texts)
    assert np.all(np.sum(table.vectors * fresh, axis=1) > 0.999)


def _build(content: Path, site: Path, cache: Path, **config):
    return build(content, site, SiteConfig(title="T", cache_dir=cache, **config), embedder=HashingEmbedder(), progress=False)


def test_a_rebuild_rewrites_nothing_and_sync_keeps_the_published_files(tmp_path):
    content = write_tree(tmp_path / "content", CONTENT)
    site = tmp_path / "site"
    _build(content, site, tmp_path / "cache")
    published = [site / "index.html", *(site / ASSETS_DIR).iterdir(), *site.rglob("_embeddings.bin")]
    stamps = {p: p.stat().st_mtime_ns for p in published}
    report = _build(content, site, tmp_path / "cache")
    assert report.publish.written == 0 and report.publish.removed == []
    assert not [r for r in report.removed if r.startswith(ASSETS_DIR) or r.endswith("_embeddings.bin") or r == "index.html"]
    assert {p: p.stat().st_mtime_ns for p in published} == stamps


def test_stale_files_are_removed(tmp_path):
    content = write_tree(tmp_path / "content", CONTENT)
    site = tmp_path / "site"
    _build(content, site, tmp_path / "cache")
    (site / ASSETS_DIR / "old.js").write_text("stale", encoding="utf-8")
    for path in (content / "notes").glob("*.md"):
        path.unlink()
    report = _build(content, site, tmp_path / "cache", retire_removed_files=False)  # else kept one build
    assert not (site / ASSETS_DIR / "old.js").exists()
    assert not (site / "notes" / "_embeddings.bin").exists()
    assert f"{ASSETS_DIR}/old.js" in report.publish.removed + report.removed
    assert (site / "handbook" / "_embeddings.bin").is_file()


def test_publish_without_the_cache_says_what_to_run(fixture_site, site_copy, tmp_path):
    with pytest.raises(PipelineError, match="not in the cache .*run `pipeline spec`"):
        publish_site(site_copy, SiteConfig(cache_dir=tmp_path / "empty-cache"))


def test_publish_dtype_is_selectable(site_copy, fixture_site):
    report = publish_site(site_copy, SiteConfig(cache_dir=fixture_site.parent / "cache"), dtype="float16")
    table = vectors.decode((site_copy / "handbook" / "_embeddings.bin").read_bytes())
    assert table.dtype == "float16" and report.topics_with_embeddings == 2
    assert report.embedding_bytes == sum(os.path.getsize(p) for p in site_copy.rglob("_embeddings.bin"))


def test_a_build_writes_the_embeddings_publish_reads_from_the_cache(fixture_site, site_copy):
    """A build writes each ``_embeddings.bin`` from the vectors its spec stage holds; publishing
    the same site from the cache alone must give the same bytes."""
    built = {p.relative_to(site_copy): p.read_bytes() for p in site_copy.rglob("_embeddings.bin")}
    report = publish_site(site_copy, SiteConfig(title=TITLE, cache_dir=fixture_site.parent / "cache"))
    assert len(built) == report.topics_with_embeddings == 2
    assert {p.relative_to(site_copy): p.read_bytes() for p in site_copy.rglob("_embeddings.bin")} == built


def test_a_rebuild_restores_a_lost_embeddings_file_from_the_cache(tmp_path, monkeypatch):
    """A topic whose page is unchanged holds no vectors in memory: its lost ``_embeddings.bin``
    is written again from the cache, the same bytes."""
    from pipeline.site import build as build_module

    content = write_tree(tmp_path / "content", CONTENT)
    site = tmp_path / "site"
    _build(content, site, tmp_path / "cache")
    before = (site / "notes" / "_embeddings.bin").read_bytes()
    (site / "notes" / "_embeddings.bin").unlink()
    read = []
    monkeypatch.setattr(build_module, "topic_vectors", lambda site, dir_rel, *a, **kw: read.append(dir_rel) or topic_vectors(site, dir_rel, *a, **kw))
    report = _build(content, site, tmp_path / "cache")
    assert (site / "notes" / "_embeddings.bin").read_bytes() == before
    assert "notes" in read  # from the cache: the spec stage held none of its vectors
    assert report.spec.written == 0 and report.publish.written == 1


def test_a_build_ships_the_query_model_its_vectors_come_from(tmp_path, monkeypatch):
    """A build copies ``_assets/model/`` while it encodes, for the model its topic pages will
    name (here the hashing embedder standing in for a local model); a site without documents
    gets none, and a later build without them removes it."""
    from types import SimpleNamespace

    from pipeline.site import browser_model

    monkeypatch.setattr(browser_model, "site_local_model", lambda config: SimpleNamespace(name="hashing-384"))
    monkeypatch.setattr(browser_model, "_browser_files", lambda model: {"model.json": b"{}\n", "model.onnx": tmp_path / "weights"})
    (tmp_path / "weights").write_bytes(b"\x00weights")
    content = write_tree(tmp_path / "content", CONTENT)
    site = tmp_path / "site"
    _build(content, site, tmp_path / "cache", search_model=True)
    folder = site / ASSETS_DIR / browser_model.MODEL_DIR
    assert (folder / "model.onnx").read_bytes() == b"\x00weights" and (folder / "model.json").is_file()
    assert '<meta name="pipeline-search-model" content="on">' in (site / "index.html").read_text(encoding="utf-8")
    for path in content.rglob("*.md"):
        path.unlink()
    report = _build(content, site, tmp_path / "cache", retire_removed_files=False, search_model=True)
    assert not folder.exists() and f"{ASSETS_DIR}/model/model.onnx" in report.publish.removed
