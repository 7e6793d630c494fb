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


# Counting by whitespace-separated runs (each run tokenized once, remembered) must give exactly
# the tokenizer's own counts and offsets for whole texts, whatever the characters around runs.
_ODD = ["\u0301", "\u00e9", "e\u0301", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff", "\x00",
        "\ufffd", "\u200b", "東", "京", "[SEP]", "[MASK]", "ﬁ", "İ", "ß", "😀", "-", ".", "`", "#", "x" * 101, "a1", "\r\n"]
_texts = st.lists(st.one_of(st.sampled_from(_ODD + [" ", "\t", "\n", "\r", "word", "Hello", "naïve"]), st.text(max_size=4)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_run_counts_equal_whole_text_tokenization(counter, text):
    from pipeline.parsing.spans import SpanCounter
    from pipeline.parsing.tokens import TokenCounter

    assert counter.by_runs
    tokenizer = counter._tokenizer
    assert counter.count(text) == len(tokenizer.encode(text).ids)
    encoding = tokenizer.encode(text, add_special_tokens=False)
    offsets = [o for o in encoding.offsets if o[1] > o[0]]
    flat = SpanCounter([o[0] for o in offsets], [o[1] for o in offsets], counter.specials)
    fresh = TokenCounter(tokenizer, model_max_tokens=256)  # a cold memo too
    for spans in (counter.spans(text), fresh.spans(text)):
        for a in range(len(text) + 1):
            for b in range(a, len(text) + 1, max(1, len(text) // 7)):
                assert spans.count(a, b) == flat.count(a, b)
        assert list(spans.token_starts) == list(flat.token_starts)
        assert list(spans.token_ends) == list(flat.token_ends)


_ascii_runs = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40) | st.sampled_from(
    ["[SEP]", "x[CLS]y", "[MASK]", "a" * 101, "b" * 100, "qzxqzxqzxqzx", "don't", "http://example.com/a_b?c=1"]
)


@settings(max_examples=500, deadline=None)
@given(_ascii_runs)
def test_ascii_wordpiece_is_the_tokenizers(counter, run):
    pieces = counter._ascii.pieces(run)
    encoding = counter._tokenizer.encode(run, add_special_tokens=False)
    # the count a run is learnt by (from a memo of words) is the pieces' number
    assert counter._ascii.count(run) == (None if pieces is None else len(pieces))
    if pieces is not None:
        assert pieces == [tuple(o) for o in encoding.offsets]
        assert len(pieces) == len(encoding.ids)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ascii_runs | st.sampled_from(["", "naïve", "x\x0by", "東京", "a\x7f"]), max_size=30))
def test_runs_counted_together_as_one_by_one(counter, runs):
    """A document's new runs are counted in one pass (``counts``); each must get its own count."""
    ascii_wordpiece = counter._ascii
    plain, rest = ascii_wordpiece.split_plain(runs)
    assert plain == [r for r in runs if ascii_wordpiece.count(r) is not None]
    assert rest == [r for r in runs if ascii_wordpiece.count(r) is None]
    assert ascii_wordpiece.counts(plain) == [ascii_wordpiece.count(r) for r in plain]


def test_counting_from_threads_while_the_memo_is_replaced(monkeypatch):
    """Threads share a counter (a library user may chunk in a thread pool); a memo that fills up
    is replaced while others read it, and no count may fail or change."""
    import threading

    from pipeline.embedding.models import default_counter
    from pipeline.parsing import tokens

    counter = default_counter()
    texts = [f"word{i} and café{i % 7} {i * 31}-pieces, [SEP] x{i}" for i in range(400)]
    expected = [len(counter._tokenizer.encode(t).ids) for t in texts]
    expected_spans = [counter._spans(t).count(0, len(t)) for t in texts]
    monkeypatch.setattr(tokens, "_MEMO_LIMIT", 64)  # replaced every few texts
    counter.forget()
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for round_ in range(5):
                for i in range(len(texts)):
                    j = (i + offset + round_) % len(texts)
                    assert counter.count(texts[j]) == expected[j]
                    assert counter._spans(texts[j]).count(0, len(texts[j])) == expected_spans[j]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k * 37,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_every_seeded_run_is_one_piece(counter):
    """Learning takes these runs' counts without tokenizing them: each must be one piece."""
    seed = list(counter._ascii.run_seed)
    assert len(seed) > 20_000  # the vocabulary's words, capitalized and upper-case too
    assert "The" in seed and "THE" in seed and "the" in seed and "." in seed
    assert "##ing" not in seed and "[UNK]" not in seed  # the pre-tokenizer splits these
    counts = [len(e.ids) for e in counter._tokenizer.encode_batch(seed, add_special_tokens=False)]
    assert [run for run, n in zip(seed, counts) if n != 1] == []


@settings(max_examples=200, deadline=None)
@given(_ascii_runs)
def test_word_counts_from_the_model_equal_the_python_wordpiece(counter, run):
    """Words missing the vocabulary are counted by the model's WordPiece; ``word_pieces`` (the
    offsets) must agree with it on every word of a run."""
    from pipeline.parsing.wordpiece import _PRE

    wordpiece = counter._ascii
    for word in _PRE.findall(run.lower()):
        assert len(wordpiece.word_pieces(word)) == len(wordpiece.model.tokenize(word))


_lines = st.lists(
    st.sampled_from(["", "  ", "\t", "word", "Hello,", "naïve", "x\x0by", "\xa0a", "東京", "[SEP]", "a.b", "\r", "  - item", "```"]),
    max_size=12,
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_lines, max_size=8).map("\n".join), st.data())
def test_line_span_counts_match_real_counts(counter, text, data):
    """Spans counted from per-line sums equal the tokenizer's count of the span, at every edge
    outside a word (line starts and ends, indents, spaces inside lines)."""
    cuts = sorted({0, len(text), *(i for i, c in enumerate(text) if c in " \t\r\n"), *(i + 1 for i, c in enumerate(text) if c in " \t\r\n")})
    a = data.draw(st.sampled_from(cuts))
    b = data.draw(st.sampled_from([c for c in cuts if c >= a]))
    switched = counter._spans(text)
    switched._inside_limit = -1  # past the limit at once: counts from the text's runs (``_to_runs``)
    for spans in (counter._spans(text), counter._run_spans(text), switched):
        assert spans.count(a, b) == counter.count(text[a:b])
        assert spans.count(0, len(text)) == counter.count(text)


