"""Bounds on an HTTP server's connections: a header-read timeout, an idle keep-alive timeout
and a cap on open connections. The exporter's `--web.read-header-timeout`,
`--web.idle-timeout` and `--web.max-connections`, and `xgpu-advisor serve`'s
`--read-header-timeout`, `--idle-timeout` and `--max-connections` (it sits at the bottom of
the advisor so that both programs use this one guard).

Without them every idle, half-sent or kept-alive connection holds its socket and its
parser for good, so any client that can reach the port can exhaust the server's memory
limit with sockets alone. Here:

- a request's header must be complete within the header timeout of its first byte (or of
  the connection opening): a connection that sends nothing, or sends half a header and
  stalls, is closed then;
- between requests, a connection that stays idle for the idle timeout is closed (aiohttp's
  keep-alive timeout, which knows when a response has gone);
- at the cap, a new connection closes the one that has been quiet longest, rather than
  being refused: a flood of idle sockets can never lock Prometheus out, since its scrape
  arrives on the newest connection and sends its request at once.

`GuardedConnection` wraps aiohttp's protocol for one connection and passes every event on
to it; it only watches the bytes go by and closes the transport when a bound is crossed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("xgpu.exporter")  # the exporter's logger: its logfmt lines keep their name

DEFAULT_READ_HEADER_TIMEOUT_S = 10.0
# Longer than the usual scrape intervals (15 s, 30 s, 1 m), so that Prometheus keeps its
# connection from one scrape to the next.
DEFAULT_IDLE_TIMEOUT_S = 120.0
DEFAULT_MAX_CONNECTIONS = 1024
MAX_CONNECTIONS_LIMIT = 1_000_000
LISTEN_BACKLOG = 1024  # connections the kernel queues before the loop accepts them
SPARE_FILES = 128  # descriptors kept for everything else: procfs, NVML, the Kubernetes client
CAP_LOG_INTERVAL_S = 60.0
_HEADER_ENDS = (b"\r\n\r\n", b"\n\n")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    read_header_timeout_s: float = DEFAULT_READ_HEADER_TIMEOUT_S
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def problems(self) -> list[str]:
        """What makes these limits unusable, one phrase per flag."""
        found = []
        if not self.read_header_timeout_s > 0:
            found.append("--web.read-header-timeout must be more than 0")
        if not self.idle_timeout_s > 0:
            found.append("--web.idle-timeout must be more than 0")
        if not 1 <= self.max_connections <= MAX_CONNECTIONS_LIMIT:
            found.append(f"--web.max-connections must be 1..{MAX_CONNECTIONS_LIMIT:,}")
        return found


def connection_count(text: str) -> int:
    """A positive count in ASCII digits (`int()` would also take "١٢" or "1_000")."""
    digits = text.strip()
    if not digits.isascii() or not digits.isdigit() or len(digits) > 7:
        raise argparse.ArgumentTypeError(f"expected a count like 1024, got {text[:20]!r}")
    return int(digits)


def add_limit_arguments(
    parser: argparse.ArgumentParser,
    prefix: str,
    duration: Callable[[str], float],
    count: Callable[[str], int],
) -> None:
    """The three bounds as flags (`--{prefix}read-header-timeout`, `--{prefix}idle-timeout`,
    `--{prefix}max-connections`), parsed by each program's own duration and count types;
    `limits_of` reads them back."""
    parser.add_argument(
        f"--{prefix}read-header-timeout",
        dest="read_header_timeout",
        type=duration,
        default=DEFAULT_READ_HEADER_TIMEOUT_S,
        metavar="DURATION",
        help="how long a client may take to send a request's header; slower ones are "
        f"disconnected ({DEFAULT_READ_HEADER_TIMEOUT_S:g}s)",
    )
    parser.add_argument(
        f"--{prefix}idle-timeout",
        dest="idle_timeout",
        type=duration,
        default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="DURATION",
        help="how long a kept-alive connection may wait for its next request "
        f"({DEFAULT_IDLE_TIMEOUT_S / 60:g}m)",
    )
    parser.add_argument(
        f"--{prefix}max-connections",
        dest="max_connections",
        type=count,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="COUNT",
        help="most connections open at once; past it a new one closes the one quiet longest "
        f"({DEFAULT_MAX_CONNECTIONS})",
    )


def limits_of(args: argparse.Namespace) -> ConnectionLimits:
    return ConnectionLimits(args.read_header_timeout, args.idle_timeout, args.max_connections)


def fit_file_limit(max_connections: int) -> int:
    """The cap the process's descriptor limit allows: the soft limit is raised towards the
    hard one where the cap needs it (as Go servers do at start); what still does not fit
    lowers the cap, said in a warning."""
    needed = max_connections + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return max_connections
    allowed = max(soft - SPARE_FILES, 1)
    log.warning(
        "open file limit too low for --web.max-connections; cap lowered",
        extra={"max_connections": max_connections, "nofile": soft, "cap": allowed},
    )
    return allowed


class ConnectionGuard:
    """The protocol factory `loop.create_server` calls: each connection is aiohttp's
    protocol (from `factory`) inside a `GuardedConnection`. Keeps the open connections in
    order of their last bytes received, quietest first."""

    def __init__(self, factory: Callable[[], asyncio.Protocol], limits: ConnectionLimits) -> None:
        self._factory = factory
        self.limits = limits
        self._open: OrderedDict[GuardedConnection, None] = OrderedDict()
        self._unlogged_evictions = 0
        self._last_cap_log = -CAP_LOG_INTERVAL_S

    def __call__(self) -> GuardedConnection:
        return GuardedConnection(self)

    def protocol(self) -> asyncio.Protocol:
        """aiohttp's protocol for one connection."""
        return self._factory()

    def opened(self, connection: GuardedConnection) -> None:
        self._open[connection] = None
        while len(self._open) > self.limits.max_connections:
            quietest = next(iter(self._open))
            self.forget(quietest)
            quietest.close()
            self._unlogged_evictions += 1
        if self._unlogged_evictions and time.monotonic() - self._last_cap_log > CAP_LOG_INTERVAL_S:
            log.warning(
                "connection cap reached: closed the connections quiet longest",
                extra={
                    "max_connections": self.limits.max_connections,
                    "closed": self._unlogged_evictions,
                },
            )
            self._unlogged_evictions = 0
            self._last_cap_log = time.monotonic()

    def touched(self, connection: GuardedConnection) -> None:
        if connection in self._open:
            self._open.move_to_end(connection)

    def forget(self, connection: GuardedConnection) -> None:
        self._open.pop(connection, None)

    def close_all(self) -> None:
        for connection in list(self._open):
            self.forget(connection)
            connection.close()


