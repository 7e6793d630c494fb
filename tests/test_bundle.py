"""The search page's script bundle (``site/bundle.py``): one content-named ESM file holding
``app.js`` and what it imports statically, the same bytes every build, ``embed.js`` left outside."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pipeline.search.layout import content_hash
from pipeline.site import bundle, vendor
from pipeline.site.publish import ASSETS_DIR, publish_assets

ASSETS = Path(__file__).resolve().parent.parent / "pipeline" / "assets"
IMPORT = re.compile(r'^import\s[^;]*?from\s+"\./([^"]+)";', re.M | re.S)


def static_graph(entry: str) -> set[str]:
    """Every module ``entry`` reaches by static imports (itself included)."""
    seen, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += IMPORT.findall((ASSETS / name).read_text(encoding="utf-8"))
    return seen


def fresh_bundle() -> bytes:
    """esbuild run again, not the per-process cached bytes."""
    done = subprocess.run([str(vendor.tool_path("esbuild")), *bundle.esbuild_args()], cwd=ASSETS,
                          capture_output=True, check=True)
    return done.stdout


def test_the_bundle_is_content_named_and_the_same_bytes_every_run():
    name, data = bundle.page_bundle()
    assert name == f"app-{content_hash(data)}.js"
    assert fresh_bundle() == data == fresh_bundle()


def test_the_bundle_holds_every_statically_imported_module_and_leaves_embed_outside():
    _, data = bundle.page_bundle()
    text = data.decode("utf-8")
    modules = static_graph(bundle.ENTRY)
    assert len(modules) >= 20 and "embed.js" not in modules
    assert set(re.findall(r"^// (\S+\.js)$", text, re.M)) == modules  # esbuild names each module it inlines
    assert 'import("./embed.js")' in text  # loaded by URL from _assets/, only when the model is asked for
    assert not re.search(r'^import\s|from\s+"\./', text, re.M)  # no static import left: one request
    assert "sourceMappingURL" not in text


def test_publish_ships_the_bundle_beside_the_modules_and_removes_an_old_one(tmp_path):
    site = tmp_path / "site"
    (site / ASSETS_DIR).mkdir(parents=True)
    (site / ASSETS_DIR / "app-000000000000.js").write_text("old", encoding="utf-8")
    _, removed = publish_assets(site)
    name, data = bundle.page_bundle()
    assert removed == [f"{ASSETS_DIR}/app-000000000000.js"]
    assert (site / ASSETS_DIR / name).read_bytes() == data
    assert (site / ASSETS_DIR / "client.js").read_bytes() == (ASSETS / "client.js").read_bytes()


def test_two_builds_bundle_the_same_bytes():
    bundle.page_bundle.cache_clear()  # each run of the build's own path runs esbuild
    first = bundle.page_bundle()
    bundle.page_bundle.cache_clear()
    assert bundle.page_bundle() == first
