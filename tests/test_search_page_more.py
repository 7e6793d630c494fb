"""The search page fetches only the results it shows, in headless Chromium: 10 at first ("10+
results" when more follow), 10 more per "Show more results", each batch appended after the
last in the engine's order (the Python client's ranking), and chunk texts read only for the
results on screen."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from conftest import write_tree
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from test_browser import browser, wait_for  # noqa: F401  (skips this module without Chromium)
from test_client_support import Served

from selenium.webdriver.common.by import By  # noqa: E402

QUERY = "retry budget"
DOCS, PARTS = 8, 4  # 32 chunks mention the query's words: more than three pages of results


def _content() -> dict[str, str]:
    files = {}
    for i in range(DOCS):
        parts = "".join(
            f"## Part {j}\n\nThe retry budget of worker {i}.{j} is spent once per failed call"
            + " and the retry budget resets after a quiet minute" * (j + i % 3) + ".\n\n"
            for j in range(PARTS)
        )
        files[f"ops/worker-{i}.md"] = f"# Worker {i}\n\n{parts}"
    files["ops/unrelated.md"] = "# Unrelated\n\n## Colours\n\nThe palette has seven colours.\n"
    return files


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from pipeline.site.build import build

    root = tmp_path_factory.mktemp("more")
    site = root / "site"
    build(write_tree(root / "content", _content()), site, SiteConfig(title="More test", cache_dir=root / "cache"),
          embedder=HashingEmbedder(), progress=False)
    server = Served(site)
    yield server
    server.close()


def _shown(driver) -> list[tuple[str, str]]:
    return [(h.get_attribute("data-source"), h.get_attribute("data-index"))
            for h in driver.find_elements(By.CSS_SELECTOR, "#results li.hit")]


def _excerpts_ready(driver) -> bool:
    return all(e.text != "…" for e in driver.find_elements(By.CSS_SELECTOR, "#results .excerpt"))


def _chunk_texts_fetched(driver) -> int:
    return driver.execute_script(
        "return new Set(performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)"
        ".filter(p => p.includes('/_chunks/') && p.endsWith('.md'))).size")


def test_results_are_fetched_as_they_are_shown_in_the_engines_order(browser, served):
    # the page ranks with the site's static query encoder (hybrid), as the Python client does by default
    expected = [(h.source, str(h.chunk.index)) for h in open_site(served.url).search(QUERY, 100, method="hybrid")]
    assert len(expected) == DOCS * PARTS
    browser.set_window_size(1200, 900)
    browser.get(served.url + "#q=" + quote(QUERY))
    browser.refresh()
    wait_for(browser, lambda d: d.execute_script(
        "const v = document.getElementById('view'); return v.dataset.query === arguments[0] && v.dataset.done === 'true'", QUERY))
    wait_for(browser, _excerpts_ready)
    assert len(_shown(browser)) == 10
    assert browser.find_element(By.ID, "result-count").text.startswith("10+ results")
    assert _chunk_texts_fetched(browser) == 10  # excerpts of the results on screen, no more
    assert {h.get_attribute("data-method") for h in browser.find_elements(By.CSS_SELECTOR, "#results li.hit")} == {"hybrid"}
    for shown in (20, 30, DOCS * PARTS):
        browser.find_element(By.CSS_SELECTOR, "button.more-hits").click()
        wait_for(browser, lambda d: len(_shown(d)) == shown and _excerpts_ready(d))
        assert _chunk_texts_fetched(browser) == shown
    assert not browser.find_elements(By.CSS_SELECTOR, "button.more-hits")
    assert browser.find_element(By.ID, "result-count").text.startswith(f"{DOCS * PARTS} results")
    assert _shown(browser) == expected  # every batch appended in the engine's order
