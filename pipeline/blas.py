"""numpy's BLAS on one thread for the pipeline's small matrix products.

A topic's similarity matrix (``topicspec/context.py`` ``related``: rows @ rows.T, which numpy hands
to OpenBLAS's ``syrk``) is tens of rows by 384: OpenBLAS splits even that over every core, and
its threads then wait for each other. On these shared 2 cores (load average ~7), the 30 topics of a 200-document
site took 130 ms that way and 1.3 ms on one thread (measured side by side in one process), the
same bits (a thread computes whole output entries, so no sum is reordered).
"""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from functools import lru_cache


@lru_cache(maxsize=1)
def numpy_blas():
    """numpy's own BLAS (the library its wheel ships, beside its package), or None: without
    threadpoolctl, or when numpy uses a BLAS of the system (left as configured). A model's
    libraries (torch's) are never selected: an encode needs every core."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # a dependency (pyproject.toml); without it, only slower
        return None
    import numpy

    own = os.path.dirname(os.path.realpath(numpy.__file__))  # .../numpy; its wheel's libraries: .../numpy.libs
    controller = ThreadpoolController()
    paths = [lib["filepath"] for lib in controller.info()
             if lib["user_api"] == "blas" and os.path.realpath(lib["filepath"]).startswith(own)]
    return controller.select(filepath=paths) if paths else None


@contextmanager
def one_thread():
    """While inside, numpy's BLAS runs on one thread (restored after)."""
    controller = numpy_blas()
    with controller.limit(limits=1) if controller is not None else nullcontext():
        yield
