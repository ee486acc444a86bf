"""A hostile Prometheus (and exporter) on loopback: aiohttp in a thread of its own, answering
each base path its own way. `time()` is answered honestly by every behaviour (the advisor
asks it first, as a reachability check), so the hostility meets the real queries.

Behaviours, by the first path segment of the base URL:
- `large/N`: every query streams N bytes of a valid-looking vector answer, chunked;
- `declared/N`: a Content-Length of N, then nothing (refusable before reading);
- `deep/N`: the result nested N arrays deep;
- `slow`: never answers (headers never come);
- `endless`: a chunked answer that never ends, a small chunk every 10 ms;
- `loop`: redirects to itself;
- `invalid/KIND`: node n1 with card 0, whose xgpu_card_memory_total_bytes is a bad series
  (`abc`, `nan`, `nolabel`), or a good one (`ok`);
- `metrics/N`: an exporter /metrics page of N bytes;
- `kube-deep/...`: a Kubernetes API answering every list nested 100,000 deep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web

from tests.advisor.sources.threaded_app import serve_in_thread

SERIES = b'{"metric":{"node":"n1","gpu_index":"0","gpu_uuid":"GPU-0"},"value":[1,"1"]},'
HEAD = b'{"status":"success","data":{"resultType":"vector","result":['


def _json(data: object) -> web.Response:
    return web.json_response({"status": "success", "data": data})


def _vector(result: list[object]) -> web.Response:
    return _json({"resultType": "vector", "result": result})


async def _stream(request: web.Request, size: int, pause: float = 0.0) -> web.StreamResponse:
    """`size` bytes (or forever when size < 0) of a vector answer that never closes."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    block = HEAD + SERIES * (64 * 1024 // len(SERIES))
    sent = 0
    while size < 0 or sent < size:
        await response.write(block)
        sent += len(block)
        block = SERIES * (64 * 1024 // len(SERIES))
        if pause:
            await asyncio.sleep(pause)
    await response.write(SERIES.rstrip(b",") + b"]}}")
    return response


async def _handle(request: web.Request) -> web.StreamResponse:
    parts = request.match_info["behaviour"].split("/")
    kind, arg = parts[0], (parts[1] if len(parts) > 1 else "")
    query = request.query.get("query", "")
    if kind == "metrics":
        return await _stream(request, int(arg))
    if kind == "loop":
        raise web.HTTPFound(str(request.rel_url))
    if query == "time()":
        return _json({"resultType": "scalar", "result": [1700000000.0, "1700000000"]})
    if kind == "large":
        return await _stream(request, int(arg))
    if kind == "endless":
        return await _stream(request, -1, pause=0.01)
    if kind == "declared":
        response = web.StreamResponse(headers={"Content-Length": arg})
        await response.prepare(request)
        await asyncio.Event().wait()
    if kind == "slow":
        await asyncio.Event().wait()
    if kind == "deep":
        depth = int(arg)
        body = HEAD + b"[" * depth + b"]" * depth + b"]}}"
        return web.Response(body=body, content_type="application/json")
    if kind == "invalid":
        return _vector(_invalid(arg, query))
    raise web.HTTPNotFound()


async def _kube_deep(request: web.Request) -> web.Response:
    """A Kubernetes API whose every list is nested 100,000 deep."""
    body = b'{"kind":"List","items":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return web.Response(body=body, content_type="application/json")


def _invalid(kind: str, query: str) -> list[object]:
    """A healthy node n1 with card 0, except the card memory series, which is `kind`."""
    card = {"node": "n1", "gpu_index": "0", "gpu_uuid": "GPU-0"}
    if "timestamp(" in query:
        labels = {"node": "n1"} if "xgpu_node_info" in query else card
        if "xgpu_card_memory_total_bytes" in query and kind == "nolabel":
            labels = {"node": "n1", "gpu_uuid": "GPU-0"}
        return [{"metric": labels, "value": [1700000000.0, "1699999999"]}]
    if "xgpu_node_info" in query:
        return [{"metric": {"node": "n1"}, "value": [1700000000.0, "1"]}]
    if "xgpu_card_memory_total_bytes" in query:
        value = {"abc": "abc", "nan": "NaN"}.get(kind, "17179869184")  # 16 GiB
        labels = {"node": "n1", "gpu_uuid": "GPU-0"} if kind == "nolabel" else card
        return [{"metric": labels, "value": [1700000000.0, value]}]
    if "xgpu_card_info" in query:
        info = {**card, "model": "Tesla T4"}
        return [{"metric": info, "value": [1700000000.0, "1"]}]
    if "xgpu_device_health" in query or "gpu_schedule_policy" in query:
        return [{"metric": card, "value": [1700000000.0, "0"]}]
    return []


@contextmanager
def hostile_server() -> Iterator[str]:
    """The server's base URL; behaviours are its paths (`BASE/large/1000000`)."""
    app = web.Application()
    app.router.add_get(r"/{behaviour:.+?}/api/v1/{endpoint:query|query_range}", _handle)
    app.router.add_get(r"/{behaviour:metrics/\d+}", _handle)
    app.router.add_get(r"/kube-deep/{path:.*}", _kube_deep)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


def deep_json(depth: int) -> str:
    """A JSON document nested `depth` lists deep (json.dumps would itself recurse)."""
    return "[" * depth + "]" * depth
