"""pipeline/search/wordrows.py: the static encoder's rows of a site's words, as the build makes them
and as both clients read them."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

from pipeline.client import open_site
from pipeline.client.staticembed import SiteStaticEncoder
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.staticfit import hashing_table
from pipeline.embedding.statictable import decode_rows, row_bytes
from pipeline.search.wordrows import MAX_WORD_PIECES, WORD_DTYPE, rows_by_shard, site_word_rows
from pipeline.site.static_encoder import encoder_files
from pipeline.siteformat import vectorshards
from pipeline.siteformat.frontcode import front_decode
from pipeline.siteformat.searchtext import shard_of, word_term
from test_client_support import fixture_site  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "pipeline" / "assets" / "client.js"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")


@pytest.fixture(scope="module")
def encoder():
    table = hashing_table(384, DEFAULT_MODEL)
    entry, files = encoder_files(table)
    return table, entry, files


def stored_row(table, entry, files, token: str) -> bytes:
    """The bytes the encoder's shard holds for ``token``."""
    i = table.tokens.index(token)
    width = row_bytes(entry["dtype"], entry["dimension"])
    data = files[f"{entry['href']}{i // entry['rows']}.bin"]
    return data[(i % entry["rows"]) * width:(i % entry["rows"] + 1) * width]


def test_a_word_gets_its_tokens_row_or_its_pieces_rows_summed(encoder):
    table, entry, files = encoder
    words = {"chunk", "chunks", "embeddings", "the", "unknownterm", "zzzzqqqqxxxxwwww"}
    terms = {word_term(w) for w in words if word_term(w)} - {word_term("unknownterm")}
    rows = site_word_rows(words, terms, entry, files.__getitem__)
    flat = {w: r for held in rows.values() for w, r in held.items()}
    # one token: the row the encoder's shard holds, stored as WORD_DTYPE
    one = decode_rows(stored_row(table, entry, files, "chunk"), "int8", 384)
    assert WORD_DTYPE == "int4" and base64.b64decode(flat["chunk"]) == vectorshards.encode_rows(one, np.ones(1, bool))
    # more: its pieces' rows summed, stored the same way
    pieces = ["em", "##bed", "##ding", "##s"]
    assert all(p in table.tokens for p in pieces)
    total = sum(decode_rows(stored_row(table, entry, files, p), "int8", 384)[0].astype(np.float64) for p in pieces)
    assert base64.b64decode(flat["embeddings"]) == vectorshards.encode_rows(total.astype(np.float32).reshape(1, -1), np.ones(1, bool))
    # the bytes of the encoder's int4, which reads them back within their rounding
    back = decode_rows(base64.b64decode(flat["embeddings"]), WORD_DTYPE, 384)[0]
    assert float(back @ total) / np.linalg.norm(back) / np.linalg.norm(total) > 0.98
    assert "the" not in flat  # a stop word: no term
    assert "unknownterm" not in flat  # its term is not the site's
    assert "zzzzqqqqxxxxwwww" not in flat  # more pieces than MAX_WORD_PIECES
    assert MAX_WORD_PIECES == 4
    assert {w: word_term(w) for w in flat} == {w: t for t, held in rows.items() for w in held}


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(words=st.sets(WORD, max_size=40), keep=st.floats(0, 1), shards=st.sampled_from([1, 2, 8, 64]))
def test_rows_are_the_sites_terms_words_sorted_and_shard_by_term(encoder, words, keep, shards):
    _, entry, files = encoder
    all_terms = sorted({word_term(w) for w in words if word_term(w)})
    terms = set(all_terms[: int(keep * len(all_terms))])
    rows = site_word_rows(words, terms, entry, files.__getitem__)
    assert rows == site_word_rows(sorted(words, reverse=True), terms, entry, files.__getitem__)  # deterministic
    assert list(rows) == sorted(rows) and all(list(held) == sorted(held) for held in rows.values())
    width = row_bytes(WORD_DTYPE, entry["dimension"])
    for term, held in rows.items():
        assert term in terms
        for word, row in held.items():
            assert word in words and word_term(word) == term and len(base64.b64decode(row)) == width
    by_shard = rows_by_shard(rows, shards)
    assert sorted(w for held in by_shard.values() for w in held) == sorted(w for held in rows.values() for w in held)
    assert all(shard_of(word_term(w), shards) == s for s, held in by_shard.items() for w in held)


