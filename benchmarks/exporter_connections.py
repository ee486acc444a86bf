"""The exporter under 10,000 idle connections (issue 11's figures), for `exporter_bench`:

- held: the cap raised to hold all 10,000 sockets (they send nothing), the header timeout
  long enough to keep them: resident memory, and the p99 of normal scrapes meanwhile
  (one kept-alive client, as Prometheus scrapes), target RSS <= 120 MB, p99 <= 20 ms; the
  same with 10,000 half-sent headers, each of which holds a parser;
- capped: the same 10,000 at the default cap (1024): what stays open and the memory;
- closing: the default header timeout (10 s), an idle timeout of 15 s; 9,000 sockets that
  send nothing and 1,000 kept alive after one request each; how late after its timeout each
  one is closed (the timeouts are longer than opening them all takes, so that every close
  is seen as it happens).

Every socket is on loopback and closed at the end; every wait has a deadline.
"""

from __future__ import annotations

import http.client
import resource
import selectors
import socket
import statistics
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

CONNECTIONS = 10_000
HEADER_TIMEOUT_S, IDLE_TIMEOUT_S = 10.0, 15.0
KEPT_ALIVE = 1_000
SCRAPES = 300
HALF_HEADER = b"GET /metrics HTTP/1.1\r\nHost: bench\r\n"  # a header never finished
Start = Callable[[Sequence[str]], tuple[subprocess.Popen[bytes], str]]


