"""How much an agent reads per MCP tool call: answer sizes with default arguments (issue 30).

Builds FastAPI's docs (``../shared/realdocs/fastapi``; with ``--model`` the default MiniLM
model, else the hashing embedder) and a synthetic site of ``--docs`` documents
(``bench/synthetic.py``, hashing embedder), then drives the MCP server through the SDK's own
in-process client, as an agent does, and measures the characters of every answer's text (what
the agent reads; the budget is 16,000 characters, ~4k tokens): ``tools/list``; ``list_topics``
and ``list_topics(topic)`` of every topic; ``search`` of ten questions (``fastapi_questions``,
``synthetic.QUERIES``); ``sample`` of every topic and of up to 150 documents; ``read_document``
(first page) of up to 150 documents; ``read_chunk`` and ``follow`` (next, prev, related) of up to
200 chunks (a seeded sample); and the pages a cursor takes through the largest topic's documents
and the longest document. Nothing is timed; ``bench.reporting.sections.mcp`` renders the result.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import FASTAPI, WORK, arguments, fastapi_questions, synthetic, write_json
from bench.speed import build_in_process

SAMPLED = 150
CHUNKS = 200


def build(content: Path, site: Path, cache: Path, model: bool) -> tuple[int, int]:
    report = build_in_process(content, site, cache, title=content.name, model=model)
    return report.chunk.documents, report.chunk.chunks


async def measure_site(site: Path, queries: list[str], seed: int = 30) -> dict:
    from mcp import Client

    from pipeline.agents.mcp_server import create_server
    from pipeline.agents.tools import chunk_id
    from pipeline.client import open_site

    reader = open_site(site)
    sizes: dict[str, list[int]] = {}
    errors: list[str] = []
    async with Client(create_server(open_site(site))) as client:
        tools = (await client.list_tools()).tools
        tools_list = len(json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]))

        async def call(tool: str, label: str | None = None, **arguments) -> dict:
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text
            if result.is_error:
                errors.append(f"{tool}({arguments}): {text[:200]}")
                return {}
            sizes.setdefault(label or tool, []).append(len(text))
            return json.loads(text)

        await call("list_topics")
        topics = [n for n in reader.topics()]
        for node in topics:
            await call("list_topics", "list_topics(topic)", topic=node.id)
            await call("sample", topic=node.id)
        for query in queries:
            await call("search", query=query)
        rng = random.Random(seed)
        documents = [d for node in topics for d in reader.topic(node).documents]
        for doc in rng.sample(documents, min(SAMPLED, len(documents))):
            await call("sample", "sample(document)", topic=doc.topic, document=doc.source)
            await call("read_document", document=doc.source)
        chunks = [c for d in documents for c in d.items]
        for ref in rng.sample(chunks, min(CHUNKS, len(chunks))):
            await call("read_chunk", chunk_id=chunk_id(ref))
            for rel in ("next", "prev", "related"):
                await call("follow", f"follow({rel})", chunk_id=chunk_id(ref), rel=rel)
        # the pages a cursor takes through the most documents of a topic, and the longest document
        biggest = max(topics, key=lambda n: n.documents)
        longest = max(documents, key=lambda d: max((c.end_line or 0) for c in d.items) if d.items else 0)
        walks = {}
        for label, tool, kwargs in (("list_topics(largest topic)", "list_topics", {"topic": biggest.id}),
                                       ("read_document(longest)", "read_document", {"document": longest.source})):
            page, pages = await call(tool, f"{label} pages", **kwargs), 1
            while page.get("next_cursor"):
                page = await call(tool, f"{label} pages", **kwargs, cursor=page["next_cursor"])
                pages += 1
            walks[label] = {"pages": pages, "of": biggest.id if tool == "list_topics" else longest.source,
                            "items": biggest.documents if tool == "list_topics" else longest.items[-1].end_line}
    return {
        "documents": len(documents), "chunks": len(chunks), "topics": len(topics), "tools_list_chars": tools_list,
        "tools": {name: {"calls": len(v), "median": statistics.median(v), "max": max(v)} for name, v in sizes.items()},
        "walks": walks, "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    import anyio

    from pipeline.agents import budget

    ap = arguments(__doc__, WORK / "mcp_sizes.json")
    ap.add_argument("--fastapi", type=Path, default=FASTAPI)
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--model", action="store_true", help="build FastAPI's docs with the default model (else hashing)")
    args = ap.parse_args(argv)
    result = {"limit_chars": budget.limit(None), "chars_per_token": budget.CHARS_PER_TOKEN, "sites": [],
              "started": time.strftime("%Y-%m-%d %H:%M %Z")}
    with tempfile.TemporaryDirectory(prefix="mcp-sizes-") as tmp:
        runs = []
        if args.fastapi.is_dir():
            runs.append(("FastAPI docs", args.fastapi, "minilm" if args.model else "hashing", fastapi_questions()))
        else:
            print(f"skipped FastAPI: {args.fastapi} does not exist", file=sys.stderr)
        if args.docs:
            content = Path(tmp) / "synthetic"
            synthetic.generate(content, args.docs)
            runs.append((f"synthetic, {args.docs:,} documents", content, "hashing", synthetic.QUERIES))
        for i, (name, content, embedder, queries) in enumerate(runs):
            site = Path(tmp) / f"site{i}"
            documents, chunks = build(content, site, WORK / "cache" if embedder == "minilm" else Path(tmp) / f"cache{i}",
                                      embedder == "minilm")
            print(f"{name}: built {documents} documents, {chunks} chunks", file=sys.stderr)
            measured = anyio.run(measure_site, site, queries)
            result["sites"].append({"name": name, "embedder": embedder, **measured})
    write_json(args.out, result)
    from bench.reporting.sections import mcp

    print(mcp(result))
    print(f"wrote {args.out}", file=sys.stderr)
    return 1 if any(s["errors"] for s in result["sites"]) else 0


def largest(site: dict) -> int:
    """The largest default answer of any tool on ``site`` (cursor walks included: every page is an answer)."""
    return max(t["max"] for t in site["tools"].values())


def targets(result: dict | None) -> list[list[str]]:
    """The Targets row of issue 30's MCP budget."""
    name = "MCP: every tool's default answer ≤ 16,000 characters on FastAPI's docs and on a 10k-document site"
    if not result or not result.get("sites"):
        return [[name, "not run", "`python -m bench.mcp_sizes`"]]
    ok = all(largest(s) <= result["limit_chars"] and not s["errors"] for s in result["sites"])
    tens = any(s["documents"] >= 10_000 for s in result["sites"]) and any(s["name"].startswith("FastAPI") for s in result["sites"])
    evidence = "; ".join(f"{s['name']}: largest {largest(s):,} characters over {sum(t['calls'] for t in s['tools'].values()):,} answers"
                         for s in result["sites"])
    return [[name, "met" if ok and tens else "not met", evidence]]


if __name__ == "__main__":
    raise SystemExit(main())
