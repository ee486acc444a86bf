"""What would make room for an autoscaler's replicas that do not fit (docs/design.md §12.2):
the remedy a Pending pod gets, never a second opinion. Each hand case is checked for the
remedy it shows, and against the same cluster with those replicas written in as real
Pending pods: `diagnose` and `plan` of that cluster give each replica the advice, plan and
nodes the autoscaler's `remedy` shows, in JSON and in the Markdown's words."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.core.remedy import ACTIONS
from advisor.render.diagnose.read import read_diagnosis
from advisor.render.plan.read import read_room
from advisor.render.plan.room import room_lines
from tests.advisor.commands.test_advice_agrees import markdown_advice
from tests.advisor.core.scenario_dicts import node, running

TARGET = "Deployment/web/infer"
OWNER = "ReplicaSet/web/infer-7d9f8"


def replica(name: str, on: str, cards: list[int], gib: int, **extra: Any) -> dict[str, Any]:
    return {**running(name, on, cards, gib), "owner": OWNER, **extra}


def scenario(
    nodes: list[Any], pods: list[Any], max_replicas: int = 2, **top: Any
) -> dict[str, Any]:
    hpa = {"name": "web/infer-hpa", "target": TARGET, "min_replicas": 1}
    hpa |= {"max_replicas": max_replicas, "replicas": 1}
    return {"nodes": nodes, "pods": pods, "autoscalers": [hpa], **top}


# 12 GiB replicas: n1 has 4 + 10 GiB free, n2 6; moving x/b (6) to n2 frees a whole card
FRAGMENTED = scenario(
    [node("n0", 12), node("n1", 16, 16), node("n2", 16)],
    [
        replica("web/t", "n0", [0], 12),
        running("x/a", "n1", [0], 12),
        running("x/b", "n1", [1], 6),
        running("x/c", "n2", [0], 10),
    ],
)
FULL = scenario([node("n0", 16)], [replica("web/t", "n0", [0], 16)], max_replicas=3)
# the only node with cards large enough is cordoned: no node the replica may use takes it
CORDONED = scenario(
    [{**node("n0", 24), "unschedulable": True}, node("n1", 16)],
    [replica("web/t", "n0", [0], 20)],
)
# more cpu than any node allocates: no node shape would help either
TOO_MUCH_CPU = scenario(
    [{**node("n0", 16), "allocatable": {"cpu": "4"}}],
    [replica("web/t", "n0", [0], 4, resources={"cpu": "8"})],
)
# a Pending pod of the replicas' priority, listed before them: queued ahead of them
BEHIND = {
    **FULL,
    "pods": [*FULL["pods"], {"name": "x/p", "request": {"gpus": 1, "memory_mib": 16 * 1024}}],
}
CASES = {
    "fragmented": FRAGMENTED,
    "full": FULL,
    "behind-a-pending-pod": BEHIND,
    "cordoned": CORDONED,
    "too-much-cpu": TOO_MUCH_CPU,
}


def run_json(command: str, data: dict[str, Any], tmp_path: Path, name: str) -> Any:
    source, out = tmp_path / f"{name}.yaml", tmp_path / f"{name}.json"
    source.write_text(yaml.safe_dump(data))
    args = [command, "--scenario", str(source), "--format", "json", "--output", str(out)]
    assert main(args) == 0
    return json.loads(out.read_text())


def remedy_of(data: dict[str, Any], tmp_path: Path) -> Any:
    (entry,) = run_json("diagnose", data, tmp_path, "hpa")["autoscalers"]
    assert entry["status"] == "blocked"
    return entry["remedy"]


def test_a_plan_makes_room_for_a_replica_split_across_cards(tmp_path: Path) -> None:
    room = remedy_of(FRAGMENTED, tmp_path)
    (entry,) = room["replicas"]
    assert (entry["pod"], entry["cause"]) == ("web/infer (replica 2)", "fragmentation")
    assert entry["advice"]["key"] == "fragmentation"
    assert entry["advice"]["scale_up"] is False
    (plan,) = room["plans"]
    assert (plan["evict"], plan["rescues"]) == (["x/b"], ["web/infer (replica 2)"])
    assert room["scale_up"] == []


def test_a_node_of_an_existing_shape_for_replicas_with_no_room(tmp_path: Path) -> None:
    room = remedy_of(FULL, tmp_path)
    keys = [(e["pod"], e["advice"]["key"]) for e in room["replicas"]]
    assert keys == [
        ("web/infer (replica 2)", "capacity-scale-up"),
        ("web/infer (replica 3)", "capacity-scale-up"),
    ]
    assert room["plans"] == []
    (step,) = room["scale_up"]
    assert (step["nodes"], step["shape"]["cards"], step["shape"]["memory_mib"]) == (2, 1, 16384)
    assert "new_shape" not in step


def test_an_unsatisfiable_replica_gets_the_node_it_could_run_on(tmp_path: Path) -> None:
    room = remedy_of(CORDONED, tmp_path)
    (entry,) = room["replicas"]
    assert (entry["cause"], entry["advice"]["key"]) == ("unsatisfiable", "unsatisfiable")
    (step,) = room["scale_up"]
    assert (step["nodes"], step["shape"]["memory_mib"]) == (1, 24576)


def test_a_replica_no_node_shape_admits_gets_the_autoscalers_reason(tmp_path: Path) -> None:
    room = remedy_of(TOO_MUCH_CPU, tmp_path)
    (entry,) = room["replicas"]
    assert entry["advice"]["key"] == "unsatisfiable"
    assert room["scale_up"] == []
    (helpless,) = room["scale_up_not_triggered"]
    assert helpless["pod"] == "web/infer (replica 2)"
    assert "Insufficient cpu" in helpless["reason"]


def test_an_autoscaler_not_blocked_has_no_remedy(tmp_path: Path) -> None:
    roomy = scenario([node("n0", 16, 16)], [replica("web/t", "n0", [0], 8)], max_replicas=3)
    (entry,) = run_json("diagnose", roomy, tmp_path, "roomy")["autoscalers"]
    assert (entry["status"], entry["remedy"]) == ("reachable", None)


def test_the_blocked_autoscalers_replicas_compete_and_the_reachable_ones_stay_out(
    tmp_path: Path,
) -> None:
    """web/a's replica places alone (the free card), so it is left out of the trial: web/b's
    first replica takes that card there and one node is proposed for its second. Had web/a's
    been added, both of web/b's would need one."""
    a = {"name": "web/a-hpa", "target": "Deployment/web/a", "min_replicas": 1}
    b = {"name": "web/b-hpa", "target": "Deployment/web/b", "min_replicas": 1}
    data = {
        "nodes": [node("n0", 16, 16), node("n1", 16)],
        "pods": [
            {**running("web/a-0", "n0", [0], 16), "owner": "Deployment/web/a"},
            {**running("web/b-0", "n0", [1], 16), "owner": "Deployment/web/b"},
        ],
        "autoscalers": [
            a | {"max_replicas": 2, "replicas": 1},
            b | {"max_replicas": 3, "replicas": 1},
        ],
    }
    first, second = run_json("diagnose", data, tmp_path, "two")["autoscalers"]
    assert (first["status"], first["remedy"]) == ("reachable", None)
    assert (second["status"], second["placeable"]) == ("blocked", 1)
    assert [e["pod"] for e in second["remedy"]["replicas"]] == ["web/b (replica 3)"]
    (step,) = second["remedy"]["scale_up"]
    assert (step["nodes"], step["for"]) == (1, ["web/b (replica 3)"])


