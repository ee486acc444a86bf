"""The scenario loader against near-valid scenarios made hostile, in YAML and in JSON.

Whatever it refuses is one ScenarioError line; whatever it accepts is written back by
`save_scenario` (the writer `snapshot` and `replay --write-scenario` use) in both formats,
read back to the same cluster, and diagnosed without a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from advisor import cli
from advisor.scenario import ScenarioError, load_scenario, save_scenario, scenario_to_data
from tests.fuzz.hostile import ADVISOR_ERROR, assert_clean_exit, assert_one_line, run_main
from tests.fuzz.mutate import mutated, text_edits
from tests.fuzz.profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

EXAMPLES = Path(__file__).resolve().parents[2] / "advisor" / "examples"
SMALL: dict[str, Any] = {
    "scheduler": {"profile": "hami", "default_memory_mib": 1024},
    "max_vgpus_per_card": 4,
    "nodes": [
        {"name": "n1", "cards": [{"index": 0, "memory_mib": 16384, "numa": 0, "max_vgpus": 2}]},
        {
            "name": "n2",
            "cards": [{"index": 0, "memory_mib": 8192}, {"index": 1, "memory_mib": 8192}],
        },
    ],
    "pods": [
        {"name": "ml/a", "node": "n1", "cards": [0], "request": {"gpus": 1, "memory_mib": 4096}},
        {"name": "ml/b", "request": {"gpus": 2, "memory_percent": 50}, "priority": 5},
        {"name": "ml/c", "invalid": "unreadable request"},
    ],
}
# The job layer's keys (docs/design.md §10.1), every one of them, under Volcano's session.
JOBS: dict[str, Any] = {
    "scheduler": {
        "profile": "volcano-vgpu",
        "actions": ["enqueue", "allocate", "backfill", "preempt", "reclaim"],
        "gang": {"preemptable": False, "job_starving": True},
        "overcommit_factor": 1.5,
    },
    "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
    "queues": [
        {
            "name": "training",
            "weight": 3,
            "capability": {"volcano.sh/vgpu-memory": "20000", "cpu": "64"},
            "guarantee": {"cpu": "8"},
            "reclaimable": False,
            "priority": 2,
            "state": "Closing",
        }
    ],
    "groups": [
        {"name": "ml/job-a", "min_member": 2, "queue": "training", "priority": 100},
        {"name": "ml/job-b", "min_resources": {"cpu": "4", "memory": "8Gi"}},
    ],
    "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "40000"}}],
    "pods": [
        {"name": "ml/a-0", "node": "n1", "cards": [0], "request": {"gpus": 1}, "group": "ml/job-a"},
        {
            "name": "ml/a-1",
            "request": {"gpus": 1},
            "group": "ml/job-a",
            "preemptable": False,
            "preemption_policy": "Never",
        },
    ],
}
HAMI_PREEMPTION: dict[str, Any] = {
    "scheduler": {"profile": "hami", "preemption": False},
    "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
    "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "4000"}}],
    "pods": [{"name": "ml/a", "request": {"gpus": 1, "memory_mib": 4096}}],
}
BASES = [SMALL, JOBS, HAMI_PREEMPTION] + [
    yaml.safe_load(p.read_text()) for p in sorted(EXAMPLES.glob("*.yaml"))
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scenario-fuzz")


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data)
    return yaml.safe_dump(data, sort_keys=False)


@st.composite
def scenario_texts(draw: st.DrawFn) -> tuple[str, str]:
    fmt = draw(st.sampled_from(["yaml", "json"]))
    data = draw(mutated(draw(st.sampled_from(BASES))))
    return fmt, draw(text_edits(dump(data, fmt)))


def check_loads_or_refuses(workdir: Path, fmt: str, text: str) -> None:
    path = workdir / f"scenario.{fmt}"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        cluster = load_scenario(path)
    except ScenarioError as err:
        message = str(err)
        assert message.startswith(f"{path}: "), message
        assert_one_line(message + "\n", "scenario")
        return
    written = scenario_to_data(cluster)
    for back_fmt in ("yaml", "json"):
        back = workdir / f"back.{back_fmt}"
        save_scenario(back, cluster)
        assert scenario_to_data(load_scenario(back)) == written
    argv = ["diagnose", "--scenario", str(path), "--format", "json"]
    outcome = run_main(cli.main, argv)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR, allowed=(0,))


@given(scenario_texts())
@fuzz_settings(150)
@example(("yaml", "nodes: [{name: n, cards: [{index: 0, memory_mib: 9223372036854775808}]}]"))
@example(("yaml", "nodes: [{name: n, cards: [{index: 0, memory_mib: ²}]}]"))
@example(("json", '{"nodes": [{"name": "n", "cards": [{"index": 0, "memory_mib": 1e30}]}]}'))
@example(("json", '{"nodes": [], "nodes": []}'))
@example(("yaml", "nodes: []\nnodes: []\n"))
@example(("yaml", "\ufeffnodes: [{name: n, cards: [{index: 0, memory_mib: 1}]}]"))
@example(("yaml", "nodes: [\x00]"))
@example(("json", "[" * 100_000 + "]" * 100_000))
@example(("yaml", "nodes: " + "[" * 100_000 + "]" * 100_000))
@example(
    (
        "json",
        '{"nodes": [{"name": "n", "cards": [{"index": 0, "memory_mib": ' + "9" * 5000 + "}]}]}",
    )
)
def test_the_loader_refuses_in_one_line_or_round_trips(
    workdir: Path, text_and_format: tuple[str, str]
) -> None:
    fmt, text = text_and_format
    check_loads_or_refuses(workdir, fmt, text)
