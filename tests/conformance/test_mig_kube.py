"""MIG under kube-scheduler (docs/conformance.md, "MIG instances under kube-scheduler"): the
kube harness counts a MIG card's instances as the device plugin's extended resources, and
its filters and DefaultPreemption judge MIG pods beside the advisor's MIG cycle. The
generator and the comparison's rules run without Go; the harness tests skip without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.core.mig_cycle import MigBook
from advisor.core.occupancy import build_state
from advisor.scenario import scenario_from_data
from conformance import compare, harness, placements, preempt_compare
from conformance.compare import filter_of
from conformance.generate import generate
from tests.conformance.test_differential import skip_without_go

SHORT = "Insufficient nvidia.com/mig-1g.10gb"


def _mig_pods(data: dict[str, Any]) -> set[str]:
    return preempt_compare.mig_pods(data)


def test_mig_clusters_load_and_reach_the_edges() -> None:
    assert generate(5, mig=True) == generate(5, mig=True)
    with_mig = unhealthy_held = beyond = fits = 0
    for seed in range(200):
        data = generate(seed, mig=True)
        cluster = scenario_from_data(data, f"seed {seed}")  # raises on anything invalid
        # a first node whose every card a running pod holds gets no MIG card
        with_mig += any(c.mig for n in cluster.nodes for c in n.cards)
        assert any(p.request.mig_profile for p in cluster.pending)
        book = MigBook(cluster, build_state(cluster))
        for profile in ("1g.10gb", "2g.20gb", "3g.40gb"):
            unhealthy_held += any(book.held_unhealthy(profile))
        for pod in cluster.pending:
            if pod.request.mig_profile:
                most = book.most_ever(pod.request.mig_profile)
                beyond += max(most) < pod.request.gpus
                free = book.free(pod.request.mig_profile)
                fits += any(len(f) >= pod.request.gpus for f in free)
    assert with_mig > 150
    assert unhealthy_held >= 10  # a pod holding an instance on an unhealthy card
    assert beyond > 40  # a pod asking more than any node will ever offer
    assert fits > 40


def test_the_generator_leaves_the_rest_of_the_cluster_as_drawn() -> None:
    plain, mig = generate(11), generate(11, mig=True)
    assert [n["name"] for n in plain["nodes"]] == [n["name"] for n in mig["nodes"]]
    assert plain["pods"] == mig["pods"][: len(plain["pods"])]


def test_a_mig_shortfall_is_node_resources_fit() -> None:
    assert filter_of((SHORT,)) == ("NodeResourcesFit", SHORT)
    assert filter_of(("Insufficient cpu", SHORT)) == (
        "NodeResourcesFit",
        "Insufficient cpu",
        SHORT,
    )


def _outcome(verdict: str, message: str = "") -> dict[str, Any]:
    return {"verdict": verdict, "node": None, "victims": [], "message": message}


def test_a_mig_pod_fitting_after_earlier_victims_is_checked_not_skipped() -> None:
    """A vGPU pod fitting once earlier victims are gone is skipped (its GPU decides); a MIG
    pod's instances are the in-tree filters' own, so upstream must pass that node."""
    ours = _outcome("no-victims", f"{preempt_compare.FITS_AFTER}node-1 once ...")
    passes = {**_outcome("fits"), "in_tree": ["node-1"]}
    elsewhere = {**_outcome("fits"), "in_tree": ["node-0"]}
    assert preempt_compare.compare_pod(ours, passes, mig=True) is None
    assert "fits on node-1" in str(preempt_compare.compare_pod(ours, elsewhere, mig=True))
    assert str(preempt_compare.compare_pod(ours, passes)).startswith("skip:")
    # upstream places a MIG pod the advisor finds no room for
    assert "advisor no-victims, upstream fits" in str(
        preempt_compare.compare_pod(_outcome("no-victims"), passes, mig=True)
    )


def _one_node(strategy: str | None) -> dict[str, Any]:
    node: dict[str, Any] = {
        "name": "node-0",
        "cards": [
            {"index": 0, "memory_mib": 81920, "model": "H100-SXM5-80GB",
             "mig": {"instances": [{"profile": "1g.10gb", "start": 0}]}},
        ],
    }  # fmt: skip
    if strategy is not None:
        node["mig_strategy"] = strategy
    pod = {"name": "ml/p", "request": {"gpus": 1, "mig_profile": "1g.10gb"}}
    return {"scheduler": {"profile": "hami"}, "nodes": [node], "pods": [pod]}


@skip_without_go
@pytest.mark.realservices
@pytest.mark.timeout(900)  # a cold build compiles k8s.io/kubernetes' scheduler packages
def test_the_harness_advertises_instances_under_mixed_only(tmp_path: Path) -> None:
    paths = []
    for strategy in ("mixed", None, "none"):
        path = tmp_path / f"{strategy}.json"
        path.write_text(json.dumps(_one_node(strategy)))
        paths.append(path)
    mixed, absent, none = (compare.upstream_verdicts(r) for r in harness.run("kube", paths))
    assert mixed == {"ml/p": {}}
    assert absent == none == {"ml/p": {"node-0": (SHORT,)}}
    # the advisor refuses MIG cards on a node under none (docs/design.md §13.1): the
    # shrinker's candidate without the key is no witness
    assert compare.disagrees(_one_node(None)) is False
    single = tmp_path / "single.json"
    single.write_text(json.dumps(_one_node("single")))
    with pytest.raises(harness.HarnessError, match="model none and mixed"):
        harness.run("kube", [single])


@skip_without_go
@pytest.mark.realservices
@pytest.mark.timeout(900)
def test_generated_mig_clusters_agree_on_kube_schedulers_filters() -> None:
    for profile in ("hami", "cce"):
        datas = [generate(i, profile=profile, mig=True) for i in range(60)]
        rows = compare.check(datas)
        diffs = [d for r in rows for d in r[3]]
        assert diffs == [], "python -m conformance.cli shrinks them"
        short = sum(
            any(SHORT.split("-")[0] in w for w in words)
            for d in datas
            for pod, nodes in compare.advisor_verdicts(d).items()
            if pod in _mig_pods(d)
            for words in nodes.values()
        )
        assert short > 60  # the instances decide, on many nodes
        steps, agree, placed, refused, what = placements.check(datas)
        assert (agree, refused, what) == (steps, 0, [])
        assert placed > 20


@skip_without_go
@pytest.mark.realservices
@pytest.mark.timeout(900)
def test_generated_mig_clusters_agree_on_preemption() -> None:
    datas = [preempt_compare.generate_preempt(i, mig=True) for i in range(80)]
    rows = preempt_compare.check(datas)
    assert [d for r in rows for d in r[3]] == [], "python -m conformance.cli shrinks them"
    verdicts = [
        v["verdict"]
        for d in datas
        for pod, v in preempt_compare.advisor_side(d)[1].items()
        if pod in _mig_pods(d)
    ]
    assert verdicts.count("evicts") >= 3  # MIG pods do evict holders of their profile
    assert verdicts.count("no-victims") >= 20


@skip_without_go
@pytest.mark.realservices
def test_pods_after_an_uncomparable_nomination_are_not_compared() -> None:
    """MIG seed 1804: upstream nominates ml/job-3, which the advisor has fitting once
    earlier victims are gone (not compared), and evicts run/mig-3 for it; ml/mig-0, after
    it in the queue, then finds no victim upstream. Counted apart, not as a disagreement."""
    data = preempt_compare.generate_preempt(1804, mig=True)
    ((compared, agree, skipped, diffs, _),) = preempt_compare.check([data])
    assert (agree, diffs) == (compared, [])
    assert skipped >= 2
    assert "ml/mig-0" in _mig_pods(data)