class GuardedConnection(asyncio.Protocol):
    """One connection: aiohttp's protocol inside, the header timeout and the cap outside."""

    def __init__(self, guard: ConnectionGuard) -> None:
        self._guard = guard
        # aiohttp's protocol, made when the first byte arrives: a connection that never
        # sends one costs a socket and this object, not a parser and a task too.
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._in_header = True  # bytes of a request header are awaited or arriving
        self._tail = b""  # the last bytes received after the last header's end

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._arm()
        self._guard.opened(self)

    def data_received(self, data: bytes) -> None:
        self._guard.touched(self)
        self._watch_header(data)
        if self._inner is None:
            if self._transport is None or self._transport.is_closing():
                return
            self._inner = self._guard.protocol()
            self._inner.connection_made(self._transport)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return None if self._inner is None else self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._guard.forget(self)
        self._transport = None
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def close(self) -> None:
        self._disarm()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def _watch_header(self, data: bytes) -> None:
        """A header ends at its first empty line. Bytes after the last end start the next
        request's header (pipelining; a request body counts too, where a client sends
        one: the exporter's endpoints take none)."""
        seen = self._tail + data
        end = max(
            (seen.rfind(mark) + len(mark) for mark in _HEADER_ENDS if mark in seen), default=-1
        )
        if end < 0:
            if not self._in_header:
                self._in_header = True
                self._arm()
            self._tail = seen[-3:]
            return
        rest = seen[end:]
        self._tail = rest[-3:]
        self._disarm()
        self._in_header = bool(rest)
        if rest:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self._guard.limits.read_header_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        self._guard.forget(self)
        self.close()


async def serve_guarded(
    factory: Callable[[], asyncio.Protocol], host: str | None, port: int, limits: ConnectionLimits
) -> tuple[asyncio.Server, ConnectionGuard]:
    """Listen on host:port with every connection guarded; the caller closes the server
    (then aiohttp's runner, then `guard.close_all()` for connections aiohttp never saw)."""
    guard = ConnectionGuard(factory, limits)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(guard, host, port, reuse_address=True, backlog=LISTEN_BACKLOG)
    return server, guard
