"""The report's sections for the correctness experiments, as markdown: the prompt-hash experiment's own tables
(issue 4, verbatim) and the fuzz campaign's counts (issue 15)."""

from __future__ import annotations

from bench.reporting.formatting import table


def prompts_section(text: str | None) -> str:
    """The experiment's own tables (``python -m bench.prompts_experiment``), verbatim."""
    if not text:
        return "Not run (step `prompts`).\n"
    return ("The threshold / Hamming-distance experiment of issue 4 on `content/` and the queries of "
            "`tests/fixtures/prompt_queries.json`; method and the decision it supports: `docs/INTELLIGENCE.md`.\n\n"
            + text.rstrip() + "\n")


def fuzz_section(fz: dict | None) -> str:
    """Counts of the fuzz campaign (``python -m bench.fuzz``, issue 15)."""
    if not fz:
        return "Not run (step `fuzz`).\n"
    if "failed" in fz:
        return f"**Failed**: {fz['failed']}\n"
    return (f"`python -m bench.fuzz`: {fz['cases']:,} generated cases (markdown with any line endings, front matter "
            f"and YAML/JSON entries including hostile YAML, file names) in {fz['seconds'] / 60:.1f} min: no traceback, "
            "every invariant held (spans exact, fences uncut, coverage, JSON-safe records, hrefs RFC 3986).\n\n"
            + table(["outcome", "cases"], [[k, f"{v:,}"] for k, v in fz["outcomes"].items()]) + "\n")
