"""The report's sections for the correctness experiments, as markdown: the prompt-hash experiment's own tables
(issue 4, verbatim) and the fuzz campaign's counts (issue 15)."""

from __future__ import annotations

from bench.reporting.formatting import table


def prompts_section(text: str | None) -> str:
    """The experiment's own tables (``python -m bench.prompts_experiment``), verbatim."""
    if not text:
        return "Not run (step `prompts`).\n"
    return ("The threshold / Hamming-distance experiment of issue 4 on `content/` and the queries of "
            "`tests/fixtures/prompt_queries.json`; method and the decision it supports: `docs/DECISIONS.md` (\"Prompt hashes\").\n\n"
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


def stress_section(st: dict | None) -> str:
    """Counts of the stress step (``python -m bench.stress``, issue 35): symlink race, kills, slow
    and keep-alive clients of ``pipeline serve``."""
    if not st:
        return "Not run (step `stress`).\n"
    race, kill, slow, rows = st["race"], st["kills"], st["slow"], [st[k] for k in ("keepalive_100", "keepalive_200") if k in st]
    lines = [
        f"`{st['command']}` (hashing embedder, loopback). Machine load average at the end: "
        f"{', '.join(f'{x:.1f}' for x in st['machine_load'])}.",
        "",
        table(["experiment", "runs", "outcome"], [
            ["symlink race: `content/race.md` flipped between a file and a link to `/etc/passwd` during builds",
             f"{race['builds']} builds ({race['flips']:,} flips)",
             f"**{race['leaks']} leaks**, **{race['tracebacks']} tracebacks**, {race['published']} published, "
             f"{race['refused']} refused naming the file (\"build again\")"],
            ["SIGKILL at a random moment of a rebuild",
             f"{kill['trials']} builds ({kill['killed']} killed)",
             f"**{kill['broken']} broken sites**, {kill['neither']} neither old nor new ({kill['old']} old, {kill['new']} new); "
             f"{kill['not_repaired']} not repaired by the next build"],
            [f"`pipeline serve` with {slow['slow_clients']} slow-header clients (a header byte a second)",
             f"{slow['requests']} requests",
             f"{slow['unanswered']} unanswered; median {slow['median_ms']:.1f} ms, max {slow['max_ms']:.1f} ms"],
        ]),
        "",
        "Keep-alive: each client sends its requests one after the other on one connection (a new one only after a "
        "response said `Connection: close`); a *silent close* is a request whose connection ended without a response. "
        "Latency includes waiting to be accepted.",
        "",
        table(["clients", "requests", "answered", "silent closes", "announced closes", "median ms", "p99 ms", "seconds"], [
            [r["clients"], f"{r['requests']:,}", f"{r['answered']:,}", f"**{r['silent']}** ({r['silent_percent']} %)",
             r["announced_closes"], f"{r['median_ms']:.1f}", f"{r['p99_ms']:.1f}", f"{r['seconds']:.2f}"] for r in rows
        ]),
    ]
    return "\n".join(lines) + "\n"
