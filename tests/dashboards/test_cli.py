"""`xgpu-dashboards build` / `check`, and the committed JSON being current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dashboards.build import DEFAULT_OUT, render, stale
from dashboards.cli import main

NAMES = {"xgpu-cluster.json", "xgpu-node.json", "xgpu-workload.json", "xgpu-advisor.json"}


def test_committed_json_is_current() -> None:
    problems = stale(DEFAULT_OUT)
    assert not problems, "\n".join([*problems, "run `xgpu-dashboards build`"])


def test_build_is_deterministic() -> None:
    assert render() == render()


def test_build_writes_every_dashboard_and_check_passes(tmp_path: Path) -> None:
    assert main(["build", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == NAMES
    for path in tmp_path.iterdir():
        assert json.loads(path.read_text())["uid"] == path.stem
    assert main(["check", "--out", str(tmp_path)]) == 0


def test_check_fails_on_an_edited_a_missing_or_a_leftover_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["build", "--out", str(tmp_path)])
    edited = tmp_path / "xgpu-node.json"
    edited.write_text(edited.read_text().replace("Mode", "Mood"))
    (tmp_path / "xgpu-advisor.json").unlink()
    (tmp_path / "xgpu-placeholder.json").write_text("{}")
    (tmp_path / "someone-else.json").write_text("{}")
    capsys.readouterr()
    assert main(["check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "xgpu-node.json: out of date" in err
    assert "xgpu-advisor.json: missing" in err
    assert "xgpu-placeholder.json: not generated any more" in err
    assert "someone-else" not in err

    main(["build", "--out", str(tmp_path)])
    assert main(["check", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == NAMES | {"someone-else.json"}


@pytest.mark.realservices  # xgpu-dashboards as a process
def test_console_script_checks_the_default_folder() -> None:
    script = Path(sys.executable).parent / "xgpu-dashboards"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "dashboards.cli"]
    result = subprocess.run([*command, "check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_deploy_provisioning_copies_are_current() -> None:
    """deploy/base/dashboards feeds the Grafana ConfigMap: it must match a fresh build."""
    deploy_copy = Path(__file__).resolve().parents[2] / "deploy" / "base" / "dashboards"
    assert stale(deploy_copy) == []
