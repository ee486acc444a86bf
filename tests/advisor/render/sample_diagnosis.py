"""A realistic diagnosis and card view (4 nodes, 24 cards, Pending pods of every cause).

Used by the renderer tests and to look at the reports without a cluster:
`python -m tests.advisor.render.sample_diagnosis OUT.html` (or OUT.md) writes one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from advisor.core.diagnosis import CAUSES

# (pod, MiB, core %, pending) per card; a card's mode follows from what it hosts.
_Slot = tuple[str, int, int, bool]

_A100 = ("NVIDIA A100-SXM4-80GB", 81920)
_V100 = ("Tesla V100-SXM2-32GB", 32768)
_T4 = ("Tesla T4", 16384)

_NODES: dict[str, tuple[tuple[str, int], list[list[_Slot]], set[int]]] = {
    "gpu-a100-01": (
        _A100,
        [
            [
                ("ml/llm-train-0", 40960, 0, False),
                ("ml/llm-train-1", 20480, 0, False),
                ("ml/eval-nightly", 12288, 0, False),
            ],
            [
                ("ml/llm-train-0", 40960, 0, False),
                ("ml/llm-train-1", 20480, 0, False),
                ("ml/notebook-carol", 16384, 0, False),
            ],
            [
                ("infer/chat-api-7f9c", 24576, 30, False),
                ("infer/embed-svc-2", 16384, 20, False),
                ("infer/summarise-1", 24576, 30, False),
            ],
            [
                ("infer/chat-api-7f9c", 24576, 30, False),
                ("infer/rerank-0", 8192, 10, False),
                ("infer/vision-qa", 32768, 40, False),
            ],
            [("ml/notebook-alice", 53248, 0, False)],
            [("ml/notebook-bob", 45056, 0, False), ("ml/feature-gen-4", 20480, 0, False)],
            [("infer/asr-whisper-1", 32768, 40, False), ("infer/tts-0", 16384, 25, False)],
            [("ml/feature-gen-3", 36864, 0, False), ("batch/etl-small", 20480, 0, False)],
        ],
        set(),
    ),
    "gpu-t4-01": (
        _T4,
        [
            [("infer/ocr-a", 4096, 0, False), ("infer/ocr-b", 4096, 0, False)],
            [("infer/ocr-a", 4096, 0, False), ("infer/thumbs-5d8", 6144, 0, False)],
            [("infer/detect-0", 8192, 50, False), ("infer/detect-1", 4096, 25, False)],
            [],
        ],
        {3},
    ),
    "gpu-t4-02": (
        _T4,
        [
            [("infer/translate-0", 12288, 0, False)],
            [("infer/moderation-1", 6144, 0, False)],
            [],
            [("infer/ranker-2", 10240, 0, False), ("infer/spell-0", 2048, 0, False)],
        ],
        set(),
    ),
    "gpu-v100-01": (
        _V100,
        [
            [
                ("research/sweep-01", 16384, 0, False),
                ("research/sweep-02", 8192, 0, False),
                ("ml/bert-finetune", 8192, 0, True),
            ],
            [
                ("research/sweep-03", 16384, 0, False),
                ("research/sweep-04", 8192, 0, False),
                ("ml/bert-finetune", 8192, 0, True),
            ],
            [("research/sweep-05", 24576, 0, False)],
            [("vision/seg-train-0", 28672, 0, False)],
            [("vision/seg-train-0", 28672, 0, False)],
            [("batch/render-01", 12288, 20, False), ("batch/render-02", 12288, 20, False)],
            [("batch/render-03", 20480, 35, False)],
            [("research/sweep-06", 30720, 0, False)],
        ],
        set(),
    ),
}


def _card(index: int, model: str, memory: int, slots: list[_Slot], healthy: bool) -> Any:
    core = sum(slot[2] for slot in slots)
    mode = 2 if not slots else (1 if core else 0)
    return {
        "index": index,
        "memory_mib": memory,
        "model": model,
        "healthy": healthy,
        "mode": mode,
        "vgpus": len(slots),
        "core_allotted_percent": core,
        "allotments": [
            {"pod": pod, "memory_mib": mib, "core_percent": pct, "pending": pending}
            for pod, mib, pct, pending in slots
        ],
    }


def sample_view() -> dict[str, Any]:
    nodes = []
    for name, ((model, memory), cards, unhealthy) in _NODES.items():
        nodes.append(
            {
                "name": name,
                "cards": [
                    _card(i, model, memory, slots, i not in unhealthy)
                    for i, slots in enumerate(cards)
                ],
            }
        )
    return {"nodes": nodes}


def _request(gpus: int, memory_mib: int, core_percent: int = 0) -> dict[str, int]:
    return {"gpus": gpus, "memory_mib": memory_mib, "core_percent": core_percent}


def sample_diagnosis() -> dict[str, Any]:
    pods: list[dict[str, Any]] = [
        {
            "pod": "ml/bert-finetune",
            "cause": "schedulable",
            "message": "fits on gpu-v100-01 cards 0, 1",
            "placement": {"node": "gpu-v100-01", "cards": [0, 1]},
            "request": _request(2, 16384),
            "priority": 100,
            "nodes": {},
            "nodes_omitted": 0,
        },
        {
            "pod": "ml/llm-serve-13b",
            "cause": "fragmentation",
            "message": (
                "0/4 nodes are available: 2 card-memory, 2 too-few-cards. gpu-a100-01 has "
                "81920 MiB free over 5 memory-isolation cards, but not 32768 MiB on each of "
                "2 cards"
            ),
            "placement": None,
            "request": _request(2, 65536),
            "priority": 50,
            "node_summary": "0/4 nodes are available: 2 card-memory, 2 too-few-cards.",
            "nodes": {
                "gpu-a100-01": [
                    "too-few-cards: 0 of 2 cards eligible",
                    "card-memory: cards 0, 1, 4, 5, 7 have less than 32768 MiB free",
                    "mode-conflict: card 6 uses memory+core isolation",
                ],
                "gpu-v100-01": ["card-memory: no card has 32768 MiB free"],
            },
            "nodes_omitted": 2,
        },
        {
            "pod": "vision/yolo-batch",
            "cause": "capacity",
            "message": (
                "0/4 nodes are available: 4 too-few-cards. No node has 163840 MiB free, "
                "the cluster has 239616 MiB free over 4 nodes"
            ),
            "placement": None,
            "request": _request(8, 163840),
            "priority": 0,
            "node_summary": "0/4 nodes are available: 4 too-few-cards.",
            "cluster_free_sufficient": True,
            "nodes": {
                "gpu-a100-01": [
                    "too-few-cards: 2 of 8 cards eligible",
                    "card-memory: cards 0, 1, 2, 3, 5 have less than 20480 MiB free",
                    "mode-conflict: card 6 uses memory+core isolation",
                ],
                "gpu-v100-01": [
                    "too-few-cards: 0 of 8 cards eligible",
                    "card-memory: no card has 20480 MiB free",
                ],
                "gpu-t4-01": [
                    "too-few-cards: 0 of 8 cards eligible (the node has 4)",
                    "unhealthy: card 3",
                ],
            },
            "nodes_omitted": 1,
        },
        {
            "pod": "batch/etl-gpu",
            "cause": "capacity",
            "message": (
                "0/4 nodes are available: 4 too-few-cards. The cluster has 239616 MiB free, "
                "262144 MiB asked"
            ),
            "placement": None,
            "request": _request(8, 262144),
            "priority": 0,
            "node_summary": "0/4 nodes are available: 4 too-few-cards.",
            "cluster_free_sufficient": False,
            "nodes": {
                "gpu-a100-01": [
                    "too-few-cards: 0 of 8 cards eligible",
                    "card-memory: cards 0, 1, 2, 3, 4, 5, 7 have less than 32768 MiB free",
                    "mode-conflict: card 6 uses memory+core isolation",
                ],
                "gpu-v100-01": [
                    "too-few-cards: 0 of 8 cards eligible",
                    "card-memory: no card has 32768 MiB free",
                ],
            },
            "nodes_omitted": 2,
        },
        {
            "pod": "research/llama-70b-full",
            "cause": "unsatisfiable",
            "message": "no node has 4 cards of at least 98304 MiB, even empty",
            "placement": None,
            "request": _request(4, 393216),
            "priority": 0,
            "nodes": {},
            "nodes_omitted": 0,
        },
        {
            "pod": "default/bad-split",
            "cause": "invalid",
            "message": "memory 10000 MiB over 3 cards is not a whole multiple of 128 MiB per card",
            "placement": None,
            "request": _request(3, 10000),
            "priority": 0,
            "nodes": {},
            "nodes_omitted": 0,
        },
    ]
    summary = {"pending": len(pods)}
    for cause in CAUSES:
        summary[cause] = sum(1 for pod in pods if pod["cause"] == cause)
    return {
        "schema": "xgpu-advisor/diagnosis/v1",
        "policy": {"node": "binpack", "card": "binpack"},
        "pods": pods,
        "summary": summary,
    }


# What kube-scheduler's other filters read of each sample node, as the card view carries it.
_GIB = 2**30
SAMPLE_NODE_FIT: dict[str, dict[str, Any]] = {
    "gpu-a100-01": {
        "resources": {
            "cpu_allocatable_milli": 94_000,
            "memory_allocatable_bytes": 720 * _GIB,
            "cpu_requested_milli": 88_000,
            "memory_requested_bytes": 300 * _GIB,
        }
    },
    "gpu-t4-02": {
        "resources": {
            "cpu_allocatable_milli": 30_000,
            "memory_allocatable_bytes": None,
            "cpu_requested_milli": 28_500,
            "memory_requested_bytes": 64 * _GIB,
        },
        "taints": ["nvidia.com/gpu=present:NoSchedule"],
    },
    "gpu-v100-01": {"unschedulable": True},
}


def sample_node_resources_pod() -> dict[str, Any]:
    """A Pending pod whose card fits on two nodes that lack the cpu it asks for (the
    sample's nodes as SAMPLE_NODE_FIT describes them)."""
    return {
        "pod": "vision/ocr-batch",
        "cause": "node-resources",
        "message": (
            "0/4 nodes are available: 2 Insufficient cpu, 2 card-memory. The GPUs fit now on "
            "gpu-a100-01 (and 1 other nodes), but Insufficient cpu there for cpu 24, memory "
            "96Gi: free or add cpu and memory on GPU nodes, not GPUs"
        ),
        "placement": None,
        "request": _request(1, 16384),
        "priority": 0,
        "resources": {"cpu": "24", "memory": "96Gi"},
        "node_summary": "0/4 nodes are available: 2 Insufficient cpu, 2 card-memory.",
        "nodes": {
            "gpu-a100-01": ["Insufficient cpu: 6 free, pod needs 24"],
            "gpu-t4-02": ["Insufficient cpu: 1500m free, pod needs 24"],
        },
        "nodes_omitted": 2,
    }


def main(argv: list[str] | None = None) -> int:
    from advisor.render.diagnose import render_html, render_markdown

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m tests.advisor.render.sample_diagnosis OUT.html|OUT.md",
            file=sys.stderr,
        )
        return 2
    out = Path(args[0])
    render = render_markdown if out.suffix == ".md" else render_html
    out.write_text(render(sample_diagnosis(), sample_view()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
