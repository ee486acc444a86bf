"""The MIG fleet `benchmarks.mig_bench` times: what its label says it is."""

from __future__ import annotations

from advisor.core.gang import judge
from benchmarks.mig_bench import mig_cluster, run_case


def test_the_fleet_is_mig_cards_with_one_held_each_and_geometry_pods() -> None:
    cluster = mig_cluster(6, 5)
    assert len(cluster.nodes) == 6
    assert all(c.mig is not None and len(c.mig) == 7 for n in cluster.nodes for c in n.cards)
    assert len(cluster.running) == 6 * 8
    assert {d.cause for d in judge(cluster).pods} == {"mig-geometry"}


def test_the_search_case_reports_what_it_found() -> None:
    outcome = run_case("search", {"nodes": 4, "pending": 3}, 1)
    assert list(outcome.timings.wall) == ["search"]
    assert outcome.facts["summary"]["mig-geometry"] == 3
    assert "verified" in outcome.facts["note"]
