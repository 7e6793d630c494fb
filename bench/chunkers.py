"""The chunker registry of the benchmark: name -> factory returning a ``Chunker``.

A chunker is a function ``text -> list[(start, end)]`` of exact character spans into ``text``
(optionally ``(start, end, text_to_embed)`` when what is embedded is more than the span, e.g.
heading context prepended: the span must then be the *end* of that text). Wrap it with
``Chunker(name, split, params)``; params (JSON-able) key the span cache — give None when the
output may change without the params changing, and it is re-chunked on every run.

Our own strategies come from ``pipeline.chunking``; they are imported lazily and skipped (with a
note) when that package is not importable yet. See OUR STRATEGIES below.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import anchors  # noqa: E402
from bench.chroma_eval import REPO_ROOT, Chunker  # noqa: E402

Factory = Callable[[], Chunker]

ANCHORS: dict[str, Factory] = {
    "langchain-recursive-250": lambda: anchors.langchain_recursive(250),
    "langchain-mdheader-recursive-250": lambda: anchors.langchain_mdheader_recursive(250),
    "chonkie-recursive-md-250": lambda: anchors.chonkie_recursive_markdown(250),
    "semchunk-250": lambda: anchors.semchunk_chunker(250),
}

# Variants for calibration and sanity checks; not in the default run.
EXTRA: dict[str, Factory] = {
    "langchain-recursive-200": lambda: anchors.langchain_recursive(200),
    "langchain-recursive-250-o125": lambda: anchors.langchain_recursive(250, 125),
    "langchain-recursive-250-first": lambda: anchors.langchain_recursive(250, locate="first"),
}


def source_digest(*packages: str) -> str:
    """Digest of our own source files, so our chunkers' span cache follows code changes."""
    h = hashlib.sha256()
    for pkg in packages:
        for path in sorted((REPO_ROOT / pkg).rglob("*.py")):
            h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


# ============================================================================ OUR STRATEGIES
# Add each of our strategies here. The pattern (fill in the call of our chunk function):
#
#     def _ours_markdown() -> Chunker:
#         from pipeline.chunking import ...            # lazy: pipeline.chunking may not exist yet
#         split = lambda text: [(c.start_offset, c.end_offset) for c in <our chunk function>(text)]
#         # or, to embed what the pipeline embeds (heading context + span):
#         # lambda text: [(c.start_offset, c.end_offset, c.content) for c in ...]
#         return Chunker("ours-markdown", split,
#                        params={"strategy": "markdown", "code": source_digest("pipeline")})
#
#     OURS["ours-markdown"] = _ours_markdown
#
# A factory that raises ImportError is skipped by ``available()`` with a note, so the anchors
# still run before the package lands.
OURS: dict[str, Factory] = {}


def _ours(strategy: str, **options) -> Factory:
    """Our strategy through the pipeline's own entry point; embeds what the build embeds."""

    def factory() -> Chunker:
        from pipeline.chunking import chunk_text
        from pipeline.parsing.tokens import default_counter

        counter = default_counter()
        suffix = "".join(f"-{k}{v}" for k, v in sorted(options.items()))

        def split(text: str):
            return [(c.start_offset, c.end_offset, c.content) for c in chunk_text(text, strategy=strategy, counter=counter, **options)]

        return Chunker(
            f"ours-{strategy}{suffix}",
            split,
            params={"strategy": strategy, **options, "code": source_digest("pipeline")},
        )

    return factory


OURS["ours-markdown"] = _ours("markdown")
OURS["ours-markdown-128"] = _ours("markdown", max_tokens=128)
# ============================================================================ END OUR STRATEGIES

REGISTRY: dict[str, Factory] = {**ANCHORS, **OURS, **EXTRA}
DEFAULT = [*ANCHORS, *OURS]


def available(names: list[str]) -> tuple[list[Chunker], list[str]]:
    """Build the chunkers ``names``; those whose imports fail are returned as skip notes."""
    built: list[Chunker] = []
    skipped: list[str] = []
    for name in names:
        if name not in REGISTRY:
            raise KeyError(f"unknown chunker {name!r}; known: {', '.join(REGISTRY)}")
        try:
            built.append(REGISTRY[name]())
        except ImportError as exc:
            skipped.append(f"{name}: skipped ({exc})")
    return built, skipped
