"""advisor.schemas: what the producers write has exactly the keys and value kinds the TypedDicts
name, required keys always, optional ones only as typed (the renderers rely on it, and parts of
the plan JSON come from the core, which cannot import the schemas)."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, NotRequired, Required, Union, get_args, get_origin, get_type_hints

import pytest

from advisor import schemas
from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Policy
from advisor.core.plan import PlanOptions, plan
from advisor.core.scaling import scaling_advice
from advisor.core.whatif import profile_outcome, what_if
from advisor.output import cluster_view, diagnosis_json, schedulers_json, whatif_json
from advisor.output.plan import plan_json
from advisor.render.report.read import read_report
from advisor.report import ReportInputs, ReportOptions, build_report
from advisor.scenario import load_scenario
from advisor.scenario_profile import NODE_POLICIES, defaults
from tests.advisor.render.sample_report import sample_report

EXAMPLES = Path(__file__).parents[2] / "advisor" / "examples"
SCENARIOS = ["demo.yaml", "hami.yaml", "report-sample.yaml"]


def conforms(value: Any, form: Any, where: str = "$") -> list[str]:
    """Where `value` breaks `form` (a TypedDict, list, dict, union or plain type)."""
    origin = get_origin(form)
    if origin in (Required, NotRequired):
        return conforms(value, get_args(form)[0], where)
    if origin in (Union, types.UnionType):
        for option in get_args(form):
            if not conforms(value, option, where):
                return []
        return [f"{where}: {value!r} is none of {form}"]
    if form is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    if typing.is_typeddict(form):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        hints = get_type_hints(form, include_extras=True)
        problems = [f"{where}: missing {key}" for key in _required(form, hints) - value.keys()]
        problems += [f"{where}: unknown key {key}" for key in value.keys() - hints.keys()]
        for key in value.keys() & hints.keys():
            problems += conforms(value[key], hints[key], f"{where}.{key}")
        return problems
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [
            p
            for i, item in enumerate(value)
            for p in conforms(item, get_args(form)[0], f"{where}[{i}]")
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        return [
            p
            for k, item in value.items()
            for p in conforms(item, get_args(form)[1], f"{where}.{k}")
        ]
    if form is float:  # JSON numbers: an int is a float too
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{where}: {value!r} is not a number"]
    if form is int and isinstance(value, bool):
        return [f"{where}: {value!r} is a bool, not an int"]
    return [] if isinstance(value, form) else [f"{where}: {value!r} is not {form.__name__}"]


def _required(form: Any, hints: dict[str, Any]) -> set[str]:
    """The keys a TypedDict requires: `__required_keys__` knows each class's totality, but
    under postponed annotations Python 3.11 cannot see NotRequired[...]; the hints can."""
    return {key for key in form.__required_keys__ if get_origin(hints[key]) is not NotRequired}


@pytest.fixture(scope="module", params=SCENARIOS)
def cluster(request: pytest.FixtureRequest) -> Cluster:
    return load_scenario(EXAMPLES / request.param)


def test_the_diagnosis_and_its_card_view_conform(cluster: Cluster) -> None:
    found = diagnose(cluster)
    assert conforms(diagnosis_json(found, cluster.scheduler), schemas.DiagnosisJson) == []
    assert conforms(cluster_view(cluster, found), schemas.CardViewJson) == []


def test_the_plan_conforms(cluster: Cluster) -> None:
    diagnosis = diagnose(cluster)
    report = plan(cluster, PlanOptions(time_budget_s=10), diagnosis=diagnosis, clock=lambda: 0.0)
    data = plan_json(report, cluster, *scaling_advice(cluster, report, diagnosis))
    assert conforms(data, schemas.PlanJson) == []


def test_the_whatif_forms_conform(cluster: Cluster) -> None:
    policies = tuple(
        Policy(n, c) for n in NODE_POLICIES for c in defaults(cluster.scheduler.profile)[1]
    )
    assert conforms(whatif_json(what_if(cluster, policies)), schemas.WhatIfJson) == []
    side_by_side = schedulers_json([profile_outcome(cluster)], running=len(cluster.running))
    assert conforms(side_by_side, schemas.SchedulersJson) == []


def test_the_report_conforms_as_built_and_as_read(cluster: Cluster) -> None:
    inputs = ReportInputs(cluster, "scenario", 1_764_491_400.0)
    data = build_report(inputs, ReportOptions(time_budget_s=10), lambda: 0.0).data
    assert conforms(data, schemas.ReportJson) == []
    assert conforms(read_report(data), schemas.ReportJson) == []


def test_the_report_with_history_and_stale_series_conforms() -> None:
    data = sample_report()  # 24 h of history: right-sizing, usage, evidence; a stale series
    assert data["rightsizing"]["workloads"][0]["evidence"]
    assert conforms(data, schemas.ReportJson) == []
    assert conforms(read_report(data), schemas.ReportJson) == []


def test_a_junk_report_is_read_into_the_form() -> None:
    junk = {"plan": {"plans": [None]}, "stale": [None], "usage": {"timestamps": ["x"]}}
    read = read_report({**junk, "rightsizing": {"workloads": [None, 5]}, "run": {}})
    assert conforms(read, schemas.ReportJson) == []
    assert read["stale"] == [{"subject": "None", "metric": "", "ended": False}]
    assert read["usage"] is None  # no step with every figure


def test_the_checker_itself_finds_a_wrong_key_and_a_wrong_kind() -> None:
    good: dict[str, Any] = {"node": "n1", "cards": [0, 1]}
    assert conforms(good, schemas.PlacementJson) == []
    assert conforms({"node": "n1"}, schemas.PlacementJson) == ["$: missing cards"]
    assert conforms({**good, "extra": 1}, schemas.PlacementJson) == ["$: unknown key extra"]
    assert conforms({**good, "cards": [True]}, schemas.PlacementJson) == [
        "$.cards[0]: True is a bool, not an int"
    ]
