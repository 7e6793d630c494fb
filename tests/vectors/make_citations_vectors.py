"""Write tests/vectors/citations.json: what Python's readers make of a site's citation data,
which the browser's must reproduce (tests/js/citations.test.mjs; tests/test_client_citations.py
checks the file is current):

- ``records``: packed search records (``pipeline.siteformat.packedrecords.pack``) with their source lines,
  and the records ``unpack`` gives back (``searchmanifest.js``'s ``unpackRecords``);
- ``urls``: a root ``index.json``'s ``_links.self`` and the URL the site is read from, and the
  public base, chunk URL and section URL ``pipeline.siteformat.citations`` makes of them
  (``client.js``'s ``baseOf``, ``publicBase``, ``fileUrl``, ``sectionUrl``).

Run from the repository root: ``python tests/vectors/make_citations_vectors.py``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.siteformat import citations  # noqa: E402
from pipeline.siteformat.packedrecords import pack, unpack  # noqa: E402
from pipeline.siteformat.hrefs import base_of  # noqa: E402

NAMES = ["setup", "a b", "naïve", "数据", "x#y", "p%2e", "q?r", "it's (new)*", "tilde~", "plus+sign"]
TOPICS = ["", "guide", "guide/install", "a b/c", "数据", "it's"]
HEADINGS = ["", "## Start", "# Doc > ## Part > ### Deep", "## Ünïcode", "### "]


def lines(rng: random.Random, end: int | None) -> tuple[int | None, int | None]:
    kind = rng.choices(["next", "gap", "none", "half", "overlap"], [8, 3, 1, 1, 1])[0]
    after = end or 0
    if kind == "none":
        return None, None
    if kind == "half":
        return rng.choice([(after + 2, None), (None, after + 5)])
    start = after + {"next": 2, "gap": rng.randint(1, 40), "overlap": -rng.randint(0, min(3, after))}[kind]
    start = max(start, 1)
    return start, start + rng.randint(0, 30)


def records_case(rng: random.Random) -> dict:
    records, topic_of = [], []
    for _ in range(rng.randint(1, 4)):
        topic, name = rng.choice(TOPICS), rng.choice(NAMES)
        folder = f"{topic}/" if topic else ""
        end = None
        for index in range(rng.randint(1, 6)):
            start, end_line = lines(rng, end)
            end = end_line if start is not None and end_line is not None else None
            header = rng.choice(HEADINGS)
            records.append({
                "topic": topic, "document": name, "document_title": name.title(), "source": f"{folder}{name}.md",
                "index": index, "path": f"{folder}_chunks/{name}-{index}.md",
                "title": header.rsplit(" > ", 1)[-1].lstrip("#").strip(" ") or name.title(),
                "header_path": header, "start_line": start, "end_line": end_line, "is_code": rng.random() < 0.2,
                "keywords": [["cache", 3]] if rng.random() < 0.3 else [], "prompt_hashes": [],
                "promotion_level": "standard", "type": None, "tags": [],
            })
            topic_of.append(topic)
    packed = pack(records, topic_of)
    assert unpack(packed, topic_of) == records
    return {"packed": packed, "topic_of": topic_of, "records": records}


def urls_case(rng: random.Random) -> dict:
    base = rng.choice(["/", "/docs/", "/my%20repo/", "https://example.org/docs/", "http://h:8000/", "https://x.org/"])
    self_href = base + "index.json" + rng.choice(["", "", "?v=1", "#top"])
    root = rng.choice([None, "http://127.0.0.1:8000/", "http://127.0.0.1:8000/docs/", "https://mirror.example/sub/"])
    topic, name = rng.choice(TOPICS), rng.choice(NAMES)
    index = rng.randint(0, 40)
    path = f"{topic}/_chunks/{name}-{index}.md" if topic else f"_chunks/{name}-{index}.md"
    site = citations.public_base(base_of(self_href), root)
    return {"self_href": self_href, "reading_root": root, "base_url": base_of(self_href), "site_url": site,
            "path": path, "chunk_url": citations.file_url(site, path), "topic": topic, "document": name, "index": index,
            "section_url": citations.section_url(site, topic, name, index)}


def main() -> None:
    rng = random.Random(30)
    held = {"records": [records_case(rng) for _ in range(40)], "urls": [urls_case(rng) for _ in range(80)]}
    out = Path(__file__).with_name("citations.json")
    out.write_text(json.dumps(held, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out}: {len(held['records'])} record cases, {len(held['urls'])} URL cases")


if __name__ == "__main__":
    main()
