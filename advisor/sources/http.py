"""What the HTTP sources share: one session, concurrent requests, one-line failures."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

import aiohttp

from advisor.errors import InputError

T = TypeVar("T")
U = TypeVar("U")


def client_session(timeout_s: float) -> aiohttp.ClientSession:
    # trust_env: HTTP(S)_PROXY and NO_PROXY apply as for any other client in the cluster.
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=timeout_s), trust_env=True, raise_for_status=False
    )


def describe(error: BaseException) -> str:
    """An I/O failure in one line."""
    if isinstance(error, TimeoutError):
        return "timed out"
    return " ".join((str(error) or type(error).__name__).split())


async def run_all(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Results in order; the first InputError stops the others and is raised alone."""
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coroutines]
    except ExceptionGroup as failed:
        inputs = failed.subgroup(lambda e: isinstance(e, InputError))
        if inputs is None:
            raise
        raise _first_leaf(inputs) from None
    return [task.result() for task in tasks]


async def run_both(first: Coroutine[Any, Any, T], second: Coroutine[Any, Any, U]) -> tuple[T, U]:
    """Two different reads at once, as `run_all`."""
    a, b = await run_all([_boxed(first), _boxed(second)])
    return a[0], b[0]


async def _boxed(coroutine: Coroutine[Any, Any, T]) -> tuple[Any]:
    return (await coroutine,)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
