"""The question sets asked of built sites by the product's own evaluation (``pipeline eval``).

For the markdown and realdocs sets: the set's documents are built into a site with default
settings and the real model (``bench/.work/sites/<set>/site``, embeddings cached in
``bench/.work/sites/embedding-cache``), each question's gold span becomes the section holding it
(``expectations``: the chunk of the build's own chunker that overlaps the span most, named
``doc.md#Heading > Subheading``, or ``doc.md#<title>`` for a document's overview), written as the
JSON Lines ``pipeline eval --questions`` reads (``bench/.work/sites/<set>/questions.jsonl``).
``site_figures`` then calls ``pipeline.evaluate.evaluate`` on it (recall@5 and MRR per method:
the numbers ``pipeline eval`` prints for the same site and file, by the same code), and again
with probes instead of the questions, and gives how well the probes' per-document recall tracks
the questions' (Spearman across documents).

    .venv/bin/python -m bench.site_eval markdown realdocs     # figures as JSON on stdout (--out: also to a file)
    .venv/bin/python -m bench.site_eval --speed               # pipeline eval's time on FastAPI's docs -> bench/.work/eval_speed.json
"""

from __future__ import annotations

import json
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

from bench import FASTAPI, REPO_ROOT, WORK, arguments, write_json
from bench import chroma_eval as ce
from bench.speed import build_in_process

SITES = WORK / "sites"
SETS = ("markdown", "realdocs")


def document_path(corpus_id: str) -> str:
    """The content path of a corpus: realdocs ids are paths with ``/`` as ``__``."""
    rel = re.sub(r"__(?=_?[^_])", "/", corpus_id)
    return rel if rel.endswith(".md") else f"{rel}.md"


def write_content(dataset: ce.Dataset, content: Path) -> None:
    """The set's documents as a content tree (files rewritten only when they differ)."""
    for cid, text in dataset.corpora.items():
        path = content / document_path(cid)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="")


def expectations(dataset: ce.Dataset) -> list[dict[str, str]]:
    """Per question, ``{"question", "expect"}``: the section of the chunk (as a build chunks the
    document) sharing the most characters with the question's gold spans."""
    from pipeline.chunking import chunk_text
    from pipeline.evaluate.targets import SEPARATOR, plain_heading, split_path

    chunks = {cid: chunk_text(text, path=document_path(cid)) for cid, text in dataset.corpora.items()}
    out = []
    for q in dataset.questions:
        def shared(c) -> int:
            return sum(max(0, min(c.end_offset, e) - max(c.start_offset, s)) for s, e in q.refs)

        best = max(chunks[q.corpus_id], key=shared)  # the first of equals
        parts = split_path(best.header_path)
        fragment = SEPARATOR.join(plain_heading(p) for p in parts) if parts else plain_heading(best.title)
        out.append({"question": q.text, "expect": f"{document_path(q.corpus_id)}#{fragment}"})
    return out


def prepare(dataset: ce.Dataset, folder: Path, *, embedder: str = "minilm") -> tuple[Path, Path]:
    """(site, questions file) of ``dataset`` under ``folder``, built and written (a rebuild takes
    what is cached: ``embedding-cache`` beside ``folder``, shared by the sets)."""
    content, site, questions = folder / "content", folder / "site", folder / "questions.jsonl"
    write_content(dataset, content)
    with warnings.catch_warnings():  # oversized code blocks, said by every build of these documents
        warnings.simplefilter("ignore")
        build_in_process(content, site, folder.parent / "embedding-cache", title=f"{folder.name} set", model=embedder != "hashing")
        rows = expectations(dataset)
    questions.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return site, questions


def tracking(real, probed, method: str) -> dict[str, Any]:
    """Per document with real questions: its recall@k by the questions and by the probes, and
    Spearman's correlation of the two across those documents."""
    from pipeline.evaluate.metrics import spearman

    by_real, by_probe = real.by_document(method), probed.by_document(method)
    docs = [d for d in by_real if d in by_probe]
    rho = spearman([by_real[d].recall for d in docs], [by_probe[d].recall for d in docs])
    return {"documents": len(docs), "spearman": rho,
            "per_document": {d: [by_real[d].recall, by_probe[d].recall] for d in docs}}


