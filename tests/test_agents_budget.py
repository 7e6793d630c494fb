"""Agents get answers within a budget: every MCP tool's answer on a built site that tries to
overflow it (a flat folder of hundreds of documents, a document of hundreds of sections, one
chunk larger than the budget, texts full of JSON escapes) fits ``max_tokens``; paging with
``next_cursor`` reaches every document, chunk and line exactly once, in order; a cursor that
does not fit its call says so. And ``budget.py``'s own guarantees, as properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from pipeline.agents import budget
from pipeline.agents.budget import Cursor
from pipeline.agents.tools import SiteTools, chunk_id
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder

LIMIT = budget.limit(None)  # 16,000 characters: ~4k tokens
FLAT = 600
SECTIONS = 180


ESCAPES = 'Tab\tand quote" ' * 6


def tree() -> dict[str, str]:
    files = {f"flat/note-{i:04d}.md": f"# Note {i} \"quoted\" naïve\n\nA short note {i} about caching, paging and budgets.\n"
             for i in range(FLAT)}
    files["long/handbook.md"] = "# The Long Handbook\n\n" + "".join(
        f"## Section {i}: paging \"budgets\" \\ escapes\n\nParagraph {i} says how a reader pages through a long "
        f"document with cursors, line after line, and why naïve readers overflow their context. {ESCAPES}\n\n"
        for i in range(SECTIONS))
    code = "\n".join(f'    print("line {i}: \\"escaped\\" \\\\ naïve")  # {"x" * 40}' for i in range(700))
    files["long/giant.md"] = f"# Giant Chunk\n\nOne code block larger than any budget.\n\n```python\n{code}\n```\n\n## After\n\nThe end.\n"
    files["small/alpha.md"] = "# Alpha\n\nStripe orders spread chunks.\n\n## Caching\n\nVectors are cached by content hash.\n"
    return files


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    from pipeline.site.build import build

    root = tmp_path_factory.mktemp("budget")
    for rel, text in tree().items():
        path = root / "content" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    site = root / "site"
    with pytest.warns(UserWarning, match="over the token limit"):  # the giant chunk, kept whole
        build(root / "content", site, SiteConfig(title="Budget", cache_dir=root / "cache", embedder="hashing"),
              embedder=HashingEmbedder(), progress=False)
    return site


@pytest.fixture(scope="module")
def tools(site_dir):
    return SiteTools(open_site(site_dir))


def biggest(site):
    """The giant code block's chunk: larger than any answer may be."""
    return max(site.topic("long").document("giant").items, key=lambda r: r.end_line - r.start_line)


def size(answer: dict) -> int:
    return len(budget.dumps(answer))


def test_every_default_answer_fits_the_budget(tools, site_dir):
    answers = [tools.list_topics()]
    for topic in ("flat", "long", "small"):
        answers += [tools.list_topics(topic), tools.sample(topic)]
    for query in ("paging budgets cursors", "escaped naïve print line", "caching", "section paragraph reader"):
        answers += [tools.search(query), tools.search(query, 50)]
    site = tools.site
    for doc in site.topic("long").documents + site.topic("small").documents + site.topic("flat").documents[:20]:
        answers += [tools.read_document(doc.source), tools.sample(doc.topic, document=doc.source)]
        for ref in doc.items[:40]:
            answers += [tools.read_chunk(chunk_id(ref)), *(tools.follow(chunk_id(ref), rel) for rel in ("next", "prev", "related"))]
    sizes = [size(a) for a in answers]
    assert len(answers) > 300 and max(sizes) <= LIMIT
    assert max(sizes) > LIMIT * 0.8  # the site does fill the budget: the limit, not the content, held it
    giant = biggest(site)
    assert len(site.read(giant).text) > 2 * LIMIT  # a chunk bigger than any answer...
    page = tools.read_chunk(chunk_id(giant))
    assert "next_cursor" in page and size(page) <= LIMIT  # ...comes a page at a time
    hit = tools.search("escaped naïve print line", 1)["hits"][0]
    assert hit["chunk_id"] == chunk_id(giant) and hit["truncated"] and size(hit) <= LIMIT


