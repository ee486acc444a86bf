"""Which container owns a GPU process: pid -> /proc/<pid>/cgroup -> container id / pod UID.

Kubernetes puts every container in a cgroup whose path names the pod UID
(`.../pod<uid>/...`, with `_` for `-` under the systemd driver) and ends in the runtime's
container id (`<id>`, `cri-containerd-<id>.scope`, `crio-<id>.scope`, `docker-<id>.scope`).
Both cgroup v1 (one line per controller) and v2 (`0::/path`) are read.

The join to allotments happens in `exporter.snapshot`; this module only resolves owners.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Owner:
    """Who a process belongs to; either field may be "" when the cgroup path lacks it."""

    container_id: str
    pod_uid: str


class PidResolver(Protocol):
    """Resolves process ids to owners; blocking, called off the event loop."""

    def owners(self, pids: Iterable[int]) -> Mapping[int, Owner]: ...


# The last path segment: a bare 64-hex id, or a runtime-prefixed systemd scope.
# `crio-conmon-<id>` is cri-o's monitor, not the container: the prefix list excludes it.
_CONTAINER_SEGMENT = re.compile(
    r"^(?:(?:cri-containerd|crio|docker|containerd|libpod)[-:])?([0-9a-f]{64})(?:\.scope)?$"
)
# Pod UIDs: a dashed (or, under systemd, underscored) UUID, or the 32-hex hash of static pods.
_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})"
    r"(?:\.slice)?(?:/|$)"
)


def owner_from_cgroup(text: str) -> Owner | None:
    """The owner named by a /proc/<pid>/cgroup file, or None for a non-container process."""
    best: Owner | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        owner = owner_from_path(parts[2])
        if owner is None:
            continue
        if owner.container_id and owner.pod_uid:
            return owner
        if best is None or (owner.container_id and not best.container_id):
            best = owner
    return best


def owner_from_path(path: str) -> Owner | None:
    """The owner named by one cgroup path, or None when it names neither container nor pod."""
    path = path.strip()
    segments = [s for s in path.split("/") if s]
    container_id = ""
    for segment in reversed(segments):
        match = _CONTAINER_SEGMENT.match(segment)
        if match:
            container_id = match.group(1)
            break
    pod_match = _POD_UID.search(path)
    pod_uid = pod_match.group(1).replace("_", "-") if pod_match else ""
    if not container_id and not pod_uid:
        return None
    return Owner(container_id=container_id, pod_uid=pod_uid)


class ProcCgroupResolver:
    """Reads `<procfs>/<pid>/cgroup`; a process that vanished or is unreadable has no owner."""

    def __init__(self, procfs: Path) -> None:
        self.procfs = procfs

    def available(self) -> bool:
        return self.procfs.is_dir()

    def owners(self, pids: Iterable[int]) -> dict[int, Owner]:
        if not self.available():
            raise FileNotFoundError(f"no procfs at {self.procfs}")
        found: dict[int, Owner] = {}
        for pid in pids:
            try:
                text = (self.procfs / str(pid) / "cgroup").read_text(errors="replace")
            except OSError:
                continue
            owner = owner_from_cgroup(text)
            if owner is not None:
                found[pid] = owner
        return found
