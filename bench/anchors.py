"""Third-party chunkers as anchors, all sized in MiniLM word pieces, all returning exact spans.

Sizes count [CLS] and [SEP] (``count_tokens``), like the model's 256-piece window and like the
Chroma report's MiniLM run: "250" means at most 250 pieces as the model reads the chunk.

* ``langchain-recursive-250``: LangChain RecursiveCharacterTextSplitter, the report's baseline
  (separators ["\\n\\n", "\\n", ".", "?", "!", " ", ""], overlap 0, keep_separator=True — the
  class default, which puts each separator at the start of the next piece — strip_whitespace).
* ``langchain-mdheader-recursive-250``: MarkdownHeaderTextSplitter on #, ##, ### (defaults:
  headings stripped from the content, lines stripped, blank lines dropped), each section then
  split by the recursive splitter above. The splitter rewrites whitespace, so chunks are located
  leniently (see ``spans_from_strings``): a span runs from a chunk's first to its last
  non-whitespace character in the source.
* ``chonkie-recursive-md-250``: Chonkie RecursiveChunker with the markdown recipe (a local copy,
  ``chonkie_markdown_en.json``: chonkie fetches recipes from the HF hub, unreachable here),
  MiniLM's tokenizer, chunk_size 248 pieces without specials (= 250 with them; chonkie's
  tokenizer adapter never counts specials). Chonkie returns offsets; they are checked. Its
  token-level fallback decodes ids, which MiniLM's uncased tokenizer cannot do faithfully, so
  the tokenizer is wrapped to decode exactly (``_chonkie_minilm_tokenizer``); counts unchanged.
* ``semchunk-250``: semchunk.chunk with the specials-inclusive counter, offsets=True.

``LIBRARY_CALLS``: each anchor's library call alone, as ``make(chunk_size) -> (call(text), reset())``
(``reset`` clears the memo a call keeps between texts); ``bench.speed.chunking`` times these, the
``Chunker`` factories below locate their output as spans.

Install: ``pip install langchain-text-splitters chonkie semchunk`` (pyproject extra ``bench``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.chroma_eval import Chunker, count_tokens, tokenizer
from bench.spans import spans_from_strings

RECURSIVE_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]
CHONKIE_RECIPE = Path(__file__).resolve().parent / "chonkie_markdown_en.json"
MD_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3")]


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "missing"


def _recursive_splitter(chunk_size: int, chunk_overlap: int):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        length_function=count_tokens,
        separators=RECURSIVE_SEPARATORS,
        # keep_separator / is_separator_regex / strip_whitespace: class defaults (True/False/True)
    )


def _no_reset() -> None:
    pass


def _recursive_call(chunk_size: int):
    return _recursive_splitter(chunk_size, 0).split_text, _no_reset


def _mdheader_call(chunk_size: int):
    """MarkdownHeaderTextSplitter (h1-h3), each section then split by the recursive splitter."""
    from langchain_text_splitters import MarkdownHeaderTextSplitter

    md = MarkdownHeaderTextSplitter(headers_to_split_on=MD_HEADERS)
    recursive = _recursive_splitter(chunk_size, 0)
    return (lambda text: [piece for doc in md.split_text(text) for piece in recursive.split_text(doc.page_content)]), _no_reset


def _chonkie_call(chunk_size: int):
    """What ``RecursiveChunker.from_recipe`` builds after downloading the recipe (defaults included)."""
    from chonkie import RecursiveChunker, RecursiveRules

    chunker = RecursiveChunker(
        tokenizer=_chonkie_minilm_tokenizer(),
        chunk_size=chunk_size - count_tokens(""),  # [CLS] + [SEP]: chonkie's adapter never counts them
        rules=RecursiveRules.from_dict(_chonkie_recipe()["recipe"]["recursive_rules"]),
        min_characters_per_chunk=24,
    )
    return chunker.chunk, RecursiveChunker._estimate_token_count.cache_clear


def _semchunk_call(chunk_size: int):
    """semchunk memoizes per counter *function*: ``reset`` makes a new one, a cold memo as in a new process."""
    import semchunk

    state = {}

    def reset():
        semchunk.semchunk._memoized_token_counters.pop(state.get("counter"), None)
        state["counter"] = lambda t: count_tokens(t)

    reset()
    return (lambda text: semchunk.chunk(text, chunk_size=chunk_size, token_counter=state["counter"], offsets=True)[1]), reset


LIBRARY_CALLS = {"langchain-recursive": _recursive_call, "langchain-mdheader-recursive": _mdheader_call,
                 "chonkie-recursive-md": _chonkie_call, "semchunk": _semchunk_call}


def langchain_recursive(chunk_size: int = 250) -> Chunker:
    """Each chunk located at the moving cursor (``spans_from_strings``)."""
    call, _ = _recursive_call(chunk_size)
    return Chunker(
        name=f"langchain-recursive-{chunk_size}",
        split=lambda text: spans_from_strings(text, call(text), overlapping=False),
        params={
            "chunk_size": chunk_size,
            "chunk_overlap": 0,
            "separators": RECURSIVE_SEPARATORS,
            "locate": "cursor",
            "langchain-text-splitters": _version("langchain-text-splitters"),
        },
        description="LangChain RecursiveCharacterTextSplitter, MiniLM pieces incl. specials",
    )


def langchain_mdheader_recursive(chunk_size: int = 250) -> Chunker:
    call, _ = _mdheader_call(chunk_size)
    return Chunker(
        name=f"langchain-mdheader-recursive-{chunk_size}",
        split=lambda text: spans_from_strings(text, call(text), lenient=True),
        params={
            "chunk_size": chunk_size,
            "headers": MD_HEADERS,
            "separators": RECURSIVE_SEPARATORS,
            "langchain-text-splitters": _version("langchain-text-splitters"),
        },
        description="LangChain MarkdownHeaderTextSplitter (h1-h3) then Recursive",
    )


@lru_cache(maxsize=1)
def _chonkie_recipe() -> dict[str, Any]:
    return json.loads(CHONKIE_RECIPE.read_text(encoding="utf-8"))


def _chonkie_minilm_tokenizer():
    """MiniLM word pieces for chonkie, with a decode that gives back the exact source text.

    Chonkie's last recursive level (no delimiter, no whitespace) encodes a split, cuts the ids
    every chunk_size and *decodes* them; it then computes offsets from the decoded lengths. With
    MiniLM's uncased WordPiece, decode lowercases, strips accents and re-spaces, so the chunk text
    is no longer in the corpus and every later offset is off. Here a "token id" names the source
    substring from the end of the previous word piece to the end of this one (the last one also
    takes trailing whitespace), so decode(encode(t)) == t and the count is MiniLM's own.
    """
    from chonkie.tokenizer import AutoTokenizer

    tok = tokenizer()

    class MiniLMExact(AutoTokenizer):
        _backend = "minilm-exact"

        def __init__(self, _again=None) -> None:
            # chonkie calls AutoTokenizer(self), which re-runs __init__ on this instance
            if hasattr(self, "_surfaces"):
                return
            self.tokenizer = tok
            self._ids: dict[str, int] = {}
            self._surfaces: list[str] = []

        def _id(self, surface: str) -> int:
            i = self._ids.get(surface)
            if i is None:
                i = self._ids[surface] = len(self._surfaces)
                self._surfaces.append(surface)
            return i

        def encode(self, text: str):
            ends = [e for _, e in tok.encode(text, add_special_tokens=False).offsets]
            if not ends:
                return [self._id(text)] if text else []
            ends[-1] = len(text)
            ids, prev = [], 0
            for end in ends:
                if end > prev:
                    ids.append(self._id(text[prev:end]))
                    prev = end
            return ids

        def decode(self, tokens) -> str:
            return "".join(self._surfaces[t] for t in tokens)

        def count_tokens(self, text: str) -> int:
            return len(tok.encode(text, add_special_tokens=False).ids)

        def encode_batch(self, texts):
            return [self.encode(t) for t in texts]

        def decode_batch(self, token_sequences):
            return [self.decode(t) for t in token_sequences]

        def count_tokens_batch(self, texts):
            return [len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)]

    return MiniLMExact()


def chonkie_recursive_markdown(chunk_size: int = 250) -> Chunker:
    call, _ = _chonkie_call(chunk_size)

    def split(text: str):
        chunks = call(text)
        if all(text[c.start_index : c.end_index] == c.text for c in chunks):
            return [(c.start_index, c.end_index) for c in chunks]
        return spans_from_strings(text, [c.text for c in chunks], lenient=True)

    return Chunker(
        name=f"chonkie-recursive-md-{chunk_size}",
        split=split,
        params={
            "chunk_size": chunk_size,
            "recipe": _chonkie_recipe()["recipe"],
            "min_characters_per_chunk": 24,
            "chonkie": _version("chonkie"),
            "tokenizer": "minilm-exact-decode",
        },
        description="Chonkie RecursiveChunker, markdown recipe (local copy)",
    )


def semchunk_chunker(chunk_size: int = 250) -> Chunker:
    call, _ = _semchunk_call(chunk_size)
    return Chunker(
        name=f"semchunk-{chunk_size}",
        split=lambda text: [(int(s), int(e)) for s, e in call(text)],
        params={"chunk_size": chunk_size, "semchunk": _version("semchunk")},
        description="semchunk, MiniLM pieces incl. specials",
    )
