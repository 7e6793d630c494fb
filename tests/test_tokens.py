import re

from hypothesis import given, settings, strategies as st


def test_counts_include_special_tokens(counter):
    assert counter.count("") == 2
    assert counter.count("hello world") == 4
    assert counter.model_max_tokens == 256


words = st.lists(st.sampled_from(["alpha", "Beta", "gamma.", "naïve", "x=1;", "```", "##", "déjà-vu", "東京", "42"]), max_size=60)


@settings(max_examples=50, deadline=None)
@given(words, st.data())
def test_span_counts_match_real_counts_at_whitespace_cuts(counter, tokens, data):
    text = " ".join(tokens)
    cuts = [0] + [m.start() for m in re.finditer(r" ", text)] + [len(text)]
    a = data.draw(st.sampled_from(cuts))
    b = data.draw(st.sampled_from([c for c in cuts if c >= a]))
    spans = counter.spans(text)
    assert spans.count(a, b) == counter.count(text[a:b])


def test_truncate_fits(counter):
    text = "word " * 400
    cut = counter.truncate(text, 256)
    assert counter.count(cut) <= 256 and text.startswith(cut)
