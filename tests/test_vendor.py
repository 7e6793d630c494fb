"""The search page's third-party files (markdown-it, DOMPurify): found in node_modules, copied
into _assets/ at build time, and a clear error before anything is written when they are missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site import vendor
from pipeline.site.build import build
from pipeline.site.publish import ASSETS_DIR, publish_site
from test_client_support import fixture_site, site_copy  # noqa: F401


def test_the_built_site_holds_the_packages_own_minified_files(fixture_site):
    folder = vendor.find_node_modules()
    for name, rel in vendor.VENDORED.items():
        assert (fixture_site / ASSETS_DIR / name).read_bytes() == (folder / rel).read_bytes()
    assert b"DOMPurify" in (fixture_site / ASSETS_DIR / "purify.min.js").read_bytes()
    assert b"markdownit" in (fixture_site / ASSETS_DIR / "markdown-it.min.js").read_bytes()


def test_the_environment_variable_wins(tmp_path, monkeypatch):
    for rel in [*vendor.VENDORED.values(), *vendor.TOOLS.values()]:
        write_tree(tmp_path / "nm", {rel: f"/* {rel} */"})
    monkeypatch.setenv(vendor.ENV_VAR, str(tmp_path / "nm"))
    assert vendor.find_node_modules() == tmp_path / "nm"
    assert vendor.vendored_assets()["purify.min.js"] == b"/* dompurify/dist/purify.min.js */"


def test_missing_node_modules_fails_the_build_before_any_write(tmp_path, monkeypatch):
    monkeypatch.setattr(vendor, "node_modules_candidates", lambda: [tmp_path / "nowhere" / "node_modules"])
    content = write_tree(tmp_path / "content", {"t/a.md": "# A\n\nText.\n"})
    with pytest.raises(PipelineError, match=r"needs markdown-it/dist/browser/markdown-it.umd.min.js.*npm ci") as error:
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert str(tmp_path / "nowhere" / "node_modules") in str(error.value)
    assert not (tmp_path / "site").exists()


def test_a_missing_esbuild_is_named_before_any_write(tmp_path, monkeypatch):
    real = vendor.find_node_modules()
    for rel in vendor.VENDORED.values():  # the libraries are there, esbuild is not
        write_tree(tmp_path / "nm", {rel: (real / rel).read_text(encoding="utf-8")})
    monkeypatch.setattr(vendor, "node_modules_candidates", lambda: [tmp_path / "nm"])
    content = write_tree(tmp_path / "content", {"t/a.md": "# A\n\nText.\n"})
    with pytest.raises(PipelineError, match=r"needs esbuild/bin/esbuild from node_modules.*npm ci"):
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert not (tmp_path / "site").exists()


def test_publish_alone_fails_before_touching_assets(site_copy, fixture_site, monkeypatch, tmp_path):
    before = {p.name: p.read_bytes() for p in (site_copy / ASSETS_DIR).iterdir()}
    monkeypatch.setattr(vendor, "node_modules_candidates", lambda: [tmp_path / "node_modules"])
    with pytest.raises(PipelineError, match="npm ci"):
        publish_site(site_copy, SiteConfig(cache_dir=fixture_site.parent / "cache"))
    assert {p.name: p.read_bytes() for p in (site_copy / ASSETS_DIR).iterdir()} == before
