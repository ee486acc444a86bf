"""Polling for a condition that a background task makes true (no fixed sleeps in tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def eventually(
    condition: Callable[[], object], timeout_s: float = 5.0, what: str = ""
) -> None:
    """Return once `condition()` is truthy; AssertionError naming `what` after the timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"not true within {timeout_s}s: {what or condition}")
        await asyncio.sleep(0.005)
