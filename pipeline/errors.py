"""One error type for bad input, so the CLI can print it plainly and exit 1."""

from __future__ import annotations

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
