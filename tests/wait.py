"""Waiting for a condition that a background task, thread or process makes true: tests poll
a predicate with a deadline instead of sleeping a fixed time (which flakes under load)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.005  # short: a condition usually comes true within milliseconds


def _failure(timeout_s: float, what: str, condition: object) -> AssertionError:
    return AssertionError(f"not true within {timeout_s}s: {what or condition}")


def wait_until(
    condition: Callable[[], T | None],
    timeout_s: float = 10.0,
    what: str = "",
    poll_s: float = 0.05,
) -> T:
    """Poll `condition()` until it is truthy and return its value; AssertionError naming
    `what` after the timeout. For sync tests (threads, subprocesses, real services)."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise _failure(timeout_s, what, condition)
        time.sleep(poll_s)
    return value


async def eventually(
    condition: Callable[[], object], timeout_s: float = 5.0, what: str = ""
) -> None:
    """Return once `condition()` is truthy; AssertionError naming `what` after the timeout.
    For async tests: it yields to the loop between polls."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise _failure(timeout_s, what, condition)
        await asyncio.sleep(POLL_S)
