"""``-q``: no progress bars and no informational lines, from the pipeline or the libraries it
loads; errors and warnings about the input still go to stderr.

``set_quiet`` must run before transformers / sentence-transformers / huggingface_hub are
imported (the CLI calls it while parsing): they read these environment variables at import.
"""

from __future__ import annotations

import os
import sys

# Read at import by huggingface_hub (and so by transformers' "Loading weights" bar), by
# transformers' logging, and by tqdm itself (4.66+) for every other bar.
QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TQDM_DISABLE": "1",
}

_quiet = False


def set_quiet(quiet: bool = True) -> None:
    """Silence progress and information for the rest of the process (``quiet=False``: no-op)."""
    global _quiet
    if not quiet:
        return
    _quiet = True
    os.environ.update(QUIET_ENV)
    if "transformers" in sys.modules:  # already imported: switch its bars off directly
        from transformers.utils import logging as tlogging

        tlogging.disable_progress_bar()
        tlogging.set_verbosity_error()


def is_quiet() -> bool:
    return _quiet


def info(message: str) -> None:
    """An informational line on stderr (what is being done), unless quiet."""
    if not _quiet:
        print(message, file=sys.stderr, flush=True)
