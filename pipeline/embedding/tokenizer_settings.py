"""The settings the browser's WordPiece tokenizer (``assets/wordpiece.js``) reads, from a
model's ``tokenizer.json``: shipped with the browser model (``site/browser_model.py``) and with
the static query encoder's table (``embedding/staticfit.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import PipelineError


def tokenizer_settings(spec: dict, path: Path | None = None) -> dict:
    """The settings ``wordpiece.js`` reads, from a ``tokenizer.json`` (``spec``). Raises
    PipelineError when it is not the BERT WordPiece pipeline ``wordpiece.js`` implements."""
    normalizer, pre, wp = spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}, spec.get("model") or {}
    if normalizer.get("type") != "BertNormalizer" or pre.get("type") != "BertPreTokenizer" or wp.get("type") != "WordPiece":
        raise PipelineError("the browser tokenizer supports BertNormalizer + BertPreTokenizer + WordPiece only", path=path)
    if not normalizer.get("clean_text", True) or not normalizer.get("handle_chinese_chars", True):
        raise PipelineError("the browser tokenizer needs clean_text and handle_chinese_chars", path=path)
    lowercase = bool(normalizer.get("lowercase", True))
    strip = normalizer.get("strip_accents")
    return {
        "max_tokens": _max_tokens(path),
        "lowercase": lowercase,
        "strip_accents": lowercase if strip is None else bool(strip),
        "unk_token": wp.get("unk_token", "[UNK]"),
        "continuing_subword_prefix": wp.get("continuing_subword_prefix", "##"),
        "max_input_chars_per_word": wp.get("max_input_chars_per_word", 100),
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "special_tokens": sorted(t["content"] for t in spec.get("added_tokens", []) if t.get("special")),
    }


def wordpiece_model(vocab: dict[str, int], settings: dict):
    """A ``tokenizers`` WordPiece model over ``vocab`` (token -> id) with ``settings``
    (``tokenizer_settings``): what the model runs after splitting a text into words."""
    from tokenizers import models

    model = models.WordPiece(vocab, unk_token=settings["unk_token"], max_input_chars_per_word=settings["max_input_chars_per_word"])
    model.continuing_subword_prefix = settings["continuing_subword_prefix"]
    return model


def word_splitter(settings: dict):
    """(BertNormalizer, BertPreTokenizer) of ``settings`` (``tokenizer_settings``): how the model
    splits a text into words before WordPiece."""
    from tokenizers import normalizers, pre_tokenizers

    return (normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                       strip_accents=settings["strip_accents"], lowercase=settings["lowercase"]),
            pre_tokenizers.BertPreTokenizer())


def _max_tokens(tokenizer_path: Path | None) -> int:
    """The model's ``max_seq_length`` from ``sentence_bert_config.json`` beside its tokenizer, else 512."""
    config = tokenizer_path.parent / "sentence_bert_config.json" if tokenizer_path is not None else None
    if config is not None and config.is_file():
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
        if value:
            return int(value)
    return 512
