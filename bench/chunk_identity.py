"""Chunk records before and after a change: a digest per document, strategy and budget.

    .venv/bin/python -m bench.chunk_identity snapshot OUT.json     # in the checkout to measure
    .venv/bin/python -m bench.chunk_identity compare A.json B.json # exit 1 when any differs

Snapshots every strategy but ``semantic`` (it embeds) at 224, 250 and 64 pieces on the real
documents of ``bench.parser_identity.corpus`` (content/, bench/markdown_set, the real docs trees,
the chunking bench's markdown corpus, Chroma's corpora): the SHA-256 of the records
(``Chunk.to_dict``, keys sorted) and the warnings, or of the error. Run the snapshot in each
checkout (before and after), then compare.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path

BUDGETS = (224, 250, 64)


def snapshot(out: Path) -> int:
    from bench.parser_identity import corpus
    from pipeline.chunking import chunk_text
    from pipeline.chunking.registry import strategy_names
    from pipeline.errors import PipelineError
    from pipeline.parsing.tokens import default_counter

    counter = default_counter()
    strategies = [s for s in strategy_names() if s != "semantic"]
    digests = {}
    for label, text in corpus():
        label = label.replace(str(Path.cwd()) + "/", "")  # the same key in any checkout
        for strategy in strategies:
            for budget in BUDGETS:
                try:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        chunks = chunk_text(text, path=label, strategy=strategy, counter=counter, max_tokens=budget)
                    value = json.dumps([c.to_dict() for c in chunks], sort_keys=True, default=str)
                    value += "|W|" + "\n".join(str(w.message) for w in caught)
                except PipelineError as exc:
                    value = f"ERR {exc}"
                digests[f"{label}|{strategy}|{budget}"] = hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
    out.write_text(json.dumps(digests, indent=0, sort_keys=True))
    print(f"{len(digests)} records digests -> {out}")
    return 0


def compare(a: Path, b: Path) -> int:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    print(f"{len(before)} / {len(after)} entries, {len(differ)} differ")
    for key in differ[:20]:
        print(f"  {key}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("snapshot").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = ap.parse_args(argv)
    return snapshot(args.out) if args.command == "snapshot" else compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
