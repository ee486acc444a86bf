"""A loopback HTTP server answering fixed pages: the stand-in exporters the snapshot tests
scrape (each node's exposition at /NODE)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(pages: Mapping[str, bytes]) -> Iterator[str]:
    """Serve `pages` (path -> exposition); yields the comma-joined URL list of them."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        yield ",".join(f"{base}{path}" for path in pages)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
