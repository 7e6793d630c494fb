"""Tool answers within a token budget, and the opaque cursors that page through the rest (pure).

An agent reads a tool answer whole, so each answer fits ``max_tokens`` (default ``DEFAULT_TOKENS``,
~4k tokens) at ``CHARS_PER_TOKEN`` characters a token: ``limit(max_tokens)`` characters of the
compact JSON the tool returns (``dumps``), whatever the site's size. A list that does not fit is
filled in order (``fill``) and the rest is reached with a cursor; a text that does not fit is
cut at a line end (``cut``) and continued the same way.

A cursor (``Cursor``) is an opaque string: base64url of ``{tool, arguments, position, digest}``.
The digest names the sequence it pages (the documents listed, the reading order, the text), so
a cursor made before the site was rebuilt fails with a message instead of skipping or
repeating items. Guarantees: the pages of a sequence, cursor after cursor, hold each of its items
exactly once, in order; ``len(dumps(answer)) <= limit(max_tokens)`` for every answer built here.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import orjson
import xxhash

CHARS_PER_TOKEN = 4
DEFAULT_TOKENS = 4000
MIN_TOKENS = 500
MAX_TOKENS = 20_000
"""Hosts cut a tool answer at ~25k tokens; a larger budget would be cut there anyway."""
RESERVE = 240
"""Characters a page keeps free for its ``next_cursor`` and counts."""
MIN_TEXT = 200
"""Fewest characters of a cut text worth sending; below that the item goes to the next page."""


def limit(max_tokens: int | None) -> int:
    """The characters an answer may take for ``max_tokens`` (None: the default). ValueError out of range."""
    tokens = DEFAULT_TOKENS if max_tokens is None else max_tokens
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not MIN_TOKENS <= tokens <= MAX_TOKENS:
        raise ValueError(f"max_tokens must be an integer from {MIN_TOKENS} to {MAX_TOKENS}, not {max_tokens!r}")
    return tokens * CHARS_PER_TOKEN


def dumps(value) -> str:
    """``value`` as the compact JSON text a tool answers with."""
    return orjson.dumps(value).decode()


def length(value) -> int:
    return len(dumps(value))


_ESCAPED = {'"': 2, "\\": 2, "\n": 2, "\r": 2, "\t": 2, "\b": 2, "\f": 2}
"""Characters JSON writes as two (``\\n``); other control characters take six (``\\u0001``),
the rest one: what ``dumps`` of a string costs, character by character."""


def cut(text: str, room: int) -> str:
    """The longest start of ``text`` whose JSON string (quotes included) takes at most ``room``
    characters, shortened to its last line end when one lies in its second half (so a page ends
    between lines)."""
    left = room - 2
    end = 0
    for end, ch in enumerate(text[: max(left, 0)]):
        left -= _ESCAPED.get(ch, 6 if ch < " " else 1)
        if left < 0:
            break
    else:
        end = min(len(text), max(room - 2, 0))
    piece = text[:end]
    if len(piece) < len(text):
        line_end = piece.rfind("\n")
        if line_end >= len(piece) // 2:
            piece = piece[: line_end + 1]
    return piece


def fill(answer: dict, key: str, items, room: int, *, text: str = "text") -> int:
    """Append ``items`` (dicts, in order) to ``answer[key]`` while ``answer`` takes at most
    ``room - RESERVE`` characters; returns how many were taken. An item too big for what is left
    goes in with its ``text`` cut (and ``"truncated": true``) when at least ``MIN_TEXT``
    characters of it fit, else it and those after it are left out."""
    answer[key] = []
    size = length(answer) + RESERVE
    taken = 0
    for item in items:
        extra = length(item) + (1 if taken else 0)
        if size + extra <= room:
            answer[key].append(item)
            size += extra
            taken += 1
            continue
        if isinstance(item.get(text), str):
            bare = {**item, text: "", "truncated": True}
            left = room - size - length(bare) - (1 if taken else 0)
            if left >= MIN_TEXT:
                answer[key].append({**bare, text: cut(item[text], left)})
                taken += 1
        break
    return taken


def digest(parts) -> str:
    """A short name of a sequence (the strings ``parts``): what a cursor checks it still pages."""
    h = xxhash.xxh64()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class Cursor:
    """Where a page of ``tool`` over the sequence of ``arguments`` (named ``digest``) ends."""

    tool: str
    arguments: dict
    position: int
    digest: str

    def encode(self) -> str:
        raw = orjson.dumps({"t": self.tool, "a": self.arguments, "p": self.position, "d": self.digest}, option=orjson.OPT_SORT_KEYS)
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, tool: str) -> "Cursor":
        """The cursor ``text`` for ``tool``; ValueError when it is not one a ``tool`` answer gave."""
        try:
            raw = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            cursor = cls(raw["t"], raw["a"], raw["p"], raw["d"])
        except (binascii.Error, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
            raise ValueError("cursor is not one this server gave: pass next_cursor back unchanged") from None
        if not isinstance(cursor.arguments, dict) or not isinstance(cursor.position, int) or cursor.position < 0:
            raise ValueError("cursor is not one this server gave: pass next_cursor back unchanged")
        if cursor.tool != tool:
            raise ValueError(f"this cursor continues {cursor.tool}, not {tool}")
        return cursor

    def merged(self, given: dict) -> dict:
        """The cursor's arguments, checked against those ``given`` with it (None: not given)."""
        for name, value in given.items():
            if value is not None and name in self.arguments and value != self.arguments[name]:
                raise ValueError(f"this cursor continues {self.tool} with {name}={self.arguments[name]!r}, not {value!r}; "
                                 "pass the cursor alone or with the same arguments")
        return {**{k: v for k, v in given.items() if v is not None}, **self.arguments}

    def check(self, current: str) -> None:
        if current != self.digest:
            raise ValueError(f"the site changed since this cursor was made; call {self.tool} again without a cursor")


def opened(cursor: str | None, tool: str, given: dict) -> tuple[dict, int, Cursor | None]:
    """(arguments, position, cursor) of a call: ``given`` from position 0 without a cursor, else
    the cursor's arguments (checked against ``given``) from its position (``Cursor.check`` next)."""
    if cursor is None or cursor == "":
        return {k: v for k, v in given.items() if v is not None}, 0, None
    if not isinstance(cursor, str):
        raise ValueError("cursor must be a string: the next_cursor of an earlier answer")
    decoded = Cursor.decode(cursor, tool)
    return decoded.merged(given), decoded.position, decoded
