"""The HTTP side: /metrics (negotiated format, gzip), /healthz, /readyz and a landing page.

Handlers never collect or render on the event loop themselves: they ask the engine for the
current collection and send its cached bytes.
"""

from __future__ import annotations

import html

from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as CONTENT_TYPE_OPENMETRICS

from exporter.collection import Engine
from exporter.metrics import exporter_version

ENGINE = web.AppKey("engine", Engine)


def _quality(accept: str, media_types: tuple[str, ...]) -> float:
    """The highest q the header gives any of `media_types` (0 when it names none)."""
    best = 0.0
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0].lower() not in media_types:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        best = max(best, q)
    return best


def wants_openmetrics(accept: str) -> bool:
    om = _quality(accept, ("application/openmetrics-text",))
    return om > 0 and om >= _quality(accept, ("text/plain",))


def accepts_gzip(accept_encoding: str) -> bool:
    return _quality(accept_encoding, ("gzip",)) > 0


async def metrics(request: web.Request) -> web.Response:
    openmetrics = wants_openmetrics(request.headers.get("Accept", ""))
    compressed = accepts_gzip(request.headers.get("Accept-Encoding", ""))
    collection = await request.app[ENGINE].latest((openmetrics, compressed))
    body = await collection.exposition(openmetrics, compressed)
    headers = {
        "Content-Type": CONTENT_TYPE_OPENMETRICS if openmetrics else CONTENT_TYPE_PLAIN_0_0_4,
        "Vary": "Accept, Accept-Encoding",
        "X-Xgpu-Collection": str(collection.seq),  # scrapes that shared a collection agree
    }
    if compressed:
        headers["Content-Encoding"] = "gzip"
    return web.Response(body=body, headers=headers)


async def healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def readyz(request: web.Request) -> web.Response:
    if request.app[ENGINE].ready:
        return web.Response(text="ready\n")
    return web.Response(status=503, text="first collection not done yet\n")


async def landing(request: web.Request) -> web.Response:
    engine = request.app[ENGINE]
    current = engine.current
    rows = ""
    if current is not None:
        rows = "".join(
            f"<tr><td>{html.escape(run.name)}</td><td>{'ok' if run.success else 'failed'}</td>"
            f"<td>{html.escape(run.error or '')}</td></tr>"
            for run in current.snapshot.collectors
        )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>xgpu-exporter</title></head>
<body><h1>xgpu-exporter {html.escape(exporter_version())}</h1>
<p>Node <b>{html.escape(engine.node)}</b>. <a href="/metrics">Metrics</a> ·
<a href="/healthz">healthz</a> · <a href="/readyz">readyz</a></p>
<table><tr><th>collector</th><th>last run</th><th>error</th></tr>{rows}</table>
</body></html>
"""
    return web.Response(text=page, content_type="text/html")


def make_app(engine: Engine) -> web.Application:
    app = web.Application()
    app[ENGINE] = engine
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/", landing)
    return app