def site_figures(name: str, dataset: ce.Dataset | None = None, *, folder: Path | None = None, embedder: str = "minilm") -> dict[str, Any]:
    """``pipeline eval`` on set ``name``'s site with its questions, and with probes (module docstring)."""
    from pipeline.evaluate import PROBE_KIND, evaluate

    if dataset is None:  # search_eval passes its own (run as __main__, it would be imported a second time)
        from bench.search_eval import load

        dataset = load(name)
    site, questions = prepare(dataset, folder or SITES / name, embedder=embedder)
    real = evaluate(str(site), questions_file=questions)
    probed = evaluate(str(site), use_probes=True)
    out = real.to_dict()
    return {
        "set": name,
        "command": f"pipeline eval {_shown(site)} --questions {_shown(questions)}",
        "k": out["k"],
        "methods": out["methods"],
        "page_method": out["page_method"],
        "questions": len(real.answers),
        "summary": out["summary"],
        "seconds": real.seconds,
        "probe_kind": PROBE_KIND,
        "probes": len(probed.answers),
        "probe_summary": {m: probed.summary(m).to_dict() for m in probed.methods.names},
        "tracking": {m: tracking(real, probed, m) for m in real.methods.names if m in probed.methods.names},
        "per_question_ranks": {m: [a.ranks[m] for a in real.answers] for m in real.methods.names},
    }


def table(site: dict[str, Any]) -> str:
    """The figures of ``site_figures`` as markdown: per method (the search page's marked), the
    questions' section recall@k and MRR, the probes', and how the probes track the questions."""
    k = site["k"]
    lines = [f"`{site['command']}` (the set's documents built as a site with default settings; each question expects "
             f"the section holding its gold span; the product's evaluation, `pipeline/evaluate/`):", "",
             f"| method | questions: section recall@{k} | MRR@{k} | {site['probe_kind']} probes ({site['probes']}): recall@{k} | MRR@{k} "
             "| Spearman across documents, probes vs questions (recall, documents) |", "|---|---|---|---|---|---|"]
    for m in site["methods"]:
        s, p, t = site["summary"][m], site["probe_summary"].get(m), site["tracking"].get(m)
        rho = "–" if not t or t["spearman"] is None else f"{t['spearman']:+.2f} ({t['documents']})"
        lines.append(f"| {m}{' (search page)' if m == site['page_method'] else ''} | {100 * s['recall']:.1f} | {s['mrr']:.3f} | "
                     + (f"{100 * p['recall']:.1f} | {p['mrr']:.3f}" if p else "– | –") + f" | {rho} |")
    return "\n".join(lines)


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def eval_speed(content: Path = FASTAPI, *, repeats: int = 3) -> dict[str, Any]:
    """Wall time of the whole ``pipeline eval SITE --json`` process (start-up, model load, every
    probe asked with every method, competing sections) on ``content`` built with the real model
    (``SITES/<name>/site``); each run a fresh process, the median of ``repeats``."""
    import os
    import statistics
    import subprocess

    site = SITES / content.name / "site"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_in_process(content, site, SITES / "embedding-cache", title=content.name, model=True)
    command = [sys.executable, "-m", "pipeline", "eval", str(site), "--json", "--no-html", "-q"]
    seconds, figures = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        seconds.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise RuntimeError(f"pipeline eval failed: {done.stderr[-2000:]}")
        figures = json.loads(done.stdout)
    return {"content": str(content), "command": f"pipeline eval {_shown(site)} --json --no-html -q", "repeats": repeats,
            "seconds": seconds, "median_seconds": statistics.median(seconds), "load": list(os.getloadavg()),
            "questions": len(figures["questions"]), "questions_from": figures["questions_from"],
            "methods": figures["methods"], "sections": figures["sections_in_site"], "documents": figures["documents_in_site"],
            "summary": figures["summary"]}


def main(argv: Sequence[str] | None = None) -> None:
    parser = arguments(__doc__, None)
    parser.add_argument("sets", nargs="*", default=list(SETS))
    parser.add_argument("--speed", action="store_true", help="time pipeline eval on FastAPI's docs instead")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    result = eval_speed(repeats=args.repeats) if args.speed else [site_figures(name) for name in args.sets]
    if args.out or args.speed:
        write_json(args.out or WORK / "eval_speed.json", result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
