"""HTTP answers read within bounds: streamed and counted, refused past a size cap, one body
buffered at a time, JSON parsed without letting its nesting reach the interpreter's limit.

Why one body at a time: the advisor sends its queries concurrently (17 for a snapshot), and
each answer held whole at once would multiply the peak by that number (17 x hundreds of MB
measured 5 GB against a 1 GiB CronJob). Requests still go out together and servers still
compute together; only the transfer of bodies takes turns. A response waiting its turn costs
aiohttp's read buffer (it pauses the socket past 128 KiB), so the peak is one capped body, its
parse, and the answers already parsed (aggregated to what the model needs: small).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import dataclass
from typing import Any

import aiohttp

from advisor.defaults import DEFAULT_MAX_ANSWER_BYTES, size_text
from advisor.errors import SourceError

CHUNK = 256 * 1024

_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True, slots=True)
class AnswerLimit:
    """At most `max_bytes` of one answer; `flag` names the setting in the refusal."""

    max_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    flag: str = "--prometheus.max-answer-bytes"

    def refusal(self) -> str:
        return f"answer larger than {size_text(self.max_bytes)} ({self.flag})"


def _turn() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _turns.get(loop)
    if lock is None:
        lock = _turns[loop] = asyncio.Lock()
    return lock


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes
    charset: str | None


async def fetch(
    session: aiohttp.ClientSession,
    url: str,
    limit: AnswerLimit,
    source: str,
    **request: Any,
) -> Answer:
    """GET `url`: the status and whole body, or SourceError "SOURCE: answer larger than ..."
    once the body passes the cap (at once when Content-Length says so). I/O errors and
    timeouts propagate, for the caller to word with its URL.

    The session's `sock_read` timeout bounds each phase on its own: the wait for the headers,
    then, once it is this body's turn, the reading of the whole body (a never-ending answer
    ends there). Waiting for the turn is not counted: each body before it is bounded alike.
    """
    phase_s = session.timeout.sock_read
    async with asyncio.timeout(phase_s):
        response = await session.get(url, **request)
    try:
        if response.content_length is not None and response.content_length > limit.max_bytes:
            raise SourceError(f"{source}: {limit.refusal()}")
        async with _turn():
            async with asyncio.timeout(phase_s):
                body = await read_capped(response, limit, source)
        return Answer(response.status, body, response.charset)
    finally:
        response.release()


async def read_capped(response: aiohttp.ClientResponse, limit: AnswerLimit, source: str) -> bytes:
    """The whole body, or SourceError "SOURCE: answer larger than ..." (the connection is
    closed, the rest never read) once it passes the cap."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        if len(body) + len(chunk) > limit.max_bytes:
            response.close()  # the rest is never read
            raise SourceError(f"{source}: {limit.refusal()}")
        body += chunk
    return bytes(body)


class TooDeep(ValueError):
    """JSON nested deeper than the interpreter's recursion limit."""


def parse_json(body: bytes) -> Any:
    """The JSON value of `body`; ValueError when it is not JSON, TooDeep when it is nested
    deeper than the interpreter's recursion limit.

    Depth is bounded by catching RecursionError here rather than by scanning first: json's C
    decoder enters each array and object through the interpreter's recursion check, so a deep
    document raises RecursionError and unwinds cleanly at the first level past the limit,
    before any more of it is read, while a scan of our own would re-lex every string of a
    64 MiB answer in Python (seconds) only to learn what the decoder finds for free. The
    decoder's result is then read by shape, never walked recursively.
    """
    try:
        return json.loads(body)
    except RecursionError:
        raise TooDeep("nested too deep") from None
