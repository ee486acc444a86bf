"""The scenario limits (`ScenarioLimits`, the CLI's --scenario.max-* flags): a scenario
beyond one is refused in one line naming the flag that raises it; at the limit it loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.defaults import ScenarioLimits
from advisor.scenario import ScenarioError, load_scenario


def cluster(nodes: int, cards_per_node: int, pods: int) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "name": f"n{i}",
                "cards": [{"index": k, "memory_mib": 16384} for k in range(cards_per_node)],
            }
            for i in range(nodes)
        ],
        "pods": [
            {"name": f"a/p{i}", "request": {"gpus": 1, "memory_mib": 32768}} for i in range(pods)
        ],
    }


@pytest.fixture
def three(tmp_path: Path) -> Path:
    # 3 nodes of 2 cards (6 cards) and 4 Pending pods
    path = tmp_path / "three.json"
    path.write_text(json.dumps(cluster(3, 2, 4)), encoding="utf-8")
    return path


def refusal(path: Path, limits: ScenarioLimits) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, limits=limits)
    assert "\n" not in str(caught.value)
    return str(caught.value).removeprefix(f"{path}: ")


def test_at_each_limit_the_scenario_loads(three: Path) -> None:
    size = three.stat().st_size
    exact = ScenarioLimits(max_bytes=size, max_nodes=3, max_cards=6, max_pods=4)
    loaded = load_scenario(three, limits=exact)
    assert (len(loaded.nodes), len(loaded.pods)) == (3, 4)


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (
            ScenarioLimits(max_nodes=2),
            "nodes: 3 nodes, more than the 2 allowed (--scenario.max-nodes)",
        ),
        (
            ScenarioLimits(max_cards=5),
            "nodes: 6 cards, more than the 5 allowed (--scenario.max-cards)",
        ),
        (ScenarioLimits(max_pods=3), "pods: 4 pods, more than the 3 allowed (--scenario.max-pods)"),
    ],
)
def test_one_past_a_limit_is_one_line_naming_its_flag(
    three: Path, limits: ScenarioLimits, expected: str
) -> None:
    assert refusal(three, limits) == expected


def test_one_byte_past_the_size_limit_is_refused_unread(three: Path) -> None:
    size = three.stat().st_size
    message = refusal(three, ScenarioLimits(max_bytes=size - 1))
    assert message == (
        f"(file): {size:,} bytes, more than the {size - 1:,} bytes a scenario may have "
        "(--scenario.max-bytes)"
    )


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--scenario.max-nodes", "2"),
        ("--scenario.max-cards", "5"),
        ("--scenario.max-pods", "3"),
        ("--scenario.max-bytes", "100"),
    ],
)
@pytest.mark.parametrize("command", ["diagnose", "plan", "whatif", "report"])
def test_every_command_reading_a_scenario_takes_the_flags(
    three: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    flag: str,
    value: str,
) -> None:
    def out(name: str) -> list[str]:
        return ["--output-dir", str(tmp_path / name)] if command == "report" else []

    assert main([command, "--scenario", str(three), *out("within")]) == 0
    capsys.readouterr()
    code = main([command, "--scenario", str(three), *out("beyond"), flag, value])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0, err
    assert flag in err, err
    assert not (tmp_path / "beyond").exists()  # nothing written


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e3", "x"])
def test_a_limit_is_a_whole_number_of_at_least_one(
    three: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["diagnose", "--scenario", str(three), "--scenario.max-nodes", value])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
