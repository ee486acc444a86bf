"""An aiohttp application served on loopback from a thread of its own, for tests that call
the advisor synchronously (in-process `main` or a subprocess) against a stand-in server."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web


@contextmanager
def serve_in_thread(app: web.Application, tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """The port `app` listens on (127.0.0.1) until the block ends."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    loop.run_until_complete(site.start())
    port: int = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


async def _cancel_the_rest() -> None:
    """Handlers still waiting (a server that never answers) end before the loop closes."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
