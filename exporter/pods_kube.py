"""This node's vGPU allotments from the Kubernetes API: list, then watch, resuming.

The source lists the pods with `spec.nodeName=NODE`, then watches from the list's
resourceVersion and applies ADDED/MODIFIED/DELETED events; BOOKMARKs only move the
resourceVersion. A watch the server ends cleanly resumes where it stopped; 410 Gone relists
at once; any other failure backs off exponentially (with jitter) and relists. It talks through
the real kubernetes_asyncio client with `_preload_content=False`, so the parser reads the
API's JSON exactly as sent (annotations and labels stay plain dicts), and reads watch lines
itself: a pod's JSON may exceed a megabyte, past the line cap of some aiohttp versions
(128 KiB in 3.9).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from advisor.kubeconfig import load_configuration
from advisor.podspec import parse_pod
from advisor.podspec.dialects import DIALECTS
from advisor.podspec.mig import MIG_DIALECT
from advisor.words import plural
from exporter.allotments import Allotment, MigContainer, PodsView
from exporter.pod_holdings import allotments_of, mig_containers_of

log = logging.getLogger(__name__)

ApiClientFactory = Callable[[], Any]  # returns a kubernetes_asyncio ApiClient, or awaits one
IGNORED_PHASES = frozenset({"Succeeded", "Failed"})  # containers gone: nothing to attribute
ALLOCATION_ANNOTATIONS = tuple(dialect.allocation for dialect in DIALECTS)
MAX_EVENT_BYTES = 32 * 2**20


class ApiError(Exception):
    """The API answered with an error `Status` (or something that is not JSON)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Kubernetes API {status}: {message}")
        self.status = status


class WatchExpired(Exception):
    """410 Gone: the resourceVersion is older than the server keeps; only a relist helps."""


@dataclass(frozen=True, slots=True)
class _PodEntry:
    allotments: tuple[Allotment, ...]
    problem: str | None  # why the pod's allocation could not be read
    mig: tuple[MigContainer, ...] = ()  # its containers that may hold MIG instances


