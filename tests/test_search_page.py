"""The search page as a reader uses it, in headless Chromium: results as you type with highlighted
excerpts, one result per chunk, clean breadcrumbs, keyboard, deep links, rendered markdown with
links and images resolved against the source document, the document view, 390 px without
horizontal scrolling, and the query-model status line.

A small MkDocs-style site of its own (attribute lists in headings, relative links and images,
front matter, a wide table and a long code line), built with the hashing embedder.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.publish import render_index_html
from test_browser import browser, wait_for  # noqa: F401  (skips this module without Chromium)
from test_client_support import Served

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


LONG_CODE = "x = " + " + ".join(f"value_{i}" for i in range(60))
WIDE_TABLE = "| " + " | ".join(f"column{i}" for i in range(14)) + " |\n|" + "---|" * 14 + "\n| " + " | ".join("cell" for _ in range(14)) + " |\n"
PAGE = f"""---
tags: [guide]
---
# Caching Guide {{ #caching-guide }}

The vector cache keeps embeddings between builds. See [the other page](other.md) and the
diagram ![cache diagram](img/diagram.png) for the layout.

## Vector Cache {{ #vector-cache }}

Vectors are cached by content hash, so a rebuild embeds nothing new. The vector cache lives
in a folder of its own.

```python
{LONG_CODE}
```

### Cache Keys {{ #cache-keys }}

Every cache key names the model and the chunking strategy of the vector cache.

{WIDE_TABLE}
"""
OTHER = """# Other Page

## Deployment {{ #deployment }}

Deployment copies the site folder to any static host; the vector cache stays behind.
""".replace("{{", "{").replace("}}", "}")
NOTES = """# Notes

## Stripe Orders

