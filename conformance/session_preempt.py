"""Volcano's preempt and reclaim actions (the `volcano` harness, v1.14.1, after allocate in
the same session) beside the advisor's preemption verdicts (`advisor.core.preemption`), on
generated clusters where they matter (docs/conformance.md): per Pending pod both left
unplaced, whether one of the actions pipelined it, on which node, and the victims evicted
for it.

Upstream's side is what the harness reads off the session: a pod preempt or reclaim
pipelined (`preempt`: action, node, victims committed for it). The advisor's: `evicts` (node
and victims), `no-victims` with a node (pipelined without evicting), or no node (`off`,
`not-eligible`, `no-victims`). `helps` (whether the pod then fits its cards) is not compared:
the session pipelines on node sums and never runs the card filter again, so it shows
nothing of it.

Counted apart, as explained (docs/conformance.md, "Preempt and reclaim"): the clusters
where v1.14.1 departs from v1.15.1 in a way that reaches the outcome (its preempt over two
queues or more, evictions kept from a node the preemptor then left, reclaim's victim
evicted before the comparison), and lines where upstream draws (reclaim's node order,
preempt's pass within jobs in `ssn.Jobs` order, the gang plugin's choice among a job's
tasks). A cluster whose allocate already differs (`session_compare`) is counted apart
whole.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, NamedTuple

from advisor.core.gang import diagnose_jobs
from advisor.core.preemption import Preemption
from advisor.scenario import ScenarioError, scenario_from_data
from conformance import harness, session_compare
from conformance.files import read_scenario
from conformance.session_compare import EXPLAINED, generate_gangs

# One queue: preempt; several: reclaim, and now and then both (v1.14.1's preempt with two
# queues or more is a draw: counted apart, as explained).
ONE_QUEUE = (["allocate", "preempt", "backfill"], ["enqueue", "allocate", "preempt", "backfill"])
QUEUES = (
    ["allocate", "reclaim", "backfill"],
    ["enqueue", "allocate", "reclaim", "backfill"],
    ["allocate", "preempt", "reclaim", "backfill"],
)
PRIORITIES = (-10, 0, 0, 10, 100)


class Row(NamedTuple):
    compared: int  # Pending pods both sides left unplaced
    diffs: list[str]
    allocate_differs: bool
    leaked: bool = False  # v1.14.1 kept a discarded gang's cards (session_compare)


def generate_preempt(seed: int) -> dict[str, Any]:
    """A session cluster (`generate_gangs`) with preempt or reclaim among its actions: more
    running pods, on cards they fill; running pods given priorities, some `preemptable:
    false`, some in running gangs (of min_member up to their size, so the gang plugin
    lets one go or not) in the queues; the queues reclaimable or not; most gangs valid;
    the gang plugin's options drawn. On some, one queue (`default`) and preempt; on the
    others the queues and reclaim."""
    data = generate_gangs(seed)
    rng = random.Random(seed * 7919 + 3)  # its own draws: the gangs stay as they were
    sched = data["scheduler"]
    if rng.random() < 0.45:
        sched["actions"] = list(rng.choice(ONE_QUEUE))
        data.pop("queues", None)
        for group in data.get("groups", []):
            group.pop("queue", None)
    else:
        sched["actions"] = list(rng.choice(QUEUES))
    gang = {}
    if rng.random() < 0.6:
        gang["preemptable"] = False  # else a pod of no group (min_member 1) is no victim
    if rng.random() < 0.2:
        gang["job_starving"] = False
    if gang:
        sched["gang"] = gang
    queues: list[dict[str, Any]] = data.setdefault("queues", [])
    if not any(q["name"] == "default" for q in queues) and rng.random() < 0.3:
        queues.append({"name": "default"})
    for queue in queues:
        if rng.random() < 0.3:
            queue["reclaimable"] = False
    if not queues:
        data.pop("queues")
    for group in data.get("groups", []):  # most gangs valid: a short one never preempts
        size = sum(p.get("group") == group["name"] for p in data["pods"])
        if rng.random() < 0.7:
            group["min_member"] = min(group["min_member"], size)
    _fill(rng, data)
    _fill_mig(random.Random(seed * 7919 + 8), data)  # its own draws: none without MIG
    running = [p for p in data["pods"] if "node" in p]
    for pod in running:
        if priority := rng.choice(PRIORITIES):
            pod["priority"] = priority
        if rng.random() < 0.15:
            pod["preemptable"] = False
    _running_gangs(rng, data, running, [q["name"] for q in queues])
    return data


def _fill(rng: random.Random, data: dict[str, Any]) -> None:
    """More running pods, each taking what a healthy card has left (memory, one slot), on
    some cards: the Pending pods then find the cards full and turn to preemption."""
    default = data.get("max_vgpus_per_card", 10)
    pods = data["pods"]
    for node in data["nodes"]:
        name = node["name"]
        here = [p for p in pods if p.get("node") == name]
        others = len(node.get("other_pods", [])) + len(node.get("resident_pods", []))
        limit = int(node.get("allocatable", {}).get("pods", 110)) - others
        for card in node["cards"]:
            if card.get("healthy", True) is False or "mig" in card or rng.random() < 0.3:
                continue  # (a MIG card takes MIG pods only)
            on = [p for p in here if card["index"] in p.get("cards", ())]
            used = sum(p["request"].get("memory_mib", 0) // p["request"]["gpus"] for p in on)
            left = card["memory_mib"] - used
            if left < 1024 or len(on) >= card.get("max_vgpus", default) or len(here) >= limit:
                continue
            pod = {
                "name": f"run/fill-{len(pods)}",
                "node": name,
                "cards": [card["index"]],
                "request": {"gpus": 1, "memory_mib": left},
            }
            pods.append(pod)
            here.append(pod)


def _fill_mig(rng: random.Random, data: dict[str, Any]) -> None:
    """On some MIG cards, a running pod on each instance no pod holds; then half the Pending
    MIG pods of no group ask one of the profiles so held, on any node, at priority 100 (a
    job priority above most running pods'): they find the instances held and turn to
    preemption."""
    pods = data["pods"]
    held = {
        (p["node"], m["card"], m["start"])
        for p in pods
        if "node" in p
        for m in p.get("mig_instances", ())
    }
    filled: list[str] = []
    for node in data["nodes"]:
        for card in node["cards"]:
            if "mig" not in card or rng.random() < 0.3:
                continue
            for inst in card["mig"]["instances"]:
                if (node["name"], card["index"], inst["start"]) in held:
                    continue
                filled.append(inst["profile"])
                pods.append(
                    {
                        "name": f"run/mig-fill-{len(pods)}",
                        "node": node["name"],
                        "request": {"gpus": 1, "mig_profile": inst["profile"]},
                        "mig_instances": [{"card": card["index"], "start": inst["start"]}],
                    }
                )
    for pod in pods:
        mig = "mig_profile" in pod["request"] and "node" not in pod and "group" not in pod
        if mig and filled and rng.random() < 0.5:  # any node: no selector, every taint
            for key in ("node_selector", "affinity"):
                pod.pop(key, None)
            pod["tolerations"] = [{"operator": "Exists"}]
            pod["request"] = {**pod["request"], "mig_profile": rng.choice(filled)}
            pod["priority"] = 100


def _running_gangs(
    rng: random.Random, data: dict[str, Any], running: list[dict[str, Any]], queues: list[str]
) -> None:
    groups: list[dict[str, Any]] = data.setdefault("groups", [])
    start = 0
    while start < len(running):
        size = rng.randint(1, 3)
        members = running[start : start + size]
        start += size
        if rng.random() < 0.4:
            continue  # pods of no group: Volcano files them in `default`
        name = f"run/rg-{start}"
        group: dict[str, Any] = {"name": name, "min_member": rng.randint(1, len(members))}
        if queues:
            group["queue"] = rng.choice([*queues, "default"])
        if priority := members[0].get("priority", 0):
            group["priority"] = priority
        groups.append(group)
        for m in members:
            m["group"] = name
    if not groups:
        data.pop("groups")


def advisor_side(data: dict[str, Any]) -> dict[str, Preemption | None]:
    """The advisor's verdict per Pending pod (None: its cycle placed it)."""
    cluster = scenario_from_data(data, "<generated>", "volcano-vgpu")
    return {v.pod.name: v.preemption for v in diagnose_jobs(cluster).diagnosis.pods}


def _theirs(up: dict[str, Any]) -> tuple[str | None, frozenset[str]]:
    pre = up.get("preempt")
    if pre is None:
        return None, frozenset()
    return pre["node"], frozenset(v["pod"] for v in pre["victims"])


def _mine(verdict: Preemption) -> tuple[str | None, frozenset[str]]:
    return verdict.node, frozenset(verdict.victims)


def _spell(node: str | None, victims: frozenset[str], verdict: str) -> str:
    if node is None:
        return verdict
    return f"{node} evicting [{', '.join(sorted(victims))}]"


def differences(data: dict[str, Any], theirs: dict[str, Any]) -> tuple[list[str], int]:
    """What differs, one line per pod both left unplaced (lines upstream's draws or
    v1.14.1's departures from v1.15.1 explain start with EXPLAINED: module docstring), and
    how many such pods."""
    mine = advisor_side(data)
    group = {p["name"]: p.get("group", p["name"]) for p in data["pods"]}
    # v1.14.1 draws (preempt over two queues or more) or evicts what v1.15.1 would not
    # (reclaim's victim before the comparison): the whole session differs from then on.
    drawn = (
        len(theirs["preempt_queues"]) > 1
        or theirs["reclaim_unneeded"]
        or _kept_elsewhere(theirs)
        or _within_drawn(mine, group)
    )
    out: list[str] = []
    compared = 0
    crowded = _crowded(data)
    for up in theirs["pods"]:
        verdict = mine.get(up["pod"])
        if up["node"] is not None or verdict is None:
            continue  # placed by one side: session_compare compares that
        compared += 1
        node, victims = _theirs(up)
        if (node, victims) == _mine(verdict):
            continue
        mine_spelled = _spell(verdict.node, frozenset(verdict.victims), verdict.verdict)
        line = f"{up['pod']}: advisor {mine_spelled}, upstream {_spell(node, victims, 'none')}"
        action = (up.get("preempt") or {}).get("action")
        reclaim_order = action == "reclaim" and verdict.node not in (None, node)
        drawn_member = node == verdict.node and _jobs(victims, group) == _jobs(
            frozenset(verdict.victims), group
        )
        drawn = drawn or bool({node, verdict.node} & crowded)
        out.append(EXPLAINED + line if drawn or reclaim_order or drawn_member else line)
    if drawn:  # a draw early in the session: every later line follows from it
        out = [d if d.startswith(EXPLAINED) else EXPLAINED + d for d in out]
    return out, compared


def _kept_elsewhere(theirs: dict[str, Any]) -> bool:
    """v1.14.1's preempt evicts into the job's statement node by node (preempt.go
    normalPreempt, `stmt.Evict`): where the preemptor is then not pipelined on that node
    (its queue not Allocatable), the evictions stay, committed with the job, for a pod
    pipelined elsewhere or for none (`stray`). v1.15.1 discards them with the node's
    statement."""
    claims = [up["preempt"] for up in theirs["pods"] if up.get("preempt")]
    elsewhere = any(v["node"] != c["node"] for c in claims for v in c["victims"])
    return elsewhere or bool(theirs["stray"])


WITHIN = "preempt's pass within its job"  # the advisor's words for that pass's pipelines


def _within_drawn(mine: dict[str, Preemption | None], group: dict[str, str]) -> bool:
    """preempt's pass within jobs walks them in `ssn.Jobs` map order (preempt.go Execute,
    `underRequest` appended in `for _, job := range ssn.Jobs`): where it pipelines for one
    job and another job could take the same room, which gets it is a draw. Counted so
    where the advisor's pass pipelined anything and two jobs or more were eligible."""
    eligible = {group[n] for n, v in mine.items() if v is not None and v.verdict != "not-eligible"}
    within = any(v is not None and v.message.startswith(WITHIN) for v in mine.values())
    return within and len(eligible) > 1


def _crowded(data: dict[str, Any]) -> set[str | None]:
    """Nodes where a job has two preemptable running pods or more: the gang and drf plugins'
    votes walk the candidates as the node's task map yields them (`gang.go` and `drf.go`
    `preemptableFn` over `node.Tasks`, counting each job down as they go), so which of a
    job's tasks they let go, and whether any, is a draw there."""
    count: dict[tuple[str, str], int] = {}
    for pod in data["pods"]:
        if "node" in pod and pod.get("preemptable", True):
            key = (pod["node"], pod.get("group", pod["name"]))
            count[key] = count.get(key, 0) + 1
    return {node for (node, _), n in count.items() if n > 1}


def _jobs(victims: frozenset[str], group: dict[str, str]) -> list[str]:
    """The victims' jobs, with repeats: the gang plugin admits a job's tasks in the order
    of the node's task map (gang.go preemptableFn over `node.Tasks`), so which of a job's
    tasks goes is a draw where it lets only some go."""
    return sorted(group[v] for v in victims)


def check(datas: list[dict[str, Any]]) -> list[Row]:
    """Per cluster: pods compared, what differs, and whether allocate already differed
    (session_compare's differences): preemption judged on different states is counted
    apart. v1.14.1's cards kept after a discarded gang (`leaked`) are no such difference:
    preempt and reclaim pipeline on the node's sums and never ask the cards."""
    results = harness.run_scenarios("volcano", datas)
    rows = []
    for data, result in zip(datas, results, strict=True):
        before = any(not d.startswith(EXPLAINED) for d in session_compare.differences(data, result))
        diffs, compared = differences(data, result)
        rows.append(Row(compared, diffs, before, bool(result["leaked"])))
    return rows


def disagrees(data: dict[str, Any]) -> bool:
    """A preemption difference not explained, on a cluster whose allocate agrees (for
    `shrink`)."""
    try:
        (row,) = check([data])
    except ScenarioError:
        return False
    return not row.allocate_differs and any(not d.startswith(EXPLAINED) for d in row.diffs)


def report(n: int, seed: int) -> list[str]:
    """The agreement lines `python -m conformance.cli` prints (docs/conformance.md)."""
    datas = [generate_preempt(seed + i) for i in range(n)]
    rows = check(datas)
    kept = [r for r in rows if not r.allocate_differs]
    compared = sum(r.compared for r in kept)
    apart = [d for r in kept for d in r.diffs if not d.startswith(EXPLAINED)]
    explained = [d for r in kept for d in r.diffs if d.startswith(EXPLAINED)]
    evicting = mig = 0
    for data, row in zip(datas, rows, strict=True):
        if row.allocate_differs:
            continue
        asks = {p["name"] for p in data["pods"] if "mig_profile" in p.get("request", {})}
        for name, v in advisor_side(data).items():
            if v is not None and v.verdict == "evicts":
                evicting += 1
                mig += name in asks
    lines = [
        f"agreement: {compared - len(apart) - len(explained)}/{compared} Pending pods both "
        f"left unplaced, on {len(kept)} of {n} clusters (volcano-vgpu: Volcano v1.14.1's "
        f"preempt and reclaim, pipelined or not, node and victims; {evicting} `evicts`, "
        f"{mig} of them for MIG pods)",
        f"  v1.14.1's draws and its reclaim's unneeded evictions (explained): {len(explained)}",
        f"  clusters whose allocate already differs (session_compare), counted apart: "
        f"{len(rows) - len(kept)}, of which v1.14.1 kept a discarded gang's cards: "
        f"{sum(r.allocate_differs and r.leaked for r in rows)}",
    ]
    lines += [f"    {d}" for d in apart[:20]]
    return lines


def run_files(paths: list[Path]) -> tuple[int, int, list[str]]:
    """The scenario files of profile volcano-vgpu (another profile's cards are not what
    Volcano's deviceshare reads) through Volcano's session beside the advisor: (files, their
    Pending pods, what differs: session_compare's lines and the preemption's, each after its
    file's name, an explained one starting with EXPLAINED)."""
    datas = []
    for path in paths:
        data = read_scenario(path, mig=True)
        if isinstance(data, dict) and (data.get("scheduler") or {}).get("profile") == PROFILE:
            datas.append((path, data))
    results = harness.run_scenarios("volcano", [data for _, data in datas])
    pods, diffs = 0, []
    for (path, data), result in zip(datas, results, strict=True):
        pods += len(result["pods"])
        lines = session_compare.differences(data, result) + differences(data, result)[0]
        diffs += [
            (EXPLAINED if line.startswith(EXPLAINED) else "") + f"{path.name}: {line}"
            for line in lines
        ]
    return len(datas), pods, diffs


PROFILE = "volcano-vgpu"
