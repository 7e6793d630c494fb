"""One error type for bad input, so the CLI can print it plainly and exit 1."""

from __future__ import annotations

import errno
import os
from pathlib import Path


class PipelineError(Exception):
    """Bad input or configuration, reported as ``file:line: message``.

    ``path`` and ``line`` (1-based) are optional; ``str(error)`` always names what is known.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or ""
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}" if where else self.message


def environment_error(error: OSError) -> str:
    """``<path>: <reason>`` for an OSError (``a -> b: <reason>`` for a rename): what the machine
    refused (permissions, a read-only or full disk, a file where a folder belongs). For "not a
    directory" the path named is the file that stands where a folder was expected."""
    reason = error.strerror or str(error)
    if error.filename is None:
        return reason
    where = os.fsdecode(error.filename)
    if error.errno == errno.ENOTDIR:
        where = next((str(p) for p in [Path(where), *Path(where).parents] if p.is_file()), where)
    if error.filename2 is not None:
        where = f"{where} -> {os.fsdecode(error.filename2)}"
    return f"{where}: {reason}"
