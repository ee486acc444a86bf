"""The Markdown report: headline counts, one row per Pending pod, advice, cards, escaping."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from advisor.render.diagnose import render_markdown
from advisor.render.diagnose.data import format_request
from advisor.render.diagnose.read import read_request
from tests.advisor.render.sample_diagnosis import (
    SAMPLE_NODE_FIT,
    sample_diagnosis,
    sample_node_resources_pod,
    sample_view,
)
from tests.advisor.render.sample_diagnosis import main as sample_main

# The example in the task brief (docs/design.md §5 plus the per-pod extras).
BRIEF_DIAGNOSIS: dict[str, Any] = {
    "schema": "xgpu-advisor/diagnosis/v1",
    "policy": {"node": "binpack", "card": "spread"},
    "pods": [
        {
            "pod": "default/train-2",
            "cause": "fragmentation",
            "message": (
                "0/1 nodes are available: 1 too-few-cards. gpu-node-1 has 8192 MiB free over 3 "
                "healthy cards, but not 4096 MiB on each of 2 cards"
            ),
            "placement": None,
            "request": {"gpus": 2, "memory_mib": 8192, "core_percent": 0},
            "priority": 0,
            "node_summary": "0/1 nodes are available: 1 too-few-cards.",
            "nodes": {
                "gpu-node-1": [
                    "too-few-cards: 1 of 2 cards eligible",
                    "card-memory: cards 0, 1 have less than 4096 MiB free",
                ]
            },
            "nodes_omitted": 0,
        },
        {
            "pod": "default/infer",
            "cause": "schedulable",
            "message": "fits on gpu-node-2 cards 1",
            "placement": {"node": "gpu-node-2", "cards": [1]},
            "request": {"gpus": 1, "memory_mib": 4096, "core_percent": 10},
            "priority": 0,
            "nodes": {},
            "nodes_omitted": 0,
        },
    ],
    "summary": {
        "pending": 2,
        "schedulable": 1,
        "fragmentation": 1,
        "capacity": 0,
        "unsatisfiable": 0,
        "invalid": 0,
    },
}
BRIEF_VIEW: dict[str, Any] = {
    "nodes": [
        {
            "name": "gpu-node-1",
            "cards": [
                {
                    "index": 0,
                    "memory_mib": 16384,
                    "model": "Tesla T4",
                    "healthy": True,
                    "mode": 0,
                    "vgpus": 1,
                    "core_allotted_percent": 0,
                    "allotments": [
                        {
                            "pod": "default/train-1",
                            "memory_mib": 4096,
                            "core_percent": 0,
                            "pending": False,
                        }
                    ],
                }
            ],
        }
    ]
}


def split_row(line: str) -> list[str]:
    """Cells of a GFM table row, split on pipes that are not backslash-escaped."""
    assert line.startswith("| "), line
    assert line.endswith(" |"), line
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line[2:-2])]


def table_after(markdown: str, heading: str) -> list[list[str]]:
    """The rows (header first, separator dropped) of the table under a ## heading."""
    lines = markdown.splitlines()
    start = lines.index(heading) + 2
    assert re.fullmatch(r"\|(---:?\|)+", lines[start + 1]), lines[start + 1]
    rows = [split_row(lines[start])]
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(split_row(line))
    return rows


def test_headline_counts_every_nonzero_cause_in_design_order() -> None:
    text = render_markdown(sample_diagnosis(), sample_view())
    assert text.splitlines()[0] == (
        "**6 Pending GPU pods: 1 schedulable, 1 fragmentation, 2 capacity, 1 unsatisfiable, "
        "1 invalid** (policy: node binpack, card binpack)"
    )


def test_brief_example_headline_and_rows() -> None:
    text = render_markdown(BRIEF_DIAGNOSIS, BRIEF_VIEW)
    assert text.startswith(
        "**2 Pending GPU pods: 1 schedulable, 1 fragmentation** (policy: node binpack, card spread)"
    )
    header, *rows = table_after(text, "## Pending pods")
    assert header[0] == "Pod"
    assert rows[0] == [
        "default/train-2",
        "0",
        "2 × 4096 MiB",
        "fragmentation",
        BRIEF_DIAGNOSIS["pods"][0]["message"],
    ]
    assert rows[1] == [
        "default/infer",
        "0",
        "1 × 4096 MiB + 1 × 10 % core",
        "schedulable",
        "fits on gpu-node-2, card 1",
    ]


def test_each_cause_has_its_row() -> None:
    text = render_markdown(sample_diagnosis(), sample_view())
    header, *rows = table_after(text, "## Pending pods")
    by_pod = {row[0]: row for row in rows}
    assert len(header) == 5
    assert all(len(row) == 5 for row in rows)
    assert by_pod["ml/bert-finetune"][2:] == [
        "2 × 8192 MiB",
        "schedulable",
        "fits on gpu-v100-01, cards 0, 1",
    ]
    assert by_pod["ml/llm-serve-13b"][3] == "fragmentation"
    assert by_pod["ml/llm-serve-13b"][4].startswith("0/4 nodes are available: 2 card-memory")
    assert by_pod["vision/yolo-batch"][3] == "capacity (consolidate)"
    assert by_pod["batch/etl-gpu"][3] == "capacity (scale up)"
    assert by_pod["research/llama-70b-full"][2:4] == ["4 × 98304 MiB", "unsatisfiable"]
    # An uneven (invalid) split is shown as totals, not as a shape that does not exist.
    assert by_pod["default/bad-split"][2:4] == ["10000 MiB over 3 cards", "invalid"]
    assert by_pod["default/bad-split"][4].startswith("memory 10000 MiB over 3 cards")


