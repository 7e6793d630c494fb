"""JSON Schemas (draft 2020-12) of index.json: shipped, published in site/_schema/, and obeyed."""

import copy
from pathlib import Path

import jsonschema
import orjson
import pytest

from conftest import ROOT
from pipeline.config import load_config
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from pipeline.siteformat.schemas import SCHEMA_FILES, schema_texts
from test_build import load, make_site, walk_indexes

SCHEMAS = {name: orjson.loads(data) for name, data in schema_texts().items()}


def validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(SCHEMAS[SCHEMA_FILES[kind]], format_checker=jsonschema.FormatChecker())


def test_the_schemas_are_valid_draft_2020_12_and_share_their_definitions():
    assert set(SCHEMA_FILES.values()) == set(SCHEMAS)
    for schema in SCHEMAS.values():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)
    defs = [schema["$defs"] for schema in SCHEMAS.values()]
    assert all(d == defs[0] for d in defs)  # one vocabulary; only the top level differs


def validate_site(site: Path, base_url: str = "/") -> dict[str, int]:
    """Validate every index file reachable from the root (listing pages, document resources)
    against the schema it links to; returns how many files of each kind."""
    kinds: dict[str, int] = {}
    for href, (path, doc) in walk_indexes(site, base_url).items():
        described = doc["_links"]["describedby"]["href"]
        assert described.startswith(f"{base_url}_schema/")
        kind = next(k for k, name in SCHEMA_FILES.items() if described.endswith("/" + name))
        published = site / described.removeprefix(base_url)
        assert orjson.loads(published.read_bytes()) == SCHEMAS[SCHEMA_FILES[kind]]
        errors = sorted(validator(kind).iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, f"{href}: {[(list(e.absolute_path), e.message) for e in errors[:3]]}"
        kinds[kind] = kinds.get(kind, 0) + 1
        for item in doc.get("items", []):  # what a schema cannot say
            assert len(item["prompt_hashes"]) == len(item["prompt_hashes_hex"])
            assert [int(h, 16) for h in item["prompt_hashes_hex"]] == item["prompt_hashes"]
    return kinds


def test_every_index_of_a_built_site_validates(tmp_path):
    _, site, *_ = make_site(tmp_path, base_url="/kb/")
    assert validate_site(site, "/kb/") == {"root": 1, "section": 1, "topic": 3, "document": 3}
    assert sorted(p.name for p in (site / "_schema").iterdir()) == sorted(SCHEMA_FILES.values())
    assert "_schema" not in {t["id"] for t in load(site / "index.json")["_embedded"]["topics"]}


def test_every_index_of_the_sample_content_validates(tmp_path):
    config = load_config(ROOT / "build" / "site.toml").with_overrides(cache_dir=tmp_path / "cache")
    build(ROOT / "content", tmp_path / "site", config, embedder=HashingEmbedder(), progress=False)
    kinds = validate_site(tmp_path / "site")
    assert kinds["topic"] >= 7 and kinds["root"] == 1 and kinds["document"] >= 14
    hashes = [h for p in (tmp_path / "site").rglob("_index/*.json") for item in load(p).get("items", [])
              for h in item["prompt_hashes"]]
    assert any(h > 2**53 for h in hashes)


def test_paged_listings_and_long_documents_validate(tmp_path, monkeypatch):
    """Budgets lowered so that a small tree pages everything: listing pages and document pages."""
    from pipeline.index import pages
    from pipeline.siteformat import paging

    monkeypatch.setattr(pages, "LISTING_ENTRIES", 3)
    monkeypatch.setattr(pages, "PAGE_BYTES", 4000)
    monkeypatch.setattr(paging, "PAGE_BYTES", 4000)  # document resources and manifests
    monkeypatch.setattr(pages, "ORDER_BYTES", 40)
    files = {f"notes/n{i:02d}.md": f"# Note {i}\n\nText {i}.\n\n" + "".join(f"## Part {j}\n\nPart {j} of {i}.\n\n" for j in range(30))
             for i in range(7)}
    _, site, *_ = make_site(tmp_path, files=files)
    kinds = validate_site(site)
    assert kinds["page"] >= 2 and kinds["document"] > 7


def test_a_notes_links_and_backlinks_paged_validate():
    """A vault note thousands link to: every page of its resource (``_links.links`` and
    ``backlinks`` continued, their counts on the first page) obeys the document schema."""
    from pipeline.index import pages
    from test_index_pages import noted, spec

    files = pages.document_files(noted(spec("hub", 5, technical=True), 30, 2000), "/kb/", "")
    assert len(files) > 2
    for data in files.values():
        validator("document").validate(orjson.loads(data))


_ITEM = {
    "index": 0, "href": "_chunks/guide-0.md", "title": "G", "header_path": "", "is_code": False,
    "token_count": 3, "start_line": 1, "end_line": 2, "similarity_conceptual": 1.0, "keywords": [],
    "prompt_hashes": [2**64 - 1], "prompt_hashes_hex": ["ffffffffffffffff"], "position": "1 of 1",
    "_links": {"self": {"href": "/kb/_chunks/guide-0.md"}, "related": []},
}


@pytest.mark.parametrize(
    "path, value",
    [
        (("items", 0, "next_summary"), "x" * 101),
        (("items", 0, "position"), "two of five"),
        (("items", 0, "prompt_hashes"), [2**64]),
        (("items", 0, "prompt_hashes_hex"), ["ABCDEF0123456789"]),
        (("items", 0, "keywords"), [{"name": "x", "score": 11}]),
        (("items", 0, "_links", "related"), [{"href": "/abs.md", "title": "t", "similarity": 0.5}]),
        (("items", 0, "_links", "self"), {"href": "/kb/guide.md"}),
        (("_links", "manifest"), {"href": "/kb/_chunks/guide.json"}),  # could be taken for an index
        (("index_version",), 1),
        (("stripe_order_technical",), [1]),  # without baseline_technical
        (("page",), 2),  # a later page holds no document fields
        (("_links", "backlinks"), [{"href": "/kb/people/Grace.md", "title": "Grace"}]),  # a note's resource, not its file
        (("_links", "links"), [{"href": "/kb/_index/other.doc.json"}]),  # untitled
        (("backlinks",), -1),
    ],
)
def test_the_document_schema_rejects_what_clients_could_not_use(path, value):
    doc = {
        "index_version": 2, "topic": "kb", "key": "guide", "source": "guide.md", "title": "G", "strategy": "markdown-256",
        "count": 1, "baseline_conceptual": 0, "page": 1, "pages": 1, "stripe_order": [],
        "_links": {"self": {"href": "/kb/_index/guide.doc.json"}, "up": {"href": "/kb/index.json"},
                   "describedby": {"href": "/_schema/document.schema.json"},
                   "alternate": {"href": "/kb/guide.md", "type": "text/markdown"},
                   "manifest": {"href": "/kb/_chunks/guide.manifest.json"}, "item": [{"href": "/kb/_chunks/guide-0.md", "name": "0"}]},
        "items": [copy.deepcopy(_ITEM)],
    }
    validator("document").validate(doc)
    broken = copy.deepcopy(doc)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert not validator("document").is_valid(broken)


@pytest.mark.parametrize(
    "path, value",
    [
        (("_embedded", "documents", 0, "sample"), [{"index": 0, "href": "../x.md", "title": "t"}]),
        (("_embedded", "documents", 0, "_links", "self"), {"href": "/kb/_index/guide.json"}),
        (("_embedded", "documents", 0, "count"), 0),
        (("_links", "first"), {"href": "/kb/index.json"}),  # index.json is the first page
        (("documents",), 0),
        (("index_version",), 1),
    ],
)
def test_the_topic_schema_rejects_what_clients_could_not_use(path, value):
    doc = {
        "index_version": 2, "id": "kb", "title": "Kb", "model": "m", "topics": 0, "documents": 1, "page": 1, "pages": 1,
        "_links": {"self": {"href": "/kb/index.json"}, "parent": {"href": "/index.json"}, "describedby": {"href": "/_schema/topic.schema.json"},
                   "embeddings": {"href": "/kb/_embeddings.bin"}, "document": {"href": "/kb/_index/{key}.doc.json", "templated": True}},
        "_embedded": {"topics": [], "documents": [{
            "key": "guide", "title": "G", "source": "guide.md", "count": 1,
            "sample": [{"index": 0, "href": "_chunks/guide-0.md", "title": "G"}],
            "_links": {"self": {"href": "/kb/_index/guide.doc.json"}},
        }]},
    }
    validator("topic").validate(doc)
    broken = copy.deepcopy(doc)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert not validator("topic").is_valid(broken)
