"""pipeline.client against the fixture site, from a directory and over loopback HTTP."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.client import CorruptIndex, NotFound, SiteError, open_site
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.search.index import build_search_index
from pipeline.simhash import simhash64
from pipeline.siteformat.records import Document
from conftest import document_resource, document_resources
from test_client_support import ALPHA_Q, edit_item, fixture_site, index_of, served_site, site_copy  # noqa: F401


@pytest.fixture(params=["dir", "http"])
def site(request, fixture_site, served_site):
    """The fixture site opened both ways (a fresh Site each time: nothing cached)."""
    return open_site(fixture_site if request.param == "dir" else served_site.url)


# --- opening and navigation ----------------------------------------------------------------


def test_open_by_directory_url_or_index_json(fixture_site, served_site):
    for location in [fixture_site, str(fixture_site / "index.json"), served_site.url, served_site.url + "index.json",
                     served_site.url.rstrip("/")]:
        opened = open_site(location)
        assert opened.title == "Fixture <b>site</b>"
        assert [n.id for n in opened.topics()] == ["handbook", "notes"]


def test_nodes_follow_links_from_the_root(site):
    nodes = site.nodes()
    assert [n.id for n in nodes] == ["", "handbook", "notes"]
    root, handbook, _ = nodes
    assert root.children == ("handbook", "notes") and root.documents == 0 and not root.is_topic
    assert handbook.parent == "" and handbook.documents == 2 and handbook.path == "handbook/index.json"


def test_hrefs_are_urls_over_http_and_paths_for_directories(fixture_site, served_site):
    local = open_site(fixture_site).plan_sample("handbook", 1)[0]
    remote = open_site(served_site.url).plan_sample("handbook", 1)[0]
    assert local.href == str(fixture_site.resolve() / local.path)
    assert remote.href == served_site.url + remote.path
    assert Path(local.href).is_file()


def test_a_site_built_for_a_base_path_reads_from_anywhere(site_copy):
    # Rewrite absolute links as a --base-url /repo/ build would have them.
    for path in [*site_copy.rglob("index.json"), *site_copy.rglob("_index/*.json")]:
        text = path.read_text(encoding="utf-8").replace('"href":"/', '"href":"/repo/')
        path.write_text(text, encoding="utf-8")
    opened = open_site(site_copy)
    assert opened.base_path == "/repo/"
    assert [n.id for n in opened.topics()] == ["handbook", "notes"]
    assert opened.sample("notes", 1)[0].text.startswith("# Unsafe Markup")


def test_a_site_built_for_an_absolute_base_url_reads_from_a_directory_and_a_mirror(site_copy):
    """Issue 34: ``--base-url https://example.org/docs/`` puts that URL in every link; a reader
    takes the base from the site's own root and reads through wherever it opened the site."""
    from test_client_support import Served

    for path in [*site_copy.rglob("index.json"), *site_copy.rglob("_index/*.json")]:  # listings and resources
        text = path.read_text(encoding="utf-8").replace('"href":"/', '"href":"https://example.org/docs/')
        path.write_text(text, encoding="utf-8")
    served = Served(site_copy)
    try:
        for location in (site_copy, served.url):
            opened = open_site(location)
            assert opened.base_url == "https://example.org/docs/" and opened.base_path == "/docs/"
            assert [n.id for n in opened.topics()] == ["handbook", "notes"]
            assert opened.sample("notes", 1)[0].text.startswith("# Unsafe Markup")
            with pytest.raises(CorruptIndex, match="points outside the site"):
                opened.resolve("https://other.example/docs/x.json", "index.json")
    finally:
        served.close()


def test_a_backslash_is_read_as_a_name_when_encoded_and_refused_raw(site):
    """``%5C`` is a character of a file's name (``back\\slash.md``'s resource); a raw backslash,
    which a browser reads as ``/``, still points outside the site."""
    assert site.resolve("/t/_index/back%5Cslash.doc.json", "index.json") == "t/_index/back\\slash.doc.json"
    assert site.resolve("back%5C..%5Cx.md", "t/index.json") == "t/back\\..\\x.md"  # one name, no .. segment
    for raw in ("/t/back\\slash.md", "..\\x.md", "/t/%00.md"):
        with pytest.raises(CorruptIndex, match="points outside the site"):
            site.resolve(raw, "t/index.json")


# --- sampling --------------------------------------------------------------------------------


