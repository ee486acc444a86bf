"""The causes `queue` and `quota` in the outputs (docs/design.md §10.3): diagnose's JSON (its
schema), its text, and the advice; an output without them keeps its form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor import schemas
from advisor.cli import main
from tests.advisor.test_schemas import conforms


def scenario(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def node() -> dict[str, Any]:
    return {
        "name": "n1",
        "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 20},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(2)],
    }


QUEUED = {
    "scheduler": {"profile": "volcano-vgpu"},
    "nodes": [node()],
    "queues": [{"name": "small", "capability": {"cpu": "1"}}],
    "groups": [{"name": "ml/big", "queue": "small", "min_resources": {"cpu": "4"}}],
    "pods": [
        {
            "name": "ml/big-0",
            "group": "ml/big",
            "request": {"gpus": 1, "memory_mib": 1024},
            "resources": {"cpu": "4", "memory": "1Gi"},
        }
    ],
}


def test_diagnose_json_carries_queue_and_the_group_not_admitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", "--scenario", scenario(tmp_path, QUEUED), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert conforms(data, schemas.DIAGNOSIS_SCHEMA) == []
    assert data["summary"]["queue"] == 1
    assert "quota" not in data["summary"]
    (pod,) = data["pods"]
    assert pod["cause"] == "queue"
    assert pod["message"] == "queue resource quota insufficient: insufficient cpu"
    assert [g["state"] for g in data["groups"]] == ["not-admitted"]


def test_diagnose_text_names_the_queue_cause_and_its_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", "--scenario", scenario(tmp_path, QUEUED)]) == 0
    out = capsys.readouterr().out
    assert "1 queue" in out
    assert "queue resource quota insufficient: insufficient cpu" in out


def test_quota_under_hami_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {
        "scheduler": {"profile": "hami"},
        "nodes": [node()],
        "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "1000"}}],
        "pods": [{"name": "ml/a", "request": {"gpus": 1, "memory_mib": 1024}}],
    }
    assert main(["diagnose", "--scenario", scenario(tmp_path, data), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert conforms(out, schemas.DIAGNOSIS_SCHEMA) == []
    assert (out["summary"]["quota"], out["pods"][0]["cause"]) == (1, "quota")
