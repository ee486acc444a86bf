"""Right-sizing's "would it still fit" check under hami and volcano-vgpu (docs/design.md §9.2):
a whole-card or share request holds what the profile gives it of its card, shrinks from
there to an absolute request, and is never grown into a whole card."""

from __future__ import annotations

import pytest

from advisor.core.model import Cluster, ProfileName, Request
from advisor.rightsizing import shrunk_cluster
from advisor.scenario import scenario_from_data
from tests.advisor.test_rightsizing import frame, rightsize, samples


def cluster(profile: ProfileName) -> Cluster:
    """Two 10240-MiB cards: a whole-card pod on card 0 (holds 10240), a 50 % share on card 1
    (holds 10240 * 50 / 100 = 5120 in both profiles); 1 x 6144 MiB waits: card 1 has only
    5120 free, card 0 none."""
    cards = [{"index": i, "memory_mib": 10240} for i in (0, 1)]
    pods = [
        {
            "name": "ml/whole-0",
            "owner": "Deployment/ml/whole",
            "request": {"gpus": 1},
            "node": "n1",
            "cards": [0],
        },
        {
            "name": "ml/half-0",
            "owner": "Deployment/ml/half",
            "request": {"gpus": 1, "memory_percent": 50},
            "node": "n1",
            "cards": [1],
        },
        {"name": "ml/wait", "request": {"gpus": 1, "memory_mib": 6144}},
    ]
    data = {
        "scheduler": {"profile": profile},
        "nodes": [{"name": "n1", "cards": cards}],
        "pods": pods,
    }
    return scenario_from_data(data, "c.yaml")


# whole: peak 3000 MiB x 1.2 = 3600, up to 128 MiB: 3712 (< 10240 held): shrinks.
# half: peak 5000 MiB x 1.2 = 6000, up to 128 MiB: 6016 (>= 5120 held): stays a 50 % share.
HISTORY = frame(
    samples([1000.0, 3000.0], pod="whole-0", owner="Deployment/ml/whole", allotted_mib=10240),
    samples(
        [4000.0, 5000.0],
        pod="half-0",
        owner="Deployment/ml/half",
        gpu_index=1,
        allotted_mib=5120,
    ),
)


@pytest.mark.parametrize("profile", ["hami", "volcano-vgpu"])
def test_a_whole_card_shrinks_and_a_share_is_not_grown(profile: ProfileName) -> None:
    result = rightsize(HISTORY, cluster(profile))
    recommended = {w["workload"]: w["memory_mib"]["recommended"] for w in result["workloads"]}
    assert recommended == {"Deployment/ml/whole": 3712, "Deployment/ml/half": 6016}
    shrunk = {p.name: p.request for p in shrunk_cluster(cluster(profile), result["workloads"]).pods}
    assert shrunk["ml/whole-0"] == Request(1, 3712)
    assert shrunk["ml/half-0"] == Request(1, 0, memory_percent=50)
    # card 0 then has 10240 - 3712 = 6528 free: the 6144-MiB pod fits there
    assert result["pending_fit"] == {
        "pending": 1,
        "schedulable_now": 0,
        "schedulable_after": 1,
        "newly_schedulable": ["ml/wait"],
        "no_longer_schedulable": [],
        "running_shrunk": 1,
        "memory_freed_mib": 10240 - 3712,
    }
