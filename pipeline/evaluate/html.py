"""The HTML report of an evaluation: one self-contained file a person opens in a browser.

Inline CSS and SVG plots (recall per topic, the worst documents, where the expected section
ranked), then tables: the failing questions with what came back instead, the sections no
question reached, the competing sections. No script, no external resource (no CDN, no font, no
link into the site: a hit's address is shown as text). Everything that comes from the site or
the questions file (titles, paths, headings, questions) is untrusted text and is escaped
(``esc``); numbers are formatted here. The same evaluation gives the same bytes.
"""

from __future__ import annotations

from html import escape

from pipeline.evaluate.evaluation import Evaluation
from pipeline.evaluate.metrics import worst
from pipeline.evaluate.report import origin_words, place
from pipeline.wording import counted

COLOURS = {"lexical": "#4c78a8", "hybrid": "#f58518", "auto": "#54a24b"}
WORST_SHOWN = 15
BAR_W = 360  # px of a 100 % bar
ROW_H = 18
LABEL_W = 330

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .5em;vertical-align:top;text-align:left}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}
code{font-size:.92em;word-break:break-all}ol{margin:.2em 0;padding-left:1.6em}.legend span{margin-right:1em}
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}
svg text{font:12px system-ui,sans-serif}
"""


def esc(text: object) -> str:
    """``text`` safe inside HTML or SVG text and attribute values."""
    return escape(str(text), quote=True)


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _clip(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def bars(rows: list[tuple[str, list[tuple[str, float]]]], *, label: str) -> str:
    """A horizontal bar chart (values in [0, 1]): per row a label and one bar per (method, value)."""
    per = max((len(v) for _, v in rows), default=1)
    height = sum(len(v) for _, v in rows) * ROW_H + len(rows) * 6 + 24
    width = LABEL_W + BAR_W + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{esc(label)}">']
    y = 4
    for name, values in rows:
        out.append(f'<text x="{LABEL_W - 6}" y="{y + per * ROW_H / 2 + 4:.0f}" text-anchor="end"><title>{esc(name)}</title>'
                   f"{esc(_clip(name))}</text>")
        for method, value in values:
            w = max(0.0, min(1.0, value)) * BAR_W
            out.append(f'<rect x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{ROW_H - 3}" fill="{COLOURS.get(method, "#888")}">'
                       f"<title>{esc(method)}: {pct(value)}</title></rect>")
            out.append(f'<text x="{LABEL_W + w + 4:.1f}" y="{y + ROW_H - 6}">{pct(value)}</text>')
            y += ROW_H
        y += 6
    for tick in (0, 0.5, 1):
        x = LABEL_W + tick * BAR_W
        out.append(f'<line x1="{x}" y1="0" x2="{x}" y2="{y}" stroke="#bbb" stroke-dasharray="2,2"/>'
                   f'<text x="{x}" y="{y + 14}" text-anchor="middle">{int(tick * 100)} %</text>')
    out.append("</svg>")
    return "".join(out)


def rank_histogram(ev: Evaluation) -> str:
    """Per method, how many questions found their section at rank 1..k, and not at all."""
    buckets = [str(r) for r in range(1, ev.k + 1)] + ["not in k"]
    n = max(len(ev.answers), 1)
    group_w, bar_w, h = 16 * len(ev.methods.names) + 14, 16, 140
    width = 40 + group_w * len(buckets)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h + 40}" role="img" aria-label="rank of the expected section">']
    for b, bucket in enumerate(buckets):
        x0 = 40 + b * group_w
        for i, m in enumerate(ev.methods.names):
            count = sum((a.ranks[m] is None) if bucket == "not in k" else (a.ranks[m] == int(bucket)) for a in ev.answers)
            bh = count / n * h
            out.append(f'<rect x="{x0 + i * bar_w}" y="{h - bh + 10:.1f}" width="{bar_w - 2}" height="{bh:.1f}" '
                       f'fill="{COLOURS.get(m, "#888")}"><title>{esc(m)}, rank {esc(bucket)}: {count}</title></rect>')
        out.append(f'<text x="{x0 + group_w / 2 - 7:.0f}" y="{h + 28}" text-anchor="middle">{esc(bucket)}</text>')
    out.append(f'<line x1="38" y1="{h + 10}" x2="{width}" y2="{h + 10}" stroke="#999"/>'
               f'<text x="34" y="18" text-anchor="end">{n}</text><text x="34" y="{h + 10}" text-anchor="end">0</text></svg>')
    return "".join(out)


def legend(methods: tuple[str, ...], page: str) -> str:
    return '<p class="legend">' + "".join(
        f'<span><i class="swatch" style="background:{COLOURS.get(m, "#888")}"></i>{esc(m)}{" (the search page’s)" if m == page else ""}</span>'
        for m in methods) + "</p>"


def render(ev: Evaluation) -> str:
    """The report as one HTML document (module docstring)."""
    names, page = ev.methods.names, ev.page
    origin = origin_words(ev)
    title = f"Findability of {ev.title or ev.site}"
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
             f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}</style></head><body>',
             f"<h1>{esc(title)}</h1>",
             f"<p><code>{esc(ev.site)}</code>: {len(ev.answers)} questions {esc(origin)}; each asked as a reader’s first "
             f"search, first {ev.k} hits; a question is found when a hit lies in the section (or document) it expects.</p>"]
    parts.append("<table><tr><th>method</th><th>recall@" + str(ev.k) + "</th><th>MRR</th><th>found</th></tr>")
    for m in names:
        s = ev.summary(m)
        parts.append(f"<tr><td>{esc(m)}{' <b>(search page)</b>' if m == page else ''}</td><td class=n>{pct(s.recall)}</td>"
                     f"<td class=n>{s.mrr:.3f}</td><td class=n>{s.found} / {s.questions}</td></tr>")
    parts.append("</table>")
    parts += [f'<p class="muted">Note: {esc(n)}</p>' for n in ev.methods.notes]
    parts.append(legend(names, page))
    topics = {m: ev.by_topic(m) for m in names}
    parts += ["<h2>Recall per topic</h2>",
              bars([(t or "(root)", [(m, topics[m][t].recall) for m in names]) for t in topics[names[0]]], label="recall per topic")]
    docs = {m: ev.by_document(m) for m in names}
    shown = [d for d, _ in worst(docs[page], WORST_SHOWN)]
    parts += [f"<h2>The worst documents ({esc(page)}, recall@{ev.k})</h2>",
              bars([(d, [(m, docs[m][d].recall) for m in names]) for d in shown], label="worst documents") if shown else "<p>None.</p>",
              "<h2>Where the expected section ranked</h2>", rank_histogram(ev)]
    failing = ev.failing(page)
    parts.append(f"<h2>Failing questions ({esc(page)}): {len(failing)} of {len(ev.answers)}</h2>")
    if failing:
        parts.append("<table><tr><th>question</th><th>expected</th><th>what came back instead</th><th>other methods</th></tr>")
        for a in failing:
            got = "".join(f"<li><code>{esc(place(h.source, h.header_path))}</code></li>" for h in a.hits[page]) or "<li>nothing</li>"
            others = ", ".join(f"{esc(m)}: {a.ranks[m] if a.ranks[m] is not None else '–'}" for m in names if m != page)
            parts.append(f"<tr><td>{esc(a.question.text)}<br><span class=muted>{esc(a.question.where)}</span></td>"
                         f"<td><code>{esc(a.question.expect)}</code></td><td><ol>{got}</ol></td><td>{others}</td></tr>")
        parts.append("</table>")
    if ev.untied:
        parts.append(f"<h2>qa-pairs questions tied to no section ({len(ev.untied)}, not scored)</h2><ul>"
                     + "".join(f"<li>{esc(q.text)} <span class=muted>{esc(q.where)}</span></li>" for q in ev.untied) + "</ul>")
    unreached = ev.unreached(page)
    parts.append(f"<h2>Sections never returned ({esc(page)}): {len(unreached)} of {len(ev.inventory.sections())}</h2>")
    if unreached:
        parts.append("<details><summary>list</summary><ul>"
                     + "".join(f"<li><code>{esc(place(s, h))}</code></li>" for s, h in unreached) + "</ul></details>")
    parts.append(f"<h2>Competing sections of different documents: {counted(len(ev.competing), 'pair')}</h2>")
    if ev.competing:
        parts.append("<table><tr><th>section</th><th>section</th><th>vectors (cosine)</th><th>text (Jaccard)</th></tr>")
        for c in ev.competing:
            parts.append(f"<tr><td><code>{esc(place(*c.a))}</code></td><td><code>{esc(place(*c.b))}</code></td>"
                         f"<td class=n>{'' if c.cosine is None else f'{c.cosine:.3f}'}</td>"
                         f"<td class=n>{'' if c.jaccard is None else f'{c.jaccard:.2f}'}</td></tr>")
        parts.append("</table>")
    parts.append('<p class="muted">Written by <code>pipeline eval</code>.</p></body></html>\n')
    return "\n".join(parts)
