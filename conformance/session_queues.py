"""Queues for the generated session clusters (`session_compare.generate_gangs`,
docs/conformance.md): the scenario keys of docs/design.md §10.1 that Volcano's proportion,
overcommit and enqueue read, drawn toward the edges where their comparisons turn.

- one to three queues besides `default`, weights 1 to 10, some with a capability, a
  guarantee, a priority, now and then Closed; `default` itself sometimes limited too;
- each gang in one of them (or `default`); pods of no group stay in `default`, as Volcano's
  controller files them;
- capabilities and guarantees of exactly one gang's request in one or two dimensions (or one
  unit either side of it, or two gangs' worth), and `min_resources` of exactly min_member
  members' request, so a queue's deserved or the overcommit check lands on a boundary;
- the actions with and without `enqueue`, sometimes an overcommit factor;
- on some, the capacity plugin in proportion's place (`queue_plugin: capacity`), most queues
  with a `deserved` drawn as the capabilities are (capacity bounds a task by realCapability,
  orders the queues by their share of it).

Requests are counted here as Volcano's api.NewResource counts a pod's (cpu in millicores,
memory in bytes, each vGPU resource in the pod spec's per-card value, a MIG pod's instances
as `nvidia.com/mig-<profile>`), from the scenario data, not through the advisor (the
resource's name is `advisor.core.mig`'s, which the kube harness's comparison holds to the
device plugin's).
"""

from __future__ import annotations

import random
from typing import Any

from advisor.core.mig import mig_resource
from advisor.core.quantity import quantity_milli, quantity_units

NUMBER, MEMORY, CORES = "volcano.sh/vgpu-number", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores"
ACTIONS = (None, None, ["allocate", "backfill"], ["enqueue", "allocate", "backfill"])
FACTORS = (1.0, 1.2, 1.5, 3.0)


def request(pod: dict[str, Any]) -> dict[str, int]:
    """The pod's request as Volcano's queues count it (TaskInfo.Resreq, less `pods`)."""
    resources = pod.get("resources", {})
    out = {
        "cpu": quantity_milli(resources.get("cpu", "0")),
        "memory": quantity_units(resources.get("memory", "0")),
    }
    asked = pod.get("request", {})
    gpus = int(asked.get("gpus", 1))
    if asked.get("mig_profile"):  # its instances, no vGPU (docs/design.md §13)
        out[mig_resource(asked["mig_profile"])] = gpus
        return {name: value for name, value in out.items() if value > 0}
    out[NUMBER] = gpus
    if asked.get("memory_mib"):
        out[MEMORY] = int(asked["memory_mib"]) // gpus
    if asked.get("core_percent"):
        out[CORES] = int(asked["core_percent"]) // gpus
    return {name: value for name, value in out.items() if value > 0}


def total(pods: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for pod in pods:
        for name, value in request(pod).items():
            out[name] = out.get(name, 0) + value
    return out


def written(name: str, value: int) -> str:
    """A quantity as a scenario writes it (millicores for cpu)."""
    return f"{value}m" if name == "cpu" else str(value)


def add_queues(data: dict[str, Any], rng: random.Random) -> None:
    """Queues, the gangs' queues and min_resources, the actions: in place, on some clusters."""
    groups: list[dict[str, Any]] = data.get("groups", [])
    if not groups or rng.random() < 0.25:
        return
    members = {g["name"]: [p for p in data["pods"] if p.get("group") == g["name"]] for g in groups}
    wants = {name: total(pods) for name, pods in members.items()}
    names = [f"q{k}" for k in range(rng.randint(1, 3))]
    if rng.random() < 0.2:
        names.append("default")
    for group in groups:
        group["queue"] = rng.choice([*names, "default"])
        if rng.random() < 0.3:  # enqueue's minResources: min_member members' request
            need = total(members[group["name"]][: group["min_member"]])
            dims = _dims(rng, need)
            group["min_resources"] = {n: written(n, _edge(rng, need[n])) for n in dims}
    queues = []
    for name in names:
        queue: dict[str, Any] = {"name": name}
        if (weight := rng.choice((1, 1, 2, 3, 10))) != 1:
            queue["weight"] = weight
        own = [wants[g["name"]] for g in groups if g["queue"] == name]
        basis = own or list(wants.values())
        if rng.random() < 0.5:
            queue["capability"] = _limit(rng, basis)
        if rng.random() < 0.25:
            queue["guarantee"] = _limit(rng, basis)
        if rng.random() < 0.2:
            queue["priority"] = rng.choice((1, 10))
        if rng.random() < 0.05:
            queue["state"] = "Closed"
        queues.append(queue)
    data["queues"] = queues
    actions = rng.choice(ACTIONS)
    if actions is not None:
        data["scheduler"]["actions"] = actions
    if rng.random() < 0.3:
        data["scheduler"]["overcommit_factor"] = rng.choice(FACTORS)
    if rng.random() < 0.3:  # the capacity plugin in proportion's place: the queues' deserved
        data["scheduler"]["queue_plugin"] = "capacity"
        for queue in queues:
            own = [wants[g["name"]] for g in groups if g["queue"] == queue["name"]]
            if rng.random() < 0.6:
                queue["deserved"] = _limit(rng, own or list(wants.values()))


def _dims(rng: random.Random, want: dict[str, int]) -> list[str]:
    names = sorted(want)
    return rng.sample(names, min(len(names), rng.choice((1, 1, 2)))) if names else []


def _edge(rng: random.Random, value: int) -> int:
    """The value, or one unit either side of it."""
    return max(0, value + rng.choice((0, 0, 0, -1, 1)))


def _limit(rng: random.Random, wants: list[dict[str, int]]) -> dict[str, str]:
    """A capability or guarantee: one gang's request (or two gangs') in one or two
    dimensions, at the edge."""
    want = dict(rng.choice(wants))
    if len(wants) > 1 and rng.random() < 0.25:
        for name, value in rng.choice(wants).items():
            want[name] = want.get(name, 0) + value
    return {n: written(n, _edge(rng, want[n])) for n in _dims(rng, want)}
