"""Re-partition advice for `mig-geometry` pods (core.mig_partition, docs/design.md §13),
each verified by `core.gang.judge` on the re-partitioned scenario. Hand cases of issue #26:
a re-partition of an idle card (nothing drained), one that drains the card's pods (they
must place again), none possible (the pod stays `capacity`, no advice), and the
nvidia-mig-parted file. What mig-parted does when applying (NVIDIA/mig-parted v0.15.0,
pkg/mig/config/config.go, `SetMigConfig`, `ClearMigConfig`): a device whose counts differ is
cleared whole, so every pod on it is drained."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from advisor.core.gang import judge
from advisor.core.mig import MigInstance, layout_problem, table_of
from advisor.core.mig_figures import ProfileFigures, profile_figures
from advisor.core.mig_partition import (
    _applied,
    _candidates,
    mig_parted_yaml,
    repartitions,
    search,
)
from advisor.core.model import Cluster
from advisor.core.remedy import NOT_SEARCHED, remedies
from advisor.scenario import scenario_from_data
from tests.advisor.core.test_mig_cycle import A100, SEVEN, _ask, _bound, _card


def _cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Cluster:
    return scenario_from_data({"nodes": nodes, "pods": pods}, "t.yaml")


def _causes(cluster: Cluster) -> dict[str, str]:
    return {d.pod.name: d.cause for d in judge(cluster).pods}


def test_an_idle_card_is_re_partitioned_with_nothing_drained() -> None:
    # m's card holds a bound 1g at 0 and 1 (card 0); card 1 is all free 1g: a 3g needs a
    # re-partition, and card 1 (no pod on it) moves nobody, though card 0 has room too
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN), _card(1, *SEVEN)]}]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (0, 0)),
        _ask("ml/p", "3g.20gb"),
    ]
    cluster = _cluster(nodes, pods)
    diagnosis = judge(cluster)
    assert _causes(cluster)["ml/p"] == "mig-geometry"
    (r,) = repartitions(cluster, diagnosis)
    (cut,) = r.cuts
    assert (r.pod, r.node, cut.card, r.drain) == ("ml/p", "m", 1, ())
    # the 3g first, then the destroyed 1g re-created where they still fit (4, 5, 6)
    assert cut.after == (
        MigInstance("3g.20gb", 0),
        MigInstance("1g.5gb", 4),
        MigInstance("1g.5gb", 5),
        MigInstance("1g.5gb", 6),
    )
    table = table_of(A100)
    assert table is not None
    assert layout_problem(table, cut.after) is None
    # verified: on the re-partitioned scenario the pod places
    c = next(c for c in _candidates(cluster, diagnosis.pods[0].pod) if c.cuts == r.cuts)
    assert _causes(_applied(cluster, c)) == {"ml/p": "schedulable"}
    assert r.devices == ((0, (("1g.5gb", 7),)), (1, (("1g.5gb", 3), ("3g.20gb", 1))))


def test_a_card_whose_pods_must_move_drains_them_and_they_place_again() -> None:
    # one card: bound 1g at 0 and 1, the rest free 1g; m2 has a free 1g for each. The 3g
    # fits at 4 around them, but mig-parted clears the whole card: both are drained, and
    # place again (here back on the card's re-created 1g)
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (0, 0)),
        _bound("ml/b", "m", "1g.5gb", (0, 1)),
        _ask("ml/p", "3g.20gb"),
    ]
    cluster = _cluster(nodes, pods)
    (r,) = repartitions(cluster, judge(cluster))
    (cut,) = r.cuts
    assert (cut.card, r.drain) == (0, ("ml/a", "ml/b"))
    assert [(m.profile, m.start) for m in cut.after] == [
        ("1g.5gb", 0),
        ("1g.5gb", 1),
        ("1g.5gb", 2),
        ("1g.5gb", 3),
        ("3g.20gb", 4),
    ]
    c = _candidates(cluster, cluster.pending[0])[0]
    assert _causes(_applied(cluster, c)) == {
        "ml/a": "schedulable",
        "ml/b": "schedulable",
        "ml/p": "schedulable",
    }


def test_a_layout_that_unplaces_another_pod_is_refused() -> None:
    # ml/p (high priority) needs a 3g; ml/q then takes m's seven free 1g. m's card
    # re-partitioned for the 3g keeps only three 1g (4, 5, 6): ml/q would wait, so it is
    # refused, and n's card, holding one bound 1g, is drained instead (its pod placed again)
    nodes = [
        {"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]},
        {"name": "n", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]},
    ]
    pods = [
        _bound("ml/a", "n", "1g.5gb", (0, 0)),
        _ask("ml/p", "3g.20gb", priority=10),
        _ask("ml/q", "1g.5gb", 7),
    ]
    cluster = _cluster(nodes, pods)
    causes = _causes(cluster)
    assert causes == {"ml/p": "mig-geometry", "ml/q": "schedulable"}
    first = _candidates(cluster, cluster.pending[0])[0]
    assert (first.node.name, first.drain) == ("m", ())
    assert _causes(_applied(cluster, first))["ml/q"] != "schedulable"
    (r,) = repartitions(cluster, judge(cluster))
    assert (r.node, [c.card for c in r.cuts], r.drain) == ("n", [0], ("ml/a",))


def test_no_re_partition_when_the_pod_waits_for_capacity() -> None:
    # slices 2 and 5 held: no 3g start is clear even re-partitioned around them
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (0, 2)),
        _bound("ml/b", "m", "1g.5gb", (0, 5)),
        _ask("ml/p", "3g.20gb"),
    ]
    cluster = _cluster(nodes, pods)
    assert _causes(cluster)["ml/p"] == "capacity"
    assert repartitions(cluster, judge(cluster)) == ()


def test_the_mig_parted_file_names_every_mig_card_of_the_node_by_counts() -> None:
    nodes = [{"name": "gpu/1", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN), _card(1)]}]
    cluster = _cluster(nodes, [_ask("ml/p", "7g.40gb")])
    (r,) = repartitions(cluster, judge(cluster))
    text = mig_parted_yaml(r)
    assert yaml.safe_load(text) == {
        "version": "v1",
        "mig-configs": {
            "xgpu-gpu-1": [{"devices": [0], "mig-enabled": True, "mig-devices": {"7g.40gb": 1}}]
        },
    }
    assert "card 0 to 7g.40gb@0; drain first: none" in r.summary
    assert r.current is None
    assert r.summary.endswith("(nvidia-mig-parted configuration xgpu-gpu-1)")
    # the node's label names the configuration mig-manager applied: this one replaces it
    labelled = {**nodes[0], "labels": {"nvidia.com/mig.config": "all-1g.5gb"}}
    cluster = _cluster([labelled], [_ask("ml/p", "7g.40gb")])
    (r,) = repartitions(cluster, judge(cluster))
    assert r.current == "all-1g.5gb"
    assert r.summary.endswith("configuration xgpu-gpu-1, in place of all-1g.5gb)")


# -- the file as nvidia-mig-parted reads it ----------------------------------------------------

# NVIDIA/mig-parted v0.15.0, api/spec/v1/spec.go: `Spec.UnmarshalJSON` (version "v1", only
# `mig-configs` beside it, each config a non-empty list) and `MigConfigSpec.UnmarshalJSON`
# (`devices` and `mig-enabled` required; `devices` "all" or a list of ints; `mig-devices`
# required when enabled, its keys MIG profile names; no other field). A profile name as
# pkg/types/mig_profile.go's ParseMigProfile takes it: "<C>g.<M>gb", attributes after "+".
_PROFILE = re.compile(r"^\d+(c\.\d+)?g\.\d+gb(\+[a-z]+(-all)?)*$")
_FIELDS = {"device-filter", "devices", "mig-enabled", "mig-devices"}


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "not a mapping"
    if missing := [k for k in ("devices", "mig-enabled") if k not in entry]:
        return f"missing required field: {missing[0]}"
    if extra := set(entry) - _FIELDS:
        return f"unexpected field: {sorted(extra)[0]}"
    devices = entry["devices"]
    if isinstance(devices, str) and devices != "all":
        return "invalid string input for 'devices'"
    if not isinstance(devices, str) and not (
        isinstance(devices, list) and all(isinstance(d, int) for d in devices)
    ):
        return "devices neither 'all' nor a list of ints"
    if entry["mig-enabled"] and "mig-devices" not in entry:
        return "missing mig-devices"
    for name, count in (entry.get("mig-devices") or {}).items():
        if not _PROFILE.match(name) or not isinstance(count, int):
            return f"bad mig-devices entry {name}"
    return None


def _spec_problem(spec: Any) -> str | None:
    if not isinstance(spec, dict) or spec.get("version") != "v1":
        return "unknown version"
    if set(spec) - {"version", "mig-configs"}:
        return "unexpected field"
    configs = spec.get("mig-configs") or {}
    if not configs or any(not entries for entries in configs.values()):
        return "at least one entry is required"
    return next(
        (p for entries in configs.values() for e in entries if (p := _entry_problem(e))), None
    )


# TestMigConfigSpec's table (spec_test.go), as (description, spec, expected failure)
MIG_CONFIG_SPEC_CASES = [
    ("Well formed", {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 2}}, False),
    ("Missing 'devices'", {"mig-enabled": True, "mig-devices": {"1g.5gb": 2}}, True),
    ("Missing 'mig-enabled'", {"devices": "all", "mig-devices": {"1g.5gb": 2}}, True),
    ("Missing 'mig-devices', enabled: false", {"devices": "all", "mig-enabled": False}, False),
    ("Missing 'mig-devices', enabled: true", {"devices": "all", "mig-enabled": True}, True),
    (
        "'mig-devices' formatted incorrectly",
        {"devices": "all", "mig-enabled": True, "mig-devices": {"bogus": 2}},
        True,
    ),
    ("Erroneous field", {"bogus": "field", "devices": "all", "mig-enabled": False}, True),
    ("'devices' string != all", {"devices": "bogus", "mig-enabled": False}, True),
    ("'devices' []int", {"devices": [0, 1, 2, 3], "mig-enabled": False}, False),
    ("'devices' not string for []int", {"devices": {}, "mig-enabled": False}, True),
]


@pytest.mark.parametrize(("description", "spec", "fails"), MIG_CONFIG_SPEC_CASES)
def test_the_checker_agrees_with_mig_parted_spec_table(
    description: str, spec: dict[str, Any], fails: bool
) -> None:
    assert (_entry_problem(spec) is not None) is fails, description


def test_every_re_partition_file_is_one_mig_parted_accepts() -> None:
    nodes = [
        {"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN), _card(1, *SEVEN)]},
        {"name": "n", "mig_strategy": "mixed", "cards": [_card(0, ("3g.20gb", 0))]},
    ]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (0, 0)),
        _bound("ml/b", "n", "3g.20gb", (0, 0)),
        _ask("ml/p", "3g.20gb", 2),
        _ask("ml/q", "4g.20gb"),
        _ask("ml/r", "1g.5gb+me"),
    ]
    cluster = _cluster(nodes, pods)
    found = repartitions(cluster, judge(cluster))
    assert {r.pod for r in found} == {"ml/p", "ml/q", "ml/r"}
    for r in found:
        assert _spec_problem(yaml.safe_load(mig_parted_yaml(r))) is None, r.pod


# -- fragmentation figures per profile (core.mig_figures) ---------------------------------------


def test_figures_per_profile_count_free_instances_room_and_the_pods_asking() -> None:
    # slices 2 and 5 held: five free 1g (0, 1, 3, 4, 6), room for five 1g and no 3g, and
    # 2g.10gb (starts 0, 2, 4) fits only at 0 around them; n (single, all 3g) offers 3g only
    nodes = [
        {"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]},
        {
            "name": "n",
            "mig_strategy": "single",
            "cards": [_card(0, ("3g.20gb", 0), ("3g.20gb", 4))],
        },
    ]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (0, 2)),
        _bound("ml/b", "m", "1g.5gb", (0, 5)),
        _bound("ml/c", "n", "3g.20gb", (0, 0)),
        _ask("ml/p", "2g.10gb"),
        _ask("ml/q", "1g.5gb", 2),
        _ask("ml/r", "3g.20gb", 2),
    ]
    cluster = _cluster(nodes, pods)
    got = {f.profile: f for f in profile_figures(cluster, judge(cluster))}
    assert got["1g.5gb"] == ProfileFigures("1g.5gb", 5, 5, 1, 2, 0)
    assert got["2g.10gb"] == ProfileFigures("2g.10gb", 0, 1, 1, 1, 1)
    # n's free 3g at 4; re-partitioned, n still holds one (slices 4..7); m holds none
    assert got["3g.20gb"] == ProfileFigures("3g.20gb", 1, 1, 1, 2, 1)
    assert set(got) == {"1g.5gb", "2g.10gb", "3g.20gb"}


def test_no_figures_without_mig() -> None:
    cluster = _cluster([{"name": "v", "cards": [_card(0)]}], [])
    assert profile_figures(cluster, judge(cluster)) == ()


def test_pods_past_the_simulation_budget_are_named_unsearched() -> None:
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [_ask("ml/p", "3g.20gb"), _ask("ml/q", "7g.40gb")]
    cluster = _cluster(nodes, pods)
    diagnosis = judge(cluster)
    assert [d.cause for d in diagnosis.pods] == ["mig-geometry", "mig-geometry"]
    assert [r.pod for r in search(cluster, diagnosis).repartitions] == ["ml/p", "ml/q"]
    spent = search(cluster, diagnosis, budget=1)
    assert ([r.pod for r in spent.repartitions], spent.unsearched) == (["ml/p"], ("ml/q",))
    advice = {
        r.pod: r
        for r in remedies(
            diagnosis, repartitions={"ml/p": spent.repartitions[0]}, unsearched=spent.unsearched
        )
    }
    assert advice["ml/p"].why == spent.repartitions[0].summary
    assert advice["ml/q"].why == NOT_SEARCHED
    assert advice["ml/q"].repartition is None
    # not searched is not found: nodes are proposed, as for a pod with none verified
    assert (advice["ml/p"].scale_up, advice["ml/q"].scale_up) == (False, True)


def test_room_only_over_two_cards_re_partitions_both() -> None:
    # each card has a bound 1g at 0 and room for one 3g at 4: the node holds two 3g only
    # over both cards, so both are re-partitioned and both pods drained (they place again)
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN), _card(1, *SEVEN)]}]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (0, 0)),
        _bound("ml/b", "m", "1g.5gb", (1, 0)),
        _ask("ml/p", "3g.20gb", 2),
    ]
    cluster = _cluster(nodes, pods)
    diagnosis = judge(cluster)
    assert [d.cause for d in diagnosis.pods] == ["mig-geometry"]
    (r,) = repartitions(cluster, diagnosis)
    assert (r.node, [c.card for c in r.cuts], r.drain) == ("m", [0, 1], ("ml/a", "ml/b"))
    kept = [MigInstance("1g.5gb", s) for s in range(4)]
    for cut in r.cuts:
        assert cut.after == (*kept, MigInstance("3g.20gb", 4))
    counts = (("1g.5gb", 4), ("3g.20gb", 1))
    assert r.devices == ((0, counts), (1, counts))
    c = _candidates(cluster, cluster.pending[0])[0]
    assert _causes(_applied(cluster, c)) == {
        "ml/a": "schedulable",
        "ml/b": "schedulable",
        "ml/p": "schedulable",
    }
    assert "card 0 to 1g.5gb@0, 1g.5gb@1, 1g.5gb@2, 1g.5gb@3, 3g.20gb@4 and card 1 to " in (
        r.summary
    )
    spec = yaml.safe_load(mig_parted_yaml(r))
    assert _spec_problem(spec) is None
    assert [e["devices"] for e in spec["mig-configs"]["xgpu-m"]] == [[0], [1]]


def test_a_set_of_cards_is_never_larger_than_the_pod_needs() -> None:
    # three cards, each with a bound 1g at 0 (room for one 3g): two 3g need two of them,
    # never all three; each pair drains its two cards' pods
    cards = [_card(i, *SEVEN) for i in range(3)]
    pods = [_bound(f"ml/{i}", "m", "1g.5gb", (i, 0)) for i in range(3)]
    cluster = _cluster(
        [{"name": "m", "mig_strategy": "mixed", "cards": cards}],
        [*pods, _ask("ml/p", "3g.20gb", 2)],
    )
    got = [
        ([cut.card for cut in c.cuts], c.drain) for c in _candidates(cluster, cluster.pending[0])
    ]
    assert got == [
        ([0, 1], ("ml/0", "ml/1")),
        ([0, 2], ("ml/0", "ml/2")),
        ([1, 2], ("ml/1", "ml/2")),
    ]


def test_fewer_pods_drained_over_two_cards_beat_one_card_draining_more() -> None:
    # two 2g (starts 0, 2, 4). Card 0 holds 1g of ml/b at 5 and ml/c at 6: room for two 2g
    # (0, 2), draining two pods. Cards 1 and 2 each hold 1g of the one pod ml/a at 0 and 2:
    # room for one 2g (4) each, so both are needed, draining one pod: they go first
    cards = [_card(i, *SEVEN) for i in range(3)]
    pods = [
        _bound("ml/a", "m", "1g.5gb", (1, 0), (1, 2), (2, 0), (2, 2)),
        _bound("ml/b", "m", "1g.5gb", (0, 5)),
        _bound("ml/c", "m", "1g.5gb", (0, 6)),
        _ask("ml/p", "2g.10gb", 2),
    ]
    cluster = _cluster([{"name": "m", "mig_strategy": "mixed", "cards": cards}], pods)
    got = [
        ([cut.card for cut in c.cuts], c.drain) for c in _candidates(cluster, cluster.pending[0])
    ]
    assert got == [([1, 2], ("ml/a",)), ([0], ("ml/b", "ml/c"))]
    (r,) = repartitions(cluster, judge(cluster))
    assert ([c.card for c in r.cuts], r.drain) == ([1, 2], ("ml/a",))


def test_a_card_whose_free_instances_suffice_where_they_are_is_not_cleared() -> None:
    # two 3g: card 1 is idle with a free 3g at 0 (and 1g at 4..6), card 0 holds ml/a's 1g at
    # 0 (room for a 3g at 4). Card 1 alone (a second 3g in place of its 1g) or card 0 alone
    # (its 3g beside card 1's free one) make room; both together would clear card 1 needlessly
    free_half = [("3g.20gb", 0), ("1g.5gb", 4), ("1g.5gb", 5), ("1g.5gb", 6)]
    nodes = [
        {"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN), _card(1, *free_half)]}
    ]
    pods = [_bound("ml/a", "m", "1g.5gb", (0, 0)), _ask("ml/p", "3g.20gb", 2)]
    cluster = _cluster(nodes, pods)
    got = [
        ([cut.card for cut in c.cuts], c.drain) for c in _candidates(cluster, cluster.pending[0])
    ]
    assert got == [([1], ()), ([0], ("ml/a",))]


def test_instances_taken_by_pods_placed_ahead_count_against_the_room() -> None:
    # card 0: a free 3g at 0 (ml/z holds a 1g at 4); cards 1 and 2: ml/a, ml/b hold a 1g
    # at 0 (room for one 3g at 4 each). ml/first takes the free 3g ahead of ml/p, which asks
    # two: one card re-partitioned gives one 3g, short by the one ml/first took; cards 1
    # and 2 together give both
    half = [("3g.20gb", 0), ("1g.5gb", 4), ("1g.5gb", 5), ("1g.5gb", 6)]
    cards = [_card(0, *half), _card(1, *SEVEN), _card(2, *SEVEN)]
    pods = [
        _bound("ml/z", "m", "1g.5gb", (0, 4)),
        _bound("ml/a", "m", "1g.5gb", (1, 0)),
        _bound("ml/b", "m", "1g.5gb", (2, 0)),
        _ask("ml/first", "3g.20gb", priority=10),
        _ask("ml/p", "3g.20gb", 2),
    ]
    cluster = _cluster([{"name": "m", "mig_strategy": "mixed", "cards": cards}], pods)
    assert _causes(cluster) == {"ml/first": "schedulable", "ml/p": "mig-geometry"}
    (r,) = repartitions(cluster, judge(cluster))
    assert ([c.card for c in r.cuts], r.drain) == ([1, 2], ("ml/a", "ml/b"))


def test_the_room_made_goes_first_to_the_mig_geometry_pods_ahead() -> None:
    # three cards, each with a bound 1g at 0 (room for one 3g). ml/p0 (one 3g) and ml/p1
    # (two) both wait for a re-partition; whatever room p1's makes, p0 ahead of it takes
    # first (it found none elsewhere), so p1's needs all three cards, not two
    cards = [_card(i, *SEVEN) for i in range(3)]
    pods = [_bound(f"ml/{i}", "m", "1g.5gb", (i, 0)) for i in range(3)]
    pods += [_ask("ml/p0", "3g.20gb", priority=10), _ask("ml/p1", "3g.20gb", 2)]
    cluster = _cluster([{"name": "m", "mig_strategy": "mixed", "cards": cards}], pods)
    diagnosis = judge(cluster)
    assert [d.cause for d in diagnosis.pods] == ["mig-geometry", "mig-geometry"]
    found = {r.pod: [c.card for c in r.cuts] for r in search(cluster, diagnosis).repartitions}
    assert found == {"ml/p0": [0], "ml/p1": [0, 1, 2]}


def test_a_single_strategy_node_is_re_partitioned_in_its_own_profile() -> None:
    # n (single) has three 1g on its card, all held; its unpartitioned slices hold four more.
    # Re-partitioned it keeps its one profile (the device plugin's single strategy wants every
    # MIG device of the node alike), so its pods are drained and place again. s (single, 3g)
    # never offers a 1g: no candidate there.
    nodes = [
        {
            "name": "n",
            "mig_strategy": "single",
            "cards": [_card(0, ("1g.5gb", 0), ("1g.5gb", 1), ("1g.5gb", 2))],
        },
        {"name": "s", "mig_strategy": "single", "cards": [_card(0, ("3g.20gb", 0))]},
    ]
    pods = [
        *(_bound(f"ml/{i}", "n", "1g.5gb", (0, i)) for i in range(3)),
        _ask("ml/p", "1g.5gb"),
    ]
    cluster = _cluster(nodes, pods)
    diagnosis = judge(cluster)
    assert [d.cause for d in diagnosis.pods] == ["mig-geometry"]
    (only,) = _candidates(cluster, cluster.pending[0])
    assert only.node.name == "n"
    (r,) = repartitions(cluster, diagnosis)
    (cut,) = r.cuts
    assert (r.node, cut.card, r.drain) == ("n", 0, ("ml/0", "ml/1", "ml/2"))
    assert {m.profile for m in cut.after} == {"1g.5gb"}
    assert len(cut.after) == 4
    assert r.devices == ((0, (("1g.5gb", 4),)),)
