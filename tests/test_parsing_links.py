"""Relative links in chunk files (issue 13): found by markdown-it's tokens, relocated for a file
one folder below its source, and the exact source span kept in the record and the manifest."""

from __future__ import annotations

import posixpath

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.chunking import chunk_text
from pipeline.parsing.links import chunk_file_text, link_destinations, relocate
from pipeline.parsing.markdown import parse_markdown

DOC = """# Title { #t }

See [alternatives](alternatives.md) and [perf](index.md#performance), [here](#local), [abs](/x.md), [web](https://x.y/a.md).
![img](../img/a.png "t") and `[code](no.md)` and <a href="x.md">x</a> <img src='pic.png'>

> quoted [q](q.md) and
> lazy [q2](<q 2.md>)

- item [li](li.md)
  - nested ![n](n.png)

| a | b |
|---|---|
| [c1](c1.md) | [c1](c1.md) |

```
[fenced](f.md)
```

    [indented](i.md)

[ref]: ref.md
[Ref Two]:
  <r2.md> "title"

Use [ref] and [x][ref two]. [![badge](b.svg)](target.md) [mail](mailto:a@b.c)

<div><img src="blk.png"></div>

## Head [hl](h.md) ##
"""

EXPECTED = """# Title { #t }

See [alternatives](../alternatives.md) and [perf](../index.md#performance), [here](../index.md#local), [abs](/x.md), [web](https://x.y/a.md).
![img](../../img/a.png "t") and `[code](no.md)` and <a href="x.md">x</a> <img src='pic.png'>

> quoted [q](../q.md) and
> lazy [q2](<../q 2.md>)

- item [li](../li.md)
  - nested ![n](../n.png)

| a | b |
|---|---|
| [c1](../c1.md) | [c1](../c1.md) |

```
[fenced](f.md)
```

    [indented](i.md)

[ref]: ../ref.md
[Ref Two]:
  <../r2.md> "title"

Use [ref] and [x][ref two]. [![badge](../b.svg)](../target.md) [mail](mailto:a@b.c)

<div><img src="blk.png"></div>

## Head [hl](../h.md) ##
"""


def test_every_kind_of_destination_is_found_and_relocated_but_code_is_not():
    document = parse_markdown(DOC)
    found = [DOC[d.start : d.end] for d in link_destinations(document)]
    assert "no.md" not in found and "f.md" not in found and "i.md" not in found
    assert "x.md" not in found and "pic.png" not in found and "blk.png" not in found  # raw HTML: verbatim
    assert chunk_file_text(DOC, DOC, 0, len(DOC), link_destinations(document), "index.md") == EXPECTED


def test_relocate():
    assert relocate("a.md", "x.md") == "../a.md"
    assert relocate("<a b.md>", "x.md") == "<../a b.md>"
    assert relocate("#frag", "my doc.md") == "../my%20doc.md#frag"
    assert relocate("../up.png", "x.md") == "../../up.png"
    for unchanged in ("/abs.md", "https://x.y", "mailto:a@b", "data:x", ""):
        assert relocate(unchanged, "x.md") is None


def test_chunk_file_keeps_the_heading_context_and_only_rewrites_the_span():
    text = "# Doc\n\nIntro.\n\n## Links [in heading](h.md)\n\nRead [this](other.md).\n"
    chunks = chunk_text(text, strategy="markdown")
    last = chunks[-1]
    assert last.content.endswith(text[last.start_offset : last.end_offset])  # the record: exact
    file = chunk_file_text(last.content, text, last.start_offset, last.end_offset, link_destinations(parse_markdown(text)), "doc.md")
    prefix = last.content[: len(last.content) - (last.end_offset - last.start_offset)]
    assert file.startswith(prefix) and file.endswith("Read [this](../other.md).")


# -- property: links anywhere in generated nestings resolve the same from the chunk -------------

target = st.sampled_from(["a.md", "dir/b.md", "../up.md", "c.md#sec", "#frag", "img/x.png", "<sp ace.md>", "https://e.x/y", "/abs.md"])
inline = st.one_of(
    target.map(lambda t: f"[link]({t})"),
    target.map(lambda t: f"![alt]({t} \"title\")"),
    target.map(lambda t: f"`[code]({t})`"),
    st.sampled_from(["plain words", "more text.", "**bold**"]),
)
line = st.lists(inline, min_size=1, max_size=4).map(" ".join)


def _nest(lines: list[str], how: str) -> list[str]:
    if how == "quote":
        return ["> " + x if x else ">" for x in lines]
    if how == "list":
        return ["- " + lines[0], *("  " + x if x else "" for x in lines[1:])]
    return lines


block = st.tuples(st.lists(line, min_size=1, max_size=3), st.lists(st.sampled_from(["quote", "list", "none"]), max_size=3)).map(
    lambda t: _apply(t[0], t[1])
)


def _apply(lines: list[str], wraps: list[str]) -> str:
    for how in wraps:
        lines = _nest(lines, how)
    return "\n".join(lines)


def _resolve(folder: str, dest: str) -> str:
    dest = dest[1:-1] if dest.startswith("<") else dest
    return posixpath.normpath(posixpath.join(folder, dest))


@settings(max_examples=40, deadline=None)
@given(st.lists(block, min_size=1, max_size=8), st.sampled_from([24, 224]))
def test_relocated_links_resolve_from_the_chunk_as_the_originals_do_from_the_source(blocks, max_tokens):
    text = "# Doc\n\n" + "\n\n".join(blocks) + "\n"
    destinations = link_destinations(parse_markdown(text))
    for d in destinations:  # never inside a code span (the generator puts one in backticks)
        assert text.count("`", text.rfind("\n", 0, d.start) + 1, d.start) % 2 == 0
    assert len(destinations) == sum(b.count("](") for b in blocks) - sum(b.count("`[code](") for b in blocks)
    for c in chunk_text(text, strategy="markdown", max_tokens=max_tokens):
        span = text[c.start_offset : c.end_offset]
        assert c.content.endswith(span)  # the record keeps the exact span
        file = chunk_file_text(c.content, text, c.start_offset, c.end_offset, destinations, "doc.md")
        prefix = c.content[: len(c.content) - len(span)]
        expected, pos = [prefix], c.start_offset
        for d in (d for d in destinations if c.start_offset <= d.start and d.end <= c.end_offset):
            old = text[d.start : d.end]
            new = relocate(old, "doc.md") or old
            if old.startswith("#"):
                assert new == "../doc.md" + old
            elif new != old:  # the same file, seen from t/_chunks/ instead of t/
                assert _resolve("t/_chunks", new) == _resolve("t", old)
            else:
                assert old.startswith(("/", "https:"))
            expected += [text[pos : d.start], new]
            pos = d.end
        expected.append(text[pos : c.end_offset])
        assert file == "".join(expected)  # nothing but destinations changes
        if c.boundary_type == "section":  # a whole section: its links parse the same from the file
            assert len(link_destinations(parse_markdown(file))) >= sum(
                1 for d in destinations if c.start_offset <= d.start and d.end <= c.end_offset
            )
