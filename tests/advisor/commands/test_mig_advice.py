"""A `mig-geometry` pod's re-partition (docs/design.md §13) as every command shows it: the
advice's `repartition` in diagnose's and plan's JSON (valid against the shipped schemas),
the same re-partition in each Markdown and HTML page and in the report, and a MIG card
drawn as its instances (holder, or free) in the card tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from tests.advisor.test_schemas import conforms

SCENARIO = {
    "nodes": [
        {
            "name": "m",
            "mig_strategy": "mixed",
            "cards": [
                {
                    "index": 0,
                    "memory_mib": 40960,
                    "model": "NVIDIA A100-SXM4-40GB",
                    "mig": {"instances": [{"profile": "1g.5gb", "start": s} for s in range(7)]},
                }
            ],
        }
    ],
    "pods": [
        {
            "name": "ml/a",
            "node": "m",
            "request": {"gpus": 1, "mig_profile": "1g.5gb"},
            "mig_instances": [{"card": 0, "start": 0}],
        },
        {"name": "ml/q", "request": {"gpus": 1, "mig_profile": "1g.5gb"}},
        {"name": "ml/p", "request": {"gpus": 1, "mig_profile": "3g.20gb"}},
    ],
}
SUMMARY = (
    "re-partition m card 0 to 1g.5gb@0, 1g.5gb@1, 1g.5gb@2, 1g.5gb@3, 3g.20gb@4; "
    "drain first: ml/a (nvidia-mig-parted configuration xgpu-m)"
)
LINE = "m card 0: " + " ".join(f"1g.5gb@{s}" for s in range(7)) + " → "


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "mig.yaml"
    path.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    return path


def _run(*argv: str) -> None:
    assert main(list(argv)) == 0


def _advice(entries: list[dict[str, Any]], pod: str) -> dict[str, Any]:
    advice: dict[str, Any] = next(e for e in entries if e["pod"] == pod)["advice"]
    return advice


def test_diagnose_and_plan_json_carry_the_same_verified_re_partition(
    scenario: Path, tmp_path: Path
) -> None:
    _run(
        "diagnose", "--scenario", str(scenario), "--format", "json", "--output", str(tmp_path / "d")
    )
    _run("plan", "--scenario", str(scenario), "--format", "json", "--output", str(tmp_path / "p"))
    diagnosis = json.loads((tmp_path / "d").read_text(encoding="utf-8"))
    plan = json.loads((tmp_path / "p").read_text(encoding="utf-8"))
    assert conforms(diagnosis, diagnosis["schema"]) == []
    assert conforms(plan, plan["schema"]) == []
    d, p = _advice(diagnosis["pods"], "ml/p"), _advice(plan["unresolved"], "ml/p")
    assert d == p
    assert d["key"] == "mig-geometry"
    assert d["why"] == SUMMARY
    cut = d["repartition"]
    assert cut["current_config"] is None  # the node has no nvidia.com/mig.config label
    assert (cut["node"], [c["card"] for c in cut["cards"]], cut["drain"]) == ("m", [0], ["ml/a"])
    assert cut["cards"][0]["after"] == ["1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "3g.20gb@4"]
    assert yaml.safe_load(cut["mig_parted"]) == {
        "version": "v1",
        "mig-configs": {
            "xgpu-m": [
                {
                    "devices": [0],
                    "mig-enabled": True,
                    "mig-devices": {"1g.5gb": 4, "3g.20gb": 1},
                }
            ]
        },
    }
    # ml/q fits now (a free 1g), so it is neither unresolved nor given a re-partition
    assert "repartition" not in _advice(diagnosis["pods"], "ml/q")
    assert [u["pod"] for u in plan["unresolved"]] == ["ml/p"]
    # before the cycle: six free 1g (ml/a holds one), none 3g; a re-partition holds one 3g
    assert diagnosis["mig_profiles"] == [
        {
            "profile": "1g.5gb",
            "free_instances": 6,
            "room_if_repartitioned": 6,
            "pending_pods": 1,
            "pending_instances": 1,
            "waiting_pods": 0,
        },
        {
            "profile": "3g.20gb",
            "free_instances": 0,
            "room_if_repartitioned": 1,
            "pending_pods": 1,
            "pending_instances": 1,
            "waiting_pods": 1,
        },
    ]


@pytest.mark.parametrize("command", ["diagnose", "plan"])
@pytest.mark.parametrize("form", ["markdown", "html"])
def test_each_page_shows_the_re_partition(
    scenario: Path, tmp_path: Path, command: str, form: str
) -> None:
    out = tmp_path / "out"
    _run(command, "--scenario", str(scenario), "--format", form, "--output", str(out))
    text = out.read_text(encoding="utf-8")
    assert "MIG re-partitions" in text
    assert LINE in text
    assert "xgpu-m:" in text
    assert ("MIG profiles" in text) is (command == "diagnose")
    assert ("&quot;3g.20gb&quot;: 1" if form == "html" else '"3g.20gb": 1') in text


def test_the_report_shows_the_re_partition_and_the_mig_card_as_its_instances(
    scenario: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    _run("report", "--scenario", str(scenario), "--output-dir", str(out))
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert conforms(data, data["schema"]) == []
    (card,) = data["view"]["nodes"][0]["cards"]
    held = {(s["profile"], s["start"]): (s.get("pod"), s["pending"]) for s in card["mig"]}
    # ml/a holds slice 0; ml/q, placed by this cycle, the first free 1g (slice 1)
    assert held[("1g.5gb", 0)] == ("ml/a", False)
    assert held[("1g.5gb", 1)] == ("ml/q", True)
    assert held[("1g.5gb", 2)] == (None, False)
    assert [r["profile"] for r in data["diagnosis"]["mig_profiles"]] == ["1g.5gb", "3g.20gb"]
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert LINE in markdown
    assert "| 3g.20gb | 0 | 1 | 1 | 1 | 1 |" in markdown
    assert "- m card 0: 1g.5gb@0 ml/a · 1g.5gb@1 ml/q (pending) · 1g.5gb@2 free" in markdown
    page = (out / "report.html").read_text(encoding="utf-8")
    assert LINE in page
    assert 'title="1g.5gb@0 ml/a"' in page
    assert 'title="1g.5gb@2 free"' in page
