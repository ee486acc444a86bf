"""The dedicated thread that every NVML call runs on, each waited for at most a timeout.

Kept apart from `exporter.nvml` (the only module that loads the NVML bindings) because it
knows nothing of NVML; it runs callables. A call that hangs in the driver costs its caller one
timeout; while it is still stuck, later calls fail at once with `CallTimedOut` instead of
queueing behind it, and calls go through again once it returns.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar, cast

T = TypeVar("T")


class CallTimedOut(Exception):
    """A call did not return within the timeout, or an earlier one is still stuck."""

    def __init__(self, function: str) -> None:
        super().__init__(function)
        self.function = function


@dataclass(eq=False)
class _Job:
    function: str
    run: Callable[[], object]
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: Exception | None = None


class CallThread:
    """Runs calls one at a time on a daemon thread and waits for each at most `timeout_s`."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._in_flight: str | None = None
        self._thread = threading.Thread(target=self._serve, name="nvml-calls", daemon=True)
        self._thread.start()

    def call(self, function: str, run: Callable[[], T]) -> T:
        """`run()`'s result or what it raised; `CallTimedOut` names this call or the stuck one."""
        with self._lock:
            if self._in_flight is not None:  # an earlier call is still stuck in the driver
                raise CallTimedOut(self._in_flight)
            self._in_flight = function
        job = _Job(function, run)
        self._jobs.put(job)
        if not job.done.wait(self._timeout_s):
            raise CallTimedOut(function)
        if job.error is not None:
            raise job.error
        return cast(T, job.result)

    def stop(self) -> None:
        """Ends the thread once the call in flight, if any, returns."""
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job.result = job.run()
            except Exception as error:
                job.error = error
            with self._lock:
                self._in_flight = None
            job.done.set()
