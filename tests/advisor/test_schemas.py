"""advisor.schemas: what the producers and the commands write has exactly the keys and value
kinds the TypedDicts name, checked against the JSON Schemas shipped in the package
(advisor/schemas/json, written from the TypedDicts by scripts/write_schemas.py): required
keys always, optional ones only as typed, no other key, each output's own schema id."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from advisor import schemas
from advisor.cli import main
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
from advisor.scenario.profile import NODE_POLICIES, defaults
from tests.advisor.render.sample_report import sample_report
from tests.advisor.test_replay_bounds import trace

EXAMPLES = Path(__file__).parents[2] / "advisor" / "examples"
SCENARIOS = ["demo.yaml", "hami.yaml", "report-sample.yaml", "training.yaml"]


SHIPPED = Path(schemas.__file__).parent / "json"
WRITER = Path(__file__).parents[2] / "scripts" / "write_schemas.py"


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SHIPPED / name).read_text(encoding="utf-8"))
    return loaded


def conforms(value: Any, schema_id: str, form: str | None = None) -> list[str]:
    """Where `value` breaks the shipped JSON Schema of `schema_id` (or one of its forms, a
    `$defs` entry, such as CardViewJson inside the report's)."""
    _, what, version = schema_id.split("/")
    schema = _schema(f"{what}-{version}.schema.json")
    if form is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{form}"}
    validator = Draft202012Validator(schema)
    return [
        f"${''.join(f'[{p!r}]' for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(value)
    ]


@pytest.mark.realservices  # the writer, as make and CI run it
def test_the_shipped_schemas_are_written_from_the_typeddicts() -> None:
    """advisor/schemas/json is what scripts/write_schemas.py writes from the TypedDicts today:
    a key added to a TypedDict without rewriting the schemas fails here."""
    done = subprocess.run(
        [sys.executable, str(WRITER), "--check"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
    names = ("diagnosis-v1", "plan-v1", "replay-v1", "report-v1", "rightsizing-v1", "whatif-v1")
    for name in names:
        Draft202012Validator.check_schema(_schema(f"{name}.schema.json"))


@pytest.fixture(scope="module", params=SCENARIOS)
def cluster(request: pytest.FixtureRequest) -> Cluster:
    return load_scenario(EXAMPLES / request.param)


def test_the_diagnosis_and_its_card_view_conform(cluster: Cluster) -> None:
    found = diagnose(cluster)
    assert conforms(diagnosis_json(found, cluster.scheduler), schemas.DIAGNOSIS_SCHEMA) == []
    assert conforms(cluster_view(cluster, found), schemas.REPORT_SCHEMA, "CardViewJson") == []


def test_the_plan_conforms(cluster: Cluster) -> None:
    diagnosis = diagnose(cluster)
    report = plan(cluster, PlanOptions(time_budget_s=10), diagnosis=diagnosis, clock=lambda: 0.0)
    data = plan_json(report, cluster, *scaling_advice(cluster, report, diagnosis))
    assert conforms(data, schemas.PLAN_SCHEMA) == []


def test_the_whatif_forms_conform(cluster: Cluster) -> None:
    policies = tuple(
        Policy(n, c) for n in NODE_POLICIES for c in defaults(cluster.scheduler.profile)[1]
    )
    assert conforms(whatif_json(what_if(cluster, policies)), schemas.WHATIF_SCHEMA) == []
    side_by_side = schedulers_json([profile_outcome(cluster)], running=len(cluster.running))
    assert conforms(side_by_side, schemas.WHATIF_SCHEMA) == []


def test_the_report_conforms_as_built_and_as_read(cluster: Cluster) -> None:
    inputs = ReportInputs(cluster, "scenario", 1_764_491_400.0)
    data = build_report(inputs, ReportOptions(time_budget_s=10), lambda: 0.0).data
    assert conforms(data, schemas.REPORT_SCHEMA) == []
    assert conforms(read_report(data), schemas.REPORT_SCHEMA) == []


def test_the_report_with_history_and_stale_series_conforms() -> None:
    data = sample_report()  # 24 h of history: right-sizing, usage, evidence; a stale series
    assert data["rightsizing"]["workloads"][0]["evidence"]
    assert conforms(data, schemas.REPORT_SCHEMA) == []
    assert conforms(data["rightsizing"], schemas.RIGHTSIZING_SCHEMA) == []
    assert conforms(read_report(data), schemas.REPORT_SCHEMA) == []


def test_a_junk_report_is_read_into_the_form() -> None:
    junk = {"plan": {"plans": [None]}, "stale": [None], "usage": {"timestamps": ["x"]}}
    read = read_report({**junk, "rightsizing": {"workloads": [None, 5]}, "run": {}})
    assert conforms(read, schemas.REPORT_SCHEMA) == []
    assert read["stale"] == [{"subject": "None", "metric": "", "ended": False}]
    assert read["usage"] is None  # no step with every figure


def test_the_schemas_refuse_a_missing_key_an_unknown_key_a_wrong_kind_and_another_id() -> None:
    good: dict[str, Any] = {"node": "n1", "cards": [0, 1]}
    assert conforms(good, schemas.REPORT_SCHEMA, "PlacementJson") == []
    assert conforms({"node": "n1"}, schemas.REPORT_SCHEMA, "PlacementJson") == [
        "$: 'cards' is a required property"
    ]
    assert conforms({**good, "extra": 1}, schemas.REPORT_SCHEMA, "PlacementJson") == [
        "$: Additional properties are not allowed ('extra' was unexpected)"
    ]
    assert conforms({**good, "cards": [True]}, schemas.REPORT_SCHEMA, "PlacementJson") == [
        "$['cards'][0]: True is not of type 'integer'"
    ]
    data = diagnosis_json(diagnose(load_scenario(EXAMPLES / "demo.yaml")))
    assert conforms(data, schemas.DIAGNOSIS_SCHEMA) == []
    assert conforms({**data, "schema": schemas.PLAN_SCHEMA}, schemas.DIAGNOSIS_SCHEMA) == [
        f"$['schema']: {schemas.DIAGNOSIS_SCHEMA!r} was expected"
    ]


@pytest.mark.realservices  # the CLI, in-process, writing files
@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize(
    ("command", "schema_id", "extra"),
    [
        ("diagnose", schemas.DIAGNOSIS_SCHEMA, []),
        ("plan", schemas.PLAN_SCHEMA, []),
        ("whatif", schemas.WHATIF_SCHEMA, []),
        ("whatif", schemas.WHATIF_SCHEMA, ["--scheduler", "cce,hami,volcano-vgpu"]),
    ],
)
def test_every_commands_json_validates_against_its_shipped_schema(
    scenario: str, command: str, schema_id: str, extra: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    argv = [command, "--scenario", str(EXAMPLES / scenario), "--format", "json", *extra]
    assert main([*argv, "--output", str(out)]) == 0
    assert conforms(json.loads(out.read_text()), schema_id) == []


@pytest.mark.realservices  # the CLI, in-process, writing files
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_report_commands_json_validates_against_its_shipped_schema(
    scenario: str, tmp_path: Path
) -> None:
    argv = ["report", "--scenario", str(EXAMPLES / scenario), "--output-dir", str(tmp_path)]
    assert main(argv) == 0
    data = json.loads((tmp_path / "report.json").read_text())
    assert conforms(data, schemas.REPORT_SCHEMA) == []
    assert data["rightsizing"] is None  # no history from a scenario file


@pytest.mark.realservices  # the CLI, in-process, writing files
@pytest.mark.parametrize("resources", ["gpu", "all"])
def test_the_replays_json_validates_against_its_shipped_schema(
    resources: str, tmp_path: Path
) -> None:
    nodes, pods = trace(tmp_path)
    out = tmp_path / "replay.json"
    argv = ["replay", "--nodes", str(nodes), "--pods", str(pods), "--resources", resources]
    assert main([*argv, "--format", "json", "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert ("cpu_only_pods" in data) == (resources == "all")
    assert conforms(data, schemas.REPLAY_SCHEMA) == []
