"""The reports' HTTP app behind `xgpu-advisor serve` (commands/serve.py runs it).

GET and HEAD only (anything else: 405; what is not HTTP at all: 400, said in two words, not
echoed back, and not logged with a traceback). `/healthz` answers ok (for the probes: the
index does not exist before the first run); `/` is the reports' index.html. A path is served
only when it names a regular file under the reports' home with a known report suffix,
reached through no hidden name (`.x`: staging folders, temporary files) and resolving inside
the home (a symlink leading out is refused as not found, as is `..`). Every answer, errors
too, carries the security headers: the pages are self-contained (inline styles, no script),
so the policy allows nothing else. Connections are bounded as the exporter's are
(advisor.connections): a header sent a byte at a time is cut off at the header timeout, and
past the cap a new connection closes the one quiet longest.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from http import HTTPStatus
from pathlib import Path
from types import MappingProxyType
from typing import Any

from aiohttp import web
from aiohttp.web_request import BaseRequest

from advisor.connections import ConnectionLimits, fit_file_limit, serve_guarded
from advisor.errors import InputError, known

ROOT = web.AppKey("root", Path)
# What a browser may do with these pages: show them, with their inline styles and data:
# images; no script, no frame, no form, no outside fetch; no MIME sniffing; no referrer.
SECURITY_HEADERS: Mapping[str, str] = MappingProxyType(
    {
        "Content-Security-Policy": (
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Cache-Control": "no-cache",
    }
)
CONTENT_TYPES: Mapping[str, str] = MappingProxyType(
    {
        ".html": "text/html; charset=utf-8",
        ".md": "text/plain; charset=utf-8",  # shown, not downloaded
        ".json": "application/json",
        ".prom": "text/plain; charset=utf-8",
        ".txt": "text/plain; charset=utf-8",
    }
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def resolve(root: Path, path: str) -> Path | None:
    """The regular file under `root` that the URL path names, or None. `root` is resolved."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        parts = ["index.html"]
    if any(p.startswith(".") or "\\" in p or "\0" in p for p in parts):
        return None  # `..`, hidden names (staging folders, temporary files)
    if Path(parts[-1]).suffix not in CONTENT_TYPES:
        return None
    try:
        target = Path(os.path.realpath(root.joinpath(*parts), strict=True))
        info = target.stat()
    except (OSError, ValueError):
        return None
    if not target.is_relative_to(root) or not stat.S_ISREG(info.st_mode):
        return None  # a symlink out of the reports' home, a folder, a device
    return target


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as err:  # 404, 405 ...: with the headers too
        err.headers.update(SECURITY_HEADERS)
        raise
    response.headers.update(SECURITY_HEADERS)
    return response


async def serve_file(request: web.Request) -> web.StreamResponse:
    target = resolve(request.app[ROOT], request.match_info["path"])
    if target is None:
        raise web.HTTPNotFound(text="not found\n")
    headers = {"Content-Type": CONTENT_TYPES[target.suffix]}
    return web.FileResponse(target, headers=headers)


async def healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok\n")


def make_app(root: Path) -> web.Application:
    app = web.Application(middlewares=[security_headers])
    app[ROOT] = root.resolve()
    app.router.add_get("/healthz", healthz)  # the probes' (no report is named so)
    app.router.add_get("/{path:.*}", serve_file)  # HEAD too (allow_head); others: 405
    return app


class _Handler(web.RequestHandler):
    """aiohttp's protocol for one connection, answering what is not HTTP (a bad request line,
    a header past 8,190 bytes, TLS on the plain port) with the status and the security
    headers only: aiohttp's own answer echoes the bytes sent and logs a traceback each time,
    which any client could use to fill the log."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:  # our own failure: logged as aiohttp does
            response = super().handle_error(request, status, exc, message)
        else:
            text = f"{status} {HTTPStatus(status).phrase}\n"
            response = web.Response(status=status, text=text)
            response.force_close()
        response.headers.update(SECURITY_HEADERS)
        return response


async def serve(root: Path, host: str | None, port: int, limits: ConnectionLimits) -> None:
    """Serve `root` on host:port until SIGTERM or SIGINT."""
    limits = replace(limits, max_connections=fit_file_limit(limits.max_connections))
    runner = web.AppRunner(make_app(root), access_log=None, handle_signals=False)
    await runner.setup()
    server = known(runner.server, "the server of a set-up runner")
    loop = asyncio.get_running_loop()
    guard = None
    try:
        try:
            listening, guard = await serve_guarded(
                lambda: _Handler(
                    server,
                    loop=loop,
                    # idle between requests: aiohttp knows when a response has gone
                    keepalive_timeout=limits.idle_timeout_s,
                ),
                host,
                port,
                limits,
            )
        except OSError as err:
            raise InputError(f"--listen {host or ''}:{port}: {err.strerror or err}") from None
        bound = ", ".join(f"{h}:{p}" for h, p, *_ in _addresses(listening))
        print(f"xgpu-advisor: serving {root} on {bound}", file=sys.stderr, flush=True)
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        listening.close()
    finally:
        await runner.cleanup()
        if guard is not None:
            guard.close_all()  # those that never sent a byte aiohttp would wait for


def _addresses(server: asyncio.Server) -> list[tuple[Any, ...]]:
    names = [s.getsockname() for s in server.sockets]
    return [tuple(a) for a in names if isinstance(a, tuple)]
