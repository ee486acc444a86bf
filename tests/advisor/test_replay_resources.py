"""`replay --resources all`: the trace's cpu and memory count, as kube-scheduler counts them.

Small traces are written by hand and their outcomes computed by hand in the comments; the
openb trace is used for properties (a huge allocatable changes nothing; no node ends over
its allocatable) checked independently of the core.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.core.model import Card, Cluster, Node, Placement, Pod, Policy, Request
from advisor.core.nodefilters import NO_RESOURCES, NOT_KNOWN, Allocatable, Resources
from advisor.replay import (
    CARD_MIB,
    MIB,
    TraceError,
    balanced_allocation,
    least_allocated,
    load_trace,
    read_trace,
    replay,
)
from advisor.scenario import load_scenario

NODES = "openb_node_list_gpu_node.csv"
PODS = "openb_pod_list_default.csv"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`xgpu-advisor replay ARGS` in this process: exit code, stdout, stderr."""
    code = main(["replay", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# Node a: 8 cpu, 2 cards; node b: 4 cpu, 1 card; 64 GiB memory each.
# p1 (1 whole card, 6 cpu) arrives first. Node binpack prefers b (its one card full: 1.0
#   against a's 0.5), but b has 4 cpu < 6: p1 lands on a, card 0. a: 6 of 8 cpu used.
# c1 (no GPU, 2 cpu, 4 GiB): both nodes have room. kube-scheduler's default scores:
#   a: LeastAllocated cpu (8000-8000)*100/8000 = 0, memory (65536-12288)*100/65536 = 81,
#      (0+81)/2 = 40; BalancedAllocation |1.0 - 0.1875|/2 = 0.40625 -> 59; total 99.
#   b: LeastAllocated cpu 2000*100/4000 = 50, memory 61440*100/65536 = 93, (50+93)/2 = 71;
#      BalancedAllocation |0.5 - 0.0625|/2 = 0.21875 -> 78; total 149. c1 lands on b.
# p2 (half a card, 3 cpu): a's card 1 and b's card both have room, but a has 2 cpu left
#   and b (after c1) 2: Pending as node-resources, 2 nodes "Insufficient cpu".
#   Without c1, b would have had 4 cpu free and taken p2.
SMALL_NODES = NODE_HEADER + "a,8000,65536,2,T4\nb,4000,65536,1,T4\n"
SMALL_PODS = POD_HEADER + "p1,6000,8192,1,1000,1\nc1,2000,4096,0,0,2\np2,3000,8192,1,500,3\n"


def test_a_cpu_only_pod_takes_the_cpu_a_gpu_pod_needs(tmp_path: Path) -> None:
    nodes, pods = write(tmp_path / "n.csv", SMALL_NODES), write(tmp_path / "p.csv", SMALL_PODS)
    result = replay(read_trace(nodes, pods, Policy(), "all"))
    p1, p2 = result.diagnosis.pods
    assert (p1.pod.name, p1.cause, p1.placement) == (
        "openb/p1",
        "schedulable",
        Placement("a", (0,)),
    )
    assert result.cpu_nodes == ("b",)
    assert p2.cause == "node-resources"
    assert p2.reason_counts == (("Insufficient cpu", 2),)
    figures = result.figures()
    assert figures["resources"] == "all"
    assert figures["failed"] == {"node-resources": 1}
    assert figures["placed_gpus"] == 1.0
    assert figures["cpu_only_pods"] == {"replayed": 1, "placed": 1, "pending": 0}
    # cpu: (6000 + 2000) of 12000; memory: (8192 + 4096) MiB of 131072 MiB.
    assert figures["node_allocation"] == {"cpu": round(8000 / 12000, 6), "memory": 0.09375}


def test_without_the_cpu_only_pod_the_gpu_pod_fits(tmp_path: Path) -> None:
    text = SMALL_PODS.replace("c1,2000,4096,0,0,2\n", "")
    nodes, pods = write(tmp_path / "n.csv", SMALL_NODES), write(tmp_path / "p.csv", text)
    result = replay(read_trace(nodes, pods, Policy(), "all"))
    # p2 on a needs 6000 + 3000 > 8000 cpu; b has 0 + 3000 <= 4000: p2 lands on b.
    assert [d.placement for d in result.diagnosis.pods] == [
        Placement("a", (0,)),
        Placement("b", (0,)),
    ]


# Node a: 8 cpu, 2 cards; node b: 8 cpu, 1 card.
# p1 (a whole card, 4 cpu): binpack prefers b (its one card full: 1.0 against 0.5): p1 on b.
# c1 (no GPU, 6 cpu): only a has 6 cpu free: c1 on a, which has 2 cpu left.
# p2, p1's very shape: b has no card left, a too little cpu: Pending, though a passed every
#   filter for that shape when p1 came (the cycle keeps a shape's verdicts between pods,
#   and must judge a again once c1 is bound there).
# Ten more nodes of half a cpu take none of these pods, so that a pod binding changes few
# enough nodes for the cycle to judge only those again (`core.placer.WHOLE`).
KEPT_NODES = NODE_HEADER + "a,8000,65536,2,T4\nb,8000,65536,1,T4\n"
KEPT_NODES += "".join(f"f{i},500,65536,1,T4\n" for i in range(10))
KEPT_PODS = POD_HEADER + "p1,4000,8192,1,1000,1\nc1,6000,4096,0,0,2\np2,4000,8192,1,1000,3\n"


def test_a_cpu_only_pod_changes_the_verdicts_a_shape_had(tmp_path: Path) -> None:
    nodes, pods = write(tmp_path / "n.csv", KEPT_NODES), write(tmp_path / "p.csv", KEPT_PODS)
    result = replay(read_trace(nodes, pods, Policy(), "all"))
    p1, p2 = result.diagnosis.pods
    assert p1.placement == Placement("b", (0,))
    assert result.cpu_nodes == ("a",)
    assert (p2.cause, p2.placement) == ("node-resources", None)


def test_gpu_mode_reads_no_cpu_and_keeps_its_placements(tmp_path: Path) -> None:
    nodes, pods = write(tmp_path / "n.csv", SMALL_NODES), write(tmp_path / "p.csv", SMALL_PODS)
    cluster = load_trace(nodes, pods, Policy())
    # Exactly the cluster the replay always built: no field of the rest of the node set.
    t4 = (Card(0, CARD_MIB, "T4"), Card(1, CARD_MIB, "T4"))
    plain = Cluster(
        (Node("a", t4), Node("b", t4[:1])),
        (Pod("openb/p1", Request(1, 128_000)), Pod("openb/p2", Request(1, 64_000))),
        Policy(),
    )
    assert cluster == plain
    assert all(n.allocatable == NOT_KNOWN and n.other_pods is None for n in cluster.nodes)
    assert all(p.resources == NO_RESOURCES for p in cluster.pods)
    assert replay(plain).figures() == replay(cluster).figures()
    result = replay(read_trace(nodes, pods, Policy(), "gpu"))
    # GPUs only: p1 takes b's single card (binpack), p2 then a's card 0.
    assert [d.placement for d in result.diagnosis.pods] == [
        Placement("b", (0,)),
        Placement("a", (0,)),
    ]
    figures = result.figures()
    assert figures["resources"] == "gpu"
    assert "cpu_only_pods" not in figures
    assert result.end_state().nodes == cluster.nodes


def test_all_mode_reads_allocatable_and_requests(tmp_path: Path) -> None:
    nodes, pods = write(tmp_path / "n.csv", SMALL_NODES), write(tmp_path / "p.csv", SMALL_PODS)
    trace = read_trace(nodes, pods, Policy(), "all")
    a, _ = trace.cluster.nodes
    assert a.allocatable == Allocatable(cpu_milli=8000, memory_bytes=65536 * MIB)
    assert trace.cluster.pods[0].resources == Resources(6000, 8192 * MIB)
    (c1,) = trace.cpu_pods
    assert (c1.pod.name, c1.pod.resources, c1.after) == ("openb/c1", Resources(2000, 4096 * MIB), 1)
    end = replay(trace).end_state()
    assert [(n.name, [o.name for o in n.other_pods or ()]) for n in end.nodes] == [
        ("a", []),
        ("b", ["openb/c1"]),
    ]
    assert end.running[0].resources == Resources(6000, 8192 * MIB)


def test_a_cpu_only_pod_that_fits_nowhere_stays_pending(tmp_path: Path) -> None:
    text = POD_HEADER + "huge,9000,1024,0,0,1\np,1000,1024,1,1000,2\n"
    nodes, pods = write(tmp_path / "n.csv", SMALL_NODES), write(tmp_path / "p.csv", text)
    result = replay(read_trace(nodes, pods, Policy(), "all"))
    assert result.cpu_nodes == (None,)
    assert result.figures()["cpu_only_pods"] == {"replayed": 1, "placed": 0, "pending": 1}
    assert result.diagnosis.pods[0].cause == "schedulable"


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("p,-5,1024,1,500,1", "cpu_milli -5 is negative"),
        ("p,1.5,1024,1,500,1", "cpu_milli '1.5' is not an integer"),
        ("p,1000,,1,500,1", "memory_mib '' is not an integer"),
    ],
)
def test_bad_pod_cpu_or_memory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str, problem: str
) -> None:
    nodes = write(tmp_path / "n.csv", SMALL_NODES)
    pods = write(tmp_path / "p.csv", POD_HEADER + row + "\n")
    code, out, err = cli(capsys, "--nodes", str(nodes), "--pods", str(pods), "--resources", "all")
    assert (code, out) == (2, "")
    assert err == f"xgpu-advisor: error: {pods}: line 2: {problem}\n"
    # GPUs only never reads those columns: the same file replays.
    assert cli(capsys, "--nodes", str(nodes), "--pods", str(pods))[0] == 0