def test_sample_of_a_document_is_its_stripe_order(site, fixture_site):
    spec = document_resource(fixture_site, "handbook", "alpha")
    for n in (1, 3, len(spec["stripe_order"])):
        chunks = site.sample("handbook", n, document="alpha")
        assert [c.ref.index for c in chunks] == spec["stripe_order"][:n]
    technical = site.sample("handbook", 4, document="alpha", order="technical")
    assert [c.ref.index for c in technical] == spec["stripe_order_technical"][:4]


def test_sample_text_is_the_chunk_file(site, fixture_site):
    for chunk in site.sample("handbook", 3, document="alpha"):
        assert chunk.text == (fixture_site / chunk.ref.path).read_text(encoding="utf-8")
        assert chunk.ref.source == "handbook/alpha.md" and chunk.ref.topic == "handbook"


def test_sample_of_a_topic_interleaves_its_documents(site, fixture_site):
    chunks = document_resources(fixture_site, "handbook")
    alpha, beta = chunks["alpha"]["stripe_order"], chunks["beta"]["stripe_order"]
    got = [(c.ref.document, c.ref.index) for c in site.sample("handbook", 6)]
    assert got == [("alpha", alpha[0]), ("beta", beta[0]), ("alpha", alpha[1]), ("beta", beta[1]),
                   ("alpha", alpha[2]), ("beta", beta[2])]


def test_sample_beyond_the_stripe_order_adds_the_baselines_once(site):
    everything = site.sample("handbook", 100, document="alpha")
    indexes = [c.ref.index for c in everything]
    assert sorted(indexes) == list(range(11))
    assert indexes[-1] == 0  # the overview is the one chunk the conceptual stripe order leaves out
    technical = [c.ref.index for c in site.sample("handbook", 100, document="alpha", order="technical")]
    assert sorted(technical) == list(range(11)) and technical[-2:] == [0, 1]


def test_technical_order_of_a_document_without_one_is_an_error_not_the_conceptual_order(site):
    """Issue 34: it silently returned the conceptual order."""
    with pytest.raises(ValueError, match="document 'beta' has no technical order: no technical baseline"):
        site.sample("handbook", 3, document="beta", order="technical")
    with pytest.raises(ValueError, match="topic 'notes' has no technical order"):
        site.plan_sample("notes", 3, order="technical")


def test_technical_order_of_a_topic_says_which_documents_fall_back(site):
    with pytest.warns(UserWarning, match=r"1 of 2 documents of topic 'handbook' have no technical order; .*: beta"):
        chunks = site.plan_sample("handbook", 100, order="technical")
    alpha = [c.index for c in chunks if c.document == "alpha"]
    beta = [c.index for c in chunks if c.document == "beta"]
    assert alpha[-2:] == [0, 1]  # alpha's technical order leaves out both baselines
    assert beta == [c.index for c in site.plan_sample("handbook", 100, document="beta")]


def test_cli_sample_and_search_refuse_what_they_cannot_do(fixture_site):
    runner = CliRunner()
    result = runner.invoke(app, ["sample", str(fixture_site), "notes", "--order", "technical"])
    assert result.exit_code == 1 and "error: topic 'notes' has no technical order" in result.output
    result = runner.invoke(app, ["sample", str(fixture_site), "handbook", "--order", "technical", "-n", "2"])
    assert result.exit_code == 0 and "warning: 1 of 2 documents of topic 'handbook' have no technical order" in result.output
    result = runner.invoke(app, ["search", str(fixture_site), "stripe", "--promotion-level", "urgent"])
    assert result.exit_code == 2 and "standard, important, critical" in result.output
    assert runner.invoke(app, ["search", str(fixture_site), "stripe", "--promotion-level", "Standard"]).exit_code == 0


def test_search_refuses_an_unknown_promotion_level(site):
    with pytest.raises(ValueError, match="promotion_level must be one of standard, important, critical, not 'urgent'"):
        site.search("stripe order", promotion_level="urgent")
    assert site.search("stripe order", promotion_level="CRITICAL") == site.search("stripe order", promotion_level="critical")


