"""The chunker registry of the benchmark: name -> factory returning a ``chroma_eval.Chunker``: the
anchors (``bench/anchors.py``) and our strategies through ``pipeline.chunking.chunk_text``
(``ours``), embedding what a build embeds."""

from __future__ import annotations

import hashlib
from typing import Callable

from bench import REPO_ROOT, anchors
from bench.chroma_eval import Chunker

Factory = Callable[[], Chunker]

ANCHORS: dict[str, Factory] = {
    "langchain-recursive-250": lambda: anchors.langchain_recursive(250),
    "langchain-mdheader-recursive-250": lambda: anchors.langchain_mdheader_recursive(250),
    "chonkie-recursive-md-250": lambda: anchors.chonkie_recursive_markdown(250),
    "semchunk-250": lambda: anchors.semchunk_chunker(250),
}


def source_digest(*packages: str) -> str:
    """Digest of our own source files, so our chunkers' span cache follows code changes."""
    h = hashlib.sha256()
    for pkg in packages:
        for path in sorted((REPO_ROOT / pkg).rglob("*.py")):
            h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


class CachedMiniLM:
    """The default embedder (all-MiniLM-L6-v2) behind the bench's per-text cache, for the
    ``semantic`` strategy: its boundaries need every unit embedded, and re-chunking after a code
    change should not embed them again. Same model, same normalization as the pipeline's."""

    def __init__(self) -> None:
        from pipeline.embedding.models import DEFAULT_MODEL

        self.name = DEFAULT_MODEL.name

    def embed(self, texts, *, progress: bool = False):
        from bench.quality import embed_cached

        return embed_cached(list(texts))[0]


def ours(name: str, strategy: str, *, embed: str = "content", **options) -> Factory:
    """Our ``strategy`` through ``pipeline.chunking.chunk_text``, registered as ``name``.

    ``embed``: ``"content"`` embeds what the build embeds (heading context + span, the chunk's
    ``content``); ``"span"`` embeds the span alone (an ablation). The span cache follows only the
    chunking and parsing code (``pipeline/chunking``, ``pipeline/parsing``), not the whole package.
    """

    def factory() -> Chunker:
        from pipeline.chunking import chunk_text
        from pipeline.embedding.models import default_counter

        counter = default_counter()
        opts = dict(options)
        if strategy == "semantic" and "embedder" not in opts:
            opts["embedder"] = CachedMiniLM()

        def split(text: str):
            chunks = chunk_text(text, strategy=strategy, counter=counter, **opts)
            if embed == "span":
                return [(c.start_offset, c.end_offset) for c in chunks]
            return [(c.start_offset, c.end_offset, c.content) for c in chunks]

        params = {"strategy": strategy, **options, "embed": embed, "code": source_digest("pipeline/chunking", "pipeline/parsing")}
        return Chunker(name, split, params=params, description=f"ours: {strategy} {options or ''}".strip())

    return factory


# Our strategies with their defaults (what a site gets without options).
OURS: dict[str, Factory] = {}
OURS["ours-markdown"] = ours("ours-markdown", "markdown")
OURS["ours-tokens"] = ours("ours-tokens", "tokens")
OURS["ours-paragraph"] = ours("ours-paragraph", "paragraph")
OURS["ours-sentence"] = ours("ours-sentence", "sentence")
OURS["ours-semantic"] = ours("ours-semantic", "semantic")
OURS["ours-character"] = ours("ours-character", "character")
# Nearby budgets, not in the default run: the search evals average over 192 / 224 / 256.
OURS_EXTRA: dict[str, Factory] = {f"ours-markdown-{n}": ours(f"ours-markdown-{n}", "markdown", max_tokens=n) for n in (192, 224, 256)}

REGISTRY: dict[str, Factory] = {**ANCHORS, **OURS, **OURS_EXTRA}
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
