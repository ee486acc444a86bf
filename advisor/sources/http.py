"""What the HTTP sources share: one session, concurrent requests, one-line failures."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp

from advisor.errors import InputError, XgpuError
from advisor.sources.series import one_line

T = TypeVar("T")
U = TypeVar("U")


def client_session(timeout_s: float) -> aiohttp.ClientSession:
    """`timeout_s` bounds connecting, every read, and (advisor.sources.answers.fetch) the wait
    for an answer's headers and the reading of its body, each on its own. No `total`: bodies
    take turns (one buffered at a time), and a total would count the wait for a turn."""
    # trust_env: HTTP(S)_PROXY and NO_PROXY apply as for any other client in the cluster.
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout_s, sock_read=timeout_s)
    return aiohttp.ClientSession(timeout=timeout, trust_env=True, raise_for_status=False)


def shown_url(url: str) -> str:
    """The URL as every message shows it: without the user and password it may carry (found
    as text, so that even a URL that does not parse shows none), on one short line."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    return one_line(f"{scheme}{sep}{authority}{slash}{path}", 200)


def checked_url(url: str, what: str) -> str:
    """`url` when it is an http(s) URL whose host a request could be sent to; InputError
    "WHAT URL: ..." otherwise (urlsplit refuses an unclosed '[', the idna codec a label
    over 63 characters: both would escape as a traceback from inside the request)."""
    shown = shown_url(url)
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
        if host:
            host.encode("idna")
    except (ValueError, UnicodeError) as error:
        raise InputError(f"{what} {shown}: not a usable URL ({describe(error)})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise InputError(f"{what} {shown}: expected http(s)://HOST[:PORT][/PATH]")
    return url


def describe(error: BaseException) -> str:
    """An I/O failure in one line, in words (aiohttp's own str() of a redirect loop is
    "0, message=''")."""
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, aiohttp.TooManyRedirects):
        return f"too many redirects ({len(error.history)} followed)"
    if isinstance(error, aiohttp.ClientPayloadError):
        return "the answer broke off (malformed or incomplete body)"
    if isinstance(error, aiohttp.ClientResponseError):
        return f"HTTP {error.status} {error.message}".strip()
    text = " ".join((str(error) or type(error).__name__).split())
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


async def run_all(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Results in order; the first error that ends a run (an XgpuError: a source's, or bad
    input) stops the others and is raised alone."""
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coroutines]
    except ExceptionGroup as failed:
        inputs = failed.subgroup(lambda e: isinstance(e, XgpuError))
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
