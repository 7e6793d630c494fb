"""A YAML/JSON entry's chunks show readable markdown and keep exact offsets (``entry_render.py``).

The claim, checked on generated entries written by PyYAML and json in many styles: every value
word is unique, so its one position in the file is found by ``str.find`` (an oracle independent
of the code under test). Then for every chunk and every value word ``w`` of a shown field:
``w`` is in the chunk's text iff its position lies in ``[start_offset, end_offset)``; every such
word is shown by exactly one chunk, in the order of the file within a section; no two chunks'
spans overlap; and no chunk shows YAML/JSON syntax (quotes, braces, ``key:`` lines).
"""

from __future__ import annotations

import itertools
import json
import re
import warnings

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from test_chunking_properties import SETTINGS
from pipeline.chunking import chunk_text
from pipeline.chunking.entry_render import align, label_for

WORD = re.compile(r"w\d+x")


@st.composite
def words(draw, counter, low=1, high=12):
    n = draw(st.integers(low, high))
    out = []
    for _ in range(n):
        out.append(f"w{next(counter)}x")
        if draw(st.integers(0, 5)) == 0:
            out[-1] += "."  # a sentence end: long values split at sentences
        if draw(st.integers(0, 7)) == 0:
            out.append(draw(st.sampled_from(["été", "«q»", "😀", "a\\b", "it's"])))  # escaped or quoted in the file
    return " ".join(out)


@st.composite
def entry_data(draw):
    counter = itertools.count()
    kind = draw(st.sampled_from(["definition", "error", "how_to", "workflow", "announcement"]))
    text = lambda low=1, high=12: draw(words(counter, low, high))  # noqa: E731
    items = lambda: [text(1, 8) for _ in range(draw(st.integers(1, 6)))]  # noqa: E731
    if kind == "definition":
        fields = {"term": "Some Term", "definition": text(1, 60), "context": text(), "examples": items()}
    elif kind == "error":
        fields = {"errorCode": draw(st.sampled_from([401, "E42", "timeout"])), "description": text(), "symptoms": text(),
                  "solution": text(1, 60), "causes": items(), "prevention": text()}
    elif kind in ("how_to", "workflow"):
        step = st.sampled_from(["plain", "numbered", "mapping"])
        styles = [draw(step) for _ in range(draw(st.integers(1, 12)))]
        steps = [
            text(1, 10) if s == "plain" else f"Step {i + 1}: {text(1, 10)}" if s == "numbered" else {"action": text(1, 6), "details": text(1, 6)}
            for i, s in enumerate(styles)
        ]
        fields = {"overview": text(1, 80), "prerequisites": draw(st.sampled_from([0, 1])) and items() or text(),
                  "steps": steps, "commonIssues": text(), "tips": items()}
    else:
        fields = {"body": text(1, 40), "notes": items()}
    names = draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=len(fields), unique=True))
    form = {name: fields[name] for name in names}
    entry = {"id": "e1", "type": kind, "title": "The Entry"}
    if draw(st.booleans()):
        entry["rawFormData"] = form
    else:
        entry.update(form)
    return entry


@st.composite
def entry_file(draw):
    data = draw(entry_data())
    if draw(st.booleans()):
        indent = draw(st.sampled_from([None, 1, 2, "\t"]))
        return "e.json", json.dumps(data, indent=indent, ensure_ascii=draw(st.booleans())), data
    text = yaml.safe_dump(
        data,
        default_style=draw(st.sampled_from([None, None, '"', "'", "|", ">"])),
        default_flow_style=draw(st.sampled_from([False, False, True, None])),
        width=draw(st.sampled_from([30, 80, 1000])),
        sort_keys=False,
        allow_unicode=draw(st.booleans()),
    )
    return "e.yaml", text, data


def shown_words(data: dict) -> list[str]:
    form = data.get("rawFormData", data)
    kind = data["type"]
    skip = {"id", "type", "title", "rawFormData", "userType", "category", "product", "tags"}
    sections = {"overview", "prerequisites", "steps", "commonIssues", "tips"}
    names = [n for n in form if n not in skip and (kind not in ("how_to", "workflow") or n in sections)]
    return WORD.findall(json.dumps({n: form[n] for n in names}))


@pytest.mark.parametrize("max_tokens", [24, 48, 256])
@SETTINGS
@given(case=entry_file())
@example(case=("e.yaml", '"id": "e1"\n"type": "error"\n"title": "The Entry"\n"errorCode": !!int "401"\n',
               {"id": "e1", "type": "error", "title": "The Entry", "errorCode": 401}))  # a tag: shown as 401
def test_rendered_entry_chunks_show_exactly_their_source_span(counter, case, max_tokens):
    path, text, data = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = chunk_text(text, path=path, strategy="entry", counter=counter, max_tokens=max_tokens)
    position = {w: text.find(w) for w in WORD.findall(text)}
    assert all(p >= 0 and text.count(w) == 1 for w, p in position.items())  # the oracle holds
    shown = shown_words(data)
    seen: dict[str, int] = {}
    for i, c in enumerate(chunks):
        assert c.metadata["rendered_from"] == path.rsplit(".", 1)[1]
        assert c.token_count <= max_tokens and c.token_count == counter.count(c.content)
        body = c.content.split("\n\n", 1)[1] if "\n\n" in c.content else c.content
        in_chunk = WORD.findall(body)
        for w in shown:
            inside = c.start_offset <= position[w] < c.end_offset
            assert (w in in_chunk) == inside, (w, c.content, text[c.start_offset : c.end_offset])
        assert in_chunk == sorted(in_chunk, key=position.get)  # a section's words in file order
        for w in in_chunk:
            assert w not in seen, f"{w} shown twice"
            seen[w] = i
        assert not re.search(r'["{}\[\]]|^\s*\w+:\s', body, re.MULTILINE), body  # markdown, not YAML/JSON
        assert (c.start_line, c.end_line) == (text.count("\n", 0, c.start_offset) + 1, text.count("\n", 0, c.end_offset - 1) + 1)
    assert sorted(seen) == sorted(shown)  # nothing lost
    spans = sorted((c.start_offset, c.end_offset) for c in chunks)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no overlap


def test_align_reads_through_quotes_escapes_and_folding():
    source = 'k: "a \\"b\\" \\u00e9t\\u00e9 c \\ud83d\\ude00"'
    value = json.loads(source[3:])
    assert value == 'a "b" été c 😀'
    written = [source[a:b] or None for a, b in align(value, source, 3, len(source), '"')]
    assert written == ["a", None, '\\"', "b", '\\"', None, "\\u00e9", "t", "\\u00e9", None, "c", None, "\\ud83d\\ude00"]
    folded = 'k: "one\\\n    \\ two"'  # YAML's line continuation and escaped space
    assert [folded[a:b] for a, b in align("one two", folded, 3, len(folded), '"') if b > a] == list("onetwo")
    block = "k: >-\n  one two\n  three\n"
    pairs = align("one two three", block, 3, len(block), ">")
    assert "".join(block[a:b] for a, b in pairs) == "onetwothree"
    assert [a for a, _ in pairs] == sorted(a for a, _ in pairs)  # never backwards
    assert [(a, b) for a, b in align("a\\b", "k: 'a\\b'", 3, 9, "'")][1] == (5, 6)  # a backslash is literal here


def test_labels_say_what_an_error_reader_looks_for():
    assert [label_for(n) for n in ("errorCode", "causes", "rootCause", "solution", "userType", "see_also")] == [
        "Code", "Causes", "Cause", "Fix", "User type", "See also",
    ]
