"""Scenario files (advisor/examples, fixtures) as the harnesses read them.

kube-scheduler's harness and Volcano v1.14.1's session model MIG as the device plugin
advertises it under the `none` and `mixed` strategies (conformance/cluster/scenario/mig.go:
one `nvidia.com/mig-<profile>` per healthy instance, none under `none`), so the scenarios
they compare keep their MIG there (`with_mig`); under `single` the plugin names the
instances `nvidia.com/gpu`, which has no upstream meaning in those harnesses, so such a node
loses its MIG. Volcano v1.15.1's device-code harness (`./cards`) reads vGPU cards only: its
scenarios lose every MIG card, MIG pod and MIG key (`without_mig`), and the comparison
covers the rest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.scenario import parse_text

MIG_STRATEGIES = ("none", "mixed")  # what conformance/cluster/scenario/mig.go advertises


def read_scenario(path: Path, mig: bool = False) -> Any:
    """The file's parsed scenario as the harnesses read it (a mapping: `with_mig`'s with
    `mig`, else `without_mig`'s), or whatever else it parses to."""
    data = parse_text(path.read_text(), str(path))
    if not isinstance(data, dict):
        return data
    return with_mig(data) if mig else without_mig(data)


def without_mig(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of `data` without MIG cards, MIG pods and the nodes' MIG strategy; a node left
    with no card leaves too, with the pods bound to it (a scenario's node has cards)."""
    return _strip(data, lambda node: True, pending=True)


def with_mig(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of `data` as the kube and session harnesses read it: MIG kept on the nodes of
    a strategy they model, taken off the others as `without_mig` takes it, with the MIG pods
    bound there; a Pending MIG pod stays (it asks the instances the others advertise)."""
    return _strip(data, lambda node: node.get("mig_strategy", "none") not in MIG_STRATEGIES)


def _strip(
    data: dict[str, Any], where: Callable[[dict[str, Any]], bool], pending: bool = False
) -> dict[str, Any]:
    """`data` with MIG taken off the nodes `where` picks (and off the Pending pods too with
    `pending`)."""
    out = dict(data)
    nodes, stripped, gone = [], set(), set()
    for node in data.get("nodes") or []:
        if not isinstance(node, dict) or not where(node):
            nodes.append(node)
            continue
        stripped.add(node.get("name"))
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
        out["pods"] = [p for p in data["pods"] if not _leaves(p, stripped, gone, pending)]
    return out


def _leaves(pod: object, stripped: set[Any], gone: set[Any], pending: bool) -> bool:
    if not isinstance(pod, dict):
        return False
    if pod.get("node") in gone:
        return True
    request = pod.get("request")
    mig = "mig_instances" in pod or (isinstance(request, dict) and "mig_profile" in request)
    return mig and (pod.get("node") in stripped if "node" in pod else pending)
