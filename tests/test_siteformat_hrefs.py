"""``quote_path``: every href the pipeline publishes, percent-encoded as RFC 3986 asks."""

from __future__ import annotations

from urllib.parse import quote, unquote

from hypothesis import given, settings, strategies as st

from pipeline.siteformat.hrefs import quote_path

PATH_CHARS = st.sampled_from("abcXYZ019-._~/ #%?&+=é日🚀\\:;@!$'()*,[]")


@given(st.text(PATH_CHARS, max_size=40) | st.text(max_size=40))
@settings(max_examples=500, deadline=None)
def test_quote_path_is_quote_with_slash_safe_and_round_trips(path):
    # the fast path for already-safe paths must never differ from ``quote`` itself
    assert quote_path(path) == quote(path, safe="/")
    assert unquote(quote_path(path)) == path


def test_characters_a_link_would_misread_are_encoded():
    assert quote_path("a#b/p%2e%2e/x y.md") == "a%23b/p%252e%252e/x%20y.md"
    assert quote_path("guides/getting-started_1.0~rc/index.json") == "guides/getting-started_1.0~rc/index.json"
    assert quote_path("café/ü.md") == "caf%C3%A9/%C3%BC.md"


# -- the site's base URL ------------------------------------------------------------------------

import pytest  # noqa: E402

from pipeline.errors import PipelineError  # noqa: E402
from pipeline.siteformat.hrefs import base_of, base_path, normalize_base_url, site_relative  # noqa: E402


@pytest.mark.parametrize(
    "given, built",
    [
        ("", "/"), ("/", "/"), ("repo", "/repo/"), ("/repo", "/repo/"), ("repo/", "/repo/"), ("a/b", "/a/b/"),
        ("https://Example.org/docs", "https://example.org/docs/"), ("https://example.org", "https://example.org/"),
        ("http://localhost:8000/x/", "http://localhost:8000/x/"), ("/my docs/", "/my%20docs/"), ("/my%20docs/", "/my%20docs/"),
    ],
)
def test_every_form_of_base_url_a_user_gives_becomes_one_links_start_with(given, built):
    assert normalize_base_url(given) == built
    assert normalize_base_url(built) == built  # what a site says of itself reads back the same


@pytest.mark.parametrize("bad", ["ftp://host/x/", "//host/docs/", "/x?q=1", "/docs/#top", "/a/../b", "https:///x", "mailto:a@b"])
def test_a_base_url_no_link_could_start_with_is_an_error_naming_it(bad):
    with pytest.raises(PipelineError, match="base URL .* give a path such as /repo/"):
        normalize_base_url(bad)


def test_a_site_says_its_base_url_and_links_under_it_resolve():
    assert base_of("https://example.org/docs/index.json") == "https://example.org/docs/"
    assert base_of("/repo/index.json#x") == "/repo/"
    assert base_path("https://example.org/docs/") == "/docs/" and base_path("/repo/") == "/repo/"
    base = "https://example.org/docs/"
    assert site_relative("https://example.org/docs/guide/a%20b.md?x#y", base) == "guide/a b.md"
    assert site_relative("/docs/guide/index.json", base) == "guide/index.json"  # root-relative, same site
    assert site_relative("https://other.org/docs/x", base) is None and site_relative("/other/x", base) is None
    assert site_relative("guide/index.json", "/") is None  # relative links are the reader's to join
    assert site_relative("//evil.org/x", "/") is None