def test_plain_text_paragraphs_are_counted_by_runs(counter):
    """Long lines (plain text, cut between sentences inside them) are counted from the text's runs
    from the start; short ones from lines. Both give the tokenizer's counts."""
    paragraph = " ".join(f"Sentence {i} is about tokenizers, naïve words and x{i}." for i in range(60))
    text = paragraph + "\n\n" + paragraph
    short = "\n".join(f"- item {i}: café" for i in range(60))
    for doc, by_lines in ((text, False), (short, True)):
        spans = counter._spans(doc)
        assert (spans._line_cum is not None) is by_lines
        cuts = [0, len(doc), *(i for i, c in enumerate(doc) if c == " ")][::7]
        for a in cuts:
            for b in cuts:
                if a <= b:
                    assert spans.count(a, b) == counter.count(doc[a:b])


def test_a_shared_counter_loads_its_tokenizer_once_at_its_first_count():
    from concurrent.futures import ThreadPoolExecutor

    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.parsing.tokens import LazyTokenCounter

    path = str(DEFAULT_MODEL.directory() / "tokenizer.json")
    lazy = LazyTokenCounter(path, model_max_tokens=256)
    assert (lazy.name, lazy.model_max_tokens, lazy.loaded) == (path, 256, False)  # a build's chunking digest reads only these
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lazy.count, ["hello world"] * 8))
    assert counts == [4] * 8 and lazy.loaded and lazy.specials == 2
    tokenizer = lazy._tokenizer
    assert lazy.count("hello world") == 4 and lazy._tokenizer is tokenizer  # loaded once, whichever thread came first