A stripe order spreads the first chunks across the document and mentions the vector cache once.
"""
KEYWORDS = "| keyword | score |\n|---|---|\n| vector cache | 8 |\n| deployment | 5 |\n| stripe order | 6 |\n"
CONTENT = {
    "guide/_keywords/words.md": KEYWORDS,
    "guide/page.md": PAGE,
    "guide/other.md": OTHER,
    "guide/img/diagram.png": _png(),
    "notes/_keywords/words.md": KEYWORDS,
    "notes/stripes.md": NOTES,
}
QUERY = "vector cache"
FAKE_EMBED = "export async function embedQuery(text) { const v = new Float32Array(384); v[0] = 1; return v; }\n"


def build_page_site(root: Path, *, model: bool) -> Path:
    """CONTENT built into ``root/site``; with ``model``, a stand-in embed.js and the page announcing it."""
    from pipeline.site.build import build

    site = root / "site"
    build(write_tree(root / "content", CONTENT), site, SiteConfig(title="Page test", cache_dir=root / "cache"),
          embedder=HashingEmbedder(), progress=False)
    if model:
        (site / "_assets" / "embed.js").write_text(FAKE_EMBED, encoding="utf-8")
        (site / "index.html").write_text(render_index_html(title="Page test", model=True), encoding="utf-8")
    return site


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(build_page_site(tmp_path_factory.mktemp("page"), model=False))
    yield server
    server.close()


@pytest.fixture(scope="module")
def served_with_model(tmp_path_factory):
    server = Served(build_page_site(tmp_path_factory.mktemp("page-model"), model=True))
    yield server
    server.close()


@pytest.fixture
def page(browser, served):
    browser.set_window_size(1200, 900)
    browser.get(served.url + "#")
    browser.refresh()  # a fresh document even when only the hash changed
    wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    return browser


def answered(driver, query: str) -> bool:
    return driver.execute_script(
        "const v = document.getElementById('view'); return v.dataset.query === arguments[0] && v.dataset.done === 'true'", query
    )


def hits(driver) -> list:
    return driver.find_elements(By.CSS_SELECTOR, "#results li.hit")


def excerpts_ready(driver) -> bool:
    return all(e.text != "…" for e in driver.find_elements(By.CSS_SELECTOR, "#results .excerpt"))


def test_results_come_as_you_type_with_highlighted_excerpts(page):
    box = page.find_element(By.ID, "query")
    box.send_keys(QUERY)  # no Enter, no click
    wait_for(page, lambda d: answered(d, QUERY) and excerpts_ready(d))
    found = hits(page)
    assert len(found) >= 3
    assert page.find_element(By.ID, "result-count").text.startswith(f"{len(found)} results")
    marks = [m.text.lower() for m in page.find_elements(By.CSS_SELECTOR, "#results .excerpt mark")]
    assert marks and set(marks) <= {"vector", "vectors", "cache", "cached"}
    assert "q=vector+cache" in page.execute_script("return location.hash")
    keys = [(h.get_attribute("data-source"), h.get_attribute("data-index")) for h in found]
    assert len(keys) == len(set(keys))  # one result per chunk


def test_titles_and_breadcrumbs_are_clean(page):
    page.find_element(By.ID, "query").send_keys(QUERY)
    wait_for(page, lambda d: answered(d, QUERY))
    titles = [b.text for b in page.find_elements(By.CSS_SELECTOR, "#results button.open")]
    crumbs = [c.text for c in page.find_elements(By.CSS_SELECTOR, "#results .crumbs")]
    assert "Caching Guide" in titles
    assert any("Vector Cache" in c for c in crumbs + titles)
    for text in titles + crumbs:
        assert "{" not in text and "#" not in text, text


def test_keyboard_opens_a_result_as_rendered_markdown(page):
    page.find_element(By.TAG_NAME, "body").send_keys("/")
    assert page.switch_to.active_element == page.find_element(By.ID, "query")
    page.switch_to.active_element.send_keys(QUERY)
    wait_for(page, lambda d: answered(d, QUERY))
    page.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    first = page.find_elements(By.CSS_SELECTOR, "#results button.open")[0]
    assert page.switch_to.active_element == first
    page.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    second = page.find_elements(By.CSS_SELECTOR, "#results button.open")[1]
    assert page.switch_to.active_element == second
    page.switch_to.active_element.send_keys(Keys.ARROW_UP)
    assert page.switch_to.active_element == first
    page.switch_to.active_element.send_keys(Keys.ENTER)
    hit = hits(page)[0]
    body = wait_for(page, lambda d: hit.find_elements(By.CSS_SELECTOR, ".chunk-text[data-rendered]"))[0]
    assert first.get_attribute("aria-expanded") == "true"
    assert body.find_elements(By.CSS_SELECTOR, "p")
    assert "{ #" not in body.text and "](" not in body.text  # markdown rendered, attribute lists gone
    page.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert page.switch_to.active_element == page.find_element(By.ID, "query")
    page.switch_to.active_element.send_keys(Keys.ESCAPE)  # Esc in the box: clear it, back to the start
    wait_for(page, lambda d: not hits(d))
    assert page.find_element(By.ID, "query").get_attribute("value") == ""
    assert "q=" not in page.execute_script("return location.hash")


def test_links_and_images_resolve_against_the_source_document(page, served):
    page.get(served.url + "#topic=guide")
    section = wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, 'section.document[data-document="page"]'))[0]
    wait_for(page, lambda d: section.find_elements(By.CSS_SELECTOR, "button.more"))[0].click()  # chunk 0 is a baseline: last
    card = wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, 'section.document[data-document="page"] .chunk-text[data-rendered] img'))
    img = card[0]
    assert img.get_attribute("src") == served.url + "guide/img/diagram.png"  # not guide/_chunks/img/...
    assert wait_for(page, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img)) == 1
    link = page.find_element(By.XPATH, "//section[@data-document='page']//a[normalize-space()='the other page']")
    assert link.get_attribute("href") == served.url + "#topic=guide&doc=other"  # another document: shown rendered
    link.click()
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".document-text[data-rendered] h2"))
    assert "Deployment copies the site folder" in page.find_element(By.ID, "view").text


def test_document_view_marks_the_chunk_and_hides_front_matter(page, served):
    page.get(served.url + "#topic=guide&doc=page&chunk=3")  # "### Cache Keys" and its paragraph and table
    doc = wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".document-text[data-rendered]"))[0]
    wait_for(page, lambda d: doc.find_elements(By.CSS_SELECTOR, ".in-chunk"))
    assert "tags:" not in doc.text
    assert doc.find_element(By.CSS_SELECTOR, "h1").text == "Caching Guide"
    marked = " ".join(e.text for e in doc.find_elements(By.CSS_SELECTOR, ".in-chunk"))
    assert "Every cache key names the model" in marked and "Vectors are cached by content hash" not in marked


def test_a_hits_section_url_opens_the_source_at_its_lines(page, served):
    from pipeline.client import open_site

    for hit in open_site(served.url).search("cache keys model strategy", 3, method="lexical"):
        ref = hit.chunk
        page.get(ref.section_url)  # the citation's link, as a person follows it
        page.refresh()
        doc = wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".document-text[data-rendered]"))[0]
        wait_for(page, lambda d: doc.find_elements(By.CSS_SELECTOR, ".in-chunk"))
        marked = " ".join(e.text for e in doc.find_elements(By.CSS_SELECTOR, ".in-chunk"))
        prose = [line for line in open_site(served.url).read(ref).text.split("\n") if line.strip() and not line.startswith(("#", "|", "`"))]
        last = " ".join(re.sub(r"!\[[^\]]*\]\([^)]*\)|\[([^\]]*)\]\([^)]*\)", r"\1", prose[-1]).split())  # as rendered
        assert page.find_element(By.CSS_SELECTOR, "[data-document]").get_attribute("data-document") == ref.source
        assert last in " ".join(marked.split()), (ref.section_url, last, marked)


def test_deep_links_restore_a_query_on_load_and_on_hashchange(page, served):
    page.get(served.url + "#q=" + quote("stripe order"))
    wait_for(page, lambda d: answered(d, "stripe order"))
    assert page.find_element(By.ID, "query").get_attribute("value") == "stripe order"
    assert hits(page)[0].get_attribute("data-source") == "notes/stripes.md"
    page.execute_script("location.hash = '#q=deployment&topic=guide'")
    wait_for(page, lambda d: answered(d, "deployment"))
    assert page.find_element(By.ID, "query").get_attribute("value") == "deployment"
    assert {h.get_attribute("data-topic") for h in hits(page)} == {"guide"}
    assert "in Guide" in page.find_element(By.ID, "result-count").text
    page.back()
    wait_for(page, lambda d: answered(d, "stripe order"))


def test_390_px_wide_has_no_horizontal_scroll(page, served):
    try:
        page.set_window_size(390, 844)
        page.get(served.url + "#q=" + quote(QUERY))
        wait_for(page, lambda d: answered(d, QUERY) and excerpts_ready(d))
        for button in page.find_elements(By.CSS_SELECTOR, "#results button.open"):
            button.click()
        wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results .chunk-text[data-rendered]")) == len(hits(d)))
        assert page.find_elements(By.CSS_SELECTOR, "#results pre, #results table")  # the wide parts are on screen
        width = page.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1]
        page.get(served.url + "#topic=guide&doc=page")
        wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".document-text[data-rendered]"))
        width = page.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1]
    finally:
        page.set_window_size(1200, 900)


def test_model_off_says_so_and_never_loads_embed_js(page):
    page.find_element(By.ID, "query").send_keys(QUERY)
    wait_for(page, lambda d: answered(d, QUERY))
    assert page.find_element(By.CSS_SELECTOR, 'meta[name="pipeline-search-model"]').get_attribute("content") == "off"
    assert "off" in page.find_element(By.ID, "model-status").text
    loaded = page.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    assert not [u for u in loaded if u.endswith("embed.js")]


def test_a_query_and_an_opened_result_load_one_code_bundle_and_the_vendored_libraries(page):
    # site/bundle.py: app.js and its 24 modules are one request; markdown-it and DOMPurify come when a
    # chunk is rendered. Not one of the individual modules is fetched (they stay for client.js users).
    from pipeline.site.bundle import page_bundle
    from pipeline.site.vendor import VENDORED

    page.find_element(By.ID, "query").send_keys(QUERY)
    wait_for(page, lambda d: answered(d, QUERY) and excerpts_ready(d))
    page.find_elements(By.CSS_SELECTOR, "#results button.open")[0].click()
    wait_for(page, lambda d: hits(d)[0].find_elements(By.CSS_SELECTOR, ".chunk-text[data-rendered]"))
    loaded = page.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    scripts = sorted(u.rsplit("/", 1)[1] for u in loaded if u.endswith(".js"))
    assert scripts == sorted([page_bundle()[0], *VENDORED])
    assert page.find_element(By.CSS_SELECTOR, "script[type=module]").get_attribute("src").endswith(page_bundle()[0])


def test_the_page_ranks_with_the_static_encoder_and_fetches_only_its_words_rows(browser, served):
    from pipeline.client import open_site

    browser.get(served.url + "#q=" + quote(QUERY))
    browser.refresh()
    wait_for(browser, lambda d: answered(d, QUERY))
    assert browser.execute_script("return document.getElementById('view').dataset.ranking") == "hybrid"
    assert "static query encoder" in browser.find_element(By.ID, "model-status").text
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    site = open_site(served.url)  # cold, as the page was: the encoder's files the Python client reads
    fetched: list[str] = []
    original = site.transport.get
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    site.search(QUERY, 1, method="hybrid")

    def names(paths, kind):
        return {p.rsplit("/", 1)[1] for p in paths if f"_search/{kind}/" in p}

    assert names(fetched, "words")  # its words' rows, from the site's word files
    assert names(loaded, "words") == names(fetched, "words") and names(loaded, "encoder") == names(fetched, "encoder")
    assert not [u for u in loaded if u.endswith("/embed.js") or "/model/" in u]  # no full model


def test_model_loads_lazily_and_re_ranks(browser, served_with_model):
    browser.get(served_with_model.url)
    wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    assert not [u for u in loaded if u.endswith("embed.js")]  # not before the first search
    browser.find_element(By.ID, "query").send_keys(QUERY)
    wait_for(browser, lambda d: d.find_element(By.ID, "model-status").text == "Re-ranked with the query model.")
    wait_for(browser, lambda d: answered(d, QUERY))
    assert browser.execute_script("return document.body.dataset.model") == "ready"
    assert hits(browser)
