"""The bundled HAMi example (advisor/examples/hami.yaml) end to end through the CLI: every
Pending pod's verdict in HAMi v2.10's own words, the plan and an independent check of it,
and what CCE's rules make of the same cluster.

Every expected value is worked out by hand below, with HAMi's scores as docs/design.md §9.2
gives them (all weights 1):
  card score = 10 * ((1 + vGPUs on the card) / slots + (core asked + used) / 100
                     + (memory asked + used) / card memory)
  node score = 10 * (vGPUs / slots + used core / total core + used memory / total memory),
               over the node's cards, before placement; node binpack takes the highest.
Card spread (HAMi's default) takes the lowest card score; ties go to the higher NUMA node,
then the later card. No pod in the example asks for core, so every core term is 0.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.scenario import load_scenario, scenario_from_data
from tests.advisor.core.filter_checker import placement_refusals

pytestmark = pytest.mark.realservices  # runs xgpu-advisor as a process

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "advisor" / "examples" / "hami.yaml"
Json = dict[str, Any]

# The example's state before the cycle (MiB used / card memory, vGPUs / slots):
#   t4-node-1    card 0: 8192 + 6144 = 14336 / 16384, 2/10   card 1: 2048 / 16384, 1/10
#   a10-node-1   cards 0 and 1: 25 % + 25 % of 24576 = 12288 / 24576, 2/2 each
#   a100-node-1  card 0 (NUMA 0): whole card, 40960 / 40960   card 1 (NUMA 0): empty
#                card 2 (NUMA 1): 20480 / 40960                card 3 (NUMA 1): empty
#   a100-80g-node-1  card 0: 32768 / 81920; cpu 14 + 14 (Spark) + 2 = 30 of 32 requested
# Node scores: t4 10 * (3/20 + 16384/32768) = 6.5; a100 10 * (2/40 + 61440/163840) = 4.25;
# 80g 10 * (1/10 + 32768/81920) = 5.0; a10 has no free slot, so it never fits.
VERDICTS: dict[str, tuple[str, Json | None]] = {
    # fits t4 (6.5), a100 (4.25), 80g (5.0): t4 wins. Card 0 scores
    # 10 * (3/10 + (2048 + 14336)/16384) = 13, card 1 10 * (2/10 + (2048 + 2048)/16384) = 4.5:
    # spread takes card 1.
    "web/embed-0": ("schedulable", {"node": "t4-node-1", "cards": [1]}),
    # a whole card needs a card with nothing on it: a100-node-1's cards 1 and 3 only. Both
    # score 10 * (1/10 + 40960/40960) = 11; the tie goes to the higher NUMA node: card 3.
    "ml/finetune-0": ("schedulable", {"node": "a100-node-1", "cards": [3]}),
    # selects the A10s: 25 % = 6144 MiB fits either card's 12288 free, but both hold their
    # 2 vGPUs. Free memory 24576 >= 6144 on the node: fragmentation, behind the slot limit.
    "infer/chat-4": ("fragmentation", None),
    # selects the T4s: after web/embed-0 card 0 has 2048 free, card 1 12288; neither has
    # 14336, together they have 14336 >= 14336: fragmentation.
    "ml/t4-train": ("fragmentation", None),
    # numa-bind, 2 x 16384: on a100-node-1 only card 1 (NUMA 0, 40960 free) and card 2
    # (NUMA 1, 20480 free) have room: NumaNotFit; 40960 + 20480 >= 32768: fragmentation.
    "ml/train-numa": ("fragmentation", None),
    # 16384: t4 (12288 at most) and a10 (slots) refuse; a100 (10 * (3/40 + 102400/163840)
    # = 7.0) beats 80g (5.0). Cards 1 and 2 have room: card 2 scores 10 * (2/10 +
    # (16384 + 20480)/40960) = 11, card 1 10 * (1/10 + 16384/40960) = 5: binpack, by its
    # annotation, takes card 2.
    "infer/batch-0": ("schedulable", {"node": "a100-node-1", "cards": [2]}),
    # 45056 fits only the 80 GB card (49152 free); its node has 32 - 30 = 2 cores free of 8.
    "vision/label-gen-1": ("node-resources", None),
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, check=False
    )


def cli_json(command: str, *args: str, scenario: Path = EXAMPLE) -> Json:
    proc = run(command, "--scenario", str(scenario), "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    data: Json = json.loads(proc.stdout)
    return data


@pytest.fixture(scope="module")
def diagnosis() -> Json:
    return cli_json("diagnose")


@pytest.fixture(scope="module")
def plan() -> Json:
    return cli_json("plan")


def by_pod(diagnosis: Json) -> dict[str, Json]:
    return {p["pod"]: p for p in diagnosis["pods"]}


def example_data() -> Json:
    data: Json = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return data


def test_the_example_ships_with_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["advisor"]
    assert any(fnmatch.fnmatch("examples/hami.yaml", pattern) for pattern in shipped)
    cluster = load_scenario(EXAMPLE)
    assert cluster.scheduler.profile == "hami"
    # the file names no policy and no limit: HAMi's defaults
    assert (cluster.policy.node, cluster.policy.card) == ("binpack", "spread")
    assert cluster.max_vgpus_per_card == 10
    requests = {p.name: p.request for p in cluster.running}
    assert requests["ml/train-llm"].whole_card
    assert requests["infer/chat-0"].memory_percent == 25
    assert requests["ml/notebook-a"].memory_mib == 8192


def test_each_pending_pod_gets_the_verdict_worked_out_by_hand(diagnosis: Json) -> None:
    assert diagnosis["scheduler"]["profile"] == "hami"
    assert diagnosis["policy"] == {"node": "binpack", "card": "spread"}
    # all at priority 0: the queue is the file's order
    assert [p["pod"] for p in diagnosis["pods"]] == list(VERDICTS)
    got = {p["pod"]: (p["cause"], p["placement"]) for p in diagnosis["pods"]}
    assert got == VERDICTS
    assert diagnosis["summary"] == {
        "pending": 7,
        "schedulable": 3,
        "node-resources": 1,
        "fragmentation": 3,
        "capacity": 0,
        "unsatisfiable": 0,
        "invalid": 0,
    }


def test_reasons_are_in_hamis_words(diagnosis: Json) -> None:
    pods = by_pod(diagnosis)
    selector = "node(s) didn't match Pod's node affinity/selector"
    chat = pods["infer/chat-4"]
    assert chat["node_summary"] == (
        f"0/4 nodes are available: 1 CardTimeSlicingExhausted, 3 {selector}."
    )
    assert chat["nodes"]["a10-node-1"] == ["CardTimeSlicingExhausted: cards 0, 1"]
    assert chat["nodes"]["t4-node-1"] == [selector]
    t4 = pods["ml/t4-train"]
    assert t4["node_summary"] == f"0/4 nodes are available: 1 CardInsufficientMemory, 3 {selector}."
    assert t4["nodes"]["t4-node-1"] == ["CardInsufficientMemory: cards 0, 1"]
    assert "t4-node-1 has 14336 MiB free over 2 healthy cards" in t4["message"]
    # a100: NumaNotFit (cards 1 and 2 on different NUMA nodes; cards 0 and 3 hold whole
    # cards); 80g has 1 card of 2 (NodeInsufficientDevice); a10 slots; t4 2048 and 12288 free
    numa = pods["ml/train-numa"]
    assert numa["node_summary"] == (
        "0/4 nodes are available: 1 CardInsufficientMemory, 1 CardTimeSlicingExhausted, "
        "1 NodeInsufficientDevice, 1 NumaNotFit."
    )
    assert numa["nodes"]["a100-node-1"] == [
        "NumaNotFit: no 2 eligible cards on one NUMA node",
        "CardInsufficientMemory: cards 0, 3",
    ]
    assert numa["nodes"]["a100-80g-node-1"] == ["NodeInsufficientDevice: node has 1 card, 2 needed"]
    assert "a100-node-1 has 61440 MiB free" in numa["message"]  # 40960 + 20480
    # after infer/batch-0 takes card 2 (4096 free left), no a100 card has 45056
    label = pods["vision/label-gen-1"]
    assert label["node_summary"] == (
        "0/4 nodes are available: 1 CardTimeSlicingExhausted, 1 Insufficient cpu, "
        "2 CardInsufficientMemory."
    )
    assert label["nodes"]["a100-80g-node-1"] == ["Insufficient cpu: 2 free, pod needs 8"]
    assert label["nodes"]["a100-node-1"] == ["CardInsufficientMemory: cards 0, 1, 2, 3"]
    text = json.dumps(diagnosis["pods"])
    for cce_word in ("too-few-cards", "card-memory", "vgpu-limit", "mode-conflict", "card-core"):
        assert cce_word not in text


def _diagnose_edited(tmp_path: Path, pod: str, annotation: str) -> dict[str, Json]:
    data = example_data()
    (entry,) = (p for p in data["pods"] if p["name"] == pod)
    del entry["annotations"][annotation]
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(data), encoding="utf-8")
    return by_pod(cli_json("diagnose", scenario=edited))


def test_without_numa_bind_the_numa_pod_would_straddle_numa_nodes(tmp_path: Path) -> None:
    # cards 1 (NUMA 0) and 2 (NUMA 1) are a100-node-1's only two with 16384 free
    pods = _diagnose_edited(tmp_path, "ml/train-numa", "nvidia.com/numa-bind")
    numa = pods["ml/train-numa"]
    assert numa["cause"] == "schedulable"
    assert numa["placement"]["node"] == "a100-node-1"
    assert sorted(numa["placement"]["cards"]) == [1, 2]


def test_without_its_annotation_the_binpack_pod_would_spread(tmp_path: Path) -> None:
    # card 1 scores 5 and card 2 11 (see VERDICTS): spread takes card 1
    pods = _diagnose_edited(tmp_path, "infer/batch-0", "hami.io/gpu-scheduler-policy")
    batch = pods["infer/batch-0"]
    assert (batch["cause"], batch["placement"]) == (
        "schedulable",
        {"node": "a100-node-1", "cards": [1]},
    )


def test_the_plan_frees_a_t4_card_and_evicts_no_pod_the_cycle_binds(
    plan: Json, diagnosis: Json
) -> None:
    # ml/t4-train needs 14336 on one T4 card. Card 0 (notebook-a 8192, notebook-b 6144, 2048
    # free) cannot get there with one eviction; card 1 (notebook-c 2048, web/embed-0 2048
    # just bound, 12288 free) can by evicting notebook-c. web/embed-0 is Pending in the
    # input: the cycle is binding it, it holds nothing yet, and no plan evicts it
    # (docs/design.md §8). notebook-c comes back to card 0's 2048 free: t4-node-1 is the
    # busiest node that fits it and card 0 its only card left.
    # 14336 MiB rescued in GPUs of memory of the commonest card, the A100's 40960: 0.35
    # GPUs for 1 eviction, 2.857 per GPU, within the default 3.
    assert plan["scheduler"]["profile"] == "hami"
    assert plan["schedulable"] == {
        name: placement for name, (_, placement) in VERDICTS.items() if placement
    }
    (t4,) = plan["plans"]
    assert t4["rescues"] == ["ml/t4-train"]
    assert t4["evict"] == ["ml/notebook-c"]
    assert t4["costs"] == [{"pod": "ml/notebook-c", "cost": 2.0, "why": "StatefulSet replica"}]
    assert t4["evicted_from"] == {"ml/notebook-c": {"node": "t4-node-1", "cards": [1]}}
    assert t4["placements"] == {
        "ml/t4-train": {"node": "t4-node-1", "cards": [1]},
        "ml/notebook-c": {"node": "t4-node-1", "cards": [0]},
    }
    # ml/train-numa needs 16384 on two cards of one NUMA node. NUMA 1's cards hold
    # ml/finetune-0 and infer/batch-0, which the current cycle binds: no plan moves them.
    # NUMA 0's card 0 holds ml/train-llm, a whole card that would find no other: no plan.
    assert plan["summary"]["reference_card_mib"] == 40960
    assert plan["summary"]["evictions_per_gpu"] == pytest.approx(1 / (14336 / 40960), abs=1e-3)
    # The ideal and the memory bound count the same way: never below what the plan rescues
    # (the repacks tried leave running pods out here, so the plan's end state is the ideal).
    ideal = plan["ideal"]
    assert plan["summary"]["rescued_gpus"] == ideal["repack_gpus"] == 0.35
    assert ideal["repack_running_unplaced"] == 0
    assert ideal["repack_gpus"] <= ideal["upper_bound_gpus"] <= ideal["pending_gpus"]
    causes = {p["pod"]: p["cause"] for p in diagnosis["pods"]}
    unresolved = ("infer/chat-4", "ml/train-numa", "vision/label-gen-1")
    assert [{"pod": u["pod"], "cause": u["cause"]} for u in plan["unresolved"]] == [
        {"pod": name, "cause": causes[name]} for name in unresolved
    ]
    # No plan makes room for chat-4 (every chat pod needs an A10 slot too), so it is advised
    # a new node, `no-plan` and never "consolidate".
    advice = {u["pod"]: (u["advice"]["key"], u["advice"]["scale_up"]) for u in plan["unresolved"]}
    assert advice["infer/chat-4"] == advice["ml/train-numa"] == ("no-plan", True)
    # label-gen-1 lacks only cpu: no GPU node, but the Spark executor to move (core.scaling.relief).
    assert advice["vision/label-gen-1"] == ("node-resources", False)
    assert [(r["pod"], r["node"], r["move"]) for r in plan["relief"]] == [
        ("vision/label-gen-1", "a100-80g-node-1", [{"pod": "etl/spark-exec-0", "to": "a10-node-1"}])
    ]
    # chat-4 selects the A10s: one new A10 node (2 x 24576, 2 vGPUs a card) takes it, and
    # train-numa (2 x 16384 on one NUMA node) beside it on both cards.
    assert [(s["for"], s["nodes"], s["shape"]["model"]) for s in plan["scale_up"]] == [
        (["infer/chat-4", "ml/train-numa"], 1, "NVIDIA A10"),
    ]
    script = run("plan", "--scenario", str(EXAMPLE), "--format", "kubectl")
    assert script.returncode == 0, script.stderr
    assert "/api/v1/namespaces/ml/pods/notebook-c/eviction" in script.stdout
    assert "embed-0/eviction" not in script.stdout


def _card_memory(request: Json, card_mib: int) -> int:
    """HAMi's memory on each card (independent of the core): an absolute request split
    over its cards, else a share of the card, else the whole card."""
    if request.get("memory_mib"):
        return int(request["memory_mib"]) // int(request.get("gpus", 1))
    if request.get("memory_percent"):
        return card_mib * int(request["memory_percent"]) // 100
    return card_mib


def test_the_plan_leaves_every_card_and_node_within_hamis_limits(
    plan: Json, tmp_path: Path
) -> None:
    data = example_data()
    where = dict(plan["schedulable"])
    for step in plan["plans"]:
        where.update(step["placements"])
    for pod in data["pods"]:
        if pod["name"] in where:
            pod["node"], pod["cards"] = where[pod["name"]]["node"], where[pod["name"]]["cards"]
    cards = {(n["name"], c["index"]): c for n in data["nodes"] for c in n["cards"]}
    memory: dict[tuple[str, int], int] = defaultdict(int)
    vgpus: dict[tuple[str, int], int] = defaultdict(int)
    for pod in data["pods"]:
        for index in pod.get("cards", []):
            key = (pod["node"], index)
            memory[key] += _card_memory(pod["request"], cards[key]["memory_mib"])
            vgpus[key] += 1
    for key, used in memory.items():
        assert used <= cards[key]["memory_mib"], key
        assert vgpus[key] <= cards[key]["max_vgpus"], key
    # t4-node-1's two cards end full: 8192 + 6144 + 2048 and 2048 + 14336
    assert memory[("t4-node-1", 0)] == memory[("t4-node-1", 1)] == 16384
    after = scenario_from_data(data, "after the plan")
    assert placement_refusals(after.nodes, after.pods, set(where)) == []
    # the cycle after it: the pods no plan rescued wait, for the same reasons
    state = tmp_path / "after.yaml"
    state.write_text(yaml.safe_dump(data), encoding="utf-8")
    again = cli_json("diagnose", scenario=state)
    assert [(p["pod"], p["cause"]) for p in again["pods"]] == [
        (u["pod"], u["cause"]) for u in plan["unresolved"]
    ]


def test_other_formats_name_the_profile() -> None:
    markdown = run("diagnose", "--scenario", str(EXAMPLE))
    assert markdown.returncode == 0, markdown.stderr
    assert "scheduler: hami" in markdown.stdout
    assert "NumaNotFit" in markdown.stdout
    html = run("diagnose", "--scenario", str(EXAMPLE), "--format", "html")
    assert html.returncode == 0, html.stderr
    assert "CardTimeSlicingExhausted" in html.stdout


def test_cce_would_judge_the_same_cluster_otherwise(diagnosis: Json) -> None:
    # whatif counts each running pod as the memory it holds (a share or a whole card as
    # its MiB), so every running pod is one CCE can express. CCE has no share or whole-card
    # requests: those Pending pods are invalid. It reads no HAMi annotation.
    # - web/embed-0: CCE's binpack takes the card with the least free memory that fits,
    #   t4-node-1 card 0 (2048 free). t4-node-1 wins CCE's node score, its cards' mean
    #   allotted fraction after placement: (16384 + 2048) / 16384 / 2 = 0.5625 against
    #   80g's (32768 + 2048) / 81920 = 0.425 and a100-node-1's (40960 + 22528) / 163840 = 0.3875.
    # - ml/t4-train: card 1 keeps its 14336 free: it fits there.
    # - ml/train-numa (2 x 16384, numa-bind unread): only a100-node-1 has two cards with
    #   room: 2 (20480 free), then 1 and 3 (40960 each, the lower index first): cards 1, 2.
    # - infer/batch-0 (16384): a100-node-1 card 1 (24576 free, the least of 1 and 3) gives
    #   (40960 + 32768 + 36864 + 0) / 163840 = 0.675, more than 80g's 49152 / 81920 = 0.6.
    # - vision/label-gen-1: as under hami, only the 80 GB card has 45056, and not the cpu.
    whatif = cli_json("whatif", "--scheduler", "cce,hami")
    cce, hami = whatif["schedulers"]
    assert (cce["profile"], hami["profile"]) == ("cce", "hami")
    assert cce["causes"] == {
        "web/embed-0": "schedulable",
        "ml/finetune-0": "invalid",
        "infer/chat-4": "invalid",
        "ml/t4-train": "schedulable",
        "ml/train-numa": "schedulable",
        "infer/batch-0": "schedulable",
        "vision/label-gen-1": "node-resources",
    }
    assert {pod: where for pod, where in cce["placements"].items() if where} == {
        "web/embed-0": {"node": "t4-node-1", "cards": [0]},
        "ml/t4-train": {"node": "t4-node-1", "cards": [1]},
        "ml/train-numa": {"node": "a100-node-1", "cards": [1, 2]},
        "infer/batch-0": {"node": "a100-node-1", "cards": [1]},
    }
    assert cce["running_invalid"] == hami["running_invalid"] == 0
    # the hami column is the diagnosis itself
    assert hami["causes"] == {p["pod"]: p["cause"] for p in diagnosis["pods"]}
    assert hami["placements"] == {p["pod"]: p["placement"] for p in diagnosis["pods"]}


def test_diagnose_scheduler_cce_judges_the_same_file() -> None:
    pods = by_pod(cli_json("diagnose", "--scheduler", "cce"))
    assert pods["web/embed-0"]["placement"] == {"node": "t4-node-1", "cards": [0]}
    assert pods["ml/t4-train"]["cause"] == "schedulable"
    assert pods["ml/finetune-0"]["cause"] == pods["infer/chat-4"]["cause"] == "invalid"
    assert "memory_percent" in pods["infer/chat-4"]["message"]
