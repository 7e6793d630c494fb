"""The search page end to end: headless Chromium (Debian ``chromium`` + ``chromium-driver``,
installed by ``make test`` where it can: as root with apt-get) driven by Selenium against
``pipeline serve`` on 127.0.0.1.

Skips only when Chromium or its driver is not installed and ``CI`` is unset; in CI a missing
browser fails the run.
"""

from __future__ import annotations

import os
import shutil

import pytest

from headless import chromium  # one Chromium set-up (flags, profile, logs) for tests and benchmarks
from pipeline.client import open_site
from test_client_support import EVIL, EVIL_IMG, PROMPTS, TITLE, fixture_site, served_site  # noqa: F401

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

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

WAIT = 30  # seconds a condition may take to become true (a ceiling, not an assertion)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = chromium(tmp_path_factory.mktemp("chromium-profile"), log="browser")
    yield driver
    driver.quit()


@pytest.fixture
def page(browser, served_site):
    """The search page, loaded and ready (its script sets body[data-ready])."""
    browser.get(served_site.url)
    wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    return browser


def wait_for(driver, condition):
    return WebDriverWait(driver, WAIT).until(condition)


def indexes(driver, document: str) -> list[int]:
    cards = driver.find_elements(By.CSS_SELECTOR, f'section.document[data-document="{document}"] article.chunk')
    return [int(card.get_attribute("data-index")) for card in cards]


def open_topic(driver, topic: str, document: str, count: int) -> None:
    driver.find_element(By.CSS_SELECTOR, f'nav a.topic[data-topic="{topic}"]').click()
    wait_for(driver, lambda d: len(indexes(d, document)) >= count)


def search(driver, query: str, mode: str = "question") -> list:
    Select(driver.find_element(By.ID, "mode")).select_by_value(mode)
    box = driver.find_element(By.ID, "query")
    box.clear()
    box.send_keys(query)
    driver.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
    # Results come as you type: wait for the answer to the whole query, not to a prefix of it.
    wait_for(driver, lambda d: d.execute_script("const v = document.getElementById('view'); return v.dataset.query === arguments[0] && v.dataset.done === 'true'", query))
    return driver.find_elements(By.CSS_SELECTOR, "li.hit")


def rendered(element):
    """The rendered markdown box (.chunk-text) inside ``element``, once render.js has filled it."""
    return wait_for(element.parent, lambda d: element.find_elements(By.CSS_SELECTOR, ".chunk-text[data-rendered]"))[0]


def test_page_loads_and_lists_the_topics(page, served_site):
    assert page.title == TITLE
    assert not page.find_elements(By.CSS_SELECTOR, ".error")
    links = page.find_elements(By.CSS_SELECTOR, "nav a.topic")
    assert [a.get_attribute("data-topic") for a in links] == [t.id for t in open_site(served_site.url).topics()]
    assert [a.text for a in links] == ["Handbook", "Notes"]
    errors = [e for e in page.get_log("browser") if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
    assert errors == []


def test_topic_shows_chunks_in_stripe_order(page, served_site):
    site = open_site(served_site.url)
    open_topic(page, "handbook", "alpha", 3)
    assert page.find_element(By.CSS_SELECTOR, "#view > h1").text == "Handbook"
    assert indexes(page, "alpha") == [c.ref.index for c in site.sample("handbook", 3, document="alpha")]
    assert indexes(page, "beta") == [c.ref.index for c in site.sample("handbook", 3, document="beta")]
    first = rendered(page.find_element(By.CSS_SELECTOR, 'section.document[data-document="alpha"] article.chunk'))
    source = site.sample("handbook", 1, document="alpha")[0].text
    assert first.find_elements(By.CSS_SELECTOR, "h1, h2, p")  # markdown, rendered
    for line in filter(None, (ln.strip().lstrip("#").strip() for ln in source.splitlines())):
        if not line.startswith("```"):
            assert line in first.text

    page.find_element(By.CSS_SELECTOR, 'section.document[data-document="alpha"] button.more').click()
    wait_for(page, lambda d: len(indexes(d, "alpha")) >= 6)
    assert indexes(page, "alpha") == [c.ref.index for c in site.sample("handbook", 6, document="alpha")]

    Select(page.find_element(By.ID, "order")).select_by_value("technical")
    wait_for(page, lambda d: indexes(d, "alpha")[:1] == [site.plan_sample("handbook", 1, document="alpha", order="technical")[0].index])
    wait_for(page, lambda d: len(indexes(d, "alpha")) >= 3)
    assert indexes(page, "alpha") == [c.index for c in site.plan_sample("handbook", 3, document="alpha", order="technical")]
    # beta has no technical order: it is read in its conceptual one, and the page says so
    beta = page.find_element(By.CSS_SELECTOR, 'section.document[data-document="beta"]')
    assert "no technical order: conceptual order" in beta.text
    assert "no technical order" not in page.find_element(By.CSS_SELECTOR, 'section.document[data-document="alpha"]').text
    assert indexes(page, "beta") == [c.ref.index for c in site.sample("handbook", 3, document="beta")]


def test_question_search_matches_by_simhash(page):
    question = PROMPTS[("handbook", "alpha", 4)][0]
    hits = search(page, question)
    top = hits[0]
    assert (top.get_attribute("data-method"), top.get_attribute("data-source"), top.get_attribute("data-index")) == (
        "simhash", "handbook/alpha.md", "4"
    )
    top.find_element(By.CSS_SELECTOR, "button.open").click()
    text = rendered(top).text
    assert "A stripe order spreads the first chunks" in text


def test_keyword_search_and_code_filter(page):
    hits = search(page, "which cache headers", mode="keyword")
    assert (hits[0].get_attribute("data-method"), hits[0].get_attribute("data-source"), hits[0].get_attribute("data-index")) == (
        "keyword", "handbook/beta.md", "3"
    )
    Select(page.find_element(By.ID, "code")).select_by_value("code")
    hits = search(page, "quick reference and configuration files", mode="keyword")
    assert [h.get_attribute("data-index") for h in hits] == ["1", "9"]  # alpha's two code chunks, by their titles
    assert all("· code" in h.find_element(By.CSS_SELECTOR, ".meta").text for h in hits)
    Select(page.find_element(By.ID, "code")).select_by_value("prose")
    assert search(page, "quick reference and configuration files", mode="keyword") == []


def test_a_chunk_with_script_markup_is_shown_as_text_and_never_runs(page):
    open_topic(page, "notes", "unsafe", 2)
    assert "null" not in page.find_element(By.ID, "view").text.split()  # no stray values where a part is absent
    card = page.find_element(By.CSS_SELECTOR, 'article.chunk[data-document="unsafe"][data-index="1"]')
    shown = rendered(card).get_attribute("textContent")
    assert EVIL in shown and EVIL_IMG in shown
    assert page.find_elements(By.CSS_SELECTOR, "#view script, #view img, #view [onerror]") == []

    hits = search(page, "markup script tag text", mode="keyword")
    target = next(h for h in hits if h.get_attribute("data-source") == "notes/unsafe.md" and h.get_attribute("data-index") == "1")
    target.find_element(By.CSS_SELECTOR, "button.open").click()
    assert EVIL in rendered(target).get_attribute("textContent")
    assert EVIL_IMG in target.find_element(By.CSS_SELECTOR, ".excerpt").get_attribute("textContent")  # the excerpt too
    assert page.find_elements(By.CSS_SELECTOR, "#view script, #view img, #view [onerror]") == []

    assert page.execute_script("return window.__pwned") is None
    assert page.title == TITLE
