"""Numbers and markdown tables as the report writes them; a value that was not measured (None) is "–"."""

from __future__ import annotations

CELL_MAX = 300
"""A table cell longer than this is cut with "…", so that no line of the report passes 400 characters."""


def f1(x, nd=1, suffix=""):
    return "–" if x is None else f"{x:.{nd}f}{suffix}"


def pct(x, nd=1):
    return "–" if x is None else f"{100 * x:.{nd}f} %"


def cell(value) -> str:
    text = str(value)
    return text if len(text) <= CELL_MAX else text[: CELL_MAX - 1] + "…"


def table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
