"""Issue 11's three chunking experiments, as prototypes patched around ``chunk_text``.

(a) ``allh``: every heading level (H1-H6) a section boundary, not only H1-H3.
(b) ``greedy``: a section that must be cut is filled greedily up to the budget (the last piece
    takes what is left) instead of being packed into equal-sized pieces.
(c) ``leadin``: a block ending in ``:`` (a list's or code block's lead-in sentence) is never
    the last unit of a piece when the next unit could follow it: it moves to the next piece.

Each variant is a chunker ``ours-markdown-<budget>-<variant>`` over the same budgets as
``bench/search_eval.py``; the search methods are scored on its chunks exactly as there
(``bench/fusion_experiments.py`` contexts), and compared paired per question, budget-averaged,
with the unpatched chunker.

    .venv/bin/python -m bench.chunk_experiments count markdown realdocs chroma   # chunks to embed
    .venv/bin/python -m bench.chunk_experiments run --variants greedy markdown
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import fusion_experiments as fx  # noqa: E402
from bench import quality  # noqa: E402
from bench import search_eval as se  # noqa: E402
from pipeline.search import scoring  # noqa: E402

BUDGETS = (192, 224, 256)
VARIANTS = ("base", "allh", "greedy", "leadin")


@contextlib.contextmanager
def patched(variant: str):
    from pipeline.chunking import split as split_mod
    from pipeline.chunking.strategies import markdown as md

    saved_levels, saved_pack = md.MarkdownStrategy.levels, split_mod.RegionSplitter._pack
    try:
        if variant == "allh":
            md.MarkdownStrategy.levels = (1, 2, 3, 4, 5, 6)
        elif variant == "greedy":
            def greedy(self, units, limit):
                out, current = [], None
                for unit in units:
                    if current is not None and not unit.oversize and not current.oversize and self.fits(current.start, unit.end, limit.tokens, limit.chars):
                        current = split_mod.Span(current.start, unit.end, level=max(current.level, unit.level))
                        continue
                    if current is not None:
                        out.append(current)
                    current = unit
                if current is not None:
                    out.append(current)
                return out
            split_mod.RegionSplitter._pack = greedy
        elif variant == "leadin":
            def leadin(self, units, limit):
                packed = saved_pack(self, units, limit)
                # a piece ending in a lead-in (":" at its end) gives that last unit to the next piece
                out = list(packed)
                i = 0
                while i < len(out) - 1:
                    cur, nxt = out[i], out[i + 1]
                    tail = self.text[cur.start:cur.end].rstrip()
                    if tail.endswith(":") and not cur.oversize and not nxt.oversize:
                        # the last unit of cur that starts the lead-in
                        last = max((u for u in units if cur.start <= u.start < cur.end), key=lambda u: u.start)
                        if last.start > cur.start and self.fits(last.start, nxt.end, limit.tokens, limit.chars):
                            out[i] = split_mod.Span(cur.start, split_mod._trim_end(self.text, cur.start, last.start), level=cur.level)
                            out[i + 1] = split_mod.Span(last.start, nxt.end, level=max(last.level, nxt.level))
                    i += 1
                return out
            split_mod.RegionSplitter._pack = leadin
        yield
    finally:
        md.MarkdownStrategy.levels, split_mod.RegionSplitter._pack = saved_levels, saved_pack


def chunker(budget: int, variant: str) -> ce.Chunker:
    from pipeline.chunking import chunk_text
    from pipeline.parsing.tokens import default_counter

    counter = default_counter()

    def split(text: str):
        with patched(variant):
            chunks = chunk_text(text, strategy="markdown", counter=counter, max_tokens=budget)
        return [(c.start_offset, c.end_offset, c.content) for c in chunks]

    # params None: never read from the span cache (the patch is not part of the code digest)
    return ce.Chunker(f"ours-markdown-{budget}-{variant}", split, params=None)


def contexts(name: str, variant: str, *, embed: bool = True) -> list[fx.Context]:
    dataset = se.load(name)
    qvecs = quality.question_vectors(dataset) if embed else np.zeros((len(dataset.questions), quality.DIM), np.float32)
    out = []
    for b in BUDGETS:
        chunks = quality.build_chunks(chunker(b, variant), dataset)
        if embed:
            vecs, computed, _ = quality.embed_cached(chunks.texts, progress=True)
        else:
            vecs, computed = np.zeros((len(chunks), quality.DIM), np.float32), 0
        fields, lengths = fx.fields_of(dataset, chunks, "site")
        # the site's index as it is now (fields and weights of pipeline.search.scoring)
        indexes = {"f-site": fx.build_index(fields, lengths, (scoring.FIELDS, scoring.K1))}
        out.append(fx.Context(dataset, chunks, qvecs @ vecs.T, fields, lengths, indexes,
                              se.bm25_rankings(chunks, dataset.questions), ce.count_tokens_many(chunks.texts, special=False)))
        print(f"{name} {variant} {b}: {len(chunks)} chunks ({computed} embedded)", file=sys.stderr)
    return out


def count(name: str) -> None:
    dataset = se.load(name)
    cache = quality.TextCache()
    for variant in VARIANTS:
        total, missing = 0, set()
        for b in BUDGETS:
            chunks = quality.build_chunks(chunker(b, variant), dataset)
            keys = [quality.TextCache.key(t) for t in chunks.texts]
            have = cache.get_many(keys)
            total += len(chunks)
            missing |= {k for k in keys if k not in have}
        print(f"{name} {variant}: {total} chunks over {len(BUDGETS)} budgets, {len(missing)} not embedded yet", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("count", "run"))
    parser.add_argument("sets", nargs="*", default=list(se.SETS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS[1:]))
    parser.add_argument("--methods", nargs="+", default=["vector", "lexical", "bm25", "score"])
    parser.add_argument("--lexical-only", action="store_true")
    args = parser.parse_args(argv)
    for name in args.sets:
        if args.command == "count":
            count(name)
            continue
        base = fx.evaluate(contexts(name, "base", embed=not args.lexical_only), args.methods)
        for variant in args.variants:
            res = fx.evaluate(contexts(name, variant, embed=not args.lexical_only), args.methods)
            print(f"\n## {name}: {variant} vs base (paired, budget-averaged)")
            for m in args.methods:
                line = f"{m:10s}"
                for metric in se.METRICS:
                    p = quality.paired(res[m][metric], base[m][metric], n_boot=2000)
                    line += f"  {metric} {100 * np.mean(base[m][metric]):5.1f}->{100 * np.mean(res[m][metric]):5.1f} {p['mean_diff']:+.1f} [{p['ci_low']:+.1f}, {p['ci_high']:+.1f}]"
                print(line, flush=True)


if __name__ == "__main__":
    main()