def test_bad_node_cpu_and_missing_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = write(tmp_path / "p.csv", SMALL_PODS)
    nodes = write(tmp_path / "n.csv", NODE_HEADER + "a,eight,65536,2,T4\n")
    code, _, err = cli(capsys, "--nodes", str(nodes), "--pods", str(pods), "--resources", "all")
    assert (code, err) == (
        2,
        f"xgpu-advisor: error: {nodes}: line 2: cpu_milli 'eight' is not an integer\n",
    )
    nodes = write(tmp_path / "n.csv", "sn,gpu\na,2\n")
    with pytest.raises(TraceError, match=r"n\.csv: line 1: missing columns cpu_milli, memory_mib"):
        read_trace(nodes, pods, Policy(), "all")
    assert len(load_trace(nodes, pods, Policy()).nodes) == 1


def test_cli_json_and_markdown_name_the_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes, pods = write(tmp_path / "n.csv", SMALL_NODES), write(tmp_path / "p.csv", SMALL_PODS)
    trace = ["--nodes", str(nodes), "--pods", str(pods)]
    gpu = json.loads(cli(capsys, *trace, "--format", "json")[1])
    every = json.loads(cli(capsys, *trace, "--format", "json", "--resources", "all")[1])
    assert (gpu["resources"], every["resources"]) == ("gpu", "all")
    assert every["failed"] == {"node-resources": 1}
    text = cli(capsys, *trace, "--resources", "all")[1]
    assert "| CPU-only pods placed | 1 of 1 |" in text
    assert "| Pending pods | 1 node-resources |" in text
    assert "CPU-only" not in cli(capsys, *trace)[1]


