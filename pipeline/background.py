"""One function run in a background thread, its result or error handed to whoever waits.

For work that spends its time where the GIL is released (a model's native inference, file
system calls), so the build's main thread goes on meanwhile. A daemon thread: a process that
fails meanwhile exits without waiting for it (callers that must not leave it running wait).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``fn()`` started at once in a thread named ``name``; ``wait`` returns its value or raises
    its exception (every call, in the waiting thread)."""

    def __init__(self, fn: Callable[[], T], *, name: str):
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the thread that waits
            self._error = exc

    def wait(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def join(self) -> None:
        """Wait for the thread to end; its exception, if any, is not raised (a caller that is
        already failing for another reason must not have that replaced)."""
        self._thread.join()
