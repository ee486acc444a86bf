"""A pod's `created` and `scheduled`, and the scenario's `now` (design §4, §12): read, checked,
written back, and what a bad value tells the user."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.scenario import ScenarioError, load_scenario, save_scenario, scenario_from_data


def scenario(**top: Any) -> dict[str, Any]:
    return {
        "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
        "pods": [
            {
                "name": "ns/run",
                "node": "n1",
                "cards": [0],
                "request": {"memory_mib": 1024},
                "created": "2024-05-01T11:59:00Z",
                "scheduled": "2024-05-01T11:59:02Z",
            },
            {"name": "ns/wait", "request": {"memory_mib": 1024}, "created": "2024-05-01T10:00:00Z"},
        ],
        **top,
    }


def test_times_are_read_and_written_back(tmp_path: Path) -> None:
    cluster = scenario_from_data(scenario(now="2024-05-01T12:00:00Z"), "s.yaml")
    assert cluster.now == "2024-05-01T12:00:00Z"
    run, wait = cluster.pods
    assert (run.created, run.scheduled) == ("2024-05-01T11:59:00Z", "2024-05-01T11:59:02Z")
    assert (wait.created, wait.scheduled) == ("2024-05-01T10:00:00Z", None)
    path = tmp_path / "back.yaml"
    save_scenario(path, cluster)
    assert load_scenario(path) == cluster  # Cluster equality holds `now` and the pods' times
    written = yaml.safe_load(path.read_text())
    assert written["now"] == "2024-05-01T12:00:00Z"
    assert "scheduled" not in written["pods"][1]


def test_unquoted_yaml_times_are_read_as_rfc_3339() -> None:
    when = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)  # what YAML makes of an unquoted time
    cluster = scenario_from_data(scenario(now=when), "s.yaml")
    assert cluster.now == "2024-05-01T12:00:00Z"


def test_without_times_nothing_is_written(tmp_path: Path) -> None:
    data = scenario()
    for pod in data["pods"]:
        pod.pop("created"), pod.pop("scheduled", None)
    path = tmp_path / "plain.yaml"
    save_scenario(path, scenario_from_data(data, "s.yaml"))
    text = path.read_text()
    for key in ("created", "scheduled", "now"):
        assert key not in text, key


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("now", "yesterday", "s.yaml: now: expected an RFC 3339 time, got 'yesterday'"),
        ("now", "2024-05-01", "s.yaml: now: expected an RFC 3339 time, got '2024-05-01'"),
        ("created", 1714557600, "s.yaml: pods[1].created: expected a non-empty string"),
        (
            "scheduled",
            "2024-13-01T00:00:00Z",
            "s.yaml: pods[0].scheduled: expected an RFC 3339 time, got '2024-13-01T00:00:00Z'",
        ),
    ],
)
def test_a_bad_time_is_one_line_naming_where(where: str, value: Any, message: str) -> None:
    data = scenario()
    if where == "now":
        data["now"] = value
    else:
        data["pods"][0 if where == "scheduled" else 1][where] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(data, "s.yaml")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_the_cli_exits_2_on_a_bad_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(scenario(now="soon")))
    assert main(["diagnose", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{path}: now: expected an RFC 3339 time, got 'soon'")
    assert "\n" not in err
