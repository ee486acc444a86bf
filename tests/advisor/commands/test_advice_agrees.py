"""Every command gives each Pending pod of every bundled example the same advice.

`diagnose` (markdown, JSON, HTML), `report` (its three files), `plan` (markdown, JSON, HTML)
and `whatif` are run on each file of advisor/examples; what each output shows of a Pending
pod (its cause, the cause's label with the advice, the advice key, the headline, the "What
to do" entry it is listed under) is read back from the output itself and must be the same
wherever it is shown.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.diagnosis import CAUSES
from advisor.core.remedy import ACTIONS
from advisor.render.plan.scaling import RELIEF_TITLE
from tests.realparts import REPO

EXAMPLES = sorted((REPO / "advisor" / "examples").glob("*.yaml"))
PROFILES = ("cce", "hami", "volcano-vgpu")
Shown = dict[str, dict[str, set[tuple[str, str]]]]  # pod -> what -> {(output, value)}


class Tables(HTMLParser):
    """The text of every table row's cells (text inside <details> left out), and each "What
    to do" entry's title with the pods it names."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.advice: list[tuple[str, str]] = []
        self._cell: list[str] | None = None
        self._details = 0
        self._in_advice = False
        self._grab: str | None = None
        self._title = ""
        self.feed(document)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "details":
            self._details += 1
        elif tag == "div" and "advice" in classes:
            self._in_advice = True
        elif self._in_advice and tag == "strong":
            self._grab, self._title = "title", ""
        elif self._in_advice and tag == "span" and "who" in classes:
            self._grab = "who"
            self.advice.append((self._title, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "details":
            self._details -= 1
        elif tag == "section":
            self._in_advice = False
        elif tag in ("strong", "span"):
            self._grab = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None and not self._details:
            self._cell.append(data)
        if self._grab == "title":
            self._title += data
        elif self._grab == "who":
            title, who = self.advice[-1]
            self.advice[-1] = (title, who + data)


def unescape(cell: str) -> str:
    return re.sub(r"\\(.)", r"\1", cell.strip())


def markdown_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table under `## header`."""
    lines = text.split(f"## {header}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    table = [line for line in lines if line.startswith("|")][2:]
    return [[unescape(c) for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table]


def relief_rows(text: str) -> list[list[str]]:
    """The rows of the markdown table under the bold "Pods short of cpu..." title."""
    if RELIEF_TITLE not in text:
        return []
    lines = text.split(f"**{RELIEF_TITLE}**\n", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    table = lines.splitlines()[2:]
    return [[unescape(c) for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table]


def markdown_advice(text: str) -> list[tuple[str, str]]:
    """Each "What to do" bullet's title and the pods it names."""
    section = text.split("## What to do\n", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^- \*\*(.+?)\*\* \((.+?)\): ", section, flags=re.MULTILINE)
    return [(unescape(title), unescape(pods)) for title, pods in found]


def run(*args: str) -> None:
    assert main(list(args)) == 0


def outputs(scenario: Path, out: Path) -> Shown:
    shown: Shown = defaultdict(lambda: defaultdict(set))

    def show(pod: str, what: str, where: str, value: str) -> None:
        shown[pod][what].add((where, value))

    def from_json(where: str, pods: list[dict[str, Any]], headline: bool = True) -> None:
        for entry in pods:
            show(entry["pod"], "cause", where, entry["cause"])
            show(entry["pod"], "advice", where, entry["advice"]["key"])
            if headline:
                show(entry["pod"], "headline", where, entry["message"])

    def from_pending_table(where: str, rows: list[list[str]], unresolved: bool) -> None:
        for row in rows:
            if len(row) == 6:  # Pod | Waiting | ...: the pods' ages are known (§12.3)
                row = [row[0], *row[2:]]
            if unresolved:  # Pod | Cause
                show(row[0], "label", where, row[1])
            else:  # Pod | Priority | Request | Cause | Where it fits / why not
                show(row[0], "label", where, row[3])
                show(row[0], "why-not", where, row[4])

    def from_advice(where: str, groups: list[tuple[str, str]]) -> None:
        for title, pods in groups:
            for pod in pods.split(", "):
                show(pod, "what-to-do", where, title)

    for fmt in ("json", "markdown", "html"):
        run("diagnose", "--scenario", str(scenario), "--format", fmt, "--output", str(out / fmt))
        run("plan", "--scenario", str(scenario), "--format", fmt, "--output", str(out / f"p{fmt}"))
    run("report", "--scenario", str(scenario), "--output-dir", str(out / "report"))
    diagnosis = json.loads((out / "json").read_text())
    report = json.loads((out / "report" / "report.json").read_text())
    plan = json.loads((out / "pjson").read_text())
    from_json("diagnose json", diagnosis["pods"])
    from_json("report json", report["diagnosis"]["pods"])
    from_json("report json unresolved", report["plan"]["unresolved"], headline=False)
    from_json("plan json", plan["unresolved"], headline=False)
    for where, path in (("diagnose md", out / "markdown"), ("report md", out / "report/report.md")):
        text = path.read_text()
        from_pending_table(where, markdown_rows(text, "Pending pods"), unresolved=False)
        from_advice(where, markdown_advice(text))
    from_pending_table(
        "plan md", markdown_rows((out / "pmarkdown").read_text(), "Still Pending"), True
    )
    report_md = (out / "report" / "report.md").read_text()
    from_pending_table("report md still", markdown_rows(report_md, "Still Pending"), True)
    # What frees a pod short of cpu or memory: the core's words, as they are, everywhere.
    for where, entries in (
        ("plan json", plan.get("relief", [])),
        ("report json", report["plan"].get("relief", [])),
    ):
        for r in entries:
            show(r["pod"], "relief", where, r["advice"])
    for where, text in (("plan md", (out / "pmarkdown").read_text()), ("report md", report_md)):
        for pod, advice in relief_rows(text):
            show(pod, "relief", where, advice)
    for where, path in (
        ("diagnose html", out / "html"),
        ("report html", out / "report/report.html"),
    ):
        page = Tables(path.read_text())
        pending = [r for r in page.rows if len(r) in {5, 6} and r[-4].isdigit()]
        from_pending_table(where, pending, unresolved=False)
        from_advice(where, page.advice)
    plan_page = Tables((out / "phtml").read_text())
    still = [r for r in plan_page.rows if len(r) == 2 and r[1].split(" ")[0] in CAUSES]
    from_pending_table("plan html", still, unresolved=True)
    # whatif names each pod's cause under its own profile (beside another one, to compare).
    own = diagnosis["scheduler"]["profile"]
    other = next(p for p in PROFILES if p != own)
    run(
        "whatif",
        "--scenario",
        str(scenario),
        "--scheduler",
        f"{own},{other}",
        "--format",
        "json",
        "--output",
        str(out / "whatif"),
    )
    whatif = json.loads((out / "whatif").read_text())
    mine = next(s for s in whatif["schedulers"] if s["profile"] == own)
    for pod, cause in mine["causes"].items():
        show(pod, "cause", "whatif json", cause)
    return shown


# seven whole commands per example, each planning: the training cluster's take about 50 s
# alone, past the suite's 120 s on a busy machine
@pytest.mark.timeout(360)
@pytest.mark.parametrize("scenario", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_output_gives_each_pending_pod_the_same_advice(
    scenario: Path, tmp_path: Path
) -> None:
    shown = outputs(scenario, tmp_path)
    diagnosed = json.loads((tmp_path / "json").read_text())["pods"]
    assert diagnosed, f"{scenario.name} has no Pending pod"
    short = [e["pod"] for e in diagnosed if e["cause"] == "node-resources"]
    assert all("relief" in shown[pod] for pod in short), short  # the check below has teeth
    for entry in diagnosed:
        pod = entry["pod"]
        seen = shown[pod]
        # Every output that shows the pod shows its cause, label and advice.
        assert {"cause", "advice", "label", "what-to-do", "headline", "why-not"} <= set(seen)
        for what, values in seen.items():
            distinct = {value for _, value in values}
            assert len(distinct) == 1, f"{pod}: {what} differs between outputs: {sorted(values)}"
        (label,) = {v for _, v in seen["label"]}
        (cause,) = {v for _, v in seen["cause"]}
        assert label.startswith(cause), f"{pod}: label {label!r} is not of cause {cause!r}"
        (key,) = {v for _, v in seen["advice"]}
        assert {v for _, v in seen["what-to-do"]} == {ACTIONS[key][0]}, pod
        if "relief" in seen:  # shown in all four, or in none
            assert {where for where, _ in seen["relief"]} == {
                "plan json",
                "report json",
                "plan md",
                "report md",
            }, pod
