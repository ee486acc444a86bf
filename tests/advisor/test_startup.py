"""Start-up: `xgpu-advisor`'s parser (`--help`, a bad flag, every command before it runs)
loads none of the model, the sources or their libraries, and a scenario read loads none of
the live sources; the flags' defaults are the code's own (advisor.defaults holds them once).
The time itself is a benchmark (benchmarks/startup_bench.py), not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import scenario
from advisor.cli import _parser
from advisor.commands.flags.commands import COMMANDS, DEFAULT_MAX_EVICTIONS_TEXT
from advisor.core.model import POLICIES
from advisor.core.plan import DEFAULT_BUDGET, PlanOptions
from advisor.core.profiles import profile_names
from advisor.defaults import (
    BUILT_IN_CARD_POLICIES,
    BUILT_IN_PROFILES,
    NODE_POLICIES,
    RightsizingSettings,
)
from advisor.scenario import DEFAULT_LIMITS
from advisor.scenario.profile import defaults
from tests.realparts import DEMO

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "pandas", "aiohttp", "kubernetes", "yaml", "prometheus_client", "scipy")
MODEL = ("advisor.core", "advisor.sources", "advisor.scenario", "advisor.output", "advisor.render")

# Runs `advisor.cli.main(argv)` in a fresh interpreter, then prints the modules it loaded.
PROBE = """
import json, sys
from advisor.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def loaded(*argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    modules: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return modules


def under(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == r or m.startswith(r + ".") for r in roots)]


@pytest.mark.realservices  # a fresh interpreter runs the CLI
@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in COMMANDS)])
def test_help_loads_neither_the_model_nor_its_libraries(argv: list[str]) -> None:
    modules = loaded(*argv)
    assert "advisor.commands.flags.commands" in modules  # the probe did build the parser
    assert under(modules, HEAVY) == []
    assert under(modules, MODEL) == []


@pytest.mark.realservices
def test_a_bad_flag_is_refused_before_the_command_loads() -> None:
    modules = loaded("diagnose", "--senario", "x.yaml")
    assert "advisor.commands.diagnose" not in modules
    assert under(modules, HEAVY + MODEL) == []


# The scenario's text reader, which every command that reads a cluster imports.
READER = ["advisor.scenario", "advisor.scenario.errors", "advisor.scenario.text"]
# Each command given an input file that is not there ({tmp}: a fresh folder), and the
# modules of MODEL it may load before it refuses it: the reader of that file only.
MISSING_INPUT = [
    *(
        ([name, "--scenario", "{tmp}/missing.yaml"], READER)
        for name in ("diagnose", "plan", "whatif")
    ),
    (["report", "--scenario", "{tmp}/missing.yaml", "--output-dir", "{tmp}/out"], READER),
    (["replay", "--nodes", "{tmp}/missing.csv", "--pods", "{tmp}/pods.csv"], []),
    (["replay", "--nodes", "{tmp}/nodes.csv", "--pods", "{tmp}/pods.csv"], []),  # nodes read
    # a live read: its credential file, then the file it would write (no Prometheus runs
    # at this address: reached, the command would load the sources and fail later)
    (
        [
            "snapshot",
            "--prometheus",
            "http://127.0.0.1:9",
            "--prometheus.bearer-token-file",
            "{tmp}/missing-token",
            "--output",
            "{tmp}/snapshot.yaml",
        ],
        READER,
    ),
    (
        ["snapshot", "--prometheus", "http://127.0.0.1:9", "--output", "{tmp}/no/snapshot.yaml"],
        READER,
    ),
]


@pytest.mark.realservices
@pytest.mark.parametrize(
    ("argv", "reader"),
    MISSING_INPUT,
    ids=[
        "diagnose",
        "plan",
        "whatif",
        "report",
        "replay-nodes",
        "replay-pods",
        "snapshot-token",
        "snapshot-output",
    ],
)
def test_a_missing_input_is_refused_before_the_model_loads(
    argv: list[str], reader: list[str], tmp_path: Path
) -> None:
    # The command's own module and the file's reader load; the core, the scenario parser
    # and reader, the trace replay, the output and their libraries
    # wait for something to judge.
    (tmp_path / "nodes.csv").write_text("sn,gpu,model\nn1,2,V100\n")
    modules = loaded(*(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert f"advisor.commands.{argv[0]}" in modules
    assert under(modules, HEAVY) == []
    assert under(modules, (*MODEL, "advisor.replay", "advisor.report", "advisor.metrics")) == reader


@pytest.mark.realservices
def test_a_scenario_read_loads_none_of_the_live_sources() -> None:
    modules = loaded("diagnose", "--scenario", str(DEMO), "--format", "json")
    assert "advisor.scenario.read" in modules  # it did read the file
    assert under(modules, ("advisor.sources", "aiohttp", "pandas", "kubernetes")) == []


def test_the_scenario_package_gives_every_name_it_exports() -> None:
    # Its readers and writers load on first use (advisor/scenario/__init__.py): each name
    # listed must come from its module.
    for name in scenario.__all__:
        assert getattr(scenario, name) is not None, name


def test_the_built_in_profiles_are_the_ones_registered() -> None:
    assert profile_names()[: len(BUILT_IN_PROFILES)] == BUILT_IN_PROFILES
    assert list(BUILT_IN_CARD_POLICIES) == list(BUILT_IN_PROFILES)
    for name in BUILT_IN_PROFILES:  # replay checks a given card policy with these alone
        default, card_policies, _ = defaults(name)
        assert BUILT_IN_CARD_POLICIES[name] == card_policies
        assert default.card in card_policies
    assert NODE_POLICIES == POLICIES


def test_the_flags_defaults_are_the_codes_own() -> None:
    parser = _parser()
    plan = parser.parse_args(["plan", "--scenario", "x.yaml"])
    options = PlanOptions()
    assert plan.max_plan_evictions == options.max_plan_evictions
    assert plan.max_evictions == DEFAULT_MAX_EVICTIONS_TEXT == DEFAULT_BUDGET.text
    assert plan.plan_work == options.work
    assert plan.time_budget == options.time_budget_s
    report = parser.parse_args(["report", "--scenario", "x.yaml"])
    settings = RightsizingSettings()
    assert report.rightsizing_min_history == settings.min_history_s
    assert report.rightsizing_min_samples == settings.min_samples
    assert report.scenario_max_pods == DEFAULT_LIMITS.max_pods
