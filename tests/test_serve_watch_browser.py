"""``serve --watch`` in a real browser: an open page reloads by itself after a save."""

from __future__ import annotations

from test_browser import WAIT, browser, wait_for  # noqa: F401  (skips this module without chromium)
from test_serve_watch import build_id, watched  # noqa: F401


def test_an_open_page_reloads_after_a_save(browser, watched):  # noqa: F811
    content, _, server = watched
    browser.get(server.url)
    wait_for(browser, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    browser.execute_script("window.__beforeSave = 1;")  # a reload forgets it
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors  # the page's CSP allows the reload script
    first = build_id(server)["build"]
    (content / "guide/setup.md").write_text("# Setup\n\nInstall it with pipx.\n", encoding="utf-8")
    wait_for(browser, lambda d: d.execute_script("return window.__beforeSave === undefined && document.body.dataset.ready === 'true'"))
    assert build_id(server)["build"] != first
    assert f"build={build_id(server)['build']}" in browser.page_source
