"""Recording and alerting rules: promtool-clean, unit-tested, on the metric contract."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor import metricnames

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"
COEXISTENCE = REPO / "deploy" / "rules" / "coexistence.rules.yaml"
RULE_TESTS = sorted((REPO / "deploy" / "rules" / "tests").glob("*.yaml"))
RUNBOOKS = REPO / "docs" / "runbooks.md"
RUNBOOK_PREFIX = "https://github.com/xgpu-insight/xgpu-insight/blob/main/docs/runbooks.md#"

# docs/design.md §6: the series the exporter and the advisor publish (the contract).
CONTRACT_METRICS = metricnames.NAMES
# A bare metric name: not part of a recorded name (level:metric:op) or a longer word.
METRIC_NAME = re.compile(r"(?<![\w:])(?:xgpu_|gpu_schedule_policy)\w*(?![\w:])")


def rules_of(groups: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [rule for group in groups for rule in group["rules"] if key in rule]


def alert_tests() -> list[dict[str, Any]]:
    tests: list[dict[str, Any]] = []
    for path in RULE_TESTS:
        tests += yaml.safe_load(path.read_text())["tests"]
    return tests


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.realservices
def test_promtool_check_rules_is_clean(promtool: str, rule_groups: list[dict[str, Any]]) -> None:
    result = run(promtool, "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    count = sum(len(group["rules"]) for group in rule_groups)
    assert f"SUCCESS: {count} rules found" in result.stdout
    # Lint findings (e.g. duplicate rules) are printed but do not fail the check.
    assert "warning" not in (result.stdout + result.stderr).lower()


@pytest.mark.realservices
def test_promtool_unit_tests_pass(promtool: str) -> None:
    assert RULE_TESTS
    result = run(promtool, "test", "rules", *map(str, RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_TESTS)


OPT_OUT = """
          unless on (cluster, namespace, pod)
          (
            kube_pod_labels{label_xgpu_io_preallocates="true"}
            or
            kube_pod_annotations{annotation_xgpu_io_preallocates="true"}
          )"""
NVML_FOR = """expr: increase(xgpu_exporter_nvml_errors_total[5m]) > 0
        for: 15m"""


@pytest.mark.realservices
@pytest.mark.parametrize(
    ("change", "failing"),
    [
        (("> 0.95", "> 0.99"), "XGPUVGPUMemoryNearLimit"),
        # the opt-out dropped: preallocating pods page again
        ((OPT_OUT, ""), "XGPUVGPUMemoryNearLimit skips pods labelled"),
        # no `for:`: one error pages, as it did
        ((NVML_FOR, NVML_FOR.split("\n")[0]), "XGPUNVMLErrors stays quiet for a single error"),
    ],
)
def test_promtool_unit_tests_can_fail(
    promtool: str, tmp_path: Path, change: tuple[str, str], failing: str
) -> None:
    """Guard against tests that pass whatever the rules say: break one rule, see failure."""
    text = RULES.read_text()
    assert text.count(change[0]) == 1, change[0]
    broken = tmp_path / "rules" / "xgpu.rules.yaml"
    broken.parent.mkdir()
    broken.write_text(text.replace(*change))
    (tmp_path / "rules" / "tests").mkdir()
    for path in RULE_TESTS:
        (tmp_path / "rules" / "tests" / path.name).write_text(path.read_text())
    result = run(promtool, "test", "rules", str(tmp_path / "rules" / "tests" / "alerts.test.yaml"))
    assert result.returncode != 0
    assert failing in result.stdout + result.stderr


@pytest.mark.realservices
def test_coexistence_rules_pass_promtool_and_record_contract_names(promtool: str) -> None:
    result = run(promtool, "check", "rules", str(COEXISTENCE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning" not in (result.stdout + result.stderr).lower()
    groups = yaml.safe_load(COEXISTENCE.read_text())["groups"]
    records = rules_of(groups, "record")
    assert records
    for rule in records:
        name = rule["record"]
        if ":" in name:  # an intermediate step, named level:metric:operation
            assert name.split(":")[1].startswith("xgpu_"), name
            continue
        assert metricnames.BY_NAME[name].source == "exporter", name
        # a label set the exporter's own series never have: the two never merge
        assert rule["labels"]["xgpu_source"] in {"dcgm-exporter", "hami-vgpu-monitor"}, name
    checked = {
        case["expr"]
        for test in alert_tests()
        for case in test.get("promql_expr_test", [])
        if case.get("exp_samples")
    }
    assert {rule["record"] for rule in records} - checked == set()


def test_every_alert_has_a_firing_and_a_quiet_case(rule_groups: list[dict[str, Any]]) -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    for test in alert_tests():
        outcomes: dict[str, list[bool]] = {}
        for case in test.get("alert_rule_test", []):
            outcomes.setdefault(case["alertname"], []).append(bool(case.get("exp_alerts")))
        for alert, fired in outcomes.items():
            if any(fired):
                fires.add(alert)
            else:  # a whole scenario in which the alert never fires
                quiet.add(alert)
    alerts = {rule["alert"] for rule in rules_of(rule_groups, "alert")}
    assert alerts - fires == set(), "alerts without a firing case"
    assert alerts - quiet == set(), "alerts without a non-firing case"
    assert (fires | quiet) - alerts == set(), "tests for alerts that do not exist"


def test_every_recording_rule_has_its_values_checked(rule_groups: list[dict[str, Any]]) -> None:
    checked = {
        case["expr"]
        for test in alert_tests()
        for case in test.get("promql_expr_test", [])
        if case.get("exp_samples")
    }
    records = {rule["record"] for rule in rules_of(rule_groups, "record")}
    assert records - checked == set()


def test_recording_rule_names_follow_level_metric_operation(
    rule_groups: list[dict[str, Any]],
) -> None:
    for rule in rules_of(rule_groups, "record"):
        level, metric, operation = rule["record"].split(":")
        assert level in {"node", "node_gpu", "namespace", "cluster"}, rule["record"]
        assert metric.startswith("xgpu_"), rule["record"]
        assert operation in {"sum", "count", "ratio"}, rule["record"]


def test_rules_read_only_contract_metrics(rule_groups: list[dict[str, Any]]) -> None:
    used: set[str] = set()
    for group in rule_groups:
        for rule in group["rules"]:
            used.update(METRIC_NAME.findall(rule["expr"]))
    assert used, "the metric-name pattern matched nothing"
    assert used - CONTRACT_METRICS == set()


def test_no_per_node_memory_full_alert(rule_groups: list[dict[str, Any]]) -> None:
    """binpack fills nodes on purpose: alerting on it would page on healthy clusters."""
    for rule in rules_of(rule_groups, "alert"):
        assert "xgpu_card_memory_used_bytes" not in rule["expr"], rule["alert"]
        assert "node:" not in rule["expr"], rule["alert"]


def leading_group(text: str) -> str:
    """The balanced parenthesised group `text` starts with, or '' if it starts otherwise."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[: index + 1] if index else ""
    return ""


