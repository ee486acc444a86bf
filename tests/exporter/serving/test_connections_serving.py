"""`xgpu-exporter` as a real process under hostile connections on loopback: thousands of
idle and half-sent sockets, a header trickled byte by byte, kept-alive connections, more
sockets than its cap. It closes each kind on time and keeps serving normal scrapes.

Every loop here is bounded (a fixed count of sockets, a deadline on every wait) and every
socket is closed at the end of its test; the exporters are stopped with the module.
"""

from __future__ import annotations

import http.client
import selectors
import socket
import statistics
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.realparts import Exporter, exporter_command

pytestmark = pytest.mark.realservices  # xgpu-exporter processes

SCENARIO = Path(__file__).resolve().parents[1] / "data" / "exporter-node.yaml"
SIMULATE = ["--simulate", str(SCENARIO), "--node", "gpu-node-1", "--log-level", "warning"]
HALF_HEADER = b"GET /metrics HTTP/1.1\r\nHost: exporter\r\n"  # no empty line: never complete
SLACK_S = 2.5  # a loaded machine's lateness, on top of each timeout


def address(exporter: Exporter) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(exporter.url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


@contextmanager
def connections(
    server: tuple[str, int], count: int, first_bytes: bytes = b""
) -> Iterator[list[socket.socket]]:
    """`count` connections to `server` (host, port), each having sent `first_bytes`; all
    closed on exit."""
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.create_connection(server, timeout=5)
            if first_bytes:
                s.sendall(first_bytes)
            opened.append(s)
        yield opened
    finally:
        for s in opened:
            s.close()


def closed_by_server(sockets: Sequence[socket.socket], within_s: float) -> set[int]:
    """Indices of the sockets the server closed (end of stream or reset) within `within_s`;
    a socket that gets bytes instead is not counted."""
    closed: set[int] = set()
    with selectors.DefaultSelector() as selector:
        for i, s in enumerate(sockets):
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ, i)
        deadline = time.monotonic() + within_s
        while len(closed) < len(sockets) and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(timeout=min(left, 0.2)):
                i = key.data
                try:
                    data = sockets[i].recv(65536)
                except (ConnectionResetError, BlockingIOError) as error:
                    data = b"" if isinstance(error, ConnectionResetError) else b"?"
                if not data:
                    closed.add(i)
                    selector.unregister(sockets[i])
    return closed


def scrape_ms(exporter: Exporter) -> float:
    started = time.perf_counter()
    status, _, body = exporter.get("/metrics", {"Accept-Encoding": "identity"})
    assert status == 200
    assert b"xgpu_memory_total" in body
    return (time.perf_counter() - started) * 1000


def open_files(exporter: Exporter) -> int:
    return len(list(Path(f"/proc/{exporter.process.pid}/fd").iterdir()))


@pytest.fixture(scope="module")
def guarded(start_exporter: Callable[..., Exporter]) -> Exporter:
    """Short timeouts, so that a test sees them pass (headers 1 s, idle 3 s), and a cap
    above the sockets the tests open, so that only the timeouts close them."""
    return start_exporter(
        [
            *SIMULATE,
            "--web.read-header-timeout",
            "1s",
            "--web.idle-timeout",
            "3s",
            "--web.max-connections",
            "10000",
        ]
    )


def test_thousands_of_idle_and_half_sent_connections_are_closed_and_scrapes_go_on(
    guarded: Exporter,
) -> None:
    with (
        connections(address(guarded), 1500) as idle,
        connections(address(guarded), 1500, HALF_HEADER) as half_sent,
    ):
        # While all 3,000 are open (within the 1 s header timeout), scrapes are served.
        during = [scrape_ms(guarded) for _ in range(10)]
        closed = closed_by_server([*idle, *half_sent], within_s=1.0 + SLACK_S + 3.0)
        assert len(closed) == 3000  # each one: 1 s to send a header, none did
        after = [scrape_ms(guarded) for _ in range(30)]
    assert max(during) < 1000  # served at once, not after the flood was cleared
    assert statistics.median(after) < 100
    assert guarded.process.poll() is None