@pytest.mark.parametrize("n", [0, 1, 4, 15])
def test_sample_of_a_topic_reads_the_listing_the_documents_it_needs_and_the_chunks(fixture_site, served_site, n):
    for location in (fixture_site, served_site.url):
        opened = open_site(location).check()  # the root index.json: read before the sample
        before = opened.transport.requests
        chunks = opened.sample("handbook", n)
        assert len(chunks) == min(n, 15)
        # index.json, the first page of each of the first n documents' resources, the chunks
        assert opened.transport.requests - before == 1 + min(n, 2) + min(n, 15)


@pytest.mark.parametrize("n", [1, 3, 11])
def test_sample_of_a_document_is_index_json_its_resource_and_the_chunks(fixture_site, served_site, n):
    """The seed's flow: a topic's index.json -> the document's resource -> its first n chunks
    (three round trips: the chunks are fetched together)."""
    for location in (fixture_site, served_site.url):
        opened = open_site(location).check()
        before = opened.transport.requests
        assert len(opened.sample("handbook", n, document="alpha")) == n
        assert opened.transport.requests - before == 2 + n


def test_reading_order_lists_every_chunk_once():
    doc = Document("t", "d", "t/d.md", "D", (3, 1, 3, 9), None, tuple(range(5)))  # items only need a length
    assert doc.reading_order() == [3, 1, 0, 2, 4]
    with pytest.raises(ValueError):
        doc.reading_order("sideways")


def test_sample_rejects_unknown_topics_documents_and_orders(site):
    with pytest.raises(NotFound, match="no topic 'nope'") as info:
        site.sample("nope", 2)
    assert info.value.url.endswith("nope/index.json")
    with pytest.raises(NotFound, match="no document 'gamma'.*alpha, beta"):
        site.sample("handbook", 2, document="gamma")
    with pytest.raises(ValueError):
        site.sample("handbook", 2, order="sideways")


# --- search ------------------------------------------------------------------------------------


def test_simhash_finds_the_chunk_holding_the_question(site):
    hits = site.search(ALPHA_Q, 3)
    assert hits and hits[0].method == "simhash" and hits[0].distance == 0 and hits[0].score == 1.0
    top = hits[0]
    assert (top.topic, top.source, top.chunk.index) == ("handbook", "handbook/alpha.md", 4)
    assert top.header_path == "## Stripe Orders"
    assert top.href.endswith("handbook/_chunks/alpha-4.md")


def test_simhash_matches_a_paraphrase_within_the_radius(site):
    query = "how does the stripe order spread chunks over a document"
    distance = (simhash64(query) ^ simhash64(ALPHA_Q)).bit_count()
    assert 0 < distance <= 12
    hits = site.search(query, 5, method="simhash")
    assert [(h.chunk.document, h.chunk.index, h.distance) for h in hits][:1] == [("alpha", 4, distance)]
    narrower = site.search(query, 5, method="simhash", max_distance=distance - 1)
    assert ("alpha", 4) not in [(h.chunk.document, h.chunk.index) for h in narrower]


def test_a_chunk_with_more_matching_questions_ranks_first_on_ties(site_copy):
    q = "Why does a rebuild embed nothing new?"
    # chunk 7 gets the question chunk 6 also holds: both at distance 0, site order decides
    edit_item(site_copy, "handbook", "alpha", 7, lambda item: item.update(prompt_hashes_hex=[f"{simhash64(q):016x}"]))
    build_search_index(site_copy)  # the index copies prompt hashes from the document resources
    hits = open_site(site_copy).search(q, 5, method="simhash")
    assert [h.chunk.index for h in hits if h.distance == 0] == [6, 7]  # 6 comes first in site order


def test_the_topics_published_radius_applies(site_copy):
    index = index_of(site_copy, "handbook")
    index["prompt_matching"]["max_distance"] = 0
    (site_copy / "handbook" / "index.json").write_bytes(orjson.dumps(index))
    build_search_index(site_copy)
    query = "how does the stripe order spread chunks over a document"
    opened = open_site(site_copy)
    assert opened.search(query, 5, method="simhash") == []
    assert opened.search(query, 5, method="simhash", max_distance=64)  # the caller's radius wins


def test_no_hash_match_falls_back_to_hybrid_and_embedding_search_still_ranks(site):
    assert all(h.method == "hybrid" for h in site.search("vectors numbers embedding model chunk", 3))
    hits = site.search("vectors numbers embedding model chunk", 3, method="embedding")
    assert hits and all(h.method == "embedding" for h in hits)
    assert (hits[0].chunk.document, hits[0].chunk.index) == ("alpha", 5)  # "## Embedding Models"
    assert hits[0].score >= hits[1].score >= hits[2].score


