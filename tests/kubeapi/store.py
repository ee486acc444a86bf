"""The world a Kubernetes API double serves: objects, one resourceVersion counter, the
history of changes a watch can resume from, and the open watches that each change reaches."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.kubeapi.objects import CREATED, JsonObject
from tests.kubeapi.selectors import Predicate

Resource = Literal[
    "pods",
    "nodes",
    "poddisruptionbudgets",
    "resourcequotas",
    "configmaps",
    "podgroups",
    "queues",
    "horizontalpodautoscalers",
]
Key = tuple[str, str]  # (namespace, name); namespace "" for nodes
KINDS: dict[str, str] = {
    "pods": "Pod",
    "nodes": "Node",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "resourcequotas": "ResourceQuota",
    "configmaps": "ConfigMap",
    "podgroups": "PodGroup",
    "queues": "Queue",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler",
}
VOLCANO = "scheduling.volcano.sh/v1beta1"  # Volcano's CRDs' group/version
API_VERSIONS: dict[str, str] = {
    "pods": "v1",
    "nodes": "v1",
    "poddisruptionbudgets": "policy/v1",
    "resourcequotas": "v1",
    "configmaps": "v1",
    "podgroups": VOLCANO,
    "queues": VOLCANO,
    "horizontalpodautoscalers": "autoscaling/v2",
}
NAMESPACED = frozenset(
    {
        "pods",
        "poddisruptionbudgets",
        "resourcequotas",
        "configmaps",
        "podgroups",
        "horizontalpodautoscalers",
    }
)
# Custom resources: served only while their CRD is installed, and (stored unstructured)
# listed with each item's kind and apiVersion, unlike the built-in kinds.
CUSTOM = frozenset({"podgroups", "queues"})
BOOKMARK, DROP, EXPIRE, END = "bookmark", "drop", "expire", "end"  # signals to open watches


@dataclass(frozen=True, slots=True)
class Change:
    rv: int
    resource: str
    type: str  # ADDED, MODIFIED, DELETED
    old: JsonObject | None
    new: JsonObject  # for DELETED: the object as deleted, carrying the deletion's rv


@dataclass(eq=False)
class Watcher:
    resource: str
    matches: Predicate
    bookmarks: bool
    queue: asyncio.Queue[Change | str] = field(default_factory=asyncio.Queue)


def object_key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return (metadata.get("namespace") or "", metadata["name"])


class KubeStore:
    """Objects by resource; every change bumps the resourceVersion and reaches open watches."""

    def __init__(self, *, history_limit: int | None = None) -> None:
        self.history_limit = history_limit  # changes kept for resuming watches; None: all
        self._objects: dict[str, dict[Key, JsonObject]] = {resource: {} for resource in KINDS}
        self._rv = 1000
        self._oldest_rv = self._rv  # a watch may start from any rv >= this one
        self._history: list[Change] = []
        self._watchers: set[Watcher] = set()

    @property
    def resource_version(self) -> int:
        return self._rv

    def add_pod(self, obj: JsonObject) -> JsonObject:
        return self.create("pods", obj)

    def replace_pod(self, obj: JsonObject) -> JsonObject:
        return self.replace("pods", obj)

    def modify_pod(
        self, namespace: str, name: str, change: Callable[[JsonObject], object]
    ) -> JsonObject:
        return self.modify("pods", (namespace, name), change)

    def delete_pod(self, namespace: str, name: str) -> JsonObject:
        return self.delete("pods", (namespace, name))

    def add_node(self, obj: JsonObject) -> JsonObject:
        return self.create("nodes", obj)

    def modify_node(self, name: str, change: Callable[[JsonObject], object]) -> JsonObject:
        return self.modify("nodes", ("", name), change)

    def delete_node(self, name: str) -> JsonObject:
        return self.delete("nodes", ("", name))

    def add_pdb(self, obj: JsonObject) -> JsonObject:
        return self.create("poddisruptionbudgets", obj)

    def modify_pdb(
        self, namespace: str, name: str, change: Callable[[JsonObject], object]
    ) -> JsonObject:
        return self.modify("poddisruptionbudgets", (namespace, name), change)

    def delete_pdb(self, namespace: str, name: str) -> JsonObject:
        return self.delete("poddisruptionbudgets", (namespace, name))

    def objects(self, resource: Resource) -> list[JsonObject]:
        return [copy.deepcopy(o) for _, o in sorted(self._objects[resource].items())]

    def create(self, resource: Resource, obj: JsonObject) -> JsonObject:
        new = copy.deepcopy(obj)
        new["kind"], new["apiVersion"] = KINDS[resource], API_VERSIONS[resource]
        metadata = new.setdefault("metadata", {})
        if resource in NAMESPACED:
            metadata.setdefault("namespace", "default")
        else:
            metadata.pop("namespace", None)
        key = object_key(new)
        if key in self._objects[resource]:
            raise KeyError(f"{resource} {key} already exists")
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", CREATED)
        return self._commit(resource, "ADDED", None, new)

    def replace(self, resource: Resource, obj: JsonObject) -> JsonObject:
        new = copy.deepcopy(obj)
        if resource in NAMESPACED:
            new.setdefault("metadata", {}).setdefault("namespace", "default")
        old = self._objects[resource][object_key(new)]
        new["kind"], new["apiVersion"] = KINDS[resource], API_VERSIONS[resource]
        for kept in ("uid", "creationTimestamp"):
            new["metadata"][kept] = old["metadata"][kept]
        return self._commit(resource, "MODIFIED", old, new)

    def modify(
        self, resource: Resource, key: Key, change: Callable[[JsonObject], object]
    ) -> JsonObject:
        new = copy.deepcopy(self._objects[resource][key])
        change(new)
        return self.replace(resource, new)

    def delete(self, resource: Resource, key: Key) -> JsonObject:
        old = self._objects[resource][key]
        return self._commit(resource, "DELETED", old, copy.deepcopy(old))

    def _commit(
        self, resource: str, kind: str, old: JsonObject | None, new: JsonObject
    ) -> JsonObject:
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        if kind == "DELETED":
            del self._objects[resource][object_key(new)]
        else:
            self._objects[resource][object_key(new)] = new
        change = Change(self._rv, resource, kind, old, new)
        self._history.append(change)
        if self.history_limit is not None and len(self._history) > self.history_limit:
            dropped = self._history[: -self.history_limit]
            self._history = self._history[-self.history_limit :]
            self._oldest_rv = dropped[-1].rv
        for watcher in self._watchers:
            if watcher.resource == resource:
                watcher.queue.put_nowait(change)
        return copy.deepcopy(new)

    # -- what open watches see -------------------------------------------------------------

    def compact(self) -> None:
        """Forget the history: watches and continues from any earlier rv now get 410."""
        self._history.clear()
        self._oldest_rv = self._rv

    def drop_watches(self) -> int:
        """Cut every open watch mid-stream (no clean end of the chunked body)."""
        return self._signal_watchers(DROP)

    def expire_watches(self) -> int:
        """Send every open watch an ERROR event with a 410 `Status`, then end it."""
        self.compact()
        return self._signal_watchers(EXPIRE)

    def end_watches(self) -> int:
        """End every open watch cleanly, as the server does when timeoutSeconds runs out."""
        return self._signal_watchers(END)

    def send_bookmarks(self) -> int:
        """A BOOKMARK now on every watch that asked for them."""
        asking = [w for w in self._watchers if w.bookmarks]
        for watcher in asking:
            watcher.queue.put_nowait(BOOKMARK)
        return len(asking)

    @property
    def open_watches(self) -> int:
        return len(self._watchers)

    async def wait_for_watches(self, count: int = 1, timeout_s: float = 5.0) -> None:
        async with asyncio.timeout(timeout_s):
            while len(self._watchers) < count:
                await asyncio.sleep(0.005)

    def _signal_watchers(self, signal: str) -> int:
        for watcher in self._watchers:
            watcher.queue.put_nowait(signal)
        return len(self._watchers)


def translate(change: Change, matches: Predicate) -> tuple[str, JsonObject] | None:
    """What a watcher with this selector sees of a change (objects may enter or leave it)."""
    was = change.old is not None and matches(change.old)
    if change.type == "DELETED":
        return ("DELETED", change.new) if was else None
    now = matches(change.new)
    if was and now:
        return ("MODIFIED", change.new)
    if now:
        return ("ADDED", change.new)
    return ("DELETED", change.new) if was else None
