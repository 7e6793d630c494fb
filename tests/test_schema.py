"""JSON Schemas (draft 2020-12) of index.json: shipped, published in site/_schema/, and obeyed."""

import copy
from pathlib import Path

import jsonschema
import orjson
import pytest

from conftest import ROOT
from pipeline.config import load_config
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.index.hal import SCHEMA_FILES
from pipeline.index.tool import schema_texts
from pipeline.site.build import build
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
    """Validate every index.json reachable from the root against the schema it links to."""
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
        for chunk_set in doc["_embedded"]["chunks"].values():
            for item in chunk_set["items"]:  # what a schema cannot say
                assert len(item["prompt_hashes"]) == len(item["prompt_hashes_hex"])
                assert [int(h, 16) for h in item["prompt_hashes_hex"]] == item["prompt_hashes"]
    return kinds


def test_every_index_of_a_built_site_validates(tmp_path):
    _, site, *_ = make_site(tmp_path, base_url="/kb/")
    assert validate_site(site, "/kb/") == {"root": 1, "section": 1, "topic": 3}
    assert sorted(p.name for p in (site / "_schema").iterdir()) == sorted(SCHEMA_FILES.values())
    assert "_schema" not in {t["id"] for t in load(site / "index.json")["_embedded"]["topics"]}


def test_every_index_of_the_sample_content_validates(tmp_path):
    config = load_config(ROOT / "build" / "site.toml").with_overrides(cache_dir=tmp_path / "cache")
    build(ROOT / "content", tmp_path / "site", config, embedder=HashingEmbedder(), progress=False)
    kinds = validate_site(tmp_path / "site")
    assert kinds["topic"] >= 7 and kinds["root"] == 1
    hashes = [h for p in (tmp_path / "site").rglob("index.json") for cs in load(p)["_embedded"]["chunks"].values()
              for item in cs["items"] for h in item["prompt_hashes"]]
    assert any(h > 2**53 for h in hashes)


@pytest.mark.parametrize(
    "path, value",
    [
        (("_embedded", "chunks", "guide", "items", 0, "next_summary"), "x" * 101),
        (("_embedded", "chunks", "guide", "items", 0, "position"), "two of five"),
        (("_embedded", "chunks", "guide", "items", 0, "prompt_hashes"), [2**64]),
        (("_embedded", "chunks", "guide", "items", 0, "prompt_hashes_hex"), ["ABCDEF0123456789"]),
        (("_embedded", "chunks", "guide", "items", 0, "keywords"), [{"name": "x", "score": 11}]),
        (("_embedded", "chunks", "guide", "items", 0, "_links", "related"), [{"href": "/abs.md", "title": "t", "similarity": 0.5}]),
        (("_embedded", "chunks", "guide", "items", 0, "_links", "self"), {"href": "/kb/guide.md"}),
        (("_embedded", "chunks", "guide", "_links", "manifest"), {"href": "/kb/_chunks/guide.json"}),  # could be taken for an index
        (("_embedded", "chunks"), {}),
    ],
)
def test_the_topic_schema_rejects_what_clients_could_not_use(path, value):
    doc = {
        "id": "kb", "title": "Kb",
        "_links": {"self": {"href": "/kb/index.json"}, "parent": {"href": "/index.json"}, "describedby": {"href": "/_schema/topic.schema.json"}},
        "model": "m",
        "_embedded": {"topics": [], "chunks": {"guide": {
            "source": "guide.md", "title": "G", "strategy": "markdown-256", "count": 1, "baseline_conceptual": 0,
            "stripe_order": [],
            "_links": {"self": {"href": "/kb/guide.md"}, "first": {"href": "/kb/_chunks/guide-0.md", "title": "G"},
                       "manifest": {"href": "/kb/_chunks/guide.manifest.json"}},
            "items": [{
                "index": 0, "href": "_chunks/guide-0.md", "title": "G", "header_path": "", "is_code": False,
                "token_count": 3, "start_line": 1, "end_line": 2, "similarity_conceptual": 1.0, "keywords": [],
                "prompt_hashes": [2**64 - 1], "prompt_hashes_hex": ["ffffffffffffffff"], "position": "1 of 1",
                "_links": {"self": {"href": "/kb/_chunks/guide-0.md"}, "related": []},
            }],
        }}},
    }
    validator("topic").validate(doc)
    broken = copy.deepcopy(doc)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert not validator("topic").is_valid(broken)
