"""A loopback HTTP server answering fixed pages: the stand-in exporters the snapshot tests
scrape (each node's exposition at /NODE)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from advisor.sources.values import Sample


def exposition(node: str, found: list[Sample]) -> str:
    """The node's samples as an exporter shows them (no `node` label: xgpu_node_info says)."""
    lines = []
    for s in found:
        if s.label("node") != node:
            continue
        labels = ",".join(f'{k}="{v}"' for k, v in s.labels.items() if k != "node")
        if s.metric == "xgpu_node_info":
            labels = f'node="{node}"'
        lines.append(f"{s.metric}{{{labels}}} {s.value}")
    return "\n".join(lines) + "\n"


@contextmanager
def serving_exporters(found: list[Sample], nodes: tuple[str, ...]) -> Iterator[str]:
    """Each of `nodes` as a stand-in exporter of its samples; yields the URL list."""
    with serving({f"/{n}": exposition(n, found).encode() for n in nodes}) as urls:
        yield urls


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
