"""The plan's kubectl script run for real by `sh`, the script on its stdin as in
`xgpu-advisor plan --format kubectl | sh`, with a stand-in kubectl: each plan is all or
nothing, and checked against where its pods run before its first eviction."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.model import Cluster
from advisor.render.plan.script import kubectl_script
from advisor.scenario import save_scenario
from tests.advisor.core.test_plan_checker import two_dependent_plans

pytestmark = pytest.mark.realservices  # runs each script with a real sh

FAKE_KUBECTL = """#!/bin/sh
# Records each call (arguments, then what it read from stdin). `get pod --namespace NS NAME`
# prints the pod's node from $PODS (lines "NS/NAME NODE"), or fails as for a pod not found.
# `create --raw PATH` answers as the API does when a PodDisruptionBudget forbids the eviction
# for the path in $REFUSE.
printf '%s\\n' "$*" >> "$CALLS"
cat >> "$CALLS"
printf '\\n' >> "$CALLS"
if [ "$1" = get ]; then
  found=$(grep "^$4/$5 " "$PODS" | cut -d' ' -f2)
  if [ -z "$found" ]; then
    echo "Error from server (NotFound): pods \\"$5\\" not found" >&2; exit 1
  fi
  printf '%s' "$found"
  exit 0
fi
case "$3" in
  "$REFUSE") echo 'Error from server (TooManyRequests): Cannot evict pod' >&2; exit 1 ;;
esac
echo '{"kind":"Status","apiVersion":"v1","status":"Success"}'
"""


def run_script(
    tmp_path: Path, script: str, pods: dict[str, str], refuse: str = ""
) -> tuple[int, list[list[str]], str]:
    """(exit code, per kubectl call: its arguments then its stdin lines, stderr). `pods`:
    where each pod runs now, pod -> node."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    calls, where = tmp_path / "calls", tmp_path / "pods"
    calls.write_text("")
    where.write_text("".join(f"{pod} {node}\n" for pod, node in pods.items()))
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "PODS": str(where),
        "REFUSE": refuse,
    }
    done = subprocess.run(
        ["sh"], input=script, text=True, env=env, capture_output=True, check=False, timeout=60
    )
    chunks = [c.splitlines() for c in calls.read_text().split("\n\n") if c.strip()]
    return done.returncode, chunks, done.stderr


def evictions(calls: list[list[str]]) -> list[str]:
    """The eviction paths POSTed, in order."""
    return [c[0].split()[2] for c in calls if c[0].startswith("create --raw")]


def path(pod: str) -> str:
    namespace, name = pod.split("/")
    return f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"