@pytest.mark.parametrize("max_tokens", [budget.MIN_TOKENS, 1500, budget.MAX_TOKENS])
def test_max_tokens_bounds_the_answers_that_take_it(tools, max_tokens):
    room = max_tokens * budget.CHARS_PER_TOKEN
    answers = [tools.search("paging budgets cursors", 50, max_tokens=max_tokens),
               tools.sample("long", 50, max_tokens=max_tokens),
               tools.read_document("long/handbook.md", max_tokens=max_tokens),
               tools.read_document("long/giant.md", max_tokens=max_tokens)]
    assert all(size(a) <= room for a in answers)
    cut = [bool(a.get("next_cursor") or a.get("omitted")) for a in answers]
    assert all(size(a) > room * 0.7 for a, more in zip(answers, cut) if more)  # a page is cut by the budget, nothing else
    assert all(cut) if max_tokens < budget.MAX_TOKENS else not cut[0]  # 50 hits fit 20k tokens


def pages(call, first: dict) -> list[dict]:
    out = [first]
    while "next_cursor" in out[-1]:
        out.append(call(out[-1]["next_cursor"]))
        assert len(out) < 500
    return out


def test_list_topics_pages_reach_every_document_exactly_once(tools):
    got = pages(lambda c: tools.list_topics("flat", c), tools.list_topics("flat"))
    assert len(got) >= 3 and all(size(p) <= LIMIT for p in got)
    paths = [d["path"] for p in got for d in p["documents"]]
    assert paths == [d.source for d in tools.site.topic("flat").documents] and len(paths) == FLAT
    assert [p["from"] for p in got] == [sum(len(q["documents"]) for q in got[:i]) for i in range(len(got))]
    assert all(p["total"] == FLAT for p in got)


@pytest.mark.parametrize("order", ["conceptual", "technical"])
def test_sample_pages_reach_the_whole_reading_order_exactly_once(tools, order):
    site = tools.site
    for topic, document in (("long", None), ("long", "long/handbook.md"), ("small", None)):
        name = None if document is None else tools.document(document)[1].name
        try:
            want = [chunk_id(r) for r in site.plan_sample(topic, 10_000, order=order, document=name)]
        except ValueError as refused:  # no technical baseline: refused, never a silent conceptual order
            assert order == "technical" and "no technical order" in str(refused)
            with pytest.raises(ValueError, match="no technical order"):
                tools.sample(topic, 7, order=order, document=document)
            continue
        got = pages(lambda c: tools.sample(topic, 7, order=order, document=document, cursor=c),
                    tools.sample(topic, 7, order=order, document=document))
        assert [c["chunk_id"] for p in got for c in p["chunks"]] == want
        assert all(size(p) <= LIMIT and len(p["chunks"]) <= 7 for p in got)


@pytest.mark.parametrize("document", ["long/handbook.md", "long/giant.md", "small/alpha.md"])
def test_read_document_pages_give_back_the_source_line_by_line(tools, site_dir, document):
    source = (site_dir / document).read_text(encoding="utf-8")
    got = pages(lambda c: tools.read_document(document, c), tools.read_document(document))
    assert "".join(p["text"] for p in got) == source
    assert all(size(p) <= LIMIT for p in got) and (len(got) > 2) == (len(source) > 2 * LIMIT)
    lines = source.split("\n")
    for p in got:  # each page says which lines it holds, and the chunks on them
        held = "\n".join(lines[p["start_line"] - 1:p["end_line"]])
        assert p["text"] in (held, held + "\n")
        assert all(c["start_line"] <= p["end_line"] and c["end_line"] >= p["start_line"] for c in p["chunks"])
    assert [p["start_line"] for p in got[1:]] == [p["end_line"] + 1 for p in got[:-1]]
    held = {c["chunk_id"] for p in got for c in p["chunks"]}
    assert held == {chunk_id(r) for r in tools.document(document)[1].items}


def test_read_chunk_pages_give_back_a_chunk_larger_than_the_budget(tools):
    giant = biggest(tools.site)
    got = pages(lambda c: tools.read_chunk(chunk_id(giant), c), tools.read_chunk(chunk_id(giant)))
    assert len(got) >= 3 and "".join(p["text"] for p in got) == tools.site.read(giant).text
    assert all(p["start_line"] == giant.start_line and p["links"]["next"] for p in got)


def test_search_leaves_out_the_hits_past_the_budget_and_says_so(tools):
    answer = tools.search("section paragraph reader", 50, max_tokens=budget.MIN_TOKENS)
    assert answer["omitted"] == 50 - len(answer["hits"]) > 0 and "max_tokens" in answer["hint"]
    full = tools.search("section paragraph reader", 50, max_tokens=budget.MAX_TOKENS)
    assert [h["chunk_id"] for h in full["hits"][:len(answer["hits"])]] == [h["chunk_id"] for h in answer["hits"]]


