"""The README and docs/ against the code they describe.

- The metric reference lists exactly the series a simulated exporter and the advisor
  expose, with their real labels and types; the rules tables list exactly the rules.
- Every flag in a documented command exists in that command's parser.
- Every schema name is one the code writes; every relative link resolves.
- The overlay example in docs/deployment.md patches paths that exist in the manifests, and
  the CronJob arguments it quotes are the deployed ones.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from advisor import demo
from advisor.cli import main as advisor_main
from advisor.core.autoscalers import Blocked, Reach
from advisor.core.hpa import Autoscaler
from advisor.metrics import RunFigures, registry_for
from conformance.cli import main as conformance_main
from dashboards.cli import main as dashboards_main
from exporter.cli import parse_args as exporter_parse_args
from tests.realparts import simulated_exporter

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"
RENDERED = REPO / "deploy" / "rendered" / "all.yaml"
SCENARIO = REPO / "advisor" / "examples" / "demo.yaml"
# A node of the demo with both isolation modes and an unhealthy card: every family has data.
SIMULATED_NODE = "a100-node-1"
ADVISOR_COMMANDS = ("diagnose", "plan", "report", "snapshot", "whatif", "replay", "serve")

Row = dict[str, Any]
Exposed = dict[str, tuple[str, set[str] | None]]  # name -> (type, label names or None)


# --- what the code exposes -------------------------------------------------------------


def families(text: str) -> Exposed:
    exposed: Exposed = {}
    for family in text_string_to_metric_families(text):
        # The parser strips a counter's `_total`; the series keep it.
        name = family.name + "_total" if family.type == "counter" else family.name
        labels: set[str] = set()
        for sample in family.samples:
            labels |= set(sample.labels) - {"le", "quantile"}  # the type's own, not the family's
        exposed[name] = (family.type, labels if family.samples else None)
    return exposed


@pytest.fixture(scope="module")
def exporter_exposition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """/metrics of a real exporter in --simulate mode."""
    home = tmp_path_factory.mktemp("exporter")
    exporter = simulated_exporter(SCENARIO, SIMULATED_NODE, home)
    try:
        yield exporter.metrics()
    finally:
        exporter.stop()


def advisor_exposition() -> str:
    from prometheus_client.exposition import generate_latest

    run = RunFigures(
        {"fragmentation": 1},
        1.0,
        0.5,
        {"rebalance": 1},
        1,
        1.0,
        1.0,
        pending_ages={"fragmentation": [60.0]},
        latencies={"cce": [2.0]},
        autoscalers=(  # blocked: every autoscaler series has a sample, so its labels show
            Reach(
                Autoscaler("web/hpa", "Deployment/web/infer", 1, 3, 1),
                "web/infer-0",
                1,
                Blocked("capacity", "…", None),
            ),
        ),
    )
    return generate_latest(registry_for(run)).decode()


# --- what the docs say -----------------------------------------------------------------


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE)
    end = following.search(text, start)
    return text[start : end.start() if end else len(text)]


def table(text: str) -> list[Row]:
    """The rows of the first Markdown table in `text`, keyed by the header's cells."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len(lines) >= 3, "no table"
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(header), line
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def code_name(cell: str) -> str:
    match = re.fullmatch(r"`([^`]+)`", cell)
    assert match, f"expected one `name` in {cell!r}"
    return match.group(1)


def documented(heading: str) -> dict[str, Row]:
    rows = table(section(README.read_text(), heading))
    return {code_name(row["metric"]): row for row in rows}


def documented_labels(row: Row) -> set[str]:
    return set(re.findall(r"`(\w+)`", row["labels"]))


def check_reference(documented_rows: dict[str, Row], exposed: Exposed) -> None:
    assert set(exposed) - set(documented_rows) == set(), "exposed but not in the README"
    assert set(documented_rows) - set(exposed) == set(), "in the README but not exposed"
    for name, (kind, labels) in exposed.items():
        row = documented_rows[name]
        assert row["type"] == kind, name
        if labels is not None:  # a family without samples shows no labels
            assert documented_labels(row) == labels, name
        assert row["meaning"], name
        assert row["unit"], name


# --- metric reference ------------------------------------------------------------------


@pytest.mark.realservices  # a simulated xgpu-exporter
def test_readme_lists_every_exporter_series_with_its_labels(exporter_exposition: str) -> None:
    exposed = families(exporter_exposition)
    assert len(exposed) >= 19
    # The simulation exercises the families that only some cards have.
    for family in ("xgpu_core_percentage_total", "xgpu_memory_used", "xgpu_device_health"):
        assert exposed[family][1], family
    check_reference(documented("### Exporter series"), exposed)


