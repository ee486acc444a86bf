"""Recording and alerting rules: promtool-clean, unit-tested, on the metric contract."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"
RULE_TESTS = sorted((REPO / "deploy" / "rules" / "tests").glob("*.yaml"))
RUNBOOKS = REPO / "docs" / "runbooks.md"
DESIGN = REPO / "docs" / "design.md"
RUNBOOK_PREFIX = "https://github.com/xgpu-insight/xgpu-insight/blob/main/docs/runbooks.md#"

# docs/design.md §6: the series the exporter and the advisor publish (the contract).
CONTRACT_METRICS = {
    "xgpu_memory_total",
    "xgpu_memory_used",
    "xgpu_core_percentage_total",
    "xgpu_core_percentage_used",
    "gpu_schedule_policy",
    "xgpu_device_health",
    "xgpu_node_info",
    "xgpu_card_info",
    "xgpu_card_memory_total_bytes",
    "xgpu_card_memory_used_bytes",
    "xgpu_card_memory_allotted_bytes",
    "xgpu_card_unattributed_memory_bytes",
    "xgpu_card_core_allotted_ratio",
    "xgpu_card_utilization_ratio",
    "xgpu_card_vgpus",
    "xgpu_exporter_collector_success",
    "xgpu_exporter_collector_duration_seconds",
    "xgpu_exporter_nvml_errors_total",
    "xgpu_exporter_build_info",
    "xgpu_advisor_pending_pods",
    "xgpu_advisor_stranded_memory_bytes",
    "xgpu_advisor_fragmentation_ratio",
    "xgpu_advisor_plans",
    "xgpu_advisor_rescuable_pods",
    "xgpu_advisor_last_success_timestamp_seconds",
    "xgpu_advisor_run_duration_seconds",
}
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


def test_promtool_check_rules_is_clean(promtool: str, rule_groups: list[dict[str, Any]]) -> None:
    result = run(promtool, "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    count = sum(len(group["rules"]) for group in rule_groups)
    assert f"SUCCESS: {count} rules found" in result.stdout
    # Lint findings (e.g. duplicate rules) are printed but do not fail the check.
    assert "warning" not in (result.stdout + result.stderr).lower()


def test_promtool_unit_tests_pass(promtool: str) -> None:
    assert RULE_TESTS
    result = run(promtool, "test", "rules", *map(str, RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_TESTS)


def test_promtool_unit_tests_can_fail(promtool: str, tmp_path: Path) -> None:
    """Guard against tests that pass whatever the rules say: break one rule, see failure."""
    broken = tmp_path / "rules" / "xgpu.rules.yaml"
    broken.parent.mkdir()
    broken.write_text(RULES.read_text().replace("> 0.95", "> 0.99"))
    (tmp_path / "rules" / "tests").mkdir()
    for path in RULE_TESTS:
        (tmp_path / "rules" / "tests" / path.name).write_text(path.read_text())
    result = run(promtool, "test", "rules", str(tmp_path / "rules" / "tests" / "alerts.test.yaml"))
    assert result.returncode != 0
    assert "XGPUVGPUMemoryNearLimit" in result.stdout + result.stderr


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


def test_contract_list_matches_design() -> None:
    design = DESIGN.read_text()
    section = design[design.index("## 6.") : design.index("## 7.")]
    assert {name for name in CONTRACT_METRICS if f"`{name}" not in section} == set()


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
