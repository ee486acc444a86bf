"""A loopback HTTP server whose answers each example sets: the stand-in exporters and the
stand-in Prometheus the snapshot command reads in the sources' fuzz test."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# path, query parameters -> status and body
Answer = Callable[[str, dict[str, str]], tuple[int, bytes]]


class StandIn:
    def __init__(self, base: str) -> None:
        self.base = base
        self.answer: Answer = lambda path, query: (404, b"")


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the 18 concurrent queries of one snapshot: no SYN retry

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up: its stderr is the one the test reads


@contextmanager
def standin_server() -> Iterator[StandIn]:
    standin: StandIn

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            status, body = standin.answer(parts.path, query)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(ConnectionError):  # the client gave up after an error
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = _QuietServer(("127.0.0.1", 0), Handler)
    standin = StandIn(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
