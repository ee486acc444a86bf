"""Real-world Prometheus setups for the access tests: the exporter's series of two clusters
(the same metric names, `cluster="a"` or `"b"`), a small authenticating reverse proxy in front
of a real store (aiohttp, optionally TLS with a CA made by `openssl`), and the queries it saw.
"""

from __future__ import annotations

import base64
import ssl
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

from tests.advisor.sources.threaded_app import serve_in_thread
from tests.realparts import installed

GIB = 2**30
# cluster -> node -> number of cards. Node gpu-1 is in both clusters, with 2 cards in a and 4
# in b: a query that mixed them would see one node gpu-1 whose card count betrays the mix.
CLUSTERS: dict[str, dict[str, int]] = {"a": {"gpu-1": 2, "gpu-2": 1}, "b": {"gpu-1": 4, "gpu-3": 1}}
TOKEN = "s3cret-token-0123456789"
USER, PASSWORD = "advisor", "pa:ss:word"  # a password may hold colons
TENANT = "team-a"


def exposition(now: float, clusters: Mapping[str, Mapping[str, int]] = CLUSTERS) -> list[str]:
    """The series as `metric{labels} value timestamp_ms` lines: one sample every 15 s for the
    last 2 minutes, the newest 5 s old. Grouped by series, in time order (OpenMetrics)."""
    series: list[tuple[str, str, float]] = []
    for cluster, nodes in clusters.items():
        for node, cards in nodes.items():
            base = {"cluster": cluster, "node": node}
            series.append(("xgpu_node_info", _labels(base), 1))
            for index in range(cards):
                card = {
                    **base,
                    "gpu_index": str(index),
                    "gpu_uuid": f"GPU-{cluster}-{node}-{index}",
                }
                series.append(("xgpu_card_info", _labels({**card, "model": "Tesla T4"}), 1))
                series.append(("xgpu_card_memory_total_bytes", _labels(card), 16 * GIB))
                series.append(("xgpu_device_health", _labels(card), 0))
                series.append(("gpu_schedule_policy", _labels(card), 1))
    series.sort(key=lambda s: s[0])  # a family's series together (OpenMetrics)
    times = [now - 5 - 15 * k for k in range(8, -1, -1)]
    return [f"{m}{{{labels}}} {v} {round(t * 1000)}" for m, labels, v in series for t in times]


def _labels(labels: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def openmetrics(lines: list[str]) -> list[str]:
    """The same lines for promtool's OpenMetrics backfill (timestamps in seconds)."""
    found = []
    for line in lines:
        head, value, ms = line.rsplit(" ", 2)
        found.append(f"{head} {value} {int(ms) / 1000:.3f}")
    return found


@dataclass
class Tls:
    ca: Path
    server: ssl.SSLContext


def make_tls(home: Path) -> Tls:
    """A CA and a certificate for 127.0.0.1 signed by it (openssl, RSA 2048)."""
    openssl = installed("openssl")
    ca_key, ca, key, csr, cert = (home / n for n in ("ca.key", "ca.pem", "s.key", "s.csr", "s.pem"))

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out",
        str(ca), "-days", "2", "-subj", "/CN=xgpu test CA")  # fmt: skip
    run("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")  # fmt: skip
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(cert), "-days", "2", "-copy_extensions", "copy")  # fmt: skip
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    return Tls(ca, server)


@dataclass
class Gateway:
    """The proxy's base URLs, one per kind of credential it demands, and what it forwarded."""

    url: str
    queries: list[str] = field(default_factory=list)

    def base(self, kind: str) -> str:
        """`bearer`, `basic`, `tenant` (X-Scope-OrgID) or `open`."""
        return f"{self.url}/{kind}"


def _allowed(kind: str, headers: Mapping[str, str]) -> bool:
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    wanted = {
        "bearer": ("Authorization", f"Bearer {TOKEN}"),
        "basic": ("Authorization", f"Basic {basic}"),
        "tenant": ("X-Scope-OrgID", TENANT),
    }
    if kind == "open":
        return True
    name, value = wanted[kind]
    return headers.get(name) == value


@contextmanager
def gateway(upstream: str, tls: ssl.SSLContext | None = None) -> Iterator[Gateway]:
    """An authenticating reverse proxy to `upstream` (GET only), in a thread of its own."""
    seen = Gateway("")

    async def forward(request: web.Request) -> web.Response:
        kind = request.match_info["kind"]
        if kind not in ("bearer", "basic", "tenant", "open"):
            raise web.HTTPNotFound()
        if not _allowed(kind, request.headers):
            return web.Response(status=401, text="Unauthorized\n")
        if "query" in request.query:
            seen.queries.append(request.query["query"])
        url = f"{upstream}/{request.match_info['path']}"
        async with aiohttp.ClientSession() as client, client.get(url, params=request.query) as got:
            body, status = await got.read(), got.status
            content_type = got.headers.get("Content-Type", "application/json").split(";")[0]
        return web.Response(status=status, body=body, content_type=content_type)

    app = web.Application()
    app.router.add_get("/{kind}/{path:.*}", forward)
    with serve_in_thread(app, tls) as port:
        seen.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        yield seen