# -- agreement: the replicas' remedy is the one a real Pending pod in their place gets ------


def with_replicas_pending(data: dict[str, Any]) -> dict[str, Any]:
    """The same cluster with the HPA's replicas written in as Pending pods, after every pod
    (where the trial queues them), and no autoscaler."""
    template = data["pods"][0]
    (hpa,) = data["autoscalers"]
    added = [
        {"name": f"web/infer (replica {k})", "owner": OWNER, "request": template["request"]}
        | ({"resources": template["resources"]} if "resources" in template else {})
        for k in range(hpa["replicas"] + 1, hpa["max_replicas"] + 1)
    ]
    return {"nodes": data["nodes"], "pods": [*data["pods"], *added]}


def room_titles(markdown: str) -> dict[str, str]:
    """Each replica the Autoscalers section advises on, with its advice's title."""
    section = markdown.split("## Autoscalers\n", 1)[1].split("\n## ", 1)[0]
    titles = {}
    for title, pods in re.findall(r"^    - (.+?): (.+?)\.$", section, flags=re.MULTILINE):
        for pod in pods.split(", "):
            if title in {t for t, _ in ACTIONS.values()}:
                titles[pod] = title
    return titles


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_remedy_is_what_a_pending_pod_in_the_same_place_gets(case: str, tmp_path: Path) -> None:
    data = CASES[case]
    room = remedy_of(data, tmp_path)
    real = with_replicas_pending(data)
    diagnosed = run_json("diagnose", real, tmp_path, "real")
    planned = run_json("plan", real, tmp_path, "real-plan")
    replicas = {e["pod"] for e in room["replicas"]}
    assert replicas, "the case has no replica left Pending"
    as_pods = [
        {"pod": p["pod"], "cause": p["cause"], "advice": p["advice"]}
        for p in diagnosed["pods"]
        if p["pod"] in replicas
    ]
    assert room["replicas"] == as_pods
    # the plans and nodes are the plan command's, for the same pods
    assert room["plans"] == [p for p in planned["plans"] if set(p["rescues"]) & replicas]
    assert room["scale_up"] == [s for s in planned["scale_up"] if set(s["for"]) & replicas]
    helpless = planned.get("scale_up_not_triggered", [])
    assert room["scale_up_not_triggered"] == [n for n in helpless if n["pod"] in replicas]
    # the report carries the same, and both pages word each replica's advice as the
    # diagnosis of the real pods words theirs under "What to do"
    source = tmp_path / "hpa.yaml"
    assert main(["report", "--scenario", str(source), "--output-dir", str(tmp_path / "r")]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["diagnosis"]["autoscalers"][0]["remedy"] == room
    real_md = tmp_path / "real.md"
    (tmp_path / "real.yaml").write_text(yaml.safe_dump(real))
    assert (
        main(["diagnose", "--scenario", str(tmp_path / "real.yaml"), "--output", str(real_md)]) == 0
    )
    expected = {
        pod: title
        for title, pods in markdown_advice(real_md.read_text())
        for pod in pods.split(", ")
        if pod in replicas
    }
    hpa_md = tmp_path / "hpa.md"
    assert main(["diagnose", "--scenario", str(source), "--output", str(hpa_md)]) == 0
    for text in (hpa_md.read_text(), (tmp_path / "r" / "report.md").read_text()):
        assert room_titles(text) == expected


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_remedy_reads_back_unchanged(case: str, tmp_path: Path) -> None:
    written = run_json("diagnose", CASES[case], tmp_path, "hpa")
    assert read_diagnosis(written)["autoscalers"] == written["autoscalers"]


def test_an_odd_remedy_reads_as_the_neutral_defaults() -> None:
    assert read_room("not one") is None
    assert read_room(None) is None
    room = read_room({"replicas": ["x", {"pod": "a/b"}], "scale_up": [{"nodes": "two"}]})
    assert room is not None
    assert room["replicas"] == [{"pod": "?", "cause": "?"}, {"pod": "a/b", "cause": "?"}]
    (step,) = room["scale_up"]
    assert (step["nodes"], step["for"]) == (0, [])
    assert (room["plans"], room["relief"]) == ([], [])
    assert room_lines(room)[0] == "?: ?, a/b."