# -- kube-scheduler's scores, converted from its own tests ---------------------------------
# kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources: nodes as capacity
# (cpu, memory), asked = what the node's pods request plus the incoming pod's request.


@pytest.mark.parametrize(
    ("capacity", "asked", "scores"),
    [
        # least_allocated_test.go TestLeastAllocatedScoringStrategy, "resources requested,
        # pods scheduled with resources, differently sized nodes": pod 3000/5000; node1
        # holds 3000/0, node2 3000/5000.
        ([[10000, 20000], [10000, 50000]], [[6000, 5000], [6000, 10000]], [57, 60]),
        # ... "requested resources exceed node capacity": pod 3000/0 on 4000/10000 nodes
        # holding 3000/0 and 3000/5000.
        ([[4000, 10000], [4000, 10000]], [[6000, 0], [6000, 5000]], [50, 25]),
    ],
)
def test_least_allocated_matches_upstream(
    capacity: list[list[int]], asked: list[list[int]], scores: list[int]
) -> None:
    got = least_allocated(np.array(capacity, dtype=np.int64), np.array(asked, dtype=np.int64))
    assert got.tolist() == scores


@pytest.mark.parametrize(
    ("capacity", "asked", "scores"),
    [
        # balanced_allocation_test.go TestNodeResourcesBalancedAllocation, "resources
        # requested, pods scheduled with resources, differently sized nodes".
        ([[10000, 20000], [10000, 50000]], [[6000, 5000], [6000, 10000]], [82, 80]),
        # ... "requested resources at node capacity".
        ([[6000, 10000], [6000, 10000]], [[6000, 0], [6000, 5000]], [50, 75]),
        # ... "nothing scheduled, resources requested, differently sized nodes".
        ([[4000, 10000], [6000, 10000]], [[3000, 5000], [3000, 5000]], [87, 100]),
    ],
)
def test_balanced_allocation_matches_upstream(
    capacity: list[list[int]], asked: list[list[int]], scores: list[int]
) -> None:
    got = balanced_allocation(np.array(capacity, dtype=np.int64), np.array(asked, dtype=np.int64))
    assert got.tolist() == scores


