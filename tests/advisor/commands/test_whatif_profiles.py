"""`xgpu-advisor whatif --scheduler cce,hami,volcano-vgpu`: one cluster and queue judged by
each profile side by side (docs/design.md §9.2), and `--scheduler` on a single what-if."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.core.whatif import profile_outcome
from advisor.scenario import scenario_from_data
from advisor.scenario.profile import retarget

PROFILES = "cce,hami,volcano-vgpu"

# One node, three 10240-MiB cards, card 1 holding 2048 MiB; one Pending 1 x 1024 MiB. A CCE
# file (no scheduler block): each profile's defaults apply once it is re-judged.
#   cce (binpack / binpack): the eligible card with the least free memory: card 1 (8192 free).
#   hami (binpack / spread): ComputeScore with weights 1 and 10 slots per card (hami's
#     default, as retarget sets it), request included:
#       card 0: 10 * ((0+1)/10 + 0/100 + (1024+0)/10240)    = 10 * (0.1 + 0 + 0.1) = 2
#       card 1: 10 * ((1+1)/10 + 0/100 + (1024+2048)/10240) = 10 * (0.2 + 0 + 0.3) = 5
#       card 2: as card 0 = 2
#     spread takes the lowest score; cards 0 and 2 tie, and the tie goes to the higher NUMA
#     node: card 0 (numa 1).
#   volcano-vgpu (binpack / legacy): no SchedulePolicy walks the cards n-1..0 and takes the
#     first that fits: card 2.
THREE_CARDS: dict[str, Any] = {
    "nodes": [
        {
            "name": "n1",
            "cards": [
                {"index": 0, "memory_mib": 10240, "numa": 1},
                {"index": 1, "memory_mib": 10240, "numa": 0},
                {"index": 2, "memory_mib": 10240, "numa": 0},
            ],
        }
    ],
    "pods": [
        {"name": "ml/run", "request": {"gpus": 1, "memory_mib": 2048}, "node": "n1", "cards": [1]},
        {"name": "ml/p", "request": {"gpus": 1, "memory_mib": 1024}},
    ],
}
EXPECTED_CARD = {"cce": 1, "hami": 0, "volcano-vgpu": 2}

# A HAMi file: one node, two 8192-MiB cards, card 0 holding 1000 MiB (off CCE's 128-MiB grid);
# Pending a whole card and a 50 % share, which CCE cannot express.
#   hami (binpack / spread), queue order a/whole then a/half:
#     a/whole needs 8192: only card 1 (empty) can give it -> card 1.
#     a/half needs 8192 * 50 // 100 = 4096: card 1 is full, card 0 has 7192 free -> card 0.
#   volcano-vgpu (binpack / legacy): a/whole walks 1, 0: card 1; a/half: card 1 full, card 0.
#   cce: both requests break its rules (no share, memory under 128 MiB): invalid.
# Fragmentation after, under hami: free 8192 - 1000 - 4096 = 3096 MiB, all on card 0. Typical
# shapes, a third each: 1 x 1000 MiB (usable there), whole card (needs 8192: not), 50 %
# (needs 4096: not). Fragment 2/3 * 3096 = 2064 MiB. Under cce no request is valid, so no
# shape: fragment 0 of 7192 + 8192 = 15384 MiB free.
HAMI_WHOLE: dict[str, Any] = {
    "scheduler": {"profile": "hami"},
    "nodes": [
        {
            "name": "n1",
            "cards": [{"index": 0, "memory_mib": 8192}, {"index": 1, "memory_mib": 8192}],
        }
    ],
    "pods": [
        {"name": "a/run", "request": {"gpus": 1, "memory_mib": 1000}, "node": "n1", "cards": [0]},
        {"name": "a/whole", "request": {"gpus": 1}},
        {"name": "a/half", "request": {"gpus": 1, "memory_percent": 50}},
    ],
}


def write(tmp_path: Path, data: dict[str, Any], name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def whatif_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["whatif", *args, "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def by_profile(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["profile"]: entry for entry in data["schedulers"]}


def test_three_profiles_choose_three_different_cards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = whatif_json(
        capsys, "--scenario", str(write(tmp_path, THREE_CARDS)), "--scheduler", PROFILES
    )
    assert data["schema"] == "xgpu-advisor/whatif/v1"
    assert (data["running"], data["pending"]) == (1, 1)
    assert [e["profile"] for e in data["schedulers"]] == ["cce", "hami", "volcano-vgpu"]
    entries = by_profile(data)
    for profile, card in EXPECTED_CARD.items():
        entry = entries[profile]
        assert entry["placements"] == {"ml/p": {"node": "n1", "cards": [card]}}, profile
        assert entry["placed"] == 1
        assert entry["placed_mib"] == 1024
        assert entry["pending"]["schedulable"] == 1
        assert entry["causes"] == {"ml/p": "schedulable"}
        assert entry["scheduler"]["profile"] == profile
    assert entries["cce"]["policy"] == {"node": "binpack", "card": "binpack"}
    assert entries["hami"]["policy"] == {"node": "binpack", "card": "spread"}
    assert entries["volcano-vgpu"]["policy"] == {"node": "binpack", "card": "legacy"}
    assert [entries[p]["max_vgpus_per_card"] for p in EXPECTED_CARD] == [20, 10, 10]


def test_the_comparison_agrees_with_diagnose_under_each_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, THREE_CARDS)
    for profile, card in EXPECTED_CARD.items():
        assert (
            main(["diagnose", "--scenario", str(path), "--scheduler", profile, "--format", "json"])
            == 0
        )
        diagnosis = json.loads(capsys.readouterr().out)
        assert diagnosis["scheduler"]["profile"] == profile
        [pod] = diagnosis["pods"]
        assert pod["placement"] == {"node": "n1", "cards": [card]}, profile


def test_profiles_differ_in_causes_and_fragmentation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HAMI_WHOLE)
    entries = by_profile(whatif_json(capsys, "--scenario", str(path), "--scheduler", PROFILES))
    cce, hami, volcano = entries["cce"], entries["hami"], entries["volcano-vgpu"]
    assert cce["pending"]["invalid"] == 2
    assert cce["placed"] == 0
    assert cce["causes"] == {"a/whole": "invalid", "a/half": "invalid"}
    assert cce["running_invalid"] == 1  # 1000 MiB is off cce's grid
    assert (hami["running_invalid"], volcano["running_invalid"]) == (0, 0)
    for entry in (hami, volcano):
        assert entry["pending"]["schedulable"] == 2
        assert entry["placements"] == {
            "a/whole": {"node": "n1", "cards": [1]},
            "a/half": {"node": "n1", "cards": [0]},
        }
        assert entry["placed_mib"] == 8192 + 4096  # what each profile gives of the cards
    assert hami["fragmentation"]["free_mib"] == 3096
    assert hami["fragmentation"]["fragment_mib"] == 2064.0
    assert hami["fragmentation"]["stranded_mib"] == 0  # nothing is left Pending
    assert cce["fragmentation"]["free_mib"] == 15384
    assert cce["fragmentation"]["fragment_mib"] == 0.0


def test_markdown_sets_the_profiles_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HAMI_WHOLE)
    assert main(["whatif", "--scenario", str(path), "--scheduler", PROFILES]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# Scheduler what-if\n")
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    assert rows["cce"].startswith("| cce | binpack / binpack | 20 | 0 of 2 | 0.0 | 0 | 0 |")
    assert rows["hami"].startswith("| hami | binpack / spread | 10 | 2 of 2 | 12.0 | 2 |")
    assert "| 66.7% of 3.0 GiB | 0.0 GiB |" in rows["hami"]
    # the pods whose landing differs, with the cause where a profile places them nowhere
    assert rows["a/whole"] == "| a/whole | invalid | n1 [1] | n1 [1] |"
    assert rows["a/half"] == "| a/half | invalid | n1 [0] | n1 [0] |"
    assert "- cce: running pods asking what this profile cannot express" in text
    assert "express (a whole card, a share, a size off its grid): 1." in text


def test_random_ties_are_counted_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two empty identical nodes: HAMi's node scores (taken before placement) are both 0, and
    # Volcano scores every node 0 with its default ScheduleWeight 0: both pick at random.
    # CCE breaks ties by name, deterministically, as its scheduler does here.
    card = [{"index": 0, "memory_mib": 8192}]
    data = {
        "nodes": [{"name": "n1", "cards": card}, {"name": "n2", "cards": card}],
        "pods": [{"name": "a/p", "request": {"gpus": 1, "memory_mib": 1024}}],
    }
    path = write(tmp_path, data)
    entries = by_profile(whatif_json(capsys, "--scenario", str(path), "--scheduler", PROFILES))
    assert [entries[p]["random_ties"] for p in EXPECTED_CARD] == [0, 1, 1]
    assert main(["whatif", "--scenario", str(path), "--scheduler", PROFILES]) == 0
    text = capsys.readouterr().out
    assert "- hami: 1 of its picks were among nodes that score the same" in text
    assert "- cce:" not in text


def test_profile_outcome_places_what_the_diagnosis_calls_schedulable() -> None:
    # The comparison's cycle and the diagnosis run the same greedy placement.
    cluster = scenario_from_data(HAMI_WHOLE, "test.yaml")
    for profile in ("cce", "hami", "volcano-vgpu"):
        outcome = profile_outcome(retarget(cluster, profile))
        assert outcome.placed == outcome.pending_by_cause["schedulable"], profile


def test_one_profile_keeps_the_policy_what_if(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, THREE_CARDS)
    data = whatif_json(capsys, "--scenario", str(path), "--scheduler", "volcano-vgpu")
    assert data["current"]["scheduler"] == {"profile": "volcano-vgpu", "schedule_weight": 0}
    assert data["current"]["policy"] == {"node": "binpack", "card": "legacy"}
    # volcano-vgpu's card policies include legacy: 2 node x 3 card policies
    assert [(p["node"], p["card"]) for p in data["policies"]] == [
        (n, c) for n in ("binpack", "spread") for c in ("binpack", "spread", "legacy")
    ]
    legacy = next(p for p in data["policies"] if (p["node"], p["card"]) == ("binpack", "legacy"))
    assert legacy["pending_placed"] == 1
    assert legacy["pending_placed_mib"] == 1024
    assert "schedulers" not in data
    plain = whatif_json(capsys, "--scenario", str(path))
    assert plain["current"]["scheduler"] == {"profile": "cce"}
    assert len(plain["policies"]) == 4


def test_share_requests_are_said_in_the_single_what_if(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HAMI_WHOLE)
    data = whatif_json(capsys, "--scenario", str(path))
    assert data["current"]["pending_mib"] == 0
    assert data["current"]["pending_relative"] == 2
    assert main(["whatif", "--scenario", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Now (hami: binpack nodes, spread cards): 1 running, 2 Pending (0.0 GiB, and 2 " in text


@pytest.mark.realservices  # xgpu-advisor as a process
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("cce,slurm", "--scheduler: unknown profile 'slurm'; known: cce, hami, volcano-vgpu, auto"),
        ("hami,hami", "--scheduler: hami named twice"),
        ("cce,auto", "--scheduler: auto stands alone, not in a list"),
        ("cce,", "--scheduler: unknown profile (empty); known: cce, hami, volcano-vgpu, auto"),
    ],
)
def test_a_bad_profile_list_is_one_line_and_exit_2(
    tmp_path: Path, value: str, message: str
) -> None:
    path = write(tmp_path, THREE_CARDS)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor.cli",
            "whatif",
            "--scenario",
            str(path),
            "--scheduler",
            value,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [f"xgpu-advisor: error: {message}"]


# Card 0 (healthy) is full; card 1 is unhealthy and empty; 1 x 8192 MiB waits. cce and hami
# refuse the unhealthy card and count none of its memory free; volcano-vgpu has no health
# check: 8192 MiB free, and the pod lands there.
SICK: dict[str, Any] = {
    "nodes": [
        {
            "name": "n1",
            "cards": [
                {"index": 0, "memory_mib": 8192},
                {"index": 1, "memory_mib": 8192, "healthy": False},
            ],
        }
    ],
    "pods": [
        {"name": "a/full", "request": {"gpus": 1, "memory_mib": 8192}, "node": "n1", "cards": [0]},
        {"name": "a/wait", "request": {"gpus": 1, "memory_mib": 8192}},
    ],
}


def test_an_unhealthy_card_counts_only_where_the_profile_checks_no_health(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SICK)
    entries = by_profile(whatif_json(capsys, "--scenario", str(path), "--scheduler", PROFILES))
    assert [entries[p]["fragmentation_now"]["free_mib"] for p in EXPECTED_CARD] == [0, 0, 8192]
    assert [entries[p]["placed"] for p in EXPECTED_CARD] == [0, 0, 1]
    assert entries["volcano-vgpu"]["placements"] == {"a/wait": {"node": "n1", "cards": [1]}}
    assert entries["volcano-vgpu"]["fragmentation"]["free_mib"] == 0
    out = tmp_path / "out"
    for profile, capacity in (("hami", 1), ("volcano-vgpu", 2)):  # headroom's GPUs
        assert (
            main(
                [
                    "report",
                    "--scenario",
                    str(path),
                    "--output-dir",
                    str(out),
                    "--scheduler",
                    profile,
                ]
            )
            == 0
        )
        report = json.loads((out / "report.json").read_text())
        assert report["headroom"]["capacity_gpus"] == capacity, profile


def test_running_whole_cards_stay_full_under_another_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A HAMi file: a whole-card pod runs on card 0 (8192 MiB, all of it). Re-judged by cce,
    # which has no whole-card request, it holds 8192 MiB there: the card is full, so the
    # 4096-MiB pod goes to card 1 (read as "0 MiB", card 0 would look empty and binpack's
    # tie on 8192 free would take card 0).
    data = {
        "scheduler": {"profile": "hami"},
        "nodes": [
            {
                "name": "n1",
                "cards": [{"index": 0, "memory_mib": 8192}, {"index": 1, "memory_mib": 8192}],
            }
        ],
        "pods": [
            {"name": "a/run", "request": {"gpus": 1}, "node": "n1", "cards": [0]},
            {"name": "a/p", "request": {"gpus": 1, "memory_mib": 4096}},
        ],
    }
    path = write(tmp_path, data)
    entries = by_profile(whatif_json(capsys, "--scenario", str(path), "--scheduler", PROFILES))
    for profile in EXPECTED_CARD:
        assert entries[profile]["fragmentation_now"]["free_mib"] == 8192, profile
        assert entries[profile]["placements"] == {"a/p": {"node": "n1", "cards": [1]}}, profile
        assert entries[profile]["running_invalid"] == 0, profile


# SICK above: cce and hami skip the unhealthy card (capacity); volcano-vgpu's filter,
# checkNodeGPUSharingPredicateAndScore, reads no health and places a/wait there, as Volcano
# would: every what-if path says so.


def test_a_placement_on_an_unhealthy_card_is_said_under_every_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SICK)
    entries = by_profile(whatif_json(capsys, "--scenario", str(path), "--scheduler", PROFILES))
    for refusing in ("cce", "hami"):
        assert entries[refusing]["placements"] == {"a/wait": None}, refusing
        assert entries[refusing]["causes"] == {"a/wait": "capacity"}, refusing
        assert "on_unhealthy" not in entries[refusing]
    volcano = entries["volcano-vgpu"]
    assert volcano["placements"] == {"a/wait": {"node": "n1", "cards": [1]}}
    assert volcano["on_unhealthy"] == ["a/wait"]
    assert main(["whatif", "--scenario", str(path), "--scheduler", PROFILES]) == 0
    text = capsys.readouterr().out
    assert "- volcano-vgpu: a/wait placed on cards reported unhealthy." in text
    assert "checkNodeGPUSharingPredicateAndScore) reads no health" in text


def test_the_policy_what_if_says_which_placements_are_on_unhealthy_cards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SICK)
    data = whatif_json(capsys, "--scenario", str(path), "--scheduler", "volcano-vgpu")
    for policy in data["policies"]:
        # the queue: a/wait on card 1; the repack from empty: one pod on each card (the legacy walk
        # or binpack takes the fuller or later card first, one of the two on card 1)
        assert policy["pending_placed"] == 1
        assert policy["pending_on_unhealthy"] == 1
        assert policy["repack"]["on_unhealthy"] >= 1
    for profile in ("cce", "hami"):  # they never place there: no count, no note
        refused = whatif_json(capsys, "--scenario", str(path), "--scheduler", profile)
        for policy in refused["policies"]:
            assert "pending_on_unhealthy" not in policy
            assert "on_unhealthy" not in policy["repack"]
    assert main(["whatif", "--scenario", str(path), "--scheduler", "volcano-vgpu"]) == 0
    text = capsys.readouterr().out
    assert "1 Pending pod placed and" in text
    assert "repacked on cards reported unhealthy." in text
    assert "reads no health" in text