def test_embedding_scores_match_float32_cosines_within_int8_error(fixture_site):
    opened = open_site(fixture_site)
    query = "serving static files with range requests"
    hits = opened.search(query, 17, method="embedding")
    embedder = HashingEmbedder()
    q = embedder.embed([query])[0]
    for hit in hits:
        text = (fixture_site / hit.chunk.path).read_text(encoding="utf-8")
        exact = float(embedder.embed([text])[0] @ q)
        assert abs(hit.score - exact) < 0.01


def test_without_embeddings_files_search_falls_back_to_keywords(site_copy):
    for path in [*site_copy.rglob("_embeddings.bin"), *site_copy.glob("_search/vectors/*.bin")]:
        path.unlink()
    opened = open_site(site_copy)
    assert all(h.method == "lexical" for h in opened.search("which cache headers", 3))  # no vectors left
    hits = opened.search("which cache headers", 3, method="keyword")
    assert hits and all(h.method == "keyword" for h in hits)
    # "## Cache Headers": keyword "cache" (4) + the title words "cache" and "headers"
    assert (hits[0].chunk.document, hits[0].chunk.index, hits[0].score) == ("beta", 3, 6)
    with pytest.raises(SiteError, match="no topic publishes embeddings"):
        opened.search("x y", 3, method="embedding")


def test_keyword_scores_sum_authority_and_title_words(site):
    hits = site.search("stripe order", 20, method="keyword")
    best = hits[0]
    assert (best.chunk.document, best.chunk.index) == ("alpha", 4)
    # keyword "stripe order" (authority 9) + the query word "stripe" in the title "Stripe Orders"
    # ("orders" is not the query word "order": no stemming)
    assert best.score == 9 + 1
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_filters_restrict_every_method(site):
    code_hits = site.search("pipeline build serve toml", 10, is_code=True)
    assert code_hits and all(h.chunk.is_code for h in code_hits)
    prose = site.search(ALPHA_Q, 10, is_code=False)
    assert prose and all(not h.chunk.is_code for h in prose)
    only_cache = site.search("vectors", 10, keyword="CACHE", method="embedding")
    assert only_cache and all(any(k.name == "cache" for k in h.chunk.keywords) for h in only_cache)
    in_notes = site.search("markup text", 10, topic="notes", method="embedding")
    assert in_notes and {h.topic for h in in_notes} == {"notes"}


def test_a_wrong_query_embedder_is_refused(site):
    class Other(HashingEmbedder):
        def __init__(self):
            super().__init__(384)
            self.name = "other-model"

    with pytest.raises(SiteError, match="from 'hashing-384' but the query embedder is 'other-model'"):
        site.search("vectors numbers", 3, method="embedding", embedder=Other())


@pytest.mark.parametrize("method", ["auto", "simhash", "embedding", "keyword"])
def test_a_query_without_words_has_no_hits(site, method):
    assert site.search("?!", 5, method=method) == []
    assert site.search("", 5, method=method) == []


def test_hits_serialise_with_the_fields_readers_need(site):
    row = site.search(ALPHA_Q, 1)[0].to_dict()
    assert {"topic", "source", "href", "header_path", "score", "method", "distance"} <= row.keys()


def test_embeddings_are_found_through_links_embeddings(site_copy):
    (site_copy / "handbook" / "_embeddings.bin").rename(site_copy / "handbook" / "_vectors.bin")
    index = index_of(site_copy, "handbook")
    index["_links"]["embeddings"] = {"href": "/handbook/_vectors.bin"}
    (site_copy / "handbook" / "index.json").write_bytes(orjson.dumps(index))
    opened = open_site(site_copy)
    assert opened.embeddings("handbook") is not None
    shutil.rmtree(site_copy / "_search")  # the walk of a site without the index follows the link too
    assert open_site(site_copy).search("vectors numbers embedding model chunk", 1, method="embedding")[0].chunk.index == 5


def test_embedding_rows_follow_the_index(fixture_site):
    opened = open_site(fixture_site)
    table = opened.embeddings("handbook")
    assert table is not None and table.model == "hashing-384"
    assert dict(table.documents) == {"alpha": 11, "beta": 4}
    assert np.allclose(np.linalg.norm(table.vectors, axis=1), 1.0, atol=1e-5)