class KubePodSource:
    """A `PodSource` over the Kubernetes API for one node (see the module docstring)."""

    def __init__(
        self,
        node_name: str,
        *,
        api_client_factory: ApiClientFactory | None = None,
        kubeconfig: str | None = None,
        in_cluster: bool | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        name: str = "kubernetes",
        start_timeout_s: float = 10.0,
        request_timeout_s: float = 30.0,
        watch_timeout_s: int = 300,
    ) -> None:
        if not node_name:
            raise ValueError("node_name is required (set NODE_NAME from the downward API)")
        self.name = name
        self.node_name = node_name
        self._factory = api_client_factory or self._client_from_config
        self._kubeconfig = kubeconfig
        self._in_cluster = in_cluster
        self._backoff_initial_s = backoff_initial_s
        self._backoff_max_s = backoff_max_s
        self._start_timeout_s = start_timeout_s
        self._request_timeout_s = request_timeout_s
        self._watch_timeout_s = watch_timeout_s
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()
        self._failures = 0  # failed attempts since the last watch event: sets the back-off
        self._stage = "client setup"  # what the run loop is doing, for error messages
        self._pods: dict[str, _PodEntry] = {}
        self._resource_version: str | None = None
        # What a list asks for, as client-go's reflector does: "0" (any version, served from
        # the API server's watch cache, so thousands of exporters starting never reach etcd),
        # the last version seen after a broken watch (never back in time), or None (a
        # consistent read) once our version is gone.
        self._list_from: str | None = "0"
        self._synced = False  # a list has succeeded and no failure came after it
        self._error: str | None = "no pod list from the Kubernetes API yet"
        self._last_problem: str | None = None
        self._logged_problems: set[str] = set()
        self._view: PodsView | None = None
        self.lists = 0  # successful lists, the first included: relists show as lists > 1

    # -- PodSource ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start listing and watching; wait for the first list (bounded), never raise on I/O."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"{self.name}-pod-watch")
        try:
            await asyncio.wait_for(self._first_attempt.wait(), self._start_timeout_s)
        except TimeoutError:
            log.warning("first pod list still running after %.1fs", self._start_timeout_s)

    def view(self) -> PodsView:
        if self._view is None:
            entries = [entry for _, entry in sorted(self._pods.items())]
            allotments = tuple(a for entry in entries for a in entry.allotments)
            mig = tuple(c for entry in entries for c in entry.mig)
            self._view = PodsView(allotments, self._synced, self._error_text(), mig)
        return self._view

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._drop_client()

    # -- what tests and logs look at ------------------------------------------------------

    @property
    def problems(self) -> int:
        """Pods on this node whose allocation could not be read (they have no allotments)."""
        return sum(1 for entry in self._pods.values() if entry.problem is not None)

    @property
    def last_problem(self) -> str | None:
        return self._last_problem

    @property
    def resource_version(self) -> str | None:
        return self._resource_version

    def _error_text(self) -> str | None:
        parts = [] if self._synced or self._error is None else [self._error]
        if count := self.problems:
            parts.append(
                f"{plural(count, 'pod')} with an unreadable GPU allocation, "
                f"last: {self._last_problem}"
            )
        return "; ".join(parts) or None

    def _changed(self) -> None:
        self._view = None

    # -- list and watch -------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                self._stage = "client setup"
                api = await self._api()
                self._stage = "list"
                await self._list(api)
                self._stage = "watch"
                while True:  # a watch the server ends cleanly resumes from where it was
                    if not await self._watch(api):  # ended at once, nothing in it: no spinning
                        await self._back_off()
                        self._failures += 1
            except WatchExpired as expired:
                log.info("watch expired (%s); relisting", expired)
                self._list_from = None  # our version is gone: a consistent read
                if self._failures:  # expired again before any event: do not spin
                    await self._back_off()
                self._failures += 1
            except Exception as error:  # any failure: report, back off, relist
                self._fail(error)
                if self._stage == "watch" and self._resource_version:
                    self._list_from = self._resource_version  # not older than what we saw
                elif isinstance(error, ApiError) and error.status in (410, 504):
                    self._list_from = None  # e.g. "too large resource version" after a restore
                if isinstance(error, ApiError) and error.status == 401:
                    await self._drop_client()  # re-read the credentials (rotated tokens)
                await self._back_off()
                self._failures += 1

    async def _back_off(self) -> None:
        exponent = min(self._failures, 30)
        ceiling = min(self._backoff_max_s, self._backoff_initial_s * 2**exponent)
        await asyncio.sleep(ceiling * random.uniform(0.5, 1.0))

    def _fail(self, error: BaseException) -> None:
        text = str(error) or type(error).__name__
        level = logging.DEBUG if self._failures else logging.WARNING  # once per streak
        log.log(level, "pod source %s: %s failed: %s", self.name, self._stage, text)
        self._error = f"Kubernetes API: {self._stage} failed: {text}"
        self._synced = False
        self._first_attempt.set()
        self._changed()

    async def _list(self, api: Any) -> None:
        response = await api.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={self.node_name}",
            resource_version=self._list_from,
            _preload_content=False,
            _request_timeout=self._request_timeout_s,
        )
        async with response:
            body = await _json_body(response)
        items = body.get("items")
        version = (body.get("metadata") or {}).get("resourceVersion")
        if not isinstance(items, list) or not isinstance(version, str):
            raise ApiError(response.status, "pod list without items or resourceVersion")
        pods: dict[str, _PodEntry] = {}
        for item in items:
            key = _object_key(item)
            entry = self._entry(item) if key is not None else None
            if key is not None and entry is not None:
                pods[key] = entry
        self._pods, self._resource_version = pods, version
        self._synced, self._error = True, None
        self.lists += 1
        self._first_attempt.set()
        self._changed()

    async def _watch(self, api: Any) -> int:
        """One watch request, applying its events until the server ends it; how many came."""
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self._request_timeout_s,
            sock_read=self._watch_timeout_s + self._request_timeout_s,
        )
        response = await api.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={self.node_name}",
            watch=True,
            resource_version=self._resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_timeout_s,
            _preload_content=False,
            _request_timeout=timeout,
        )
        async with response:
            if response.status != 200:
                await _json_body(response)  # raises the server's Status as ApiError/Gone
            events = 0
            async for line in _lines(response.content):
                self._apply(json.loads(line))
                self._failures = 0
                events += 1
        return events

    def _apply(self, event: object) -> None:
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            raise ApiError(200, f"malformed watch event {str(event)[:200]}")
        kind, obj = event.get("type"), event["object"]
        if kind == "ERROR":
            _raise_status(obj.get("code") if isinstance(obj.get("code"), int) else 500, obj)
        metadata = obj.get("metadata")
        version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
        if isinstance(version, str) and version:
            self._resource_version = version
        if kind == "BOOKMARK":
            return
        key = _object_key(obj)
        if key is None:
            log.debug("ignoring a %s event for an object without namespace/name", kind)
            return
        entry = self._entry(obj) if kind in ("ADDED", "MODIFIED") else None
        old = self._pods.pop(key, None)
        if entry is not None:
            self._pods[key] = entry
        if old != entry:
            self._changed()

    # -- one pod -----------------------------------------------------------------------

    def _entry(self, obj: dict[str, Any]) -> _PodEntry | None:
        """The pod's allotments (and its containers that may hold MIG instances); None when
        it holds no vGPU here (or no longer runs)."""
        try:
            pod = parse_pod(obj)
        except Exception as error:  # it promises not to raise; a bug must not stop the watch
            return self._problem(f"{_object_key(obj)}: pod parser failed: {error!r}")
        if pod is None or pod.phase in IGNORED_PHASES:
            return None
        if pod.node is not None and pod.node != self.node_name:
            return None
        if pod.dialect == MIG_DIALECT:  # instances, no vGPU (advisor.podspec.mig)
            return _PodEntry((), None, mig_containers_of(pod)) if pod.node else None
        unreadable = [p for p in pod.problems if any(a in p for a in ALLOCATION_ANNOTATIONS)]
        if unreadable:
            return self._problem(f"{pod.key}: {unreadable[0]}")
        try:
            return _PodEntry(allotments_of(pod), None, mig_containers_of(pod) if pod.node else ())
        except ValueError as error:
            return self._problem(f"{pod.key}: {error}")

    def _problem(self, text: str) -> _PodEntry:
        if text not in self._logged_problems:  # once each: relists and status updates repeat
            if len(self._logged_problems) > 1000:
                self._logged_problems.clear()
            self._logged_problems.add(text)
            log.warning("pod allocation unreadable: %s", text)
        self._last_problem = text
        return _PodEntry((), text)

    # -- client ------------------------------------------------------------------------

    async def _api(self) -> Any:
        from kubernetes_asyncio.client import CoreV1Api

        if self._client is None:
            client = self._factory()
            self._client = await client if inspect.isawaitable(client) else client
        return CoreV1Api(self._client)

    async def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _client_from_config(self) -> Any:
        """A client configured as `advisor.kubeconfig` picks: --kubeconfig, $KUBECONFIG,
        in-cluster when running in a pod, ~/.kube/config."""
        from kubernetes_asyncio.client import ApiClient

        configuration = await load_configuration(self._kubeconfig, in_cluster=self._in_cluster)
        return ApiClient(configuration=configuration)