def test_readme_lists_every_advisor_series_with_its_labels() -> None:
    exposed = families(advisor_exposition())
    assert len(exposed) == 14
    check_reference(documented("### Advisor series"), exposed)


@pytest.mark.realservices  # a simulated xgpu-exporter
def test_reference_check_notices_a_missing_row(exporter_exposition: str) -> None:
    rows = documented("### Exporter series")
    del rows["xgpu_card_vgpus"]
    with pytest.raises(AssertionError, match="exposed but not in the README"):
        check_reference(rows, families(exporter_exposition))


def rules_of(key: str) -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule[key]: rule for group in groups for rule in group["rules"] if key in rule}


def test_readme_lists_every_recording_rule() -> None:
    rows = table(section(README.read_text(), "### Recording rules"))
    assert {code_name(row["rule"]) for row in rows} == set(rules_of("record"))


def test_readme_lists_every_alert_with_its_severity() -> None:
    rows = table(section(README.read_text(), "### Alerts"))
    alerts = rules_of("alert")
    assert {code_name(row["alert"]): row["severity"] for row in rows} == {
        name: rule["labels"]["severity"] for name, rule in alerts.items()
    }


# --- commands and flags ----------------------------------------------------------------


def help_text(call: Callable[[], object]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        call()
    return out.getvalue()


def flags_in(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][\w.-]*)", text))


@pytest.fixture(scope="module")
def parsers() -> dict[str, set[str]]:
    """Every documented command and the flags its parser accepts."""
    known = {
        f"xgpu-advisor {name}": flags_in(help_text(partial(advisor_main, [name, "-h"])))
        for name in ADVISOR_COMMANDS
    }
    known["xgpu-exporter"] = flags_in(help_text(lambda: exporter_parse_args(["--help"])))
    known["python -m advisor.demo"] = flags_in(help_text(lambda: demo.main(["--help"])))
    for name in ("build", "check"):
        known[f"xgpu-dashboards {name}"] = flags_in(
            help_text(partial(dashboards_main, [name, "--help"]))
        )
    known["python deploy/render.py"] = {"--check"}
    known["python -m conformance.cli"] = flags_in(help_text(lambda: conformance_main(["--help"])))
    return known


def code_blocks(path: Path) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", path.read_text(), re.MULTILINE | re.DOTALL)


COMMAND_START = re.compile(
    r"^(?:\S*/)?(xgpu-advisor \w+|xgpu-exporter|xgpu-dashboards \w+|"
    r"python3? -m advisor\.demo|python3? deploy/render\.py)\b"
)


def documented_commands(path: Path) -> list[tuple[str, str]]:
    """(command, its text) for every command in the file's code blocks. A command goes on
    over lines ending in a backslash and over following lines that start with a flag."""
    found: list[tuple[str, str]] = []
    for block in code_blocks(path):
        current: list[Any] | None = None
        continued = False
        if re.search("[\u2500-\u257f]", block):
            continue  # a drawing, not commands
        for raw in block.splitlines():
            line = re.sub(r"\s#.*$", "", raw).rstrip()  # comments are not arguments
            stripped = line.strip()
            match = COMMAND_START.match(stripped)
            if match:
                current = [match.group(1).replace("python3", "python"), stripped]
                found.append((current[0], ""))
            elif current is not None and (continued or stripped.startswith("--")):
                current[1] += " " + stripped
            else:
                current = None
            if current is not None:
                found[-1] = (current[0], current[1])
            continued = line.endswith("\\")
    return found


def test_documented_commands_use_only_real_flags(parsers: dict[str, set[str]]) -> None:
    seen = set()
    for path in [README, *DOCS]:
        for command, text in documented_commands(path):
            assert command in parsers, f"{path.name}: unknown command {command}"
            unknown = flags_in(text) - parsers[command]
            assert not unknown, f"{path.name}: `{command}` has no {sorted(unknown)}: {text}"
            seen.add(command)
    # Every advisor command has an example.
    assert {f"xgpu-advisor {name}" for name in ADVISOR_COMMANDS} <= seen


