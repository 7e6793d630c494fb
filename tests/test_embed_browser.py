"""embed.js in headless Chromium, as the search page will load it: lazily from the served
site's ``_assets/model/`` (fetch, wasm, no CDN), under a Content-Security-Policy that allows
only same-origin scripts plus WebAssembly, giving the Python pipeline's vectors."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from headless import chromium  # one Chromium set-up (flags, profile, logs) for tests and benchmarks
from pipeline.config import SiteConfig
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.onnx import OnnxEmbedder
from pipeline.site.browser_model import publish_browser_model
from pipeline.site.publish import publish_assets
from test_client_support import Served
from test_embed_js import embedded_with

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING = (
    "chromium and chromedriver are not installed, so the browser tests do not run here (`make test` installs them "
    "with apt-get when run as root; otherwise: sudo apt-get install chromium chromium-driver)"
)
if not (CHROMIUM and DRIVER):
    if os.environ.get("CI"):
        pytest.fail(MISSING, pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.model

QUERIES = ["how big is a chunk?", "Comment déployer le site ?", "unwrap_or_else", "日本語 🚀"]
CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'"
PROBE_HTML = f"""<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<script type="module" src="probe.js"></script></head><body></body></html>
"""
PROBE_JS = """import { embedQuery, modelState } from "./_assets/embed.js";
window.__before = modelState();
const queries = %s;
const pending = embedQuery(queries[0]);
window.__during = modelState();
try {
  const first = await pending;
  const rest = [];
  for (const q of queries.slice(1)) rest.push(Array.from(await embedQuery(q)));
  window.__vectors = [Array.from(first), ...rest];
} catch (error) {
  window.__error = String(error && error.stack || error);
}
window.__after = modelState();
"""


@pytest.fixture(scope="module")
def served(onnx_cache, tmp_path_factory):
    site = tmp_path_factory.mktemp("embed-site")
    (site / "_assets").mkdir()
    publish_assets(site)
    publish_browser_model(embedded_with(site, DEFAULT_MODEL.name), SiteConfig(search_model=True))
    (site / "probe.html").write_text(PROBE_HTML, encoding="utf-8")
    (site / "probe.js").write_text(PROBE_JS % json.dumps(QUERIES), encoding="utf-8")
    server = Served(site)
    yield server
    server.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = chromium(tmp_path_factory.mktemp("chromium-profile"), log="browser")
    yield driver
    driver.quit()


def test_page_embeds_queries_like_python(served, browser):
    browser.get(served.url + "probe.html")
    # a ceiling for loading ~60 MB and compiling wasm on a busy machine, not a timed assertion
    WebDriverWait(browser, 240).until(lambda d: d.execute_script("return window.__after !== undefined"))
    error = browser.execute_script("return window.__error || null")
    assert error is None, (error, browser.get_log("browser")[-5:])
    assert browser.execute_script("return [window.__before, window.__during, window.__after]") == ["idle", "loading", "ready"]
    vectors = np.array(browser.execute_script("return window.__vectors"), dtype=np.float32)
    python = OnnxEmbedder(DEFAULT_MODEL).embed(QUERIES)
    assert vectors.shape == python.shape
    assert np.sum(vectors * python, axis=1).min() >= 0.999


@pytest.fixture(scope="module")
def real_site(onnx_cache, tmp_path_factory):
    """The search page's test content built with the real model: the page ships _assets/model/."""
    from conftest import write_tree
    from pipeline.site.build import build
    from test_search_page import CONTENT

    root = tmp_path_factory.mktemp("real-model-page")
    build(write_tree(root / "content", CONTENT), root / "site", SiteConfig(title="Real model", cache_dir=root / "cache", search_model=True),
          progress=False)
    server = Served(root / "site")
    yield server
    server.close()


def test_search_page_reranks_with_the_shipped_model(real_site, browser):
    from selenium.webdriver.common.by import By

    browser.get(real_site.url)
    WebDriverWait(browser, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    assert browser.find_element(By.CSS_SELECTOR, 'meta[name="pipeline-search-model"]').get_attribute("content") == "on"
    browser.find_element(By.ID, "query").send_keys("vector cache")
    # read in one script call: the page may replace the element between a find and a .text (stale)
    status = lambda d: d.execute_script("return document.getElementById('model-status')?.textContent ?? ''")  # noqa: E731
    WebDriverWait(browser, 240).until(lambda d: "Re-ranked" in status(d) or "unavailable" in status(d))
    assert status(browser) == "Re-ranked with the query model.", browser.get_log("browser")[-5:]