# --- the clients: a query's vector from the word rows; the build: a damaged encoder ----------------

NODE_VECTORS = r"""
import { openSite } from "%(client)s";
import { staticEncoder } from "%(encoder)s";
import { readFile } from "node:fs/promises";
const [root, queries] = process.argv.slice(1);
// the site's files read from disk, as a static host would serve them
const fetchFile = async (url) => {
  try { return new Response(await readFile(root + decodeURIComponent(new URL(url).pathname)), { status: 200 }); }
  catch { return new Response("", { status: 404 }); }
};
const out = [];
for (const q of JSON.parse(queries)) {
  const site = await openSite("http://site.invalid/", { fetch: fetchFile }); // cold, each query
  const meta = await site.searchIndex({ records: true });
  const seen = [];
  const get = site._get.bind(site);
  site._get = (rel, as) => { seen.push(rel); return get(rel, as); };
  const spent = () => (site._searchFetches ?? 0) - (site._searchSettled ?? 0);
  const before = spent();
  const vector = await staticEncoder(site, meta.encoder, meta).embed(q);
  out.push({ vector: Array.from(vector), seen, spent: spent() - before });
}
console.log(JSON.stringify(out));
"""

WORD_QUERIES = ["how do I rebuild the embedding cache", "chunk cache document", "naïve café chunks", "x86_64 build_path v2",
                "[SEP] chunk", "what is a webhook?", " ".join(["chunk"] * 70)]


