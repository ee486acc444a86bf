"""The job layer's scenario keys (docs/design.md §10.1), generated whole: every valid
combination loads, is written back by `save_scenario` in YAML and JSON, and reads back to the
same cluster with the same data; the writer leaves out exactly what is at its default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.core.jobs import PREEMPTION_POLICIES, QUEUE_STATES, VOLCANO_ACTIONS
from advisor.scenario import load_scenario, save_scenario, scenario_from_data, scenario_to_data
from tests.fuzz.profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

NAMES = st.sampled_from(["a", "b", "train", "q-1"])
QUANTITIES = st.one_of(
    st.integers(0, 10**6), st.sampled_from(["64", "500m", "8Gi", "1.5", "1024Mi", "2k"])
)
RESOURCES = st.dictionaries(
    st.sampled_from(["cpu", "memory", "volcano.sh/vgpu-memory", "limits.nvidia.com/gpumem"]),
    QUANTITIES,
    max_size=3,
)


def _maybe(draw: st.DrawFn, key: str, values: st.SearchStrategy[Any], into: dict[str, Any]) -> None:
    if draw(st.booleans()):
        into[key] = draw(values)


@st.composite
def job_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    profile = draw(st.sampled_from(["cce", "volcano-vgpu", "hami"]))
    scheduler: dict[str, Any] = {"profile": profile}
    if profile == "hami":
        _maybe(draw, "preemption", st.booleans(), scheduler)
    else:
        _maybe(draw, "actions", st.lists(st.sampled_from(VOLCANO_ACTIONS), min_size=1), scheduler)
        gang = st.fixed_dictionaries(
            {}, optional={"preemptable": st.booleans(), "job_starving": st.booleans()}
        )
        _maybe(draw, "gang", gang, scheduler)
        _maybe(draw, "overcommit_factor", st.sampled_from([1, 1.0, 1.2, 2.5, 1000]), scheduler)
        _maybe(draw, "queue_plugin", st.sampled_from(["proportion", "capacity"]), scheduler)
        if scheduler.get("queue_plugin") == "capacity":
            _maybe(draw, "enable_hierarchy", st.booleans(), scheduler)
            if scheduler.get("enable_hierarchy"):
                _maybe(draw, "ancestor_reclaim_level", st.integers(0, 3), scheduler)
    queue_names = draw(st.lists(NAMES, unique=True, max_size=3))
    queues = []
    for i, name in enumerate(queue_names):
        queue: dict[str, Any] = {"name": name}
        # a parent listed before it (no cycle), or one Volcano creates
        _maybe(draw, "parent", st.sampled_from([*queue_names[:i], "root", "default"]), queue)
        _maybe(draw, "weight", st.integers(1, 100), queue)
        _maybe(draw, "capability", RESOURCES, queue)
        _maybe(draw, "guarantee", RESOURCES, queue)
        _maybe(draw, "reclaimable", st.booleans(), queue)
        _maybe(draw, "priority", st.integers(-(2**31), 2**31 - 1), queue)
        _maybe(draw, "state", st.sampled_from(QUEUE_STATES), queue)
        queues.append(queue)
    group_names = draw(st.lists(NAMES, unique=True, max_size=3))
    groups = []
    for name in group_names:
        group: dict[str, Any] = {"name": f"ml/{name}"}
        _maybe(draw, "min_member", st.integers(0, 64), group)
        _maybe(draw, "queue", st.sampled_from([*queue_names, "default"]), group)
        _maybe(draw, "priority", st.integers(-100, 100), group)
        _maybe(draw, "min_resources", RESOURCES, group)
        groups.append(group)
    quotas = [
        {"namespace": draw(NAMES), "hard": draw(RESOURCES)} for _ in range(draw(st.integers(0, 2)))
    ]
    pods = []
    for i in range(draw(st.integers(0, 3))):
        pod: dict[str, Any] = {"name": f"ml/p-{i}", "request": {"gpus": 1, "memory_mib": 1024}}
        if group_names:
            _maybe(draw, "group", st.sampled_from([f"ml/{g}" for g in group_names]), pod)
        _maybe(draw, "preemptable", st.booleans(), pod)
        _maybe(draw, "preemption_policy", st.sampled_from(PREEMPTION_POLICIES), pod)
        pods.append(pod)
    data: dict[str, Any] = {
        "scheduler": scheduler,
        "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
        "pods": pods,
    }
    for key, value in (("queues", queues), ("groups", groups), ("quotas", quotas)):
        if value or draw(st.booleans()):
            data[key] = value
    return data


@given(job_scenarios())
@fuzz_settings(120)
def test_every_job_key_round_trips(tmp_path_factory: pytest.TempPathFactory, data: Any) -> None:
    cluster = scenario_from_data(data, "generated")
    written = scenario_to_data(cluster)
    assert scenario_from_data(written, "written") == cluster
    workdir: Path = tmp_path_factory.mktemp("jobs")
    for fmt in ("yaml", "json"):
        path = workdir / f"back.{fmt}"
        save_scenario(path, cluster)
        back = load_scenario(path)
        assert back == cluster
        assert back.jobs == cluster.jobs  # Jobs compares its resource maps too
        assert scenario_to_data(back) == written
    # what the writer leaves out is a default: the job lists only when they list something
    for key in ("queues", "groups", "quotas"):
        assert (key in written) == bool(data.get(key))
