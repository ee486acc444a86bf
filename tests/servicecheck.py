"""Keeps the `realservices` marker honest: a test that starts a process or a listening server
without the marker fails, naming what it started, so `make test-fast` stays fast.

Loaded by tests/conftest.py. Whatever starts during a test's setup or call, in any thread,
counts against that test (a module- or session-scoped fixture counts against the first test
that asks for it). A build step that is not a service (compiling the fake NVML library) runs
inside `not_a_service()`.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

MARKER = "realservices"

_started = pytest.StashKey[list[str]]()
_running: list[pytest.Item] = []  # the item whose setup, call or teardown is running
_exempt: list[bool] = []


def _note(what: str) -> None:
    if _exempt or not _running:
        return
    item = _running[-1]
    if item.get_closest_marker(MARKER) is None:
        item.stash.setdefault(_started, []).append(what)


@contextmanager
def not_a_service() -> Iterator[None]:
    """Processes started inside are build steps, not services: they need no marker."""
    _exempt.append(True)
    try:
        yield
    finally:
        _exempt.pop()


def _wrap(original: Callable[..., Any], describe: Callable[..., str]) -> Callable[..., Any]:
    def noting(*args: Any, **kwargs: Any) -> Any:
        _note(describe(*args, **kwargs))
        return original(*args, **kwargs)

    return noting


def _process(_self: object, *args: object, **kwargs: object) -> str:
    return f"a process {(args[0] if args else kwargs.get('args'))!r}"


def _server(sock: socket.socket, *_rest: object) -> str:
    try:
        return f"a server listening on {sock.getsockname()!r}"
    except OSError:
        return "a listening server"


def pytest_configure(config: pytest.Config) -> None:
    # Patched on the classes: subprocess.run, asyncio's subprocesses and every server
    # (http.server, aiohttp, asyncio.start_server) go through these two.
    setattr(subprocess.Popen, "__init__", _wrap(subprocess.Popen.__init__, _process))  # noqa: B010
    setattr(socket.socket, "listen", _wrap(socket.socket.listen, _server))  # noqa: B010


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


def _unmarked(item: pytest.Item) -> str | None:
    started = item.stash.get(_started, [])
    if not started:
        return None
    return (
        f"started {started[0]} without the `{MARKER}` marker: add "
        f"`pytestmark = pytest.mark.{MARKER}` to the module (or mark the test)"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        yield
    except BaseException:
        # The test's own failure comes first; the missing marker is told beside it.
        if (problem := _unmarked(item)) is not None:
            item.add_report_section("call", MARKER, problem)
        raise
    if (problem := _unmarked(item)) is not None:
        pytest.fail(problem, pytrace=False)