def _shape(request: dict[str, Any]) -> str:
    """The request as a file may hold it, read as the pages read it, then worded."""
    read = read_request(request)
    assert read is not None
    return format_request(read)


def test_request_shapes() -> None:
    assert _shape({"gpus": 2, "memory_mib": 8192}) == "2 × 4096 MiB"
    assert _shape({"gpus": 2, "memory_mib": 8192, "core_percent": 20}) == (
        "2 × 4096 MiB + 2 × 10 % core"
    )
    assert _shape({"memory_mib": 1024}) == "1 × 1024 MiB"  # gpus defaults to 1
    assert _shape({"gpus": 0, "memory_mib": 1024}) == "1024 MiB over 0 cards"
    assert _shape({"gpus": 2, "memory_mib": 4096, "core_percent": 15}) == (
        "4096 MiB over 2 cards + 15 % core"
    )
    assert read_request({}) is None  # the pages show "?"


def test_node_summary_leads_when_the_message_lacks_it() -> None:
    diagnosis = copy.deepcopy(BRIEF_DIAGNOSIS)
    diagnosis["pods"][0]["message"] = "capacity is split across cards"
    _, row, _ = table_after(render_markdown(diagnosis, BRIEF_VIEW), "## Pending pods")
    assert row[4] == "0/1 nodes are available: 1 too-few-cards. capacity is split across cards"


def test_an_older_reports_node_summary_is_joined_by_a_semicolon() -> None:
    """Reports written before the summary became kube-scheduler's FitError sentence."""
    diagnosis = copy.deepcopy(BRIEF_DIAGNOSIS)
    diagnosis["pods"][0]["node_summary"] = "0/1 nodes fit: 1 too-few-cards"
    diagnosis["pods"][0]["message"] = "capacity is split across cards"
    _, row, _ = table_after(render_markdown(diagnosis, BRIEF_VIEW), "## Pending pods")
    assert row[4] == "0/1 nodes fit: 1 too-few-cards; capacity is split across cards"


