"""A small site of 8 topics and its search index in each layout (parts, records.json, record
blocks, topics with their own shards), for the tests of pipeline.search.index and of what a query
fetches (module fixtures: each test module that imports them builds its own)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.search import layout
from pipeline.siteformat import searchrank as rank
from pipeline.search.index import SEARCH_DIR, build_search_index
from pipeline.siteformat.searchlayout import WORD_ROWS, encoder_names
from test_client_support import Served


SMALL = {"postings_per_shard": 200, "part_weight": 20_000}
"""How ``built`` is indexed: a small site, in parts as a bigger small site would be."""
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def topic_content(n_topics: int = 8) -> dict[str, str]:
    files = {}
    for t in range(n_topics):
        for d in range(3):
            sections = "".join(
                f"## {WORDS[(t + s) % 16].title()} {WORDS[(d + s) % 16]} part {s}\n\n"
                f"Text about {WORDS[t]} and {WORDS[(t * 3 + s) % 16]} with code `root_path_{t}` and words {' '.join(WORDS[s:s + 6])}.\n\n"
                for s in range(5)
            )
            files[f"section{t % 2}/topic{t}/doc{d}.md"] = (
                f"---\ntags: [t{t}, common]\ntype: guide{d}\n---\n# Document {t}.{d} {WORDS[t]}\n\nIntro {WORDS[d]}.\n\n{sections}"
            )
    return files


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from pipeline.site.build import build

    root = tmp_path_factory.mktemp("search")
    content = write_tree(root / "content", topic_content())
    site = root / "site"
    build(content, site, SiteConfig(title="T", cache_dir=root / "cache", embedder="hashing"), embedder=HashingEmbedder(), progress=False)
    build_search_index(site, **SMALL)
    return site


@pytest.fixture(scope="module")
def served(built):
    s = Served(built)
    yield s
    s.close()


def meta_of(site: Path) -> dict:
    return orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes())


def read(site: Path, kind: str, name: str):
    return orjson.loads((site / SEARCH_DIR / layout.content_path(kind, name)).read_bytes())


@pytest.fixture(scope="module")
def partial(built, tmp_path_factory) -> Path:
    """``built`` indexed with records.json just big enough for its records and a few terms."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("partial") / "site"))
    records = sum(len(orjson.dumps(read(built, "parts", h)["records"])) for _, _, h in meta_of(built)["parts"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "ALL_TERMS_FACTOR", 1)  # else a site this small goes in parts
        build_search_index(copy, postings_per_shard=200, records_inline_bytes=records + 1500)
    return copy


@pytest.fixture(scope="module")
def blocks(built, tmp_path_factory) -> Path:
    """``built`` indexed as a site too big for records.json to hold its records: record blocks."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("blocks") / "site"))
    build_search_index(copy, postings_per_shard=200, records_inline_bytes=0)
    return copy


def topic_postings(site: Path) -> list[int]:
    """Each topic's postings, counted in its segments (every topic of ``built`` has them)."""
    return [sum(len(deltas) for _, _, h in t["segments"] for deltas, _ in read(site, "segments", h)["terms"].values())
            for t in meta_of(site)["topics"]]


@pytest.fixture(scope="module")
def split(built, tmp_path_factory) -> Path:
    """``built`` indexed with a segment threshold below half its topics' postings: those topics
    get their own term shards and record blocks (as a 100k-chunk site's big topics do), the
    others keep their segments."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("split") / "site"))
    counts = sorted(topic_postings(built))
    build_search_index(copy, postings_per_shard=100, bundle_postings=counts[len(counts) // 2 - 1])
    return copy


def files_of(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted((site / SEARCH_DIR).rglob("*")) if p.is_file()}


def encoder_of(site: Path) -> tuple[dict, dict[str, bytes]] | None:
    """The site's static query encoder as ``build_search_index(encoder=...)`` takes it: read it
    before a test removes ``_search/``, so the index rebuilt from scratch names the same one."""
    entry = orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes()).get("encoder")
    if not entry:
        return None
    return entry, {name: (site / SEARCH_DIR / name).read_bytes() for name in encoder_names(entry)}


def site_postings(site: Path) -> dict[str, list[tuple[int, int]]]:
    """Every term's postings [(chunk number, level)] as the site-wide files hold them: its parts, or
    its term shards."""
    meta = meta_of(site)
    starts = [0, *itertools.accumulate(meta["documents"])]
    out: dict[str, list] = {}
    for first, _, h in meta["parts"] or ():
        for term, entry in read(site, "parts", h)["terms"].items():
            out.setdefault(term, []).extend(rank.decode_postings(entry, starts[first]))
    for h in meta["terms"] or ():
        for term, entry in read(site, "terms", h).items():
            if term != WORD_ROWS:  # the static encoder's word rows
                out[term] = rank.decode_document_postings(entry, starts)
    return out

