"""Method experiments for the default chunker, on both sets, with paired comparisons.

Each experiment is a ``Chunker`` (prototype methods are written here as wrappers around
``pipeline.chunking.chunk_text``; what works moves into the strategy). Results, with
per-question scores, go to ``bench/.work/experiments/<set>/<name>.json``; a rerun reuses them
unless ``--force``. Embeddings come from the per-text cache (``bench/quality.py``).

    .venv/bin/python bench/quality_experiments.py run md-256 md-160 ...   # evaluate on both sets
    .venv/bin/python bench/quality_experiments.py table md-256 md-160     # summary table
    .venv/bin/python bench/quality_experiments.py compare md-160 md-256   # paired: a - b
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import quality  # noqa: E402
from bench.chunkers import REGISTRY, source_digest  # noqa: E402

EXP_DIR = ce.WORK_DIR / "experiments"
SETS = ("chroma", "markdown")


@lru_cache(maxsize=None)
def dataset(name: str) -> ce.Dataset:
    if name == "chroma":
        return ce.load_dataset()
    from bench.markdown_eval import load_dataset

    return load_dataset()


@lru_cache(maxsize=None)
def qvecs(name: str):
    return quality.question_vectors(dataset(name))


@lru_cache(maxsize=1)
def counter():
    from pipeline.parsing.tokens import default_counter

    return default_counter()


def code() -> str:
    return source_digest("pipeline/chunking", "pipeline/parsing")


# --------------------------------------------------------------------------- prototypes


def chunks_of(text: str, strategy: str = "markdown", **options):
    from pipeline.chunking import chunk_text

    return chunk_text(text, strategy=strategy, counter=counter(), **options)


def plain(strategy: str = "markdown", embed: str = "content", **options) -> Callable:
    def split(text: str):
        out = []
        for c in chunks_of(text, strategy, **options):
            out.append((c.start_offset, c.end_offset) if embed == "span" else (c.start_offset, c.end_offset, c.content))
        return out

    return split


def with_context(context_tokens: int, *, limit: int = 256, same_section: bool = True, **options) -> Callable:
    """Spans of the markdown strategy; embedded text = heading prefix + up to ``context_tokens``
    of the text just before the span (from a word start, never before the previous chunk's
    start, nor across a section when ``same_section``) + the span."""
    tok = counter()

    def split(text: str):
        chunks = chunks_of(text, "markdown", **options)
        out = []
        for i, c in enumerate(chunks):
            prefix = c.content[: len(c.content) - (c.end_offset - c.start_offset)]
            room = min(context_tokens, limit - c.token_count)
            ctx_start = c.start_offset
            if i > 0 and room > 0 and (not same_section or chunks[i - 1].header_path == c.header_path):
                lo = chunks[i - 1].start_offset
                enc = tok._tokenizer.encode(text[lo : c.start_offset], add_special_tokens=False)
                offs = [o for o in enc.offsets if o[1] > o[0]]
                if offs:
                    keep = offs[-room:] if room < len(offs) else offs
                    a = lo + keep[0][0]
                    # start at a word boundary
                    while a > lo and not text[a - 1].isspace():
                        a += 1
                        if a >= c.start_offset:
                            break
                    ctx_start = min(a, c.start_offset)
            out.append((c.start_offset, c.end_offset, prefix + text[ctx_start : c.end_offset]))
        return out

    return split


# --- splitter variants, patched into RegionSplitter for the duration of one chunking call ---

import contextlib  # noqa: E402
import math  # noqa: E402


@contextlib.contextmanager
def splitter_variant(hierarchical: bool = False, target: float | None = None):
    """``hierarchical``: the pieces of a block that had to be cut are packed among themselves,
    never with the blocks around it (LangChain's recursive discipline). ``target``: pack towards
    chunks of ``target`` x the budget instead of filling every chunk up to the budget."""
    from pipeline.chunking import split as sp

    cls = sp.RegionSplitter
    orig_split, orig_pack = cls._split, cls._pack

    def pack(self, units, limit):
        if len(units) <= 1 or target is None:
            return orig_pack(self, units, limit)
        total = self._fill(units[0].start, units[-1].end, limit)
        n = max(1, math.ceil(total / target))
        goal = total / n
        out, current = [], None
        for unit in units:
            if current is not None and not unit.oversize and not current.oversize:
                if self.fits(current.start, unit.end, limit.tokens, limit.chars) and self._fill(current.start, current.end, limit) < goal:
                    current = sp.Span(current.start, unit.end, level=max(current.level, unit.level))
                    continue
            if current is not None:
                out.append(current)
            current = unit
        out.append(current)
        return out

    def split_h(self, start, end, limit, depth):
        level = limit.levels[min(depth, len(limit.levels) - 1)]
        if self.fits(start, end, limit.tokens, limit.chars):
            return [sp.Span(start, end, level=level)]
        if self._is_code_block(start, end):
            return [sp.Span(start, end, oversize=self.tokens(start, end) > limit.tokens, level=level)]
        while depth < len(limit.levels):
            parts = self._cut(start, end, limit.levels[depth])
            if len(parts) > 1:
                break
            depth += 1
        else:
            return [sp.Span(start, end, oversize=self.tokens(start, end) > limit.tokens, level=sp.TOKENS)]
        level = limit.levels[depth]
        out, run = [], []
        for a, b in parts:
            if self.fits(a, b, limit.tokens, limit.chars):
                run.append(sp.Span(a, b, level=level))
            else:
                out += self._pack(run, limit) if run else []
                run = []
                out += split_h(self, a, b, limit, depth + 1)
        out += self._pack(run, limit) if run else []
        return out

    if hierarchical:
        cls._split = split_h
    cls._pack = pack
    try:
        yield
    finally:
        cls._split, cls._pack = orig_split, orig_pack


@contextlib.contextmanager
def loose_sentences(enabled: bool = True):
    """A full stop followed by a lowercase word also ends a sentence (lowercased corpora such as
    Chroma's finance set have no capitals after a full stop), unless an ellipsis or an
    abbreviation precedes it."""
    from pipeline.chunking import sentences as se

    orig = se._not_a_full_stop

    def relaxed(text, start, dot, next_start):
        if text[next_start].islower():
            if text[dot : dot + 2] == ".." or (dot > 0 and text[dot - 1] == "."):
                return True
            saved = text  # the abbreviation and list-marker checks below still apply
            return orig(saved[:next_start] + "X" + saved[next_start + 1 :], start, dot, next_start) if False else _abbrev_or_marker(se, text, start, dot)
        return orig(text, start, dot, next_start)

    if enabled:
        se._not_a_full_stop = relaxed
    try:
        yield
    finally:
        se._not_a_full_stop = orig


def _abbrev_or_marker(se, text, start, dot):
    line_start = max(text.rfind("\n", start, dot) + 1, start)
    if se._LIST_MARKER.fullmatch(text, line_start, dot + 1):
        return True
    word = se._WORD_BEFORE_DOT.search(text, max(start, dot - 24), dot + 1)
    if not word:
        return False
    token = word.group(1)
    if "." in token:
        return all(len(part) <= 2 for part in token.split("."))
    return len(token) == 1 or token.lower() in se.ABBREVIATIONS


def variant(hierarchical=False, target=None, embed="content", loose=False, **options) -> Callable:
    inner = plain(embed=embed, **options)

    def split(text):
        with splitter_variant(hierarchical, target), loose_sentences(loose):
            return inner(text)

    return split


EXPERIMENTS: dict[str, Callable[[], ce.Chunker]] = {}


def exp(name: str, split_factory: Callable[[], Callable], **params):
    EXPERIMENTS[name] = lambda: ce.Chunker(name, split_factory(), params={"exp": name, **params, "code": code()})


for size in (96, 128, 160, 192, 224, 256):
    exp(f"md-{size}", lambda size=size: plain(max_tokens=size), max_tokens=size)
    exp(f"md-{size}-span", lambda size=size: plain(max_tokens=size, embed="span"), max_tokens=size, embed="span")
for h in (False, True):
    for t in (None, 0.5, 0.6, 0.75):
        if not h and t is None:
            continue
        tag = ("-h" if h else "") + (f"-t{t}" if t else "")
        for size in (192, 256):
            exp(f"md-{size}{tag}", lambda size=size, h=h, t=t: variant(h, t, max_tokens=size), max_tokens=size, hier=h, target=t)
for size in (192, 256):
    exp(f"md-{size}-h-loose", lambda size=size: variant(True, None, loose=True, max_tokens=size), max_tokens=size, hier=True, loose=True)
    exp(f"md-{size}-loose", lambda size=size: variant(False, None, loose=True, max_tokens=size), max_tokens=size, loose=True)
    exp(f"md-{size}-h-t0.6-loose", lambda size=size: variant(True, 0.6, loose=True, max_tokens=size), max_tokens=size, hier=True, target=0.6, loose=True)
def semantic(loose=False, **options) -> Callable:
    from bench.chunkers import CachedMiniLM

    inner = plain("semantic", embedder=CachedMiniLM(), **options)

    def split(text):
        with loose_sentences(loose):
            return inner(text)

    return split


for loose in (False, True):
    for opts in ({}, {"percentile": 90}, {"percentile": 80}, {"min_tokens": 64}, {"min_tokens": 64, "percentile": 90}, {"min_tokens": 48, "percentile": 90}):
        tag = "sem" + "".join(f"-{k[0]}{v}" for k, v in opts.items()) + ("-loose" if loose else "")
        exp(tag, lambda opts=opts, loose=loose: semantic(loose, max_tokens=256, **opts), strategy="semantic", loose=loose, max_tokens=256, **opts)
def hybrid_pieces(document, counter_, *, max_tokens=256, min_tokens=64, percentile=90.0, split_fitting=False, embedder=None, window=1):
    """Markdown sections (## / ###) kept whole when they fit; a section over the budget is cut
    where the embedding of consecutive units drifts most (the semantic strategy's gaps, with
    min_tokens on both sides), recursively, until every part fits. ``split_fitting`` also cuts
    a fitting section at a gap at or above the document's ``percentile``."""
    import numpy as np
    from pipeline.chunking.outline import Outline
    from pipeline.chunking.sections import Section, heading_sections
    from pipeline.chunking.split import RegionSplitter
    from pipeline.chunking.strategies.markdown import split_sections
    from pipeline.chunking.strategies.semantic import SemanticStrategy, _gaps

    sem = SemanticStrategy(counter=counter_, min_tokens=min_tokens, max_tokens=max_tokens, percentile=percentile, embedder=embedder)
    splitter = RegionSplitter(document, counter_.spans(document.text), counter_)
    sections = heading_sections(document, (2, 3))
    units = sem._units(document, splitter)
    if len(units) < 2:
        return split_sections(document, sections, counter=counter_, max_tokens=max_tokens)
    text = document.text
    gaps = _gaps(sem._embedder().embed([text[a:b] for a, b in units]), window)
    threshold = float(np.percentile(gaps, percentile))
    spans = splitter.spans
    first = np.searchsorted(np.asarray(spans.token_starts), [a for a, _ in units], side="left")
    after = np.searchsorted(np.asarray(spans.token_ends), [b for _, b in units], side="right")
    specials = spans.specials
    ustarts = [a for a, _ in units]
    import bisect

    def prefix_cost(section):
        # the markdown strategy's budget rule: the longest heading prefix a piece can get
        from pipeline.chunking.sections import context_prefix
        headings = [*section.ancestors, section.heading] if section.heading else []
        cost = 0
        for at in (section.start, section.start + 1, section.end):
            pre = context_prefix(document, headings, at, counter=counter_, max_prefix_tokens=max_tokens // 2)
            cost = max(cost, counter_.count(pre) - counter_.specials if pre else 0)
        return cost

    out_sections = []
    for section in sections:
        i = bisect.bisect_left(ustarts, section.start)
        j = bisect.bisect_left(ustarts, section.end)
        if i >= j:
            out_sections.append(section)
            continue
        budget = max_tokens - prefix_cost(section)
        fits_all = splitter.tokens(section.start, section.end) <= budget
        if fits_all and not split_fitting:
            out_sections.append(section)
            continue
        stack = [(i, j)]
        segs = []
        while stack:
            a, b = stack.pop()
            if b - a == 1:
                segs.append((a, b)); continue
            ks = np.arange(a + 1, b)
            left = after[ks - 1] - first[a] + specials
            right = after[b - 1] - first[ks] + specials
            balanced = (left >= min_tokens) & (right >= min_tokens)
            fits = after[b - 1] - first[a] + specials <= budget
            if fits:
                allowed = balanced & (gaps[ks - 1] >= threshold)
                if not allowed.any():
                    segs.append((a, b)); continue
            else:
                allowed = balanced if balanced.any() else np.ones_like(balanced)
            k = int(ks[allowed][np.argmax(gaps[ks - 1][allowed])])
            stack.append((k, b)); stack.append((a, k))
        segs.sort()
        for n, (a, b) in enumerate(segs):
            s0 = section.start if n == 0 else units[a][0]
            e0 = section.end if n == len(segs) - 1 else units[b - 1][1]
            out_sections.append(Section(s0, e0, section.heading, section.ancestors))
    return split_sections(document, out_sections, counter=counter_, max_tokens=max_tokens)


class LexicalEmbedder:
    """TF-IDF bag of words over one call's texts (one document's units), hashed to ``dim``
    dimensions: lexical cohesion (TextTiling-like) instead of a model. IDF is computed over the
    texts of the call, so words frequent across the document weigh little."""

    name = "lexical"

    def __init__(self, dim: int = 4096, sublinear: bool = True):
        self.dim = dim
        self.sublinear = sublinear

    def embed(self, texts, *, progress: bool = False):
        import re
        import zlib

        import numpy as np

        word = re.compile(r"[^\W_]{2,}")
        bags = []
        df: dict[str, int] = {}
        for t in texts:
            counts: dict[str, int] = {}
            for w in word.findall(t.lower()):
                counts[w] = counts.get(w, 0) + 1
            bags.append(counts)
            for w in counts:
                df[w] = df.get(w, 0) + 1
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        for row, counts in enumerate(bags):
            for w, c in counts.items():
                idf = np.log((1 + n) / (1 + df[w])) + 1.0
                tf = 1.0 + np.log(c) if self.sublinear else c
                out[row, zlib.crc32(w.encode()) % self.dim] += tf * idf
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def hybrid(loose=True, embed="content", embedder="minilm", **options) -> Callable:
    from bench.chunkers import CachedMiniLM
    from pipeline.chunking.base import assemble
    from pipeline.parsing.markdown import parse_markdown

    emb = CachedMiniLM() if embedder == "minilm" else LexicalEmbedder()

    def split(text):
        with loose_sentences(loose):
            document = parse_markdown(text)
            pieces = hybrid_pieces(document, counter(), embedder=emb, **options)
            chunks = assemble(document, pieces, strategy="hybrid", document_id="x", source_file="x", counter=counter())
        return [(c.start_offset, c.end_offset) if embed == "span" else (c.start_offset, c.end_offset, c.content) for c in chunks]

    return split


for opts in ({}, {"split_fitting": True}, {"window": 2}, {"min_tokens": 80}, {"min_tokens": 48}, {"min_tokens": 48, "split_fitting": True}, {"min_tokens": 32}, {"percentile": 80}, {"min_tokens": 48, "percentile": 80}):
    tag = "hyb" + "".join(f"-{k[0]}{v}" if not isinstance(v, bool) else f"-{k[:5]}" for k, v in opts.items())
    exp(tag, lambda opts=opts: hybrid(**opts), strategy="hybrid", **opts)
for opts in ({}, {"min_tokens": 48}, {"min_tokens": 48, "split_fitting": True}, {"min_tokens": 32}, {"window": 2}, {"window": 3}, {"min_tokens": 80}, {"window": 2, "min_tokens": 80}):
    tag = "hyblex" + "".join(f"-{k[0]}{v}" if not isinstance(v, bool) else f"-{k[:5]}" for k, v in opts.items())
    exp(tag, lambda opts=opts: hybrid(embedder="lexical", **opts), strategy="hybrid", embedder="lexical", **opts)
for size, ctx in ((96, 64), (128, 64), (128, 128), (160, 96), (192, 64)):
    exp(f"md-{size}-ctx{ctx}", lambda size=size, ctx=ctx: with_context(ctx, max_tokens=size), max_tokens=size, ctx=ctx)


# --------------------------------------------------------------------------- running


def result_path(set_name: str, name: str) -> Path:
    return EXP_DIR / set_name / f"{ce._safe(name)}.json"


def run(name: str, sets=SETS, *, force: bool = False) -> dict[str, dict]:
    out = {}
    for s in sets:
        path = result_path(s, name)
        factory = EXPERIMENTS.get(name) or REGISTRY.get(name)
        if factory is None:
            raise KeyError(name)
        chunker = factory()
        if path.exists() and not force:
            data = json.loads(path.read_text())
            if data.get("params") == chunker.params:
                out[s] = data
                continue
        t0 = time.perf_counter()
        r = quality.evaluate(chunker, dataset(s), qvecs(s), progress=True)
        data = r.to_json()
        data["wall_seconds"] = time.perf_counter() - t0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
        out[s] = data
        print(f"{s} {name}: {r.n_chunks} chunks, {data['wall_seconds']:.0f}s", file=sys.stderr)
    return out


def load(set_name: str, name: str) -> dict:
    return json.loads(result_path(set_name, name).read_text())


def table(names, sets=SETS) -> str:
    lines = []
    for s in sets:
        lines.append(f"\n{s}\n| run | chunks | size | recall@5 | IoU@5 | PrecΩ | recall@1000 |\n|---|---|---|---|---|---|---|")
        for n in names:
            try:
                r = load(s, n)
            except FileNotFoundError:
                continue
            m = r["metrics"]
            lines.append(
                f"| {n} | {r['n_chunks']} | {r['mean_tokens']:.0f} | {m['recall']['mean']:.1f} | {m['iou']['mean']:.2f} "
                f"| {m['precision_omega']['mean']:.1f} | {m['recall_at_budget']['mean']:.1f} |"
            )
    return "\n".join(lines)


def compare(a: str, b: str, sets=SETS, metrics=("recall", "iou", "recall_at_budget")) -> str:
    lines = []
    for s in sets:
        ra, rb = load(s, a), load(s, b)
        for m in metrics:
            p = quality.paired(ra["per_question"][m], rb["per_question"][m])
            lines.append(f"{s:8s} {m:17s} {a} - {b}: {quality.format_paired(p)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "table", "compare", "list"])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    sets = tuple(args.sets.split(","))
    if args.cmd == "list":
        print("\n".join(EXPERIMENTS))
    elif args.cmd == "run":
        for n in args.names:
            run(n, sets, force=args.force)
        print(table(args.names, sets))
    elif args.cmd == "table":
        print(table(args.names, sets))
    else:
        print(compare(args.names[0], args.names[1], sets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