def raise_file_limit(wanted: int) -> int:
    """This process's open-file limit raised towards `wanted`; how many sockets it may open."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def _address(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


def open_sockets(url: str, count: int, first: bytes = b"") -> list[tuple[socket.socket, float]]:
    """`count` connections that send `first` (or nothing), each with the moment it opened."""
    found = []
    for _ in range(count):
        s = socket.create_connection(_address(url), timeout=10)
        if first:
            s.sendall(first)
        found.append((s, time.monotonic()))
    return found


def kept_alive(url: str, count: int) -> list[tuple[socket.socket, float]]:
    """`count` connections that each had one request answered, with the moment of the answer."""
    found = []
    for _ in range(count):
        s = socket.create_connection(_address(url), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
        answer = b""
        while not answer.endswith(b"ok\n"):
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("the exporter closed a connection before answering")
            answer += chunk
        found.append((s, time.monotonic()))
    return found


def closed_at(sockets: Sequence[socket.socket], deadline_s: float) -> list[float | None]:
    """When the server closed each socket (end of stream or reset); None: not by the deadline."""
    times: list[float | None] = [None] * len(sockets)
    with selectors.DefaultSelector() as selector:
        for i, s in enumerate(sockets):
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ, i)
        left = len(sockets)
        deadline = time.monotonic() + deadline_s
        while left and (wait := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(timeout=min(wait, 0.05)):
                i = key.data
                try:
                    data = sockets[i].recv(4096)
                except ConnectionResetError:
                    data = b""
                if not data:
                    times[i] = time.monotonic()
                    selector.unregister(sockets[i])
                    left -= 1
    return times


def scrape_latencies(url: str, count: int) -> list[float]:
    """Seconds per scrape, one kept-alive connection, as Prometheus scrapes."""
    host, port = _address(url)
    connection = http.client.HTTPConnection(host, port, timeout=10)
    found = []
    try:
        for _ in range(count + 5):
            started = time.perf_counter()
            connection.request("GET", "/metrics", headers={"Accept-Encoding": "identity"})
            with connection.getresponse() as response:
                response.read()
            found.append(time.perf_counter() - started)
    finally:
        connection.close()
    return found[5:]  # the first few warm the connection


def _p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def _close_all(sockets: Sequence[tuple[socket.socket, float]]) -> None:
    for s, _ in sockets:
        s.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=20)


def held(start: Start, count: int, first: bytes = b"") -> dict[str, Any]:
    process, url = start(
        ["--web.max-connections", str(count + 1000), "--web.read-header-timeout", "5m"]
    )
    base = url.removesuffix("/metrics")
    try:
        before = _rss_mb(process.pid)
        sockets = open_sockets(base, count, first)
        try:
            time.sleep(1.0)  # accepted
            latencies = scrape_latencies(url, SCRAPES)
            return {
                "connections": count,
                "open_files": _open_files(process.pid),
                "rss_before_mb": before,
                "rss_mb": _rss_mb(process.pid),
                "scrape_p50_ms": statistics.median(latencies) * 1000,
                "scrape_p99_ms": _p(latencies, 0.99) * 1000,
                "target_rss_mb": 120.0,
                "target_p99_ms": 20.0,
            }
        finally:
            _close_all(sockets)
    finally:
        _stop(process)


def capped(start: Start, count: int) -> dict[str, Any]:
    process, url = start([])  # the defaults: a cap of 1024, a 10 s header timeout
    try:
        sockets = open_sockets(url.removesuffix("/metrics"), count)
        try:
            time.sleep(1.0)
            latencies = scrape_latencies(url, SCRAPES)
            return {
                "connections": count,
                "open_files": _open_files(process.pid),
                "rss_mb": _rss_mb(process.pid),
                "scrape_p99_ms": _p(latencies, 0.99) * 1000,
            }
        finally:
            _close_all(sockets)
    finally:
        _stop(process)


def closing(start: Start, count: int) -> dict[str, Any]:
    process, url = start(
        [
            "--web.max-connections",
            str(count + 1000),
            "--web.read-header-timeout",
            f"{HEADER_TIMEOUT_S:g}s",
            "--web.idle-timeout",
            f"{IDLE_TIMEOUT_S:g}s",
        ]
    )
    base = url.removesuffix("/metrics")
    try:
        alive = kept_alive(base, KEPT_ALIVE)
        silent = open_sockets(base, count - KEPT_ALIVE)
        try:
            every = [*alive, *silent]
            times = closed_at([s for s, _ in every], deadline_s=IDLE_TIMEOUT_S + 30)
            late: dict[str, list[float]] = {"kept_alive": [], "silent": []}
            for i, ((_, since), at) in enumerate(zip(every, times, strict=True)):
                kind, timeout = (
                    ("kept_alive", IDLE_TIMEOUT_S)
                    if i < KEPT_ALIVE
                    else ("silent", HEADER_TIMEOUT_S)
                )
                late[kind].append(float("inf") if at is None else at - since - timeout)
            return {
                "kept_alive": KEPT_ALIVE,
                "silent": count - KEPT_ALIVE,
                "header_timeout_s": HEADER_TIMEOUT_S,
                "idle_timeout_s": IDLE_TIMEOUT_S,
                "not_closed": sum(1 for t in times if t is None),
                "kept_alive_late_s": {
                    "min": min(late["kept_alive"]),
                    "max": max(late["kept_alive"]),
                },
                "silent_late_s": {"min": min(late["silent"]), "max": max(late["silent"])},
            }
        finally:
            _close_all([*alive, *silent])
    finally:
        _stop(process)


def run(start: Start) -> dict[str, Any]:
    count = min(CONNECTIONS, raise_file_limit(CONNECTIONS + 2_000) - 500)
    return {
        "held": held(start, count),
        "held_half_sent": held(start, count, HALF_HEADER),
        "capped": capped(start, count),
        "closing": closing(start, count),
    }


def rows(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    h, c, z = r["held"], r["capped"], r["closing"]
    half = r["held_half_sent"]
    return [
        (
            f"{h['connections']:,} idle connections held",
            f"{h['rss_mb']:.1f} MB",
            f"from {h['rss_before_mb']:.1f} MB; scrape p99 {h['scrape_p99_ms']:.2f} ms "
            f"(<= 120 MB, <= 20 ms)",
        ),
        (
            f"{half['connections']:,} half-sent held",
            f"{half['rss_mb']:.1f} MB",
            f"scrape p99 {half['scrape_p99_ms']:.2f} ms (each has aiohttp's parser)",
        ),
        (
            f"{c['connections']:,} at the default cap",
            f"{c['rss_mb']:.1f} MB",
            f"{c['open_files']} files open; scrape p99 {c['scrape_p99_ms']:.2f} ms",
        ),
        (
            "closed after their timeout",
            f"+{z['silent_late_s']['max']:.2f} s / +{z['kept_alive_late_s']['max']:.2f} s",
            f"latest, silent (header {z['header_timeout_s']:g} s) / kept alive "
            f"(idle {z['idle_timeout_s']:g} s); {z['not_closed']} not closed",
        ),
    ]