def test_a_cursor_continues_only_the_call_it_came_from(tools):
    first = tools.list_topics("flat")
    cursor = first["next_cursor"]
    with pytest.raises(ValueError, match="continues list_topics, not sample"):
        tools.sample("flat", cursor=cursor)
    with pytest.raises(ValueError, match="topic='flat', not 'long'"):
        tools.list_topics("long", cursor)
    assert tools.list_topics(None, cursor)["documents"][0]["path"] == tools.list_topics("flat", cursor)["documents"][0]["path"]
    for bad in ("nonsense", cursor[:-6], "e30"):
        with pytest.raises(ValueError, match="not one this server gave"):
            tools.list_topics("flat", bad)
    decoded = Cursor.decode(cursor, "list_topics")
    stale = Cursor(decoded.tool, decoded.arguments, decoded.position, "000000000000").encode()
    with pytest.raises(ValueError, match="the site changed since this cursor was made"):
        tools.list_topics("flat", stale)
    past = Cursor(decoded.tool, decoded.arguments, FLAT + 1, decoded.digest).encode()
    with pytest.raises(ValueError, match="past the end"):
        tools.list_topics("flat", past)


def test_the_same_call_with_the_cursor_goes_on_whatever_spelling_it_used(tools):
    first = tools.list_topics("flat/")  # a trailing slash, as an agent may type it
    assert tools.list_topics("flat/", first["next_cursor"])["from"] == len(first["documents"])
    page = tools.sample("long", 3, document="handbook", order="conceptual")  # a bare document name
    again = tools.sample("long", 3, document="handbook", order="conceptual", cursor=page["next_cursor"])
    assert again["from"] == 3 and again["document"] == "long/handbook.md"
    with pytest.raises(ValueError, match="order='conceptual', not 'technical'"):
        tools.sample("long", 3, document="handbook", order="technical", cursor=page["next_cursor"])


def test_errors_on_a_big_topic_name_a_few_documents_not_all(tools):
    with pytest.raises(LookupError) as caught:
        tools.read_document("flat/note-0007x.md")
    message = str(caught.value)
    assert message.split("its documents:")[1].count("'flat/note-") == 12 and f"({FLAT} in all)" in message
    assert message.split("its documents: ")[1].startswith("'flat/note-0007.md'")  # the closest first
    assert len(message) < 500


# --- budget.py --------------------------------------------------------------------------


texts = st.text(alphabet=st.sampled_from('ab \n"\\\té数\U0001f600'), max_size=400)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 500))
def test_cut_is_the_longest_start_that_fits_ending_at_a_line_when_it_can(text, room):
    piece = budget.cut(text, room)
    assert text.startswith(piece) and (budget.length(piece) <= room or piece == "")
    if piece != text:
        fits = max((n for n in range(len(text) + 1) if budget.length(text[:n]) <= room), default=0)
        assert piece == text[:fits] or (piece.endswith("\n") and len(piece) >= fits // 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, max_size=30), st.integers(2_000, 6_000))
def test_fill_keeps_the_answer_within_its_room_and_the_items_in_order(bodies, room):
    items = [{"chunk_id": f"c{i}", "text": t * 20} for i, t in enumerate(bodies)]
    answer = {"query": "q"}
    taken = budget.fill(answer, "hits", items, room)
    assert size(answer) <= room - budget.RESERVE
    assert [h["chunk_id"] for h in answer["hits"]] == [f"c{i}" for i in range(taken)]
    for got, item in zip(answer["hits"], items):
        assert got["text"] == item["text"] or (got["truncated"] and item["text"].startswith(got["text"]) and got is answer["hits"][-1])


@given(st.text(max_size=40), st.dictionaries(st.sampled_from(["topic", "document", "order"]), st.text(max_size=20)),
       st.integers(0, 10**6))
def test_a_cursor_says_back_exactly_what_it_was_made_of(tool, arguments, position):
    cursor = Cursor(tool, arguments, position, budget.digest([tool]))
    text = cursor.encode()
    assert Cursor.decode(text, tool) == cursor and json.dumps(text).strip('"') == text  # no escapes: opaque and safe