def test_advice_per_cause_and_capacity_case() -> None:
    text = render_markdown(sample_diagnosis(), sample_view())
    section = text.split("## What to do\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(lines) == 6
    assert lines[0].startswith("- **Schedulable** (ml/bert-finetune)")
    assert lines[1].startswith("- **Fragmentation** (ml/llm-serve-13b)")
    consolidate, scale_up = lines[2], lines[3]
    assert "(vision/yolo-batch)" in consolidate
    assert "scaling up would waste money" in consolidate
    assert "(batch/etl-gpu)" in scale_up
    assert "Add GPU nodes" in scale_up
    assert "Unsatisfiable" in lines[4]
    assert "(default/bad-split)" in lines[5]


def test_card_table_per_node_sorted_with_modes_health_and_pending() -> None:
    view = sample_view()
    view["nodes"].reverse()  # producer order must not matter
    text = render_markdown(sample_diagnosis(), view)
    header, *rows = table_after(text, "## Cards after this cycle")
    assert header == [
        "Node",
        "Card",
        "Model",
        "Mode",
        "Allotted / total MiB",
        "Core",
        "vGPUs",
        "Healthy",
    ]
    assert len(rows) == 24
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    by_card = {(row[0], row[1]): row for row in rows}
    assert by_card[("gpu-a100-01", "2")][3:7] == [
        "memory+core isolation",
        "65536 / 81920",
        "80 %",
        "3",
    ]
    assert by_card[("gpu-t4-02", "2")][3] == "unused"
    assert by_card[("gpu-t4-01", "3")][7] == "**NO**"
    assert by_card[("gpu-t4-01", "0")][7] == "yes"
    assert by_card[("gpu-v100-01", "0")][4] == "32768 / 32768 (+8192 pending)"


def test_output_is_deterministic() -> None:
    first = render_markdown(sample_diagnosis(), sample_view())
    assert render_markdown(sample_diagnosis(), sample_view()) == first
    assert first.endswith("\n")
    assert not first.endswith("\n\n")


def test_pipes_and_markup_in_cells_are_escaped() -> None:
    diagnosis = copy.deepcopy(BRIEF_DIAGNOSIS)
    diagnosis["pods"][0]["pod"] = "evil/a|b"
    diagnosis["pods"][0]["message"] = "x | y\nz <b>*bold*</b> [link](http://e) C:\\|"
    view = copy.deepcopy(BRIEF_VIEW)
    view["nodes"][0]["name"] = "node|1"
    view["nodes"][0]["cards"][0]["model"] = "T4 | `x`"
    text = render_markdown(diagnosis, view)

    header, row, _ = table_after(text, "## Pending pods")
    assert len(row) == len(header)
    assert row[0] == "evil/a\\|b"
    assert row[4] == (
        "0/1 nodes are available: 1 too-few-cards. x \\| y z \\<b\\>\\*bold\\*\\</b\\> "
        "\\[link\\](http\\://e) C:\\\\\\|"  # a bare URL is a link in GFM: its ":" escaped
    )
    header, card = table_after(text, "## Cards after this cycle")
    assert len(card) == len(header)
    assert card[:3] == ["node\\|1", "0", "T4 \\| \\`x\\`"]
    # Every table line still has exactly its columns' unescaped pipes.
    for line in text.splitlines():
        if line.startswith("| "):
            assert len(split_row(line)) in (5, 8), line
    assert "(evil/a\\|b)" in text


def test_no_pending_pods() -> None:
    diagnosis = {"schema": "xgpu-advisor/diagnosis/v1", "pods": [], "summary": {"pending": 0}}
    text = render_markdown(diagnosis, BRIEF_VIEW)
    assert text.startswith("**No Pending GPU pods**")
    assert "## Pending pods" not in text
    assert "## What to do" not in text
    assert "## Cards after this cycle" in text


def test_counts_come_from_pods_when_summary_is_missing() -> None:
    diagnosis = copy.deepcopy(BRIEF_DIAGNOSIS)
    del diagnosis["summary"]
    text = render_markdown(diagnosis, {})
    assert text.startswith("**2 Pending GPU pods: 1 schedulable, 1 fragmentation**")
    assert "## Cards after this cycle" not in text


def test_sample_module_writes_both_formats(tmp_path: Path) -> None:
    assert sample_main([str(tmp_path / "d.md")]) == 0
    assert (tmp_path / "d.md").read_text(encoding="utf-8").startswith("**6 Pending GPU pods")
    assert sample_main([str(tmp_path / "d.html")]) == 0
    assert (tmp_path / "d.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sample_main([]) == 2


def with_node_resources() -> tuple[dict[str, Any], dict[str, Any]]:
    """The sample with a node-resources pod added, and its nodes' cpu, memory and taints."""
    diagnosis = sample_diagnosis()
    diagnosis["pods"].append(sample_node_resources_pod())
    diagnosis["summary"]["node-resources"] = 1
    diagnosis["summary"]["pending"] += 1
    view = sample_view()
    for node in view["nodes"]:
        node.update(copy.deepcopy(SAMPLE_NODE_FIT.get(node["name"], {})))
    return diagnosis, view


def test_a_node_resources_pod_has_its_row_advice_and_count() -> None:
    diagnosis, view = with_node_resources()
    text = render_markdown(diagnosis, view)
    assert text.startswith(
        "**7 Pending GPU pods: 1 schedulable, 1 node-resources, 1 fragmentation, 2 capacity, "
        "1 unsatisfiable, 1 invalid**"
    )
    _, *rows = table_after(text, "## Pending pods")
    (row,) = [r for r in rows if r[0] == "vision/ocr-batch"]
    assert row[1:4] == ["0", "1 × 16384 MiB · cpu 24, memory 96Gi", "node-resources"]
    assert row[4].startswith("0/4 nodes are available: 2 Insufficient cpu, 2 card-memory. The ")
    advice = text.split("## What to do\n", 1)[1].split("\n## ", 1)[0]
    (line,) = [a for a in advice.splitlines() if a.startswith("- **Node resources**")]
    assert line.startswith("- **Node resources** (vision/ocr-batch): ")
    assert "Free or add cpu and memory on the GPU nodes, not GPUs" in line
    # the advice comes in the causes' order: after schedulable, before fragmentation
    titles = re.findall(r"^- \*\*([^*]+)\*\*", advice, re.MULTILINE)
    assert titles.index("Node resources") == titles.index("Schedulable") + 1


def test_nodes_cpu_memory_taints_and_cordon_follow_the_cards() -> None:
    diagnosis, view = with_node_resources()
    text = render_markdown(diagnosis, view)
    section = text.split("Node resources and taints (checked before the cards):\n\n", 1)[1]
    assert section.splitlines()[:3] == [
        "- gpu-a100-01: cpu 88 of 94 requested · memory 300 of 720 GiB requested",
        "- gpu-t4-02: cpu 28.5 of 30 requested · taint nvidia.com/gpu=present:NoSchedule",
        "- gpu-v100-01: cordoned",
    ]
    # a view without any of it (a GPU-only scenario) has no such lines
    assert "Node resources and taints" not in render_markdown(diagnosis, sample_view())


def test_a_node_selector_shows_beside_the_request() -> None:
    diagnosis = copy.deepcopy(BRIEF_DIAGNOSIS)
    diagnosis["pods"][1]["node_selector"] = {"zone": "z|1", "pool": "a100"}
    _, _, row = table_after(render_markdown(diagnosis, BRIEF_VIEW), "## Pending pods")
    assert row[2] == "1 × 4096 MiB + 1 × 10 % core · nodeSelector pool=a100, zone=z\\|1"