def plan_json(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, tmp_path: Path
) -> dict[str, Any]:
    scenario = tmp_path / "cluster.yaml"
    save_scenario(scenario, cluster)
    assert main(["plan", "--scenario", str(scenario), "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def where_found(data: dict[str, Any]) -> dict[str, str]:
    """Each evicted pod on the node its plan found it on, as when nothing has moved."""
    return {name: where["node"] for p in data["plans"] for name, where in p["evicted_from"].items()}


def get(pod: str) -> str:
    namespace, name = pod.split("/")
    return f"get pod --namespace {namespace} {name} -o jsonpath={{.spec.nodeName}}"


def test_each_eviction_goes_through_the_eviction_api_after_its_plans_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = plan_json(capsys, two_dependent_plans(), tmp_path)
    evicted = [list(p["evict"]) for p in data["plans"]]
    assert [len(names) for names in evicted] == [1, 1]
    (first,), (second,) = evicted
    code, calls, _ = run_script(tmp_path, kubectl_script(data), where_found(data))
    assert code == 0
    # Per plan: the check (a get of each pod it evicts, reading nothing from the script:
    # the stand-in's stdin is empty), then its evictions.
    assert calls == [
        [get(first)],
        [f"create --raw {path(first)} -f -", json.dumps(body(first))],
        [get(second)],
        [f"create --raw {path(second)} -f -", json.dumps(body(second))],
    ]
    code, calls, _ = run_script(
        tmp_path, kubectl_script(data), where_found(data), refuse=path(first)
    )
    assert code != 0
    assert evictions(calls) == [path(first)]  # set -e: plan 2 is never tried


def body(pod: str) -> dict[str, Any]:
    namespace, name = pod.split("/")
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }


ONE_BAD_NAME = {
    "plans": [
        {
            "rescues": ["t/waiting"],
            "evict": ["t/good", "t/Not_A_Name"],
            "evicted_from": {
                "t/good": {"node": "a", "cards": [0]},
                "t/Not_A_Name": {"node": "a", "cards": [1]},
            },
            "placements": {
                "t/waiting": {"node": "a", "cards": [0, 1]},
                "t/good": {"node": "b", "cards": [0]},
                "t/Not_A_Name": {"node": "b", "cards": [1]},
            },
        }
    ],
    "summary": {"evictions": 2, "rescued_pods": 1, "rescued_gpus": 1.0},
}


def test_a_plan_with_one_bad_name_is_left_out_whole_and_says_so() -> None:
    script = kubectl_script(ONE_BAD_NAME)
    assert "# not a Kubernetes pod name, left out: t/Not_A_Name" in script
    assert "# Plan 1 is left out whole (a plan is all or nothing): none of its 2" in script
    assert "# Plans 1 to 1 are left out: see Plan 1." in script
    assert [line for line in script.splitlines() if line.startswith("kubectl")] == []


def test_run_by_sh_a_plan_with_one_bad_name_evicts_no_pod(tmp_path: Path) -> None:
    """The good name comes first in the plan: still nothing is evicted."""
    pods = {"t/good": "a", "t/Not_A_Name": "a"}
    code, calls, stderr = run_script(tmp_path, kubectl_script(ONE_BAD_NAME), pods)
    assert (code, calls, stderr) == (0, [], "")  # kubectl never called: nothing evicted


def test_a_bad_name_in_a_later_plan_leaves_that_plan_and_the_rest_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The advisor's own two plans, the pod of the second renamed to a name Kubernetes
    would refuse (upper case, an underscore): plan 1 runs, plan 2 does not."""
    data = plan_json(capsys, two_dependent_plans(), tmp_path)
    (first,), (second,) = (p["evict"] for p in data["plans"])
    data = json.loads(json.dumps(data).replace(f'"{second}"', '"t/Bad_Name"'))
    now = where_found(data)
    script = kubectl_script(data)
    assert "# Plan 2 is left out whole" in script
    code, calls, _ = run_script(tmp_path, script, now)
    assert code == 0
    assert evictions(calls) == [path(first)]


def test_a_pod_that_moved_stops_the_script_before_any_eviction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = plan_json(capsys, two_dependent_plans(), tmp_path)
    (first,) = data["plans"][0]["evict"]
    found_on = data["plans"][0]["evicted_from"][first]["node"]
    elsewhere = next(n for n in ("a", "b", "s") if n != found_on)  # two_dependent_plans' nodes
    now = where_found(data) | {first: elsewhere}
    code, calls, stderr = run_script(tmp_path, kubectl_script(data), now)
    assert code == 1
    assert evictions(calls) == []
    assert stderr.endswith(
        f"xgpu-advisor: {first} is not on {found_on} any more: plan 1 not started\n"
    )


def test_a_pod_that_is_gone_stops_the_script_before_any_eviction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = plan_json(capsys, two_dependent_plans(), tmp_path)
    (first,) = data["plans"][0]["evict"]
    now = {name: node for name, node in where_found(data).items() if name != first}
    code, calls, stderr = run_script(tmp_path, kubectl_script(data), now)
    assert code == 1
    assert evictions(calls) == []
    assert "plan 1 not started" in stderr


def test_the_second_plans_check_stops_it_after_the_first_plan_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = plan_json(capsys, two_dependent_plans(), tmp_path)
    (first,), (second,) = (p["evict"] for p in data["plans"])
    now = {name: node for name, node in where_found(data).items() if name != second}
    code, calls, stderr = run_script(tmp_path, kubectl_script(data), now)
    assert code == 1
    assert evictions(calls) == [path(first)]
    assert "plan 2 not started" in stderr


def test_a_pod_whose_node_the_plan_does_not_say_leaves_the_plan_out() -> None:
    data = {"plans": [{"rescues": ["t/w"], "evict": ["t/a"], "placements": {}}], "summary": {}}
    script = kubectl_script(data)
    assert "# the node t/a runs on is not known, left out" in script
    assert [line for line in script.splitlines() if line.startswith("kubectl")] == []


def test_a_long_script_piped_into_sh_runs_to_its_end(tmp_path: Path) -> None:
    """sh reads a piped script a block at a time: a kubectl that read its stdin would eat
    the rest of the script. 100 plans (about 40 KB) all run, every call with empty stdin."""
    pods = [f"t/pod-{i}" for i in range(100)]
    data = {
        "plans": [
            {
                "rescues": [f"t/waiting-{i}"],
                "evict": [pod],
                "evicted_from": {pod: {"node": "a", "cards": [0]}},
                "placements": {pod: {"node": "b", "cards": [0]}},
            }
            for i, pod in enumerate(pods)
        ],
        "summary": {},
    }
    script = kubectl_script(data)
    assert len(script) > 32 * 1024
    code, calls, _ = run_script(tmp_path, script, dict.fromkeys(pods, "a"))
    assert code == 0
    assert evictions(calls) == [path(pod) for pod in pods]
    assert all(len(call) == 1 for call in calls if call[0].startswith("get"))
