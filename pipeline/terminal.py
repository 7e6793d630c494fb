"""What the CLI prints to a terminal: no control characters from the content get through.

Chunk text, titles, file names and error messages come from the content tree, so they may hold
ESC sequences (clear the screen, recolour, set the window title), carriage returns that overwrite
a line, C1 controls or bidi overrides. On a terminal these are shown escaped (``\\x1b``); through
a pipe or into a file the output stays exact. JSON stays exact either way: inside a JSON string
an escaped character (``\\u001b``) decodes to the same value.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

# C0 except tab and newline, DEL, C1, line/paragraph separators and the bidi controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# In JSON text orjson already escapes C0; what can still be raw inside strings.
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with each control character written as a visible escape (``\\x1b``, ``\\u202e``)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


_CONTROL_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_line(text: str) -> str:
    """``escape_controls``, tabs and newlines included: ``text`` (a file name, a link) shown on
    one line, as one field (``broken: a\\nb.md`` is one name, not two lines)."""
    return _CONTROL_OR_BREAK.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def escape_json(text: str) -> str:
    """JSON text with the control characters JSON allows raw written as ``\\uXXXX`` (same value)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def for_terminal(text: str, *, is_json: bool, stream: TextIO | None = None) -> str:
    """``text`` as it should be printed to ``stream`` (default stdout): escaped when a terminal."""
    stream = stream if stream is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return text
    return escape_json(text) if is_json else escape_controls(text)
