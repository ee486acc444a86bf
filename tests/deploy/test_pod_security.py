"""The Pod Security checker (tests/deploy/pod_security.py) itself: a compliant pod passes,
and each documented rule, broken alone, is reported at the level that forbids it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.deploy.pod_security import enforced_levels, violations

Json = dict[str, Any]


def compliant_pod() -> Json:
    """A pod spec that `restricted` admits: the settings every workload of ours has."""
    return {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "main",
                "image": "example:1.0.0",
                "ports": [{"name": "http", "containerPort": 8080}],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    }


def main(pod: Json) -> Json:
    context: Json = pod["containers"][0]["securityContext"]
    return context


Change = Callable[[Json], None]

# (what, change, the level that first forbids it, the violation's text)
CASES: list[tuple[str, Change, str, str]] = [
    ("hostPID", lambda p: p.update(hostPID=True), "baseline", "pod: hostPID"),
    ("hostNetwork", lambda p: p.update(hostNetwork=True), "baseline", "pod: hostNetwork"),
    ("hostIPC", lambda p: p.update(hostIPC=True), "baseline", "pod: hostIPC"),
    ("privileged", lambda p: main(p).update(privileged=True), "baseline", "privileged"),
    (
        "SYS_ADMIN",
        lambda p: main(p)["capabilities"].update(add=["SYS_ADMIN"]),
        "baseline",
        "adds capabilities ['SYS_ADMIN']",
    ),
    (
        "hostPath",
        lambda p: p["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
        "baseline",
        "volume h: hostPath",
    ),
    (
        "hostPort",
        lambda p: p["containers"][0]["ports"][0].update(hostPort=8080),
        "baseline",
        "hostPort 8080",
    ),
    (
        "Unconfined seccomp",
        lambda p: main(p).update(seccompProfile={"type": "Unconfined"}),
        "baseline",
        "seccompProfile Unconfined",
    ),
    ("procMount", lambda p: main(p).update(procMount="Unmasked"), "baseline", "procMount"),
    (
        "unsafe sysctl",
        lambda p: p["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
        "baseline",
        "sysctl kernel.msgmax",
    ),
    (
        "SELinux type",
        lambda p: main(p).update(seLinuxOptions={"type": "spc_t"}),
        "baseline",
        "seLinuxOptions.type spc_t",
    ),
    (
        "AppArmor unconfined",
        lambda p: main(p).update(appArmorProfile={"type": "Unconfined"}),
        "baseline",
        "appArmorProfile Unconfined",
    ),
    (
        "NET_RAW (not on the baseline list)",
        lambda p: main(p)["capabilities"].update(add=["NET_RAW"]),
        "baseline",
        "adds capabilities ['NET_RAW']",
    ),
    (
        "CHOWN added",
        lambda p: main(p)["capabilities"].update(add=["CHOWN"]),
        "restricted",
        "adds capabilities other than NET_BIND_SERVICE",
    ),
    (
        "escalation unset",
        lambda p: main(p).pop("allowPrivilegeEscalation"),
        "restricted",
        "allowPrivilegeEscalation not false",
    ),
    (
        "runAsNonRoot unset",
        lambda p: p["securityContext"].pop("runAsNonRoot"),
        "restricted",
        "runAsNonRoot not true",
    ),
    (
        "container overrides runAsNonRoot",
        lambda p: main(p).update(runAsNonRoot=False),
        "restricted",
        "runAsNonRoot not true",
    ),
    ("uid 0", lambda p: main(p).update(runAsUser=0), "restricted", "runAsUser 0"),
    (
        "seccomp unset",
        lambda p: p["securityContext"].pop("seccompProfile"),
        "restricted",
        "seccompProfile not RuntimeDefault/Localhost",
    ),
    (
        "capabilities not dropped",
        lambda p: main(p).pop("capabilities"),
        "restricted",
        "capabilities do not drop ALL",
    ),
    (
        "nfs volume",
        lambda p: p["volumes"].append({"name": "n", "nfs": {"server": "s", "path": "/"}}),
        "restricted",
        "volume n: type ['nfs']",
    ),
]


def test_a_compliant_pod_passes_every_level() -> None:
    for level in ("privileged", "baseline", "restricted"):
        assert violations(compliant_pod(), {}, level) == []


@pytest.mark.parametrize(
    ("change", "level", "text"),
    [(change, level, text) for _, change, level, text in CASES],
    ids=[what for what, *_ in CASES],
)
def test_each_rule_is_reported_at_the_level_that_forbids_it(
    change: Change, level: str, text: str
) -> None:
    pod = copy.deepcopy(compliant_pod())
    change(pod)
    assert violations(pod, {}, "privileged") == []
    found_restricted = violations(pod, {}, "restricted")
    assert any(text in v for v in found_restricted), found_restricted
    found_baseline = violations(pod, {}, "baseline")
    assert any(text in v for v in found_baseline) is (level == "baseline"), found_baseline


def test_allowed_values_are_not_reported() -> None:
    pod = compliant_pod()
    main(pod)["capabilities"]["add"] = ["NET_BIND_SERVICE"]
    main(pod)["seccompProfile"] = {"type": "Localhost", "localhostProfile": "p.json"}
    pod["securityContext"]["sysctls"] = [{"name": "net.ipv4.ip_local_port_range", "value": "1 2"}]
    pod["volumes"].append({"name": "scratch", "emptyDir": {}})
    annotations = {"container.apparmor.security.beta.kubernetes.io/main": "runtime/default"}
    assert violations(pod, annotations, "restricted") == []


def test_an_apparmor_annotation_is_read() -> None:
    annotations = {"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}
    assert violations(compliant_pod(), annotations, "baseline") == [
        "annotation container.apparmor.security.beta.kubernetes.io/main: unconfined"
    ]


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Pod Security level"):
        violations(compliant_pod(), {}, "strict")


def test_namespaces_without_the_label_are_privileged() -> None:
    namespaces = [
        {"kind": "Namespace", "metadata": {"name": "a"}},
        {
            "kind": "Namespace",
            "metadata": {"name": "b", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}},
        },
        {"kind": "ConfigMap", "metadata": {"name": "c"}},
    ]
    assert enforced_levels(namespaces) == {"a": "privileged", "b": "baseline"}
