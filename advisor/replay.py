"""Trace replay of the Alibaba openb GPU-sharing trace onto the model (DESIGN.md §7)."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.diagnose import CAUSES, Diagnosis, diagnose
from advisor.core.model import Card, Cluster, Node, Pod, Policy, Request

CARD_UNITS = 1000  # gpu_milli of a whole card
CARD_MIB = CARD_UNITS * 128


class TraceError(Exception):
    """Bad trace input: str() is 'FILE: line N: problem'."""


@dataclass(frozen=True, slots=True)
class Replay:
    cluster: Cluster  # the trace as a cluster with every GPU pod Pending, in arrival order
    diagnosis: Diagnosis

    def end_state(self) -> Cluster:
        """Placed pods running where they landed, the rest Pending in queue order."""
        placed = {d.pod.name: d.placement for d in self.diagnosis.pods if d.placement}
        running = tuple(
            Pod(p.name, p.request, placed[p.name]) for p in self.cluster.pods if p.name in placed
        )
        pending = tuple(d.pod for d in self.diagnosis.pods if d.placement is None)
        return Cluster(self.cluster.nodes, running + pending, self.cluster.policy)

    def figures(self) -> dict[str, Any]:
        capacity = sum(len(n.cards) for n in self.cluster.nodes)
        demand = sum(_units(p) for p in self.cluster.pods)
        placed = sum(_units(d.pod) for d in self.diagnosis.pods if d.placement)
        failed = Counter(d.cause for d in self.diagnosis.pods if d.placement is None)
        return {
            "schema": "xgpu-advisor/replay/v1",
            "policy": {"node": self.cluster.policy.node, "card": self.cluster.policy.card},
            "pods": len(self.cluster.pods),
            "capacity_gpus": capacity,
            "demand_gpus": demand / CARD_UNITS,
            "placed_gpus": placed / CARD_UNITS,
            "allocation_ratio": round(placed / CARD_UNITS / capacity, 6) if capacity else 0.0,
            "failed": {c: failed[c] for c in CAUSES if c != "schedulable" and failed[c]},
        }


def _units(pod: Pod) -> int:
    return pod.request.memory_mib // 128


def _rows(path: Path, required: set[str]) -> list[tuple[int, dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = required - set(reader.fieldnames or [])
            if missing:
                raise TraceError(f"{path}: line 1: missing columns {', '.join(sorted(missing))}")
            return [(reader.line_num, row) for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TraceError(f"{path}: (file): {err}") from None


def _int(
    path: Path, line: int, row: dict[str, str], column: str, default: int | None = None
) -> int:
    value = row.get(column)
    if (value is None or value == "") and default is not None:
        return default
    try:
        number = int(value or "")
    except ValueError:
        raise TraceError(f"{path}: line {line}: {column} {value!r} is not an integer") from None
    if number < 0:
        raise TraceError(f"{path}: line {line}: {column} {number} is negative")
    return number


def load_trace(nodes_csv: Path, pods_csv: Path, policy: Policy) -> Cluster:
    nodes = []
    for line, row in _rows(nodes_csv, {"sn", "gpu"}):
        gpus = _int(nodes_csv, line, row, "gpu")
        if gpus:
            model = row.get("model") or ""
            cards = tuple(Card(i, CARD_MIB, model) for i in range(gpus))
            nodes.append(Node(row["sn"], cards))
    arrivals = []
    for order, (line, row) in enumerate(_rows(pods_csv, {"name", "num_gpu", "gpu_milli"})):
        gpus = _int(pods_csv, line, row, "num_gpu")
        if gpus == 0:
            continue  # CPU-only pods are not GPU demand
        milli = _int(pods_csv, line, row, "gpu_milli")
        created = _int(pods_csv, line, row, "creation_time", default=0)
        request = Request(gpus=gpus, memory_mib=gpus * milli * 128)
        arrivals.append((created, order, Pod(f"openb/{row['name']}", request)))
    arrivals.sort(key=lambda a: (a[0], a[1]))
    return Cluster(tuple(nodes), tuple(p for _, _, p in arrivals), policy)


def replay(cluster: Cluster) -> Replay:
    """Every pod arrives in order and never leaves; misfits are diagnosed at arrival."""
    return Replay(cluster, diagnose(cluster, node_detail_limit=0))
