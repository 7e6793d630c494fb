"""The terminal summary of an evaluation (plain text; the CLI escapes control characters).

Per method recall@k and MRR (the search page's method marked ``*``), then for that method the
documents it serves worst, the first failing questions with what came back instead, how many
sections no question reached, and the sections of different documents that compete.
"""

from __future__ import annotations

from pipeline.evaluate.evaluation import Evaluation
from pipeline.evaluate.metrics import worst
from pipeline.evaluate.targets import SEPARATOR, plain_heading, split_path
from pipeline.wording import counted

SHOWN = 5
"""Rows of each list the summary shows (the JSON and the HTML report have them all)."""

ORIGIN_WORDS = {
    "file": "from {file}",
    "qa-pairs": "from the site's qa-pairs.md",
    "probe": "made by the site itself ({kind} probes: {why})",
}


def origin_words(ev: Evaluation) -> str:
    """Where the questions came from, and for probes why (asked for, or nothing else to ask)."""
    from pipeline.evaluate.evaluation import PROBE_KIND

    why = "asked for with --probes" if ev.probes_asked else "no questions file, no qa-pairs.md"
    return ORIGIN_WORDS[ev.origin].format(file=ev.questions_file, kind=PROBE_KIND, why=why)


def place(source: str, header_path: str) -> str:
    """``doc.md#Heading > Sub`` (``doc.md`` for the overview)."""
    parts = split_path(header_path)
    return source + ("#" + SEPARATOR.join(plain_heading(p) for p in parts) if parts else "")


def summary_text(ev: Evaluation, *, html_path: str | None = None) -> str:
    page = ev.page
    origin = origin_words(ev)
    lines = [f"{ev.title or ev.site}: {counted(len(ev.answers), 'question')} {origin}; k = {ev.k}", ""]
    lines.append(f"  {'method':<10} {'recall@' + str(ev.k):>9} {'MRR':>6}  found")
    for m in ev.methods.names:
        s = ev.summary(m)
        mark = "*" if m == page else " "
        lines.append(f"  {m + mark:<10} {100 * s.recall:8.1f}% {s.mrr:6.3f}  {s.found}/{s.questions}")
    lines.append("  * the search page's method")
    lines += [f"  note: {n}" for n in ev.methods.notes]
    if ev.origin == "qa-pairs" and any(a.question.tie == "prompt hash" for a in ev.answers) and "auto" in ev.methods.names:
        lines.append("  note: questions tied by their prompt hash are found by auto's prompt matching by construction")
    docs = worst({k: v for k, v in ev.by_document(page).items() if v.found < v.questions}, SHOWN)
    if docs:
        lines += ["", f"Worst documents ({page}):"]
        lines += [f"  {100 * s.recall:5.1f}%  MRR {s.mrr:.3f}  {s.questions:>3} q  {name}" for name, s in docs]
    failing = ev.failing(page)
    lines += ["", f"Failing questions ({page}): {len(failing)} of {len(ev.answers)}"]
    for a in failing[:SHOWN]:
        got = ", ".join(place(h.source, h.header_path) for h in a.hits[page][:2]) or "nothing"
        lines.append(f"  {a.question.text!r}")
        lines.append(f"      expected {a.question.expect}; got {got}")
    if len(failing) > SHOWN:
        lines.append(f"  ... and {len(failing) - SHOWN} more")
    if ev.untied:
        lines.append(f"qa-pairs questions tied to no section (not scored): {len(ev.untied)}")
    unreached = ev.unreached(page)
    sections = len(ev.inventory.sections())
    lines += ["", f"Sections never returned ({page}, any question): {len(unreached)} of {sections}"]
    lines += [f"  {place(s, h)}" for s, h in unreached[:SHOWN]]
    if len(unreached) > SHOWN:
        lines.append(f"  ... and {len(unreached) - SHOWN} more")
    lines += ["", f"Competing sections of different documents: {counted(len(ev.competing), 'pair')}"]
    for c in ev.competing[:SHOWN]:
        figures = ", ".join(f for f in (c.cosine is not None and f"cosine {c.cosine:.3f}", c.jaccard is not None and f"text {c.jaccard:.2f}") if f)
        lines.append(f"  {place(*c.a)}  ~  {place(*c.b)}  ({figures})")
    if len(ev.competing) > SHOWN:
        lines.append(f"  ... and {len(ev.competing) - SHOWN} more")
    if html_path:
        lines += ["", f"Report: {html_path}"]
    return "\n".join(lines)
