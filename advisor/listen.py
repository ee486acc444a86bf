"""`[HOST]:PORT` listen addresses, one grammar for both programs (the exporter's
`--web.listen-address`, the advisor's `serve --listen`).

Pure: text in, (host or None, port) out, ValueError with a one-line reason otherwise.
"""

from __future__ import annotations

MAX_PORT = 65535


def parse_listen(listen: str) -> tuple[str | None, int]:
    """`:9400` → (None, 9400): every interface; `[::1]:9400` → ("::1", 9400)."""
    host, sep, port = listen.rpartition(":")
    # isascii: str.isdigit() takes "²", which int() refuses; the length bounds int().
    if not sep or not (port.isascii() and port.isdigit()) or len(port) > 5:
        raise ValueError(f"{listen!r}: expected [HOST]:PORT, a port from 0 to {MAX_PORT}")
    if int(port) > MAX_PORT:
        raise ValueError(f"{listen!r}: expected [HOST]:PORT, a port from 0 to {MAX_PORT}")
    return host.strip("[]") or None, int(port)