def test_a_header_trickled_byte_by_byte_is_cut_off_at_the_header_timeout(
    guarded: Exporter,
) -> None:
    """Slowloris: each byte arrives well within the timeout, the header never completes in
    it; the deadline runs from the first byte and is not pushed back by later ones."""
    with connections(address(guarded), 1) as (s,):
        started = time.monotonic()
        cut_at = None
        for byte in HALF_HEADER * 4:  # 12 s of bytes at 0.1 s each: far past the timeout
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                cut_at = time.monotonic() - started
                break
            if closed_by_server([s], within_s=0.1):
                cut_at = time.monotonic() - started
                break
            s.settimeout(5)
    assert cut_at is not None
    assert 0.9 <= cut_at <= 1.0 + SLACK_S


def test_a_kept_alive_connection_stays_for_the_idle_timeout_then_closes(
    guarded: Exporter,
) -> None:
    host, port = address(guarded)
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        connection.request("GET", "/metrics", headers={"Accept-Encoding": "identity"})
        response = connection.getresponse()
        assert response.status == 200
        assert response.read()
        answered = time.monotonic()
        assert connection.sock is not None
        kept: socket.socket = connection.sock
        # Past the header timeout (1 s): the header was complete, so only idleness counts.
        assert closed_by_server([kept], within_s=1.8) == set()
        # The second request on the same connection is served: it was kept alive.
        kept.settimeout(5)
        connection.request("GET", "/healthz")
        second = connection.getresponse()
        assert (second.status, second.read()) == (200, b"ok\n")
        answered = time.monotonic()
        assert closed_by_server([kept], within_s=3.0 + SLACK_S) == {0}
        idle_for = time.monotonic() - answered
        assert 2.9 <= idle_for <= 3.0 + SLACK_S  # --web.idle-timeout 3s
    finally:
        connection.close()


def test_two_pipelined_requests_and_a_header_in_pieces_are_served(guarded: Exporter) -> None:
    with connections(address(guarded), 1) as (s,):
        s.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.4)  # within the 1 s header timeout
        s.sendall(b"Host: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.count(b"HTTP/1.1 200 OK") == 3
    assert answer.endswith(b"ok\n")


def test_past_the_cap_a_new_connection_closes_the_quietest_and_scrapes_get_in(
    start_exporter: Callable[..., Exporter],
) -> None:
    exporter = start_exporter(
        [*SIMULATE, "--web.max-connections", "100", "--web.read-header-timeout", "60s"]
    )
    with connections(address(exporter), 600) as flood:
        served = [scrape_ms(exporter) for _ in range(5)]  # each scrape is a new connection
        closed = closed_by_server(flood, within_s=3.0)
        # The flood's 600 for a cap of 100: each past the 100th closes the oldest, 500 in
        # all. The first scrape is the 101st and closes one more (flood[500]); it is gone
        # when the next one comes, so the other four close none. The newest 99 stay.
        assert closed == set(range(501))
        assert open_files(exporter) <= 100 + 16  # connections plus the process's own files
    assert max(served) < 1000
    assert exporter.process.poll() is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--web.read-header-timeout", "0"], "--web.read-header-timeout must be more than 0"),
        (["--web.idle-timeout", "0s"], "--web.idle-timeout must be more than 0"),
        (["--web.idle-timeout", "nan"], "--web.idle-timeout"),
        (["--web.max-connections", "0"], "--web.max-connections must be 1..1,000,000"),
        (["--web.max-connections", "١٢"], "expected a count like 1024"),
        (["--web.max-connections", "9" * 5000], "expected a count like 1024"),
    ],
)
def test_bad_connection_flags_exit_2_with_one_line(flags: list[str], message: str) -> None:
    done = subprocess.run(
        [*exporter_command(), *SIMULATE, *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
