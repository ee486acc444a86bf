"""Volcano's task order within a job (advisor.core.task_order): the priority plugin's
taskOrderFn, then Volcano v1.15.1 `pkg/controllers/job/helpers/helpers.go` CompareTask
(GetPodIndexUnderTask, strconv.Atoi), in the job cycle and in preemption's victim order."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.gang import diagnose_jobs
from advisor.core.model import Pod, Request
from advisor.core.task_order import pod_index, task_order
from tests.advisor.core.test_gang import cluster, node, verdicts
from tests.advisor.core.test_gang import pod as gang_pod


def named(name: str, priority: int = 0) -> Pod:
    return Pod(name, Request(1, 1024), priority=priority)


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("ml/train-worker-10", 10),
        ("ml/train-worker-+3", 3),  # Atoi takes a sign
        ("ml/a--7", 7),  # three parts: "a", "", "7"
        ("ml/worker-1", None),  # two parts: GetPodIndexUnderTask gives ""
        ("ml/train-worker-x1", None),
        ("ml/train-worker-1_0", None),  # Atoi refuses what Python's int would take
        ("ml/train-worker- 1", None),
    ],
)
def test_the_index_is_get_pod_index_under_task_read_by_atoi(name: str, index: int | None) -> None:
    assert pod_index(named(name)) == index


def test_indices_order_before_creation_and_priority_before_both() -> None:
    """CompareTask: both indexed and different: the lower index first, whatever the
    listing (creation) order; equal or unindexed: creation. taskOrderFn's priority first."""
    pods = [
        named("ml/j-w-10"),
        named("ml/j-w-2"),
        named("ml/j-w-2b"),  # no index: creation against the others
        named("ml/j-ps-0", priority=5),
        named("ml/j-x-2"),  # index 2, equal to j-w-2's: creation
    ]
    ordered = [p.name for p in task_order(pods)]
    assert ordered[0] == "ml/j-ps-0"
    assert ordered.index("ml/j-w-2") < ordered.index("ml/j-w-10")
    assert ordered.index("ml/j-w-2") < ordered.index("ml/j-x-2")


def member(name: str, **kw: Any) -> dict[str, Any]:
    return gang_pod(name, **kw)


def test_the_job_tries_its_tasks_by_index_not_by_listing() -> None:
    """A Volcano Job's pods list by name (`train-w-10` before `train-w-2`), but allocate
    tries them in TaskOrderFn's order: index 2 first, so it takes the one free card and
    index 10 waits. Listing order alone would have given the card to index 10."""
    pods = [member("c1/train-w-10", memory_mib=10000), member("c1/train-w-2", memory_mib=10000)]
    result = diagnose_jobs(cluster([node("n1", cards=1)], pods, [{"name": "c1/pg1"}]))
    found = verdicts(result)
    assert found["c1/train-w-2"] == ("schedulable", "n1")
    assert found["c1/train-w-10"][1] is None
