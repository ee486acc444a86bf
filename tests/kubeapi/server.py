"""A local Kubernetes API double: pods, nodes, PodDisruptionBudgets, ResourceQuotas,
ConfigMaps, HorizontalPodAutoscalers and Volcano's PodGroups and Queues over the API's own
JSON, list and watch.

What it speaks, as kube-apiserver does: `GET /api/v1/pods`, `/api/v1/namespaces/NS/pods[/NAME]`,
`/api/v1/nodes[/NAME]`, `/apis/policy/v1/poddisruptionbudgets`,
`/apis/policy/v1/namespaces/NS/poddisruptionbudgets[/NAME]`, the same for resourcequotas and
configmaps under /api/v1 and for Volcano's CRDs under /apis/scheduling.volcano.sh/v1beta1
(queues cluster-scoped; 404 for both while `volcano` is False, as without the CRDs), and
for horizontalpodautoscalers under /apis/autoscaling/v2 (404 while `autoscaling_v2` is False,
as on a cluster older than 1.23);
`fieldSelector`, `labelSelector`, `limit`/`continue`, `resourceVersion`; `watch=true` streams
newline-delimited `{"type", "object"}` events from a resourceVersion (none or "0": synthetic
ADDED for the current state first), with DELETED/ADDED when an object leaves/enters the
selector, BOOKMARKs when asked, and an ERROR event holding a 410 `Status` for a
resourceVersion older than the kept history. Errors are `Status` objects.

Tests change the world with `add_pod`/`modify_pod`/`delete_pod` (the node and pdb twins, and
`create`/`modify`/`delete` for any kind):
each bumps the one resourceVersion counter and reaches every open watch. Faults: `fail_next`
(a status code, or a dropped connection; for every resource or one), `drop_watches`,
`expire_watches`, `compact`, `delay_s`, `go_down`/`come_up`. `requests` records what the
client asked.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from aiohttp import web

from tests.kubeapi.objects import JsonObject, status
from tests.kubeapi.selectors import Predicate, field_selector, label_selector
from tests.kubeapi.store import (
    API_VERSIONS,
    BOOKMARK,
    CUSTOM,
    DROP,
    EXPIRE,
    KINDS,
    NAMESPACED,
    VOLCANO,
    Change,
    KubeStore,
    Resource,
    Watcher,
    object_key,
    translate,
)

FaultTarget = Literal["any", "list", "watch", "get"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, str]

    @property
    def watch(self) -> bool:
        return _truthy(self.query.get("watch"))


@dataclass(slots=True)
class _Fault:
    target: FaultTarget
    status: int | None  # None: drop the connection without an answer
    resource: Resource | None = None  # None: any resource

    def hits(self, target: str, resource: str | None) -> bool:
        return self.target in ("any", target) and self.resource in (None, resource)


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class KubeApiDouble(KubeStore):
    """One in-process API server on a loopback port; use `async with KubeApiDouble() as api`."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        items_with_kind: bool = False,
        bookmark_interval_s: float | None = None,
        watch_gone_as_http: bool = False,
        require_token: str | None = None,
        history_limit: int | None = None,
    ) -> None:
        super().__init__(history_limit=history_limit)
        self.host = host
        self.port = 0
        self.items_with_kind = items_with_kind  # the real API leaves kind out of list items
        self.bookmark_interval_s = bookmark_interval_s
        self.watch_gone_as_http = watch_gone_as_http  # 410 as an HTTP answer, not an event
        self.require_token = require_token
        # Volcano's CRDs installed: without them their paths answer 404, as the real API's do
        self.volcano = True
        # autoscaling/v2 served (GA since Kubernetes 1.23): without it its paths answer 404
        self.autoscaling_v2 = True
        self.delay_s = 0.0  # every answer waits this long first
        self.requests: list[RecordedRequest] = []
        self._faults: list[_Fault] = []
        self._down = False
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> KubeApiDouble:
        app = web.Application(middlewares=[self._middleware])
        # Every kind at the paths kube-apiserver serves it: core kinds under /api/v1, the
        # others under /apis/GROUP/VERSION; namespaced ones also per namespace.
        resources: tuple[Resource, ...] = get_args(Resource)
        for resource in resources:
            version = API_VERSIONS[resource]
            base = f"/api/{version}" if version == "v1" else f"/apis/{version}"
            at = f"{base}/namespaces/{{namespace}}/{resource}"
            app.router.add_get(f"{base}/{resource}", self._collection(resource))
            if resource in NAMESPACED:
                app.router.add_get(at, self._collection(resource))
            single = at if resource in NAMESPACED else f"{base}/{resource}"
            app.router.add_get(single + "/{name}", self._get(resource))
        # handler_cancellation: a watch handler learns at once that its client went away.
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, handler_cancellation=True
        )
        await self._runner.setup()
        await self.come_up()
        return self

    async def close(self) -> None:
        self._signal_watchers(DROP)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = self._site = None

    async def __aenter__(self) -> KubeApiDouble:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def go_down(self) -> None:
        """Stop listening and cut every connection: clients see refused connections."""
        self._down = True
        self._signal_watchers(DROP)
        if self._site is not None:
            await self._site.stop()
            self._site = None

    async def come_up(self) -> None:
        assert self._runner is not None, "start() first"
        self._site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await self._site.start()
        if not self.port:  # bound to port 0: keep the port the system chose
            self.port = int(self._runner.addresses[0][1])
        self._down = False

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def configuration(self) -> Any:
        """A kubernetes_asyncio `Configuration` pointing at this server."""
        from kubernetes_asyncio.client import Configuration

        config = Configuration(host=self.url)
        if self.require_token:
            config.api_key = {"BearerToken": self.require_token}
            config.api_key_prefix = {"BearerToken": "Bearer"}
        return config

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig file for processes that load one (JSON is valid YAML)."""
        user = {"token": self.require_token} if self.require_token else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "users": [{"name": "double", "user": user}],
            "contexts": [{"name": "double", "context": {"cluster": "double", "user": "double"}}],
            "current-context": "double",
        }
        path.write_text(json.dumps(config, indent=2))
        return path

    # -- faults ------------------------------------------------------------------------

    def fail_next(
        self,
        count: int = 1,
        *,
        status_code: int | None = 500,
        target: FaultTarget = "any",
        resource: Resource | None = None,
    ) -> None:
        """The next `count` matching requests get a `Status` error (None: a dropped connection).
        `resource` limits the fault to requests for that resource ("poddisruptionbudgets").

        aiohttp resends a GET once when its connection drops, so it takes two drops in a row
        for one client call to fail.
        """
        self._faults.extend(_Fault(target, status_code, resource) for _ in range(count))

    def clear_faults(self) -> None:
        self._faults.clear()

    # -- HTTP --------------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        if self._down:  # a kept-alive connection from before go_down()
            _abort(request)
            return web.Response(status=503)
        self.requests.append(RecordedRequest(request.method, request.path, dict(request.query)))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.require_token and request.headers.get("Authorization") != (
            f"Bearer {self.require_token}"
        ):
            return _status_response(401, "Unauthorized", "Unauthorized")
        target = "get" if "name" in request.match_info else "list"
        if target == "list" and _truthy(request.query.get("watch")):
            target = "watch"
        resource = _resource_of(request.path)
        unserved = resource == "horizontalpodautoscalers" and not self.autoscaling_v2
        if (resource in CUSTOM and not self.volcano) or unserved:
            message = "the server could not find the requested resource"
            return _status_response(404, "NotFound", message)
        for fault in self._faults:
            if fault.hits(target, resource):
                self._faults.remove(fault)
                if fault.status is None:
                    _abort(request)
                    return web.Response(status=503)
                return _status_response(fault.status, _reason(fault.status), "injected fault")
        response: web.StreamResponse = await handler(request)
        return response

    def _get(self, resource: Resource) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            key = (request.match_info.get("namespace", ""), request.match_info["name"])
            obj = self._objects[resource].get(key)
            if obj is None:
                message = f'{resource} "{key[1]}" not found'
                return _status_response(404, "NotFound", message)
            return web.json_response(obj)

        return handle

    def _collection(self, resource: Resource) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            query = request.query
            try:
                matches = self._matcher(resource, request.match_info.get("namespace"), query)
            except ValueError as error:
                return _status_response(400, "BadRequest", str(error))
            if _truthy(query.get("watch")):
                return await self._watch(request, resource, matches)
            return self._list(resource, matches, query)

        return handle

    def _matcher(
        self, resource: Resource, namespace: str | None, query: Mapping[str, str]
    ) -> Predicate:
        checks: list[Predicate] = []
        if namespace is not None:
            checks.append(lambda o: o["metadata"].get("namespace") == namespace)
        if query.get("fieldSelector"):
            checks.append(field_selector(query["fieldSelector"], resource))
        if query.get("labelSelector"):
            checks.append(label_selector(query["labelSelector"]))
        return lambda obj: all(check(obj) for check in checks)

    def _list(
        self, resource: Resource, matches: Predicate, query: Mapping[str, str]
    ) -> web.StreamResponse:
        list_rv, after = self._rv, ""
        if query.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(query["continue"]))
                list_rv, after = int(token["rv"]), str(token["after"])
            except (ValueError, KeyError, TypeError):
                return _status_response(400, "BadRequest", "invalid continue token")
            if list_rv < self._oldest_rv:
                message = "The provided continue parameter is too old to display a consistent list"
                return _status_response(410, "Expired", message)
        items = [
            obj
            for key, obj in sorted(self._objects[resource].items())
            if "/".join(key) > after and matches(obj)
        ]
        metadata: JsonObject = {"resourceVersion": str(list_rv)}
        limit = int(query.get("limit") or 0)
        if 0 < limit < len(items):
            last = "/".join(object_key(items[limit - 1]))
            token_json = json.dumps({"rv": list_rv, "after": last}).encode()
            metadata["continue"] = base64.urlsafe_b64encode(token_json).decode()
            metadata["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        body = {
            "kind": f"{KINDS[resource]}List",
            "apiVersion": API_VERSIONS[resource],
            "metadata": metadata,
            "items": [self._list_item(obj) for obj in items],
        }
        return web.json_response(body)

    def _list_item(self, obj: JsonObject) -> JsonObject:
        if self.items_with_kind or obj.get("apiVersion") == VOLCANO:
            return obj
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}

    async def _watch(
        self, request: web.Request, resource: Resource, matches: Predicate
    ) -> web.StreamResponse:
        query = request.query
        since = query.get("resourceVersion") or "0"
        try:
            since_rv = int(since)
        except ValueError:
            return _status_response(400, "BadRequest", f"invalid resource version {since!r}")
        too_old = since_rv != 0 and since_rv < self._oldest_rv
        if too_old and self.watch_gone_as_http:
            return _status_response(410, "Expired", f"too old resource version: {since_rv}")
        watcher = Watcher(resource, matches, _truthy(query.get("allowWatchBookmarks")))
        if since_rv == 0:  # "current state, then changes": synthetic ADDED events
            first = [
                ("ADDED", obj) for _, obj in sorted(self._objects[resource].items()) if matches(obj)
            ]
        elif too_old:
            message = f"too old resource version: {since_rv} ({self._oldest_rv})"
            first = [("ERROR", status(410, "Expired", message))]
        else:
            replay = (c for c in self._history if c.rv > since_rv and c.resource == resource)
            first = [event for c in replay if (event := translate(c, matches)) is not None]
        if not too_old:
            self._watchers.add(watcher)  # no await since the snapshot above: nothing is lost
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            for kind, obj in first:
                await _send(response, kind, obj)
            if not too_old:
                await self._stream(request, response, watcher, query.get("timeoutSeconds"))
            await response.write_eof()
        except ConnectionError:
            pass
        finally:
            self._watchers.discard(watcher)
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        timeout_seconds: str | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + float(timeout_seconds) if timeout_seconds else None
        while True:
            waits = [deadline - loop.time()] if deadline is not None else []
            if watcher.bookmarks and self.bookmark_interval_s:
                waits.append(self.bookmark_interval_s)
            try:
                item = await asyncio.wait_for(watcher.queue.get(), min(waits) if waits else None)
            except TimeoutError:
                if deadline is not None and loop.time() >= deadline:
                    return
                item = BOOKMARK
            if isinstance(item, Change):
                event = translate(item, watcher.matches)
                if event is not None:
                    await _send(response, *event)
            elif item == BOOKMARK:
                kind, metadata = KINDS[watcher.resource], {"resourceVersion": str(self._rv)}
                version = API_VERSIONS[watcher.resource]
                bookmark = {"kind": kind, "apiVersion": version, "metadata": metadata}
                await _send(response, "BOOKMARK", bookmark)
            elif item == EXPIRE:
                message = f"too old resource version ({self._oldest_rv})"
                await _send(response, "ERROR", status(410, "Expired", message))
                return
            elif item == DROP:
                _abort(request)
                raise ConnectionResetError("dropped by the test")
            else:
                return


async def _send(response: web.StreamResponse, kind: str, obj: JsonObject) -> None:
    await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")


def _resource_of(path: str) -> str | None:
    """The resource a request path names (`/api/v1/namespaces/ns/pods/p` -> "pods")."""
    parts = path.strip("/").split("/")
    return next((part for part in parts[2:] if part in KINDS), None)


def _abort(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()


def _reason(code: int) -> str:
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound"}
    reasons |= {410: "Expired", 429: "TooManyRequests", 500: "InternalError"}
    return reasons.get(code, "ServiceUnavailable")


def _status_response(code: int, reason: str, message: str) -> web.Response:
    return web.json_response(status(code, reason, message), status=code)