# Flags of other programs that the prose names: the benchmarks, kubernetes-validate and
# the Pushgateway, kubectl (the plan script), the cluster-autoscaler.
OTHER_PROGRAMS_FLAGS = {
    "--quick",
    "--only",  # python -m benchmarks.run
    "--strict",
    "--persistence.file",
    "--raw",
    "--skip-nodes-with-custom-controller-pods",
    "--field-selector",  # kubectl get pods, in the runbooks
    # pip install and pip-compile, in the image build and `make lock`
    "--require-hashes",
    "--generate-hashes",
    "--no-index",
    "--no-deps",
    "--no-build-isolation",
    "--harness",  # conformance/run, a script beside python -m conformance.cli
    "--record",  # python -m conformance.fixtures, the test suite's scenarios
}


# Misspelt on purpose: the README shows what a mistyped flag gets.
MISTYPED_EXAMPLES = {"--senario"}


def test_flags_named_in_the_prose_exist(parsers: dict[str, set[str]]) -> None:
    known = set().union(*parsers.values()) | OTHER_PROGRAMS_FLAGS | MISTYPED_EXAMPLES
    for path in [README, *DOCS]:
        prose = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
        assert flags_in(prose) - known == set(), path.name


def test_the_flag_check_catches_an_invented_flag(parsers: dict[str, set[str]]) -> None:
    assert "--pushgateway" in parsers["xgpu-advisor report"]
    assert "--pushgateway" not in parsers["xgpu-advisor diagnose"]


def test_schema_names_are_the_ones_the_code_writes() -> None:
    code = "\n".join(p.read_text() for p in (REPO / "advisor").rglob("*.py"))
    written = set(re.findall(r"xgpu-advisor/[a-z]+/v\d+", code))
    assert len(written) >= 6
    for path in [README, *DOCS]:
        named = set(re.findall(r"xgpu-advisor/[a-z]+/v\d+", path.read_text()))
        assert named <= written, (path.name, named - written)


# --- links -----------------------------------------------------------------------------


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    # GitHub's anchors: lower case, punctuation dropped (not - and _), spaces to dashes.
    return {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    if path == README:
        assert len(links) > 10  # the pattern finds them
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        resolved = (path.parent / target).resolve() if target else path
        assert resolved.exists(), f"{path.name}: {link}"
        if anchor:
            assert anchor in anchors(resolved), f"{path.name}: {link}"


# --- the deployment guide --------------------------------------------------------------


def rendered_objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(RENDERED.read_text()) if d]


def resolve_parent(document: Any, pointer: str) -> tuple[Any, str]:
    *parents, last = pointer.lstrip("/").split("/")
    node = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, last


def test_overlay_example_patches_paths_that_exist() -> None:
    (example,) = [
        yaml.safe_load(block)
        for block in code_blocks(REPO / "docs" / "deployment.md")
        if "kind: Kustomization" in block
    ]
    objects = rendered_objects()
    images = {
        c["image"].rpartition(":")[0]
        for d in objects
        if d["kind"] in {"DaemonSet", "CronJob"}
        for c in (
            d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
            if d["kind"] == "CronJob"
            else d["spec"]["template"]["spec"]["containers"]
        )
    }
    assert {image["name"] for image in example["images"]} == images
    for patch in example["patches"]:
        target = patch["target"]
        label, _, value = target.get("labelSelector", "").partition("=")
        matching = [
            d
            for d in objects
            if d["kind"] == target["kind"]
            and target.get("name", d["metadata"]["name"]) == d["metadata"]["name"]
            and (not label or d["metadata"].get("labels", {}).get(label) == value)
        ]
        assert matching, target
        for operation in yaml.safe_load(patch["patch"]):
            for document in matching:
                parent, last = resolve_parent(document, operation["path"])
                if operation["op"] == "replace":
                    key = int(last) if isinstance(parent, list) else last
                    current = parent[key]
                    # A replaced argument keeps its flag: the example replaces the right one.
                    if isinstance(current, str) and current.startswith("--"):
                        flag = current.partition("=")[0]
                        assert operation["value"].startswith(flag + "="), operation
                else:
                    assert operation["op"] == "add", operation
                    assert isinstance(parent, dict), operation


def test_deployment_guide_quotes_the_deployed_advisor_arguments() -> None:
    (cronjob,) = [d for d in rendered_objects() if d["kind"] == "CronJob"]
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    quoted = [
        text
        for command, text in documented_commands(REPO / "docs" / "deployment.md")
        if command == "xgpu-advisor report" and "--pushgateway=" in text
    ]
    assert len(quoted) == 1
    assert quoted[0].split()[1:] == container["args"]
    # The README's summary of the CronJob names the same flags.
    readme = README.read_text()
    for arg in container["args"][1:]:
        flag = arg.partition("=")[0]
        assert flag in readme, flag