def test_divisions_are_guarded(rule_groups: list[dict[str, Any]]) -> None:
    """Every divisor is `(... > 0)`: vGPU series come and go, cards may allot nothing."""
    divisions = 0
    for group in rule_groups:
        for rule in group["rules"]:
            expr = " ".join(rule["expr"].split())
            for divisor in expr.split(" / ")[1:]:
                divisions += 1
                assert leading_group(divisor).endswith("> 0)"), (rule.get("record"), expr)
    assert divisions >= 5


def runbook_anchors() -> set[str]:
    headings = re.findall(r"^## (.+)$", RUNBOOKS.read_text(), re.MULTILINE)
    # GitHub's anchor: lower case, spaces to dashes, punctuation dropped.
    return {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}


def test_alerts_carry_severity_summary_description_and_a_runbook(
    rule_groups: list[dict[str, Any]],
) -> None:
    anchors = runbook_anchors()
    for rule in rules_of(rule_groups, "alert"):
        name = rule["alert"]
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook_url"}, name
        assert annotations["runbook_url"] == RUNBOOK_PREFIX + name.lower(), name
        assert name.lower() in anchors, name


def test_runbooks_have_one_section_per_alert(rule_groups: list[dict[str, Any]]) -> None:
    alerts = {rule["alert"].lower() for rule in rules_of(rule_groups, "alert")}
    assert runbook_anchors() == alerts


def runbook_sections() -> dict[str, str]:
    """Alert name (lower case) -> its runbook section's text."""
    parts = re.split(r"^## (.+)$", RUNBOOKS.read_text(), flags=re.MULTILINE)
    return {
        title.strip().lower(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)
    }


def test_every_alert_waits_and_its_runbook_says_why(rule_groups: list[dict[str, Any]]) -> None:
    """No alert fires on one bad sample; each runbook justifies the wait and the threshold
    under a heading that names the rule's own `for:` (so the two cannot drift apart)."""
    sections = runbook_sections()
    for rule in rules_of(rule_groups, "alert"):
        assert re.fullmatch(r"\d+[mh]", rule.get("for", "")), rule["alert"]
        section = sections[rule["alert"].lower()]
        heading = f"**Threshold and `for: {rule['for']}`.**"
        assert heading in section, (rule["alert"], heading)
        paragraph = section[section.index(heading) :].split("\n\n")[0]
        assert len(paragraph.split()) >= 40, rule["alert"]  # a reason, not a restatement


def test_the_preallocation_opt_out_is_documented_as_the_rule_reads_it(
    rule_groups: list[dict[str, Any]],
) -> None:
    (rule,) = [r for r in rules_of(rule_groups, "alert") if r["alert"] == "XGPUVGPUMemoryNearLimit"]
    section = runbook_sections()["xgpuvgpumemorynearlimit"]
    # kube-state-metrics turns the key xgpu.io/preallocates into label_xgpu_io_preallocates
    for flag, series in (
        ("--metric-labels-allowlist=pods=[xgpu.io/preallocates]", "label_xgpu_io_preallocates"),
        (
            "--metric-annotations-allowlist=pods=[xgpu.io/preallocates]",
            "annotation_xgpu_io_preallocates",
        ),
    ):
        assert flag in section
        assert f'{series}="true"' in rule["expr"]
        assert f'{series}="true"' in section
    assert 'xgpu.io/preallocates: "true"' in section
