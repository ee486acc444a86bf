"""The pod parser (advisor/podspec) against real pod objects made hostile: quantities beyond
int64, 1E18, "²", NaN, deep nesting, wrong types, in resources, labels, annotations,
allocations and node registrations.

It never raises: what it cannot read is a problem line. What it does read, the scenario
format holds: a request the parser takes is one the loader takes for a Pending pod of the
same scheduler, so a live run and its snapshot judge the same cluster (and no number beyond
the model's range reaches the core).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.podspec import PodGpu, parse_allocation, parse_pod
from advisor.podspec.node import read_node_scheduling
from advisor.podspec.registration import parse_registration
from advisor.podspec.scheduling import read_pod_scheduling
from advisor.scenario import ScenarioError, scenario_from_data
from tests.advisor.podspec.test_fuzz import RESOURCE_KEYS
from tests.fuzz.hostile import assert_one_line, hostile_texts, hostile_values
from tests.fuzz.mutate import mutated
from tests.fuzz.profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

PODS = Path(__file__).resolve().parents[1] / "advisor" / "podspec" / "pods"
BASES = [json.loads(p.read_text()) for p in sorted(PODS.glob("*.json"))]
QUANTITY_KEYS = [*RESOURCE_KEYS, "memory"]  # the pod parser fuzz's keys, and memory
ANNOTATIONS = ["volcano.sh/gpu-index", "volcano.sh/vgpu-ids-new", "hami.io/vgpu-devices-allocated"]
QUANTITIES = [
    "1E18",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999",
    "1e30",
    "²",
    "NaN",
    "100Ei",
    "8Ei",
    "1k",
    "-1",
    "0.5",
    "1e-3",
    "4294967296",
]


@st.composite
def hostile_pods(draw: st.DrawFn) -> Any:
    pod = draw(mutated(draw(st.sampled_from(BASES))))
    if not isinstance(pod, dict):
        return pod
    containers = (
        (pod.get("spec") or {}).get("containers") if isinstance(pod.get("spec"), dict) else None
    )
    if isinstance(containers, list) and containers and draw(st.booleans()):
        container = containers[draw(st.integers(0, len(containers) - 1))]
        if isinstance(container, dict):
            limits = container.setdefault("resources", {})
            if isinstance(limits, dict):
                limits = limits.setdefault("limits", {})
            if isinstance(limits, dict):
                key = draw(st.sampled_from(QUANTITY_KEYS))
                limits[key] = draw(st.one_of(st.sampled_from(QUANTITIES), hostile_values()))
    metadata = pod.get("metadata")
    if isinstance(metadata, dict) and draw(st.booleans()):
        annotations = metadata.setdefault("annotations", {})
        if isinstance(annotations, dict):
            annotations[draw(st.sampled_from(ANNOTATIONS))] = draw(hostile_texts())
    return pod


def holds(pod: PodGpu) -> None:
    """The request as a Pending pod of a scenario under the pod's own scheduler loads."""
    assert pod.request is not None
    r = pod.request
    request = {"gpus": r.gpus, "memory_mib": r.memory_mib, "core_percent": r.core_percent}
    if r.memory_percent:
        request["memory_percent"] = r.memory_percent
    data = {
        "scheduler": {"profile": pod.dialect},
        "nodes": [{"name": "n", "cards": [{"index": 0, "memory_mib": 1024}]}],
        "pods": [{"name": "ns/p", "request": request, "priority": pod.priority}],
    }
    try:
        scenario_from_data(data, "(pod)")
    except ScenarioError as err:
        raise AssertionError(
            f"read {r} without a problem; a scenario cannot hold it: {err}"
        ) from None


@given(hostile_pods())
@fuzz_settings(200)
@example(
    {
        "metadata": {"name": "p", "namespace": "n", "uid": "u"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1E18"}},
                }
            ]
        },
    }
)
@example(
    {
        "metadata": {"name": "p", "namespace": "n", "uid": "u"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "limits": {
                            "nvidia.com/gpu": "4294967296",
                            "nvidia.com/gpumem": "4294967296",
                        }
                    },
                }
            ]
        },
    }
)
@example(
    {
        "metadata": {"name": "p", "namespace": "n", "uid": "u"},
        "spec": {
            "priority": 2**31,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }
)
@example(
    {
        "metadata": {
            "name": "p",
            "namespace": "n",
            "uid": "u",
            "labels": {"volcano.sh/gpu-num": "99999999999"},
        },
        "spec": {
            "containers": [
                {"name": "c", "resources": {"limits": {"volcano.sh/gpu-mem.128Mi": "8"}}}
            ]
        },
    }
)
@example(
    {  # found by `make fuzz`: a count of 0 beside a memory was read as a request of 0 cards
        "metadata": {"name": "p", "namespace": "n", "uid": "u"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "limits": {"volcano.sh/vgpu-number": "-0", "volcano.sh/vgpu-memory": "3000"}
                    },
                }
            ]
        },
    }
)
def test_the_pod_parser_never_raises_and_reads_only_what_a_scenario_holds(pod: Any) -> None:
    parsed = parse_pod(pod)
    if parsed is not None:
        assert all(isinstance(p, str) and p and "\n" not in p for p in parsed.problems)
        if parsed.request is not None and not parsed.problems:
            holds(parsed)
    scheduling = read_pod_scheduling(pod)
    assert all(isinstance(p, str) and p for p in scheduling.problems)
    node = read_node_scheduling(pod)  # a pod is a hostile node object too
    assert all(isinstance(p, str) and p for p in node.problems)


@given(
    st.sampled_from(["hami", "volcano-vgpu"]),
    st.one_of(
        hostile_texts(), st.text(alphabet='GPU-ab0123456789,:;[]{}"NVIDIA truefalse', max_size=80)
    ),
)
@fuzz_settings(150)
@example("hami", '[{"id": "GPU-a", "count": 10, "devmem": 99999999999999999999, "devcore": 100}]')
@example("volcano-vgpu", "GPU-a,10,1E18,100,NVIDIA,0,true:")
def test_registrations_and_allocations_refuse_with_a_value_error(profile: str, text: str) -> None:
    for parse in (lambda t: parse_registration(profile, t), parse_allocation):
        problem = None
        try:
            parse(text)
        except ValueError as err:  # the documented refusal; anything else is a traceback
            problem = str(err)
        if problem is not None:
            assert_one_line(problem + "\n", text)
