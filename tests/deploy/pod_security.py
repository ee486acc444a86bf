"""The Pod Security Standards' `baseline` and `restricted` profiles, restated from
https://kubernetes.io/docs/concepts/security/pod-security-standards/ (policy version
latest, Kubernetes 1.33), as checks on a pod spec. No Python library implements them, and
the API server's admission plugin is not available offline: this is the tests' own
reading of the documented rules, each rule a few lines, each tested on a violating pod.

`violations(pod_spec, pod_annotations, level)` lists what the level forbids, one string a
rule and a place, empty when the pod is admitted. Linux pods only (no Windows rules).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Json = dict[str, Any]

LEVELS = ("privileged", "baseline", "restricted")

# Baseline: "Adding capabilities beyond those listed below must be disallowed."
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# Baseline: the safe sysctls.
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
APPARMOR_TYPES = frozenset({"RuntimeDefault", "Localhost"})
# Restricted: the only volume types allowed.
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
SECCOMP_RESTRICTED = frozenset({"RuntimeDefault", "Localhost"})
VOLUME_FIELDS_NOT_TYPES = frozenset({"name"})


def _containers(pod: Json) -> Iterator[tuple[str, Json]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in pod.get(field) or []:
            yield f"{field}[{container.get('name', '?')}]", container


def _context(container: Json) -> Json:
    context: Json = container.get("securityContext") or {}
    return context


def _baseline(pod: Json, annotations: Json) -> list[str]:
    found: list[str] = []
    pod_context: Json = pod.get("securityContext") or {}
    contexts = [("pod", pod_context)] + [(w, _context(c)) for w, c in _containers(pod)]
    for where, context in contexts:
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"{where}: hostProcess")
        selinux = context.get("seLinuxOptions") or {}
        if selinux.get("type", "") not in SELINUX_TYPES:
            found.append(f"{where}: seLinuxOptions.type {selinux['type']}")
        if selinux.get("user") or selinux.get("role"):
            found.append(f"{where}: seLinuxOptions user/role set")
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            found.append(f"{where}: seccompProfile Unconfined")
        apparmor = context.get("appArmorProfile") or {}
        if apparmor and apparmor.get("type") not in APPARMOR_TYPES:
            found.append(f"{where}: appArmorProfile {apparmor.get('type')}")
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            found.append(f"pod: {field}")
    for volume in pod.get("volumes") or []:
        if "hostPath" in volume:
            found.append(f"volume {volume.get('name')}: hostPath")
    for sysctl in pod_context.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            found.append(f"pod: sysctl {sysctl.get('name')}")
    for key, value in annotations.items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            found.append(f"annotation {key}: {value}")
    for where, container in _containers(pod):
        context = _context(container)
        if context.get("privileged"):
            found.append(f"{where}: privileged")
        added = set((context.get("capabilities") or {}).get("add") or [])
        if added - BASELINE_CAPABILITIES:
            found.append(f"{where}: adds capabilities {sorted(added - BASELINE_CAPABILITIES)}")
        if context.get("procMount", "Default") != "Default":
            found.append(f"{where}: procMount {context['procMount']}")
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                found.append(f"{where}: hostPort {port['hostPort']}")
    return found


def _restricted(pod: Json) -> list[str]:
    found: list[str] = []
    pod_context: Json = pod.get("securityContext") or {}
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - VOLUME_FIELDS_NOT_TYPES
        if not kinds <= RESTRICTED_VOLUMES:
            found.append(f"volume {volume.get('name')}: type {sorted(kinds - RESTRICTED_VOLUMES)}")
    if pod_context.get("runAsUser") == 0:
        found.append("pod: runAsUser 0")
    pod_non_root = pod_context.get("runAsNonRoot") is True
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type") in SECCOMP_RESTRICTED
    for where, container in _containers(pod):
        context = _context(container)
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{where}: allowPrivilegeEscalation not false")
        # The container's own setting wins; unset, the pod's must be true.
        non_root = context.get("runAsNonRoot", True if pod_non_root else None)
        if non_root is not True:
            found.append(f"{where}: runAsNonRoot not true (container or pod)")
        if context.get("runAsUser") == 0:
            found.append(f"{where}: runAsUser 0")
        seccomp = (context.get("seccompProfile") or {}).get("type")
        if seccomp is None and not pod_seccomp:
            found.append(f"{where}: seccompProfile not RuntimeDefault/Localhost (container or pod)")
        elif seccomp is not None and seccomp not in SECCOMP_RESTRICTED:
            found.append(f"{where}: seccompProfile {seccomp}")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{where}: capabilities do not drop ALL")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"{where}: adds capabilities other than NET_BIND_SERVICE")
    return found


def violations(pod: Json, annotations: Json | None, level: str) -> list[str]:
    """What `level` forbids in this pod spec (and its metadata's annotations)."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    if level == "privileged":
        return []
    found = _baseline(pod, annotations or {})
    if level == "restricted":
        found += _restricted(pod)
    return found


def pod_template(workload: Json) -> Json:
    """The pod template (metadata and spec) of a workload: a Pod, or any controller."""
    if workload["kind"] == "Pod":
        return workload
    spec = workload["spec"]
    if "jobTemplate" in spec:  # CronJob
        template: Json = spec["jobTemplate"]["spec"]["template"]
        return template
    template = spec["template"]
    return template


WORKLOAD_KINDS = frozenset(
    {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}
)


def enforced_levels(objects: list[Json]) -> dict[str, str]:
    """{namespace: its `pod-security.kubernetes.io/enforce` level} for the Namespaces
    among `objects` (an unlabelled namespace: privileged, the API server's default)."""
    return {
        o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(
            "pod-security.kubernetes.io/enforce", "privileged"
        )
        for o in objects
        if o["kind"] == "Namespace"
    }
