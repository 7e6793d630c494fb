"""``quote_path``: every href the pipeline publishes, percent-encoded as RFC 3986 asks."""

from __future__ import annotations

from urllib.parse import quote, unquote

from hypothesis import given, settings, strategies as st

from pipeline.index.hrefs import quote_path

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
