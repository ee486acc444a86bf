"""A pod's preemption verdict beside its explanation in the pages (docs/design.md §10.3):
every verdict but `off`, read from the JSON the advisor writes."""

from __future__ import annotations

from advisor.core.gang import judge
from advisor.output import diagnosis_json
from advisor.render.diagnose.data import explanation
from advisor.render.diagnose.markdown import pending_section
from advisor.scenario import scenario_from_data

ONE_CARD = {
    "name": "gpu-1",
    "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 110},
    "cards": [{"index": 0, "memory_mib": 16384}],
}
PODS = [
    {
        "name": "batch/low",
        "node": "gpu-1",
        "cards": [0],
        "request": {"gpus": 1, "memory_mib": 12288},
    },
    {"name": "serve/high", "request": {"gpus": 1, "memory_mib": 8192}, "priority": 1000},
]


def page_line(profile: str) -> str:
    data = {"scheduler": {"profile": profile}, "nodes": [ONE_CARD], "pods": PODS}
    cluster = scenario_from_data(data, "p.yaml")
    written = diagnosis_json(judge(cluster), cluster.scheduler)
    assert written["pods"][0].get("preemption") is not None
    rows = "\n".join(pending_section(written))
    assert explanation(written["pods"][0]) in rows
    return explanation(written["pods"][0])


def test_hami_says_priority_never_frees_gpu() -> None:
    assert "Preemption (no-victims): " in page_line("hami")
    assert "priority never frees GPU" in page_line("hami")


def test_an_off_verdict_adds_nothing() -> None:
    assert "Preemption" not in page_line("cce")
