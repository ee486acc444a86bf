"""Trace input out of bounds (advisor/trace_rows.py): duplicate rows, empty names, numbers
that are not plain digits or are absurdly large, endless lines. Each is one line naming the
file and the line, read in bounded time and memory; and what `replay --write-scenario`
writes, the scenario loader reads back as the same cluster."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.model import Policy, Scheduler
from advisor.replay import TraceError, read_trace, replay
from advisor.scenario import load_scenario
from advisor.trace_rows import MAX_LINE_CHARS

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n"
NODES = NODE_HEADER + "n1,8000,65536,2,T4\nn2,4000,65536,1,T4\n"
PODS = POD_HEADER + "p1,2000,4096,1,1000,0\np2,1000,2048,1,500,5\nc1,1000,1024,0,0,7\n"


def trace(tmp_path: Path, nodes: str = NODES, pods: str = PODS) -> tuple[Path, Path]:
    (tmp_path / "nodes.csv").write_text(nodes, encoding="utf-8")
    (tmp_path / "pods.csv").write_text(pods, encoding="utf-8")
    return tmp_path / "nodes.csv", tmp_path / "pods.csv"


def refused(nodes: Path, pods: Path) -> str:
    with pytest.raises(TraceError) as caught:
        read_trace(nodes, pods, Policy(), "all")
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (NODES + "n1,1,1,1,T4\n", "nodes.csv: line 4: node 'n1' again (first on line 2)"),
        (NODES + ",1,1,1,T4\n", "nodes.csv: line 4: sn is empty"),
        (NODES + "n3,1,1,50000000,T4\n", "nodes.csv: line 4: gpu 50000000 is more than 64"),
        (NODES + "n3,1,1,²,T4\n", "nodes.csv: line 4: gpu '²' is not an integer"),
        (NODES + "n3,1,1,١٢,T4\n", "nodes.csv: line 4: gpu '١٢' is not an integer"),
        (NODES + "n3,1,1,1_0,T4\n", "nodes.csv: line 4: gpu '1_0' is not an integer"),
        (NODES + "n3,1,1,-2,T4\n", "nodes.csv: line 4: gpu -2 is negative"),
        (
            NODES + f"n3,{'9' * 5000},1,1,T4\n",
            f"nodes.csv: line 4: cpu_milli {'9' * 30} is more than 1,099,511,627,776",
        ),
        (
            NODES + f"n3,1,{2**40 + 1},1,T4\n",
            f"nodes.csv: line 4: memory_mib {2**40 + 1} is more than 1,099,511,627,776",
        ),
    ],
)
def test_bad_node_rows_are_one_line(tmp_path: Path, nodes: str, message: str) -> None:
    node_csv, pod_csv = trace(tmp_path, nodes=nodes)
    assert refused(node_csv, pod_csv) == f"{tmp_path}/{message}"


@pytest.mark.parametrize(
    ("pods", "message"),
    [
        (PODS + "p1,1,1,1,500,9\n", "pods.csv: line 5: pod 'p1' again (first on line 2)"),
        (PODS + "c1,1,1,0,0,9\n", "pods.csv: line 5: pod 'c1' again (first on line 4)"),
        (PODS + ",1,1,1,500,9\n", "pods.csv: line 5: name is empty"),
        (PODS + "p3,1,1,1,0,9\n", "pods.csv: line 5: gpu_milli 0 for a pod of 1 GPU"),
        (PODS + "p3,1,1,1,1500,9\n", "pods.csv: line 5: gpu_milli 1500 is more than 1,000"),
        (PODS + "p3,1,1,65,500,9\n", "pods.csv: line 5: num_gpu 65 is more than 64"),
        (
            PODS + f"p3,1,1,1,500,{10**15 + 1}\n",
            f"pods.csv: line 5: creation_time {10**15 + 1} is more than 1,000,000,000,000,000",
        ),
    ],
)
def test_bad_pod_rows_are_one_line(tmp_path: Path, pods: str, message: str) -> None:
    node_csv, pod_csv = trace(tmp_path, pods=pods)
    assert refused(node_csv, pod_csv) == f"{tmp_path}/{message}"


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    node_csv, pod_csv = trace(tmp_path, nodes="\ufeff" + NODES, pods="\ufeff" + PODS)
    assert [n.name for n in read_trace(node_csv, pod_csv, Policy()).cluster.nodes] == ["n1", "n2"]


def test_an_endless_line_is_refused_quickly(tmp_path: Path) -> None:
    """/dev/zero has no newline: read a line at a time it would fill the memory."""
    _, pod_csv = trace(tmp_path)
    started = time.monotonic()
    message = refused(Path("/dev/zero"), pod_csv)
    assert message == f"/dev/zero: line 1: longer than {MAX_LINE_CHARS:,} characters"
    assert time.monotonic() - started < 10


def test_the_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node_csv, pod_csv = trace(tmp_path, nodes=NODES + "n1,1,1,1,T4\n")
    assert main(["replay", "--nodes", str(node_csv), "--pods", str(pod_csv)]) == 2
    err = capsys.readouterr().err
    assert err == f"xgpu-advisor: error: {node_csv}: line 4: node 'n1' again (first on line 2)\n"


@pytest.mark.parametrize("profile", ["cce", "hami", "volcano-vgpu"])
@pytest.mark.parametrize("resources", ["gpu", "all"])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_what_replay_writes_the_loader_reads_as_the_same_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str, resources: str, suffix: str
) -> None:
    node_csv, pod_csv = trace(tmp_path)
    out = tmp_path / f"end{suffix}"
    args = ["--nodes", str(node_csv), "--pods", str(pod_csv), "--scheduler", profile]
    code = main(["replay", *args, "--resources", resources, "--write-scenario", str(out)])
    assert code == 0, capsys.readouterr().err
    policy = load_scenario(out).policy
    expected = replay(read_trace(node_csv, pod_csv, policy, resources, Scheduler(profile)))  # type: ignore[arg-type]
    assert load_scenario(out) == expected.end_state()
