"""Volcano's actions without allocate (docs/design.md §10.2): the job cycle always allocates,
so such a configuration is named in a warning, from a scenario as from a live cluster (both
read through commands.cluster_input), and never silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.core.jobs import CCE_ACTIONS, UPSTREAM_ACTIONS, without_allocate

SCENARIO: dict[str, Any] = {
    "scheduler": {"profile": "volcano-vgpu"},
    "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
    "queues": [{"name": "q1", "state": "Closed"}],
    "groups": [{"name": "ml/job", "min_member": 1, "queue": "q1"}],
    "pods": [{"name": "ml/a", "group": "ml/job", "request": {"gpus": 1, "memory_mib": 1024}}],
}


def test_only_a_configuration_without_allocate_is_named() -> None:
    assert without_allocate(UPSTREAM_ACTIONS) is None
    assert without_allocate(CCE_ACTIONS) is None
    assert without_allocate(("reclaim",)) == (
        "Volcano's actions (reclaim) name no allocate: Volcano binds no pod and leaves every "
        "Pending PodGroup Pending; the advisor's cycle models allocate anyway"
    )
    # enqueue admits groups; backfill binds BestEffort pods, no others
    assert without_allocate(("enqueue", "backfill")) == (
        "Volcano's actions (enqueue, backfill) name no allocate: Volcano binds only "
        "backfill's BestEffort pods; the advisor's cycle models allocate anyway"
    )


def _diagnose(
    actions: list[str] | None, profile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    scheduler: dict[str, object] = {"profile": profile}
    if actions is not None:
        scheduler["actions"] = actions
    data = {**SCENARIO, "scheduler": scheduler}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["diagnose", "--scenario", str(path), "--format", "json"]) == 0
    return capsys.readouterr().err.splitlines()


def test_diagnose_warns_once_where_the_actions_lack_allocate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _diagnose(["reclaim"], "volcano-vgpu", tmp_path, capsys) == [
        f"xgpu-advisor: warning: {without_allocate(('reclaim',))}"
    ]
    assert _diagnose(["enqueue", "allocate"], "volcano-vgpu", tmp_path, capsys) == []
    assert _diagnose(None, "cce", tmp_path, capsys) == []  # the profile's default: allocates
    # hami runs kube-scheduler's session: no Volcano actions (its warning: the queue)
    assert not [e for e in _diagnose(None, "hami", tmp_path, capsys) if "allocate" in e]
