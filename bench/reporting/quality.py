"""The report's retrieval-quality section, as markdown: every chunker's recall, precision and IoU on one set
(Chroma's evaluation or the markdown set), anchors and ours at the same budget, the default strategy in bold."""

from __future__ import annotations

from bench.reporting.formatting import table
from bench.reporting.inputs import DEFAULT_OURS, anchor_names


def quality_section(results: dict | None, title: str, note: str) -> str:
    if not results:
        return f"### {title}\n\nNot run (no results file).\n"
    anchors = set(anchor_names())
    rows = []
    for r in results["results"]:
        m = r["metrics"]
        kind = "anchor" if r["name"] in anchors else "ours" if r["name"].startswith("ours") else "variant"
        rows.append([f"**{r['name']}**" if r["name"] == DEFAULT_OURS else r["name"], kind, r["n_chunks"], f"{r['mean_tokens']:.0f}"]
                    + [f"{m[k]['mean']:.1f} ± {m[k]['std']:.1f}" for k in ("recall", "precision", "precision_omega", "iou", "recall_at_budget")])
    p = results.get("protocol", {})
    head = ["chunker", "kind", "chunks", "mean size (pieces)", "recall@5", "precision@5", "PrecisionΩ", "IoU@5",
            f"recall@{p.get('token_budget', 1000)} tokens"]
    skipped = results.get("skipped") or []
    return (f"### {title}\n\n{note}\n\n{p.get('questions', '?')} questions, k = {p.get('k', 5)}, "
            f"model {p.get('model', 'all-MiniLM-L6-v2')}; mean ± std over questions, in %.\n\n"
            + table(head, rows) + ("\n\nSkipped: " + "; ".join(skipped) if skipped else "") + "\n")
