"""The search page follows a chunk's relative links and images to the right files: the build
relocated them for ``_chunks/`` and the page resolves them against the chunk's own URL."""

from __future__ import annotations

import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from test_browser import browser, open_topic, rendered, wait_for  # noqa: F401  (fixtures; skips without Chromium)
from test_client_support import Served

from selenium.webdriver.common.by import By  # noqa: E402

FILES: dict[str, str | bytes] = {
    "index.md": "# Home\n\nThe home page.\n",
    "guide/setup.md": "# Setup\n\nSee ![the logo](img/logo.png) and [the data](files/data.txt), "
    "[up](../notes.txt) and [top](#setup).\n",
    "guide/img/logo.png": b"\x89PNG fake",
    "guide/files/data.txt": "data\n",
    "notes.txt": "notes\n",
}


@pytest.fixture(scope="module")
def links_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("links")
    content = write_tree(root / "content", FILES)
    build(content, root / "site", SiteConfig(cache_dir=root / "cache"), embedder=HashingEmbedder(), progress=False)
    served = Served(root / "site")
    yield served
    served.close()


def test_chunk_links_and_images_resolve_from_the_page(browser, links_site):  # noqa: F811
    browser.get(links_site.url)
    wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    open_topic(browser, "guide", "setup", 1)
    box = rendered(browser.find_element(By.CSS_SELECTOR, 'section.document[data-document="setup"] article.chunk'))
    img = box.find_element(By.CSS_SELECTOR, "img")
    assert img.get_attribute("src") == links_site.url + "guide/img/logo.png"
    hrefs = [a.get_attribute("href") for a in box.find_elements(By.CSS_SELECTOR, "a")]
    assert links_site.url + "guide/files/data.txt" in hrefs
    assert links_site.url + "notes.txt" in hrefs