def _object_key(obj: object) -> str | None:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return None
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not name:
        return None
    return f"{namespace}/{name}"


async def _json_body(response: aiohttp.ClientResponse) -> dict[str, Any]:
    """The response's JSON object; a non-2xx answer raises its `Status` (410: WatchExpired)."""
    raw = await response.read()
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not 200 <= response.status < 300:
        _raise_status(response.status, body if isinstance(body, dict) else {"message": raw[:200]})
    if not isinstance(body, dict):
        raise ApiError(response.status, f"answer is not a JSON object: {raw[:200]!r}")
    return body


def _raise_status(code: int, status: dict[str, Any]) -> None:
    message = f"{status.get('reason') or ''} {status.get('message') or ''}".strip()
    if code == 410:
        raise WatchExpired(message or "410 Gone")
    raise ApiError(code, message or "error")


async def _lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Newline-delimited events of any length (up to MAX_EVENT_BYTES)."""
    buffer = bytearray()
    async for chunk in stream.iter_any():
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end]).strip()
            if line:
                yield line
            start = end + 1
        del buffer[:start]
        if len(buffer) > MAX_EVENT_BYTES:
            raise ApiError(200, f"watch event longer than {MAX_EVENT_BYTES} bytes")
    if buffer.strip():
        yield bytes(buffer).strip()


__all__ = ["ApiError", "KubePodSource", "WatchExpired"]
