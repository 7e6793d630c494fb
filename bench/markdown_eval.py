"""Retrieval quality on the markdown set (``bench/markdown_set/``), same protocol as Chroma's.

25 real markdown documents shipped in Debian packages and installed wheels (provenance and
licences: ``bench/markdown_set/PROVENANCE.md``), 259 questions with exact gold spans
(``questions.csv``, Chroma's ``questions_df.csv`` format, built and verified by
``markdown_set/PROVENANCE.md``). Chunks of all documents are pooled; k = 5 by cosine with
all-MiniLM-L6-v2; character recall, precision, IoU, PrecisionΩ, and recall at 1,000 MiniLM
word pieces — exactly ``bench/chroma_eval.py``'s definitions (see ``bench/README.md``).

    .venv/bin/python bench/markdown_eval.py                    # anchors + ours -> table + JSON
    .venv/bin/python bench/markdown_eval.py ours-markdown semchunk-250

From Python (what ``bench/run_all.py`` calls)::

    from bench import markdown_eval
    payload = markdown_eval.run(["langchain-recursive-250", "ours-markdown"])
    # payload["results"][i]["metrics"]["recall"]["mean"], ...; also written to
    # bench/.work/markdown_results.json

Embeddings are cached per text (``bench/quality.py``); a first full run embeds ~10 k chunks
(a few minutes here), a cached rerun takes seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import quality  # noqa: E402
from bench.chunkers import DEFAULT, REGISTRY, available  # noqa: E402

SET_DIR = ce.BENCH_DIR / "markdown_set"
OUT = ce.WORK_DIR / "markdown_results.json"


def load_dataset() -> ce.Dataset:
    return quality.load_dir_dataset(SET_DIR)


def protocol(dataset: ce.Dataset, k: int, budget: int) -> dict[str, Any]:
    return {
        "data": str(SET_DIR.relative_to(ce.REPO_ROOT)),
        "data_digest": dataset.digest,
        "documents": len(dataset.corpora),
        "characters": sum(len(t) for t in dataset.corpora.values()),
        "questions": len(dataset.questions),
        "model": ce.MODEL_ID,
        "k": k,
        "token_budget": budget,
        "units": "percent, mean and population std over questions",
    }


def run(
    chunker_names: Sequence[str] | None = None,
    *,
    k: int = 5,
    budget: int = 1000,
    out: Path | None = OUT,
    progress: bool = False,
    rechunk: bool = False,
) -> dict[str, Any]:
    """Evaluate registered chunkers (default: anchors + ours) on the markdown set.

    Returns ``{"protocol", "skipped", "results": [Result.to_json(), ...]}`` (each result has
    ``metrics`` — mean/std in percent — and ``per_question`` scores for paired tests) and writes
    it to ``out`` (``bench/.work/markdown_results.json``) unless ``out`` is None.
    """
    chunkers, skipped = available(list(chunker_names or DEFAULT))
    dataset = load_dataset()
    qvecs = quality.question_vectors(dataset)
    results = []
    for chunker in chunkers:
        t0 = time.perf_counter()
        r = quality.evaluate(chunker, dataset, qvecs, k=k, budget=budget, rechunk=rechunk, progress=progress)
        if progress:
            print(f"{r.name}: {r.n_chunks} chunks, {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        results.append(r)
    payload = {"protocol": protocol(dataset, k, budget), "skipped": skipped, "results": [r.to_json() for r in results]}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(payload, indent=1))
    return payload


def table(payload: dict[str, Any]) -> str:
    k, budget = payload["protocol"]["k"], payload["protocol"]["token_budget"]
    lines = [
        f"| chunker | chunks | mean size (pieces) | recall@{k} | precision@{k} | PrecisionΩ | IoU@{k} | recall@{budget} tokens |",
        "|" + "---|" * 8,
    ]
    for r in payload["results"]:
        m = r["metrics"]
        cells = [f"{m[x]['mean']:.1f} ± {m[x]['std']:.1f}" for x in ce.METRICS]
        lines.append(f"| {r['name']} | {r['n_chunks']} | {r['mean_tokens']:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chunkers", nargs="*", help="names from the registry (default: anchors + ours)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--rechunk", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.list:
        for name in REGISTRY:
            print(name + ("" if name in DEFAULT else "  (extra)"))
        return 0
    payload = run(args.chunkers or None, k=args.k, budget=args.budget, out=args.out, progress=True, rechunk=args.rechunk)
    for note in payload["skipped"]:
        print(note, file=sys.stderr)
    print(table(payload))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
