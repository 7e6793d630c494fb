"""Counts in the CLI's sentences: ``counted(1, "chunk") == "1 chunk"``, ``counted(2, "chunk") ==
"2 chunks"``; a noun whose plural is not the singular plus ``s`` names it (``"entry", "entries"``)."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``f"{n} {noun}"`` with the noun agreeing with ``n`` (only 1 takes the singular)."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"
