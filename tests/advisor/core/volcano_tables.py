"""Scenario builders for the Volcano test tables converted here (plugins' and actions'
`*_test.go`): upstream's nodes (`util.BuildNode`: cpu, memory, pod slots) as GPU nodes of
four 16 GiB cards, and its pods (`util.BuildPod`: cpu and memory in a PodGroup) each asking
one card beside, so that the session judges them as it judges any vGPU pod."""

from __future__ import annotations

from typing import Any


def node(name: str, cpu: str, memory: str, pods: int = 10, **labels: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
    }
    if labels:
        out["labels"] = labels
    return out


def pod(
    namespace: str,
    memory_mib: int,
    name: str,
    group: str,
    cpu: str,
    memory: str,
    *,
    on: str | None = None,
    card: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    """Pod `namespace/name` of PodGroup `namespace/group` asking one card of `memory_mib`;
    bound to `on` (card `card`, modulo the node's four) where given."""
    out: dict[str, Any] = {
        "name": f"{namespace}/{name}",
        "group": f"{namespace}/{group}",
        "request": {"gpus": 1, "memory_mib": memory_mib},
        "resources": {"cpu": cpu, "memory": memory},
        **extra,
    }
    if on is not None:
        out["node"], out["cards"] = on, [card % 4]
    return out