# -- the openb trace -----------------------------------------------------------------------


def scaled_copy(openb: Path, tmp_path: Path, factor: int, nodes: int, pods: int) -> Path:
    """The first `nodes` nodes and `pods` pods of openb, node cpu and memory × `factor`."""
    target = tmp_path / f"x{factor}"
    target.mkdir()
    with (openb / NODES).open(newline="") as source:
        rows = list(csv.DictReader(source))[:nodes]
    for row in rows:
        row["cpu_milli"] = str(int(row["cpu_milli"]) * factor)
        row["memory_mib"] = str(int(row["memory_mib"]) * factor)
    with (target / NODES).open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = (openb / PODS).read_text(encoding="utf-8").splitlines(keepends=True)
    (target / PODS).write_text("".join(lines[: pods + 1]), encoding="utf-8")
    return target


@pytest.mark.slow  # replays the openb trace
@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
def test_huge_allocatable_changes_no_figure(openb_dir: Path, tmp_path: Path) -> None:
    """Property (issue: a field that admits everything changes nothing): with every node's
    cpu and memory a million times the trace's, `all` places every GPU pod where `gpu`
    does and reports the same GPU figures, CPU-only pods and all."""
    trace = scaled_copy(openb_dir, tmp_path, 1_000_000, nodes=300, pods=2_500)
    for policy in (Policy("binpack", "binpack"), Policy("spread", "binpack")):
        gpu = replay(read_trace(trace / NODES, trace / PODS, policy, "gpu"))
        every = replay(read_trace(trace / NODES, trace / PODS, policy, "all"))
        assert every.cpu_pods
        assert all(every.cpu_nodes)
        pairs = zip(gpu.diagnosis.pods, every.diagnosis.pods, strict=True)
        assert all((g.placement, g.cause) == (e.placement, e.cause) for g, e in pairs)
        assert gpu.figures()["failed"], "the reduced trace should leave some pods Pending"
        same = {k: v for k, v in every.figures().items() if k in gpu.figures()}
        assert same == gpu.figures() | {"resources": "all"}


@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
@pytest.mark.slow
@pytest.mark.parametrize("node_policy", ["binpack", "spread"])
def test_openb_all_never_overcommits_a_node(openb_dir: Path, node_policy: str) -> None:
    """Independent check of the end state: on every node, the GPU pods and CPU-only pods
    placed there request no more cpu and memory than the trace gives the node."""
    policy = Policy(node_policy, "binpack")  # type: ignore[arg-type]
    result = replay(read_trace(openb_dir / NODES, openb_dir / PODS, policy, "all"))
    end = result.end_state()
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pod in end.running:
        assert pod.placement is not None
        used[pod.placement.node][0] += pod.resources.cpu_milli
        used[pod.placement.node][1] += pod.resources.memory_bytes
    for node in end.nodes:
        for other in node.other_pods or ():
            used[node.name][0] += other.resources.cpu_milli
            used[node.name][1] += other.resources.memory_bytes
    with (openb_dir / NODES).open(newline="") as source:
        given = {r["sn"]: r for r in csv.DictReader(source)}
    for name, (cpu, memory) in used.items():
        assert cpu <= int(given[name]["cpu_milli"]), name
        assert memory <= int(given[name]["memory_mib"]) * MIB, name
    figures = result.figures()
    assert figures["failed"].get("node-resources", 0) > 0  # cpu does bind on openb
    assert sum(len(n.other_pods or ()) for n in end.nodes) == figures["cpu_only_pods"]["placed"]


@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
@pytest.mark.slow
def test_openb_all_end_state_scenario_round_trips(
    openb_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "end.yaml"
    trace = ["--nodes", str(openb_dir / NODES), "--pods", str(openb_dir / PODS)]
    code, out, err = cli(
        capsys, *trace, "--resources", "all", "--format", "json", "--write-scenario", str(scenario)
    )
    assert code == 0, err
    figures = json.loads(out)
    end = load_scenario(scenario)
    assert len(end.running) + len(end.pending) == figures["pods"]
    assert sum(len(n.other_pods or ()) for n in end.nodes) == figures["cpu_only_pods"]["placed"]
    again = diagnose(end, node_detail_limit=0)
    assert again.summary["schedulable"] == 0
    assert again.summary["pending"] == sum(figures["failed"].values())
