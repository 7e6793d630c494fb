"""The markdown strategy as it ships (``plain``, any strategy by name) and with the text just
before each span added to what is embedded (``with_context``); spans are the strategy's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable


@lru_cache(maxsize=1)
def counter():
    from pipeline.parsing.tokens import default_counter

    return default_counter()


def chunks_of(text: str, strategy: str = "markdown", **options):
    from pipeline.chunking import chunk_text

    return chunk_text(text, strategy=strategy, counter=counter(), **options)


def plain(strategy: str = "markdown", embed: str = "content", **options) -> Callable:
    def split(text: str):
        out = []
        for c in chunks_of(text, strategy, **options):
            out.append((c.start_offset, c.end_offset) if embed == "span" else (c.start_offset, c.end_offset, c.content))
        return out

    return split


def with_context(context_tokens: int, *, limit: int = 256, same_section: bool = True, **options) -> Callable:
    """Spans of the markdown strategy; embedded text = heading prefix + up to ``context_tokens``
    of the text just before the span (from a word start, never before the previous chunk's
    start, nor across a section when ``same_section``) + the span."""
    tok = counter()

    def split(text: str):
        chunks = chunks_of(text, "markdown", **options)
        out = []
        for i, c in enumerate(chunks):
            prefix = c.content[: len(c.content) - (c.end_offset - c.start_offset)]
            room = min(context_tokens, limit - c.token_count)
            ctx_start = c.start_offset
            if i > 0 and room > 0 and (not same_section or chunks[i - 1].header_path == c.header_path):
                lo = chunks[i - 1].start_offset
                enc = tok._tokenizer.encode(text[lo : c.start_offset], add_special_tokens=False)
                offs = [o for o in enc.offsets if o[1] > o[0]]
                if offs:
                    keep = offs[-room:] if room < len(offs) else offs
                    a = lo + keep[0][0]
                    # start at a word boundary
                    while a > lo and not text[a - 1].isspace():
                        a += 1
                        if a >= c.start_offset:
                            break
                    ctx_start = min(a, c.start_offset)
            out.append((c.start_offset, c.end_offset, prefix + text[ctx_start : c.end_offset]))
        return out

    return split
