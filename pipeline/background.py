"""Work run in a background thread, its result or error handed to whoever waits: one function
(``Background``), or functions handed over one by one and run in order (``Serial``).

For work that spends its time where the GIL is released (a model's native inference, file
system calls), so the build's main thread goes on meanwhile. A daemon thread: a process that
fails meanwhile exits without waiting for it (callers that must not leave it running wait).
"""

from __future__ import annotations

import queue
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


class Serial:
    """Functions run one after another in one background thread, in the order ``add`` hands them
    over, until ``close``. For work that becomes ready piece by piece in another thread (the
    embedding cache entries of documents whose vectors have all arrived) and must not wait for
    the last piece. The first error skips the functions after it; ``wait`` raises it."""

    _END = object()

    def __init__(self, *, name: str):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._task = Background(self._run, name=name)

    def add(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` after the functions added before it (from any thread; not after ``close``)."""
        if self._closed:
            raise RuntimeError("add after close")
        self._queue.put(fn)

    def close(self) -> None:
        """No more functions: the thread ends once it has run those added (or failed)."""
        if not self._closed:
            self._closed = True
            self._queue.put(self._END)

    def _run(self) -> None:
        error: BaseException | None = None
        while (fn := self._queue.get()) is not self._END:
            if error is None:
                try:
                    fn()
                except BaseException as exc:  # the rest is skipped, not run on a broken state
                    error = exc
        if error is not None:
            raise error

    def wait(self) -> None:
        """``close``, then wait until every function added has run; raises the first error."""
        self.close()
        self._task.wait()

    def join(self) -> None:
        """``close`` and wait for the thread to end, raising nothing (a caller that is already
        failing for another reason must not have its error replaced)."""
        self.close()
        self._task.join()
