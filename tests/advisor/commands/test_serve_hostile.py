"""`xgpu-advisor serve` as a real process against hostile clients on real sockets: paths out
of its folder written every way a parser might miss (double-encoded, backslashes, NUL,
absolute forms), methods it does not serve and bytes that are not HTTP, request lines and
headers past any sane size, a header trickled a byte at a time, more connections than its
cap. Each gets the status alone, with the security headers, nothing echoed, no traceback in
the log; slow and flooding clients are cut off and never keep another client out.

Every wait has a deadline and every socket is closed at the end of its test.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands.archive import INDEX
from advisor.commands.serve_app import SECURITY_HEADERS
from tests.advisor.commands.test_serve import SECRET, Served, serve_command
from tests.exporter.serving.test_connections_serving import (
    HALF_HEADER,
    SLACK_S,
    closed_by_server,
    connections,
)
from tests.realparts import DEMO, free_port, running_process

pytestmark = pytest.mark.realservices

HEADER_TIMEOUT_S = 1.0
CAP = 20


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A run of the demo and a secret beside the home; short bounds, so that a test sees
    them pass."""
    base = tmp_path_factory.mktemp("serve-hostile")
    root = base / "reports"
    assert main(["report", "--scenario", str(DEMO), "--reports", str(root)]) == 0
    (base / "secret.html").write_text(SECRET)
    port = free_port()
    command = [
        *serve_command(root, f"127.0.0.1:{port}"),
        *("--read-header-timeout", f"{HEADER_TIMEOUT_S:g}s"),
        *("--idle-timeout", "3s", "--max-connections", str(CAP)),
    ]
    with running_process(command, f"http://127.0.0.1:{port}/", base / "serve.log") as process:
        yield Served(root, port, process)


def send(served: Served, raw: bytes) -> tuple[str, dict[str, str], bytes]:
    """The status line, headers and body the server answers `raw` with (it closes)."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(raw)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return status, headers, body


def request(line: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([line, b"Host: x", *headers, b"Connection: close", b"", b""])


def log_text(served: Served) -> str:
    return (served.root.parent / "serve.log").read_text()


def assert_secured(headers: dict[str, str]) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name) == value, (name, headers)


@pytest.mark.parametrize(
    "target",
    [
        b"/%252e%252e/secret.html",  # double-encoded
        b"/%252e%252e%252fsecret.html",
        b"/..%5csecret.html",  # backslashes, raw and encoded
        b"/..\\secret.html",
        b"/%5c..%5csecret.html",
        b"/index.html%00.html",  # NUL
        b"/%00/../secret.html",
        b"//etc/passwd",  # absolute
        b"/%2fetc%2fpasswd",
        b"/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc/passwd",
        b"http://x/../secret.html",  # the absolute form
        b"/..;/secret.html",
        b"/./../secret.html",
    ],
)
def test_no_path_leads_out(served: Served, target: bytes) -> None:
    status, headers, body = send(served, request(b"GET " + target + b" HTTP/1.1"))
    assert status.split(" ", 2)[1] in {"400", "404"}, (target, status)
    assert SECRET.encode() not in body
    assert b"root:" not in body
    assert_secured(headers)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (request(b"TRACE /index.html HTTP/1.1"), "405"),
        (request(b"CONNECT 127.0.0.1:22 HTTP/1.1"), "404"),  # nothing is proxied
        (request(b"FOO<script> /index.html HTTP/1.1"), "400"),
        (request(b"G\x00T / HTTP/1.1"), "400"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03<script>", "400"),  # TLS on plain HTTP
        (request(b"GET /<script>" + b"a" * 100_000 + b" HTTP/1.1"), "400"),  # 100 KB line
        (request(b"GET / HTTP/1.1", b"X-Big: <script>" + b"a" * 100_000), "400"),
        (request(b"GET / HTTP/1.1", *(b"X-%d: <script>" % i for i in range(5_000))), "400"),
    ],
)
def test_what_is_not_served_is_the_status_alone(served: Served, raw: bytes, status: str) -> None:
    """aiohttp's own answer to a request it cannot parse echoes the bytes sent back, without
    the security headers, and logs a traceback: a client could fill the log."""
    line, headers, body = send(served, raw)
    assert line.split(" ", 2)[1] == status, line
    assert_secured(headers)
    assert b"script" not in body
    assert len(body) < 100
    assert "Traceback" not in log_text(served)
    assert "script" not in log_text(served)


def test_a_header_trickled_byte_by_byte_is_cut_off_and_others_are_served(
    served: Served,
) -> None:
    """Slowloris: each byte comes well within the timeout, the header never completes; the
    deadline runs from the first byte. Meanwhile another client gets its page."""
    with connections(("127.0.0.1", served.port), 1) as (s,):
        started = time.monotonic()
        cut_at = None
        for i, byte in enumerate(HALF_HEADER * 4):  # 0.1 s a byte: far past the timeout
            if i == 3:
                assert served.ask("GET", "/")[0] == 200  # not blocked by the trickle
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                cut_at = time.monotonic() - started
                break
            time.sleep(0.1)
    assert cut_at is not None, "the trickle was never cut off"
    assert cut_at < HEADER_TIMEOUT_S + SLACK_S


def test_past_the_cap_the_quietest_close_and_a_new_client_gets_in(served: Served) -> None:
    with connections(("127.0.0.1", served.port), 5 * CAP, HALF_HEADER) as flood:
        status, _, body = served.ask("GET", "/")  # the newest connection: served at once
        assert status == 200
        assert body == (served.root / INDEX).read_bytes()
        closed = closed_by_server(flood, within_s=SLACK_S)
        assert len(closed) >= 4 * CAP  # closed for the cap, before any timeout
    assert served.process.poll() is None


def test_every_client_is_cut_off_within_the_header_timeout(served: Served) -> None:
    server = ("127.0.0.1", served.port)
    with connections(server, CAP // 2) as idle, connections(server, CAP // 2, HALF_HEADER) as half:
        closed = closed_by_server([*idle, *half], within_s=HEADER_TIMEOUT_S + SLACK_S)
        assert len(closed) == CAP
    assert served.ask("GET", "/")[0] == 200


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--read-header-timeout", "0s"),
        ("--idle-timeout", "nan"),
        ("--max-connections", "0"),
        ("--max-connections", "²"),
    ],
)
def test_bad_bounds_are_one_line_and_exit_2(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--reports", str(tmp_path), flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert flag in err
