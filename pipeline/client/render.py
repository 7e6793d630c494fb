"""Plain-text and JSON renderings of client results, for the command line (pure)."""

from __future__ import annotations

from dataclasses import asdict

import orjson

from pipeline.siteformat.records import Chunk, Hit, Node


def as_json(records: list) -> str:
    """Records (with ``to_dict``, or dataclasses) as an indented JSON array."""
    rows = [r.to_dict() if hasattr(r, "to_dict") else asdict(r) for r in records]
    return orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode()


def nodes_text(nodes: list[Node]) -> str:
    """One line per node, indented by depth: id, title and document count."""
    lines = []
    for node in nodes:
        depth = node.id.count("/") + (1 if node.id else 0)
        docs = f"  ({node.documents} documents)" if node.documents else ""
        lines.append(f"{'  ' * depth}{node.id or '/'}  {node.title}{docs}")
    return "\n".join(lines)


def chunks_text(chunks: list[Chunk]) -> str:
    """Each chunk under a header line naming its source, index and href."""
    parts = []
    for chunk in chunks:
        ref = chunk.ref
        parts.append(f"=== {ref.source} #{ref.index}  {ref.header_path or ref.title}\n--- {ref.href}\n{chunk.text.rstrip()}\n")
    return "\n".join(parts)


def hits_text(hits: list[Hit]) -> str:
    """One line per hit: rank, score, method, source with its lines, header path, then its
    href (where it was read; ``--json`` adds its public URLs)."""
    if not hits:
        return "no hits"
    lines = []
    for rank, hit in enumerate(hits, 1):
        where = hit.header_path or hit.title
        extra = f" d={hit.distance}" if hit.distance is not None else ""
        ref = hit.chunk
        cited = f"{hit.source}:{ref.start_line}-{ref.end_line}" if ref.start_line is not None else hit.source
        lines.append(f"{rank:>2}. {hit.score:.3f} {hit.method}{extra}  {cited}  {where}\n    {hit.href}")
    return "\n".join(lines)
