"""The front-coded token lists of the static query encoder (``_search/encoder/<h>/vocab.txt``
and ``other.txt``, ``pipeline.site.static_encoder``): each line one character,
``PREFIX_DIGITS[k]``, saying how many leading characters it shares with the line before, then the
rest. Written by the publisher, read by the clients (``pipeline.client.staticembed``,
``assets/staticencoder.js``)."""

from __future__ import annotations

PREFIX_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def front_code(tokens: list[str]) -> str:
    """``tokens`` (sorted) front-coded, one a line (module docstring)."""
    lines, previous = [], ""
    for token in tokens:
        k = 0
        limit = min(len(previous), len(token), len(PREFIX_DIGITS) - 1)
        while k < limit and previous[k] == token[k]:
            k += 1
        lines.append(PREFIX_DIGITS[k] + token[k:])
        previous = token
    return "".join(line + "\n" for line in lines)


def front_decode(text: str) -> list[str]:
    """The tokens ``front_code`` wrote: ``front_decode(front_code(tokens)) == tokens``."""
    tokens, previous = [], ""
    for line in text.split("\n")[:-1] if text else []:
        previous = previous[: PREFIX_DIGITS.index(line[0])] + line[1:]
        tokens.append(previous)
    return tokens
