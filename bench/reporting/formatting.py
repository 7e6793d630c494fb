"""Numbers and markdown tables as the report writes them; a value that was not measured (None) is "–"."""

from __future__ import annotations


def f1(x, nd=1, suffix=""):
    return "–" if x is None else f"{x:.{nd}f}{suffix}"


def pct(x, nd=1):
    return "–" if x is None else f"{100 * x:.{nd}f} %"


def table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
