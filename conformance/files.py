"""Scenario files (advisor/examples, fixtures) as the harnesses read them.

The harnesses build no MIG (docs/design.md §13): a MIG instance is the device plugin's
extended resource `nvidia.com/mig-<profile>`, which none of the upstream schedulers run
here places by profile geometry. So a file's MIG cards, its MIG pods and the keys only MIG
reads leave the scenario for both sides, and the comparison covers the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.scenario import parse_text


def read_scenario(path: Path) -> Any:
    """The file's parsed scenario without MIG (a mapping), or whatever else it parses to."""
    data = parse_text(path.read_text(), str(path))
    return without_mig(data) if isinstance(data, dict) else data


def without_mig(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of `data` without MIG cards, MIG pods and the nodes' MIG strategy; a node left
    with no card leaves too, with the pods bound to it (a scenario's node has cards)."""
    out = dict(data)
    nodes, gone = [], set()
    for node in data.get("nodes") or []:
        if not isinstance(node, dict):
            nodes.append(node)
            continue
        node = {k: v for k, v in node.items() if k != "mig_strategy"}
        if isinstance(node.get("cards"), list):
            cards = [c for c in node["cards"] if not (isinstance(c, dict) and "mig" in c)]
            if not cards and node["cards"]:
                gone.add(node.get("name"))
                continue
            node["cards"] = cards
        nodes.append(node)
    if "nodes" in data:
        out["nodes"] = nodes
    if isinstance(data.get("pods"), list):
        out["pods"] = [
            p
            for p in data["pods"]
            if not _mig_pod(p) and not (isinstance(p, dict) and p.get("node") in gone)
        ]
    return out


def _mig_pod(pod: object) -> bool:
    if not isinstance(pod, dict):
        return False
    request = pod.get("request")
    return "mig_instances" in pod or (isinstance(request, dict) and "mig_profile" in request)