@pytest.fixture(scope="module")
def terms_site(fixture_site, tmp_path_factory):  # noqa: F811
    """``fixture_site`` indexed with site-wide term shards (it would go in parts): its words' rows there."""
    from pipeline.search import layout
    from pipeline.search.index import build_search_index

    copy = Path(shutil.copytree(fixture_site, tmp_path_factory.mktemp("terms") / "site"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "ALL_TERMS_FACTOR", 0)
        build_search_index(copy, postings_per_shard=200, records_inline_bytes=0)
    return copy


def site_rows(site_dir: Path) -> dict[str, np.ndarray]:
    """{word: decoded row} of every word row the site carries (term shards or word files)."""
    meta = orjson.loads((site_dir / "_search" / "meta.json").read_bytes())
    entry = meta["encoder"]
    names = [f"terms/{h}.json" for h in meta.get("terms") or ()] if entry["words"] == "terms" else [f"words/{h}.json" for h in entry["words"]]
    held = {}
    for name in names:
        held.update(orjson.loads((site_dir / "_search" / name).read_bytes()).get("") or {})
    return {w: decode_rows(base64.b64decode(r), entry["word_dtype"], entry["dimension"])[0] for w, r in held.items()}


def same_term_query(rows: dict[str, np.ndarray]) -> tuple[str, list[str]]:
    """A word the site lacks whose term has two or more words with rows, and those words (sorted)."""
    by_term: dict[str, list[str]] = {}
    for w in sorted(rows):
        by_term.setdefault(word_term(w), []).append(w)
    for term, words in sorted(by_term.items()):
        for stem_word in words:
            for suffix in ("s", "ed", "ing", "es"):
                if len(words) > 1 and (candidate := stem_word + suffix) not in rows and word_term(candidate) == term:
                    return candidate, words
    raise AssertionError("no term of the site has two words and a third form")


@pytest.mark.parametrize("layout_kind", ["words", "terms"])
def test_a_word_the_site_lacks_takes_the_mean_of_its_terms_words_rows(fixture_site, terms_site, layout_kind):  # noqa: F811
    site_dir = fixture_site if layout_kind == "words" else terms_site
    word, same = same_term_query(rows := site_rows(site_dir))
    site = open_site(site_dir)
    index = site.search_index(records=True)
    fetched: list[str] = []
    original = site.transport.get
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    vector = SiteStaticEncoder(site.transport, index.meta["encoder"]).embed([word], index=index)[0]
    mean = np.mean([rows[w].astype(np.float64) for w in same], axis=0)
    assert float(vector @ (mean / np.linalg.norm(mean))) > 0.99999
    assert not any("/encoder/" in rel for rel in fetched), fetched  # no vocabulary, no piece rows


@needs_node
@pytest.mark.parametrize("layout_kind", ["words", "terms"])
def test_query_vectors_from_word_rows_are_the_same_in_both_languages(fixture_site, terms_site, layout_kind):  # noqa: F811
    site_dir = fixture_site if layout_kind == "words" else terms_site
    meta = orjson.loads((site_dir / "_search" / "meta.json").read_bytes())
    assert meta["encoder"]["words"] == "terms" if layout_kind == "terms" else isinstance(meta["encoder"]["words"], list)
    rows = site_rows(site_dir)
    fallback, same = same_term_query(rows)
    queries = [*WORD_QUERIES, f"{fallback} {same[0]}"]
    script = NODE_VECTORS % {"client": CLIENT.as_uri(), "encoder": (ROOT / "pipeline" / "assets" / "staticencoder.js").as_uri()}
    result = subprocess.run([NODE, "--input-type=module", "-e", script, str(site_dir), json.dumps(queries)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    by_rows = 0
    for query, js in zip(queries, json.loads(result.stdout), strict=True):
        site = open_site(site_dir)
        index = site.search_index(records=True)
        fetched: list[str] = []
        original = site.transport.get
        site.transport.get = lambda rel: fetched.append(rel) or original(rel)
        encoder = SiteStaticEncoder(site.transport, index.meta["encoder"])
        spent = index.fetches - index.settled
        vector = encoder.embed([query], index=index)[0]
        assert np.array_equal(np.array(js["vector"], dtype=np.float32), vector), query  # bit for bit
        assert sorted(js["seen"]) == sorted(fetched), query  # the same files
        # the encoder's files, word files and term shards alike, are outside the request budget
        assert index.fetches - index.settled == spent and js["spent"] == 0, query
        by_rows += not any("/encoder/" in r for r in fetched)
        pieces = SiteStaticEncoder(site.transport, index.meta["encoder"]).embed([query])[0]
        if fallback not in query:  # a word's row is its pieces' rows summed, rounded to 4 bits
            assert float(vector @ pieces) > 0.98, query
    assert by_rows >= 2  # some queries took no encoder file at all, the same-term one among them


def test_a_kept_encoder_shard_cut_short_stops_the_build_and_says_which(tmp_path):
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.errors import PipelineError
    from pipeline.site.build import build

    content = tmp_path / "content" / "guide"
    content.mkdir(parents=True)
    (content / "a.md").write_text("# Chunks\n\nA chunk is a piece of a document.\n", encoding="utf-8")
    site = tmp_path / "site"
    rebuild = lambda: build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)  # noqa: E731
    rebuild()
    entry = orjson.loads((site / "_search" / "meta.json").read_bytes())["encoder"]
    tokens = front_decode((site / "_search" / entry["href"] / "vocab.txt").read_text(encoding="utf-8"))
    shard = site / "_search" / entry["href"] / f"{tokens.index('chunk') // entry['rows']}.bin"
    shard.write_bytes(shard.read_bytes()[:10])  # the row of "chunk", a word of the site, is gone
    (content / "a.md").write_text("# Chunks\n\nA chunk is a piece of a longer document.\n", encoding="utf-8")
    before = (site / "_search" / "meta.json").read_bytes()
    with pytest.raises(PipelineError, match=rf"{shard.name} lacks row .*delete .*encoder and build again"):
        rebuild()
    assert (site / "_search" / "meta.json").read_bytes() == before  # the published index stays whole
