"""A document's ``promotion_level`` (seed 000): how strongly readers should prefer it.

Read from the document's front matter (``promotion_level: important``), absent means
``standard``. Every chunk inherits its document's level (manifests, topic-spec.md, index.json
items, exports, MCP hits); chunks are never promoted on their own. The level is metadata only:
it is not part of any chunk's text, so changing it re-chunks nothing that is embedded and
re-embeds nothing (the embedding cache is keyed by chunk text).

Seed 000 calls the field an enum without listing its values; the pipeline uses three, in
rising order: ``standard``, ``important``, ``critical`` (docs/DECISIONS.md).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from pipeline.errors import PipelineError

FRONT_MATTER_KEY = "promotion_level"
LEVELS: tuple[str, ...] = ("standard", "important", "critical")
DEFAULT_LEVEL = "standard"


def check_level(value: Any) -> str:
    """``value`` as a level (case and surrounding space ignored); ValueError naming the choices."""
    if isinstance(value, str) and value.strip().lower() in LEVELS:
        return value.strip().lower()
    raise ValueError(f"{FRONT_MATTER_KEY} must be one of {', '.join(LEVELS)}, not {value!r}")


def promotion_level(front_matter: Mapping[str, Any] | None, *, path: str | None = None, text: str = "") -> str:
    """The level a document's front matter sets, else ``DEFAULT_LEVEL``.

    A value that is not a level raises PipelineError naming ``path`` and the line of the key
    in ``text`` (the document's source; line 1 when the key is not found there).
    """
    if not front_matter or front_matter.get(FRONT_MATTER_KEY) is None:
        return DEFAULT_LEVEL
    try:
        return check_level(front_matter[FRONT_MATTER_KEY])
    except ValueError as exc:
        match = re.search(rf"^\s*\"?{FRONT_MATTER_KEY}\"?\s*:", text, re.MULTILINE)
        line = text.count("\n", 0, match.start()) + 1 if match else 1
        raise PipelineError(str(exc), path=path, line=line) from None
