"""The plans' disruption cost and caps (docs/design.md §8): what an eviction costs and why,
which pods a plan prefers to move, and the flags' values."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from advisor.core.model import Pod, Request
from advisor.core.plan import PlanOptions, plan
from advisor.core.plan.cost import EvictionCost, eviction_cost, latest_start, plan_cost
from advisor.core.plan.limits import EvictionBudget, NeverEvict
from advisor.scenario import ScenarioError, scenario_from_data, scenario_to_data
from advisor.scenario.parse import parse_text
from tests.advisor.core.test_plan_checker import build, check_report, node, pending, running

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def pod(owner: str | None = None, started: str | None = None, **annotations: str) -> Pod:
    notes = {k.replace("_", "-").replace("xgpu-io-", "xgpu.io/"): v for k, v in annotations.items()}
    return Pod("ml/p", Request(1, 4096), owner=owner, started=started, annotations=notes)


@pytest.mark.parametrize(
    ("owner", "started", "expected"),
    [
        ("ReplicaSet/web/api-7d9", None, EvictionCost(1.0, "ReplicaSet replica")),
        ("Deployment/web/api", "2024-04-01T00:00:00Z", EvictionCost(1.0, "Deployment replica")),
        ("StatefulSet/db/pg", None, EvictionCost(2.0, "StatefulSet replica")),
        # batch: 4, plus 1 per hour run (3 h 30 min here)
        ("Job/ml/t", "2024-05-01T08:30:00Z", EvictionCost(7.5, "Job, ran 3.5 h", "Job/ml/t")),
        (
            "PyTorchJob/ml/t",
            None,
            EvictionCost(4.0, "PyTorchJob, run time unknown", "PyTorchJob/ml/t"),
        ),
        # a day at most: 4 + 24
        ("Job/ml/t", "2024-04-20T12:00:00Z", EvictionCost(28.0, "Job, ran 264.0 h", "Job/ml/t")),
        (
            "Job/ml/t",
            "2024-05-01T11:45:00+00:00",
            EvictionCost(4.25, "Job, ran 15 min", "Job/ml/t"),
        ),
        # started after "now" (clocks differ): no time run, not a negative one
        ("Job/ml/t", "2024-05-01T13:00:00Z", EvictionCost(4.0, "Job, ran 0 min", "Job/ml/t")),
        (
            "Notebook/ml/nb",
            None,
            EvictionCost(
                4.0, "Notebook, a kind priced as batch, run time unknown", "Notebook/ml/nb"
            ),
        ),
        (
            None,
            "2024-05-01T10:00:00Z",
            EvictionCost(6.0, "no controller known, priced as batch, ran 2.0 h"),
        ),
    ],
)
def test_the_cost_of_one_eviction(
    owner: str | None, started: str | None, expected: EvictionCost
) -> None:
    assert eviction_cost(pod(owner, started), NOW) == expected


def test_the_annotation_overrides_and_a_bad_one_is_said_and_ignored() -> None:
    assert eviction_cost(pod("Job/ml/t", xgpu_io_eviction_cost=" 0.5 "), NOW) == EvictionCost(
        0.5, "xgpu.io/eviction-cost: 0.5"
    )
    assert eviction_cost(pod("StatefulSet/db/pg", xgpu_io_eviction_cost="0"), NOW).cost == 0.0
    for bad in ("cheap", "-1", "nan", "inf"):
        price = eviction_cost(pod("Deployment/web/api", xgpu_io_eviction_cost=bad), NOW)
        assert price == EvictionCost(
            1.0, f"Deployment replica; xgpu.io/eviction-cost {bad!r} is not a number >= 0, ignored"
        )


def test_one_batch_workload_is_charged_once_per_plan() -> None:
    costs = [
        EvictionCost(9.0, "Job, ran 5.0 h", "Job/ml/t"),
        EvictionCost(6.0, "Job, ran 2.0 h", "Job/ml/t"),
        EvictionCost(1.0, "Deployment replica"),
        EvictionCost(1.0, "Deployment replica"),
        EvictionCost(4.0, "Job, run time unknown", "Job/ml/other"),
    ]
    # the Job's dearest pod (9), both replicas (1 + 1), the other Job (4)
    assert plan_cost(costs, range(5)) == 15.0
    assert plan_cost(costs, [1]) == 6.0


def test_now_defaults_to_the_newest_start_in_the_input() -> None:
    pods = [pod(started="2024-05-01T10:00:00Z"), pod(started="2024-05-01T11:00:00+01:00"), pod()]
    assert latest_start(pods) == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert latest_start([pod()]) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3/card", EvictionBudget(3.0, "card")),
        (" 2.5/GPU ", EvictionBudget(2.5, "gpu")),
        ("20", EvictionBudget(20.0, "advice")),
        ("0", EvictionBudget(0.0, "advice")),
    ],
)
def test_the_eviction_budget_reads_a_count_or_a_rate(text: str, expected: EvictionBudget) -> None:
    budget = EvictionBudget.parse(text)
    assert budget == expected
    assert EvictionBudget.parse(budget.text) == budget


@pytest.mark.parametrize("text", ["3/pod", "x/card", "-1/card", "1.5", "inf", "3/", "/card"])
def test_a_bad_eviction_budget_says_what_is_wrong(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected|whole number"):
        EvictionBudget.parse(text)


def test_the_budget_counts_cards_or_memory_or_evictions() -> None:
    # 2 evictions that rescue one 2-card pod of 0.5 GPU of memory
    assert EvictionBudget(1, "card").allows(2, cards=2, gpus=0.5)
    assert not EvictionBudget(3, "gpu").allows(2, cards=2, gpus=0.5)  # 2 > 1.5
    assert EvictionBudget(2, "advice").allows(2, cards=0, gpus=0.0)
    assert not EvictionBudget(1, "advice").allows(2, cards=9, gpus=9.0)


def test_never_evict_selectors() -> None:
    job = Pod("ml/a", Request(1, 1024), owner="Job/ml/a", labels={"team": "search"})
    assert NeverEvict.parse("Job").matches(job)
    assert not NeverEvict.parse("StatefulSet").matches(job)
    assert NeverEvict.parse("team=search").matches(job)
    assert not NeverEvict.parse("team=ads").matches(job)
    assert NeverEvict.parse("tier=").matches(Pod("x/y", Request(1, 1), labels={"tier": ""}))
    for bad in ("", "=x", "a b", "Job/ml"):
        with pytest.raises(ValueError, match="key=value or an owner kind"):
            NeverEvict.parse(bad)


# -- the planner prefers what is cheap to restart ---------------------------------------------


def test_two_cheap_replicas_move_before_one_long_training_run() -> None:
    # Card a0: a Job's 12 GiB pod that has run 10 h (cost 14); card a1: two Deployment
    # replicas of 6 GiB each (cost 1 + 1). Either card, emptied, takes the 16 GiB pod; node
    # b has room for either. Fewer evictions would pick the Job's pod; cost picks the replicas.
    cluster = build(
        [node("a", 16, 16), node("b", 16, 16)],
        [
            running("ml/train", "a", [0], 12, owner="Job/ml/train", started="2024-05-01T02:00:00Z"),
            running(
                "web/r1", "a", [1], 6, owner="Deployment/web/r", started="2024-05-01T12:00:00Z"
            ),
            running("web/r2", "a", [1], 6, owner="Deployment/web/r"),
            running("t/b0", "b", [0], 4, annotations={"xgpu.io/do-not-disrupt": "true"}),
            running("t/b1", "b", [1], 4, annotations={"xgpu.io/do-not-disrupt": "true"}),
            pending("ml/big", 1, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert sorted(only.evict) == ["web/r1", "web/r2"]
    assert only.cost == 2.0
    assert only.costs == (
        ("web/r1", 1.0, "Deployment replica"),
        ("web/r2", 1.0, "Deployment replica"),
    )
    # An annotation can say the replicas are dear after all (a warm cache, say).
    dear: list[dict[str, Any]] = [
        {**p, "annotations": {"xgpu.io/eviction-cost": "10"}} if p["name"].startswith("web/") else p
        for p in scenario_to_data(cluster)["pods"]
    ]
    priced = scenario_from_data({**scenario_to_data(cluster), "pods": dear}, "dear.yaml")
    (moved,) = plan(priced).plans
    assert moved.evict == ("ml/train",)
    assert moved.costs == (("ml/train", 14.0, "Job, ran 10.0 h"),)


def test_the_pods_of_one_job_are_one_restart() -> None:
    # A 2-card pod needs node a emptied of a PyTorchJob's two workers; the plan costs one
    # restart of the job (its dearest worker, 4 + 2 h), said on the second worker's line.
    cluster = build(
        [node("a", 16, 16), node("b", 16, 16)],
        [
            running("ml/w0", "a", [0], 8, owner="PyTorchJob/ml/j", started="2024-05-01T10:00:00Z"),
            running("ml/w1", "a", [1], 8, owner="PyTorchJob/ml/j", started="2024-05-01T12:00:00Z"),
            running("t/b0", "b", [0], 8, annotations={"xgpu.io/do-not-disrupt": "true"}),
            running("t/b1", "b", [1], 8, annotations={"xgpu.io/do-not-disrupt": "true"}),
            pending("ml/pair", 2, 32),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.evict == ("ml/w0", "ml/w1")
    assert only.cost == 6.0
    assert only.costs == (
        ("ml/w0", 6.0, "PyTorchJob, ran 2.0 h"),
        ("ml/w1", 0.0, "restarts with ml/w0 (PyTorchJob/ml/j)"),
    )


def test_never_evict_keeps_a_kind_where_it_is() -> None:
    cluster = build(
        [node("a", 16, 16), node("b", 16)],
        [
            running("db/pg-0", "a", [0], 8, owner="StatefulSet/db/pg"),
            running("ml/nb", "a", [1], 8, owner="StatefulSet/ml/nb", labels={"team": "ml"}),
            running("t/filler", "b", [0], 8, annotations={"xgpu.io/do-not-disrupt": "true"}),
            pending("ml/big", 1, 16),
        ],
    )
    keep_ml = PlanOptions(never_evict=(NeverEvict.parse("team=ml"),))
    report = plan(cluster, keep_ml)
    check_report(cluster, report)
    assert [p.evict for p in report.plans] == [("db/pg-0",)]
    everything = PlanOptions(never_evict=(NeverEvict.parse("StatefulSet"),))
    none = plan(cluster, everything)
    check_report(cluster, none)
    assert (none.plans, none.held_back) == ((), ())


# -- the scenario carries what the cost needs ---------------------------------------------------


def test_start_time_and_labels_round_trip_through_the_scenario() -> None:
    data = {
        "nodes": [node("a", 16)],
        "pods": [
            {
                **running("ml/t", "a", [0], 8, owner="Job/ml/t"),
                "started": "2024-05-01T10:00:00Z",
                "labels": {"team": "ml"},
            }
        ],
    }
    cluster = scenario_from_data(data, "s.yaml")
    (only,) = cluster.pods
    assert (only.started, dict(only.labels)) == ("2024-05-01T10:00:00Z", {"team": "ml"})
    assert scenario_from_data(scenario_to_data(cluster), "again.yaml") == cluster
    assert scenario_to_data(cluster)["pods"][0]["started"] == "2024-05-01T10:00:00Z"
    # YAML reads an unquoted time as a datetime: taken as the same time
    text = "nodes: [{name: a, cards: [{index: 0, memory_mib: 16384}]}]\npods:\n"
    text += "- {name: ml/t, node: a, cards: [0], request: {memory_mib: 8192}, "
    text += "started: 2024-05-01T10:00:00Z}\n"
    (read,) = scenario_from_data(parse_text(text, "s.yaml"), "s.yaml").pods
    assert read.started == "2024-05-01T10:00:00Z"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "started",
            "yesterday",
            "s.yaml: pods[0].started: expected an RFC 3339 time, got 'yesterday'",
        ),
        ("started", "2024-05-01", "pods[0].started: expected an RFC 3339 time"),
        ("started", 5, "pods[0].started: expected a non-empty string"),
        ("labels", ["a"], "pods[0].labels: expected a mapping"),
        ("labels", {"a": 1}, "pods[0].labels.a: labels map strings to strings"),
    ],
)
def test_a_bad_start_time_or_label_is_one_clear_error(
    field: str, value: object, message: str
) -> None:
    data = {"nodes": [node("a", 16)], "pods": [{**running("ml/t", "a", [0], 8), field: value}]}
    with pytest.raises(ScenarioError, match=re.escape(message)):
        scenario_from_data(data, "s.yaml")
