"""NetworkPolicy semantics (networking.k8s.io/v1), restated from the API reference for the
tests: which pod may open a connection to which pod's port under a set of policies.

- A pod is isolated for a direction when some policy of its namespace selects it and
  names that direction in policyTypes (Ingress always counts when policyTypes is unset;
  Egress then counts when the policy has egress rules). An isolated pod admits only what
  some selecting policy's rule admits; the policies' rules add up.
- A peer with podSelector alone means pods of the policy's namespace; namespaceSelector
  alone, every pod of the selected namespaces; both in one entry, the selected pods of the
  selected namespaces. ipBlock peers never match a pod here (pods are not addressed by IP).
- A rule without `ports` admits every port; a named port matches the container port of
  that name on the receiving pod, a number its containerPort; protocol defaults to TCP.
- Every namespace carries the label kubernetes.io/metadata.name: <its name>.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)  # container port name -> number


def selects(selector: Json | None, labels: dict[str, str]) -> bool:
    """A LabelSelector: matchLabels and matchExpressions, all must hold; {} selects all."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        present = key in labels
        holds = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]
        if not holds:
            return False
    return True


class Cluster:
    """The policies and namespaces of a set of objects, plus namespaces that exist outside
    them (the monitoring namespace, `default`...), each with its automatic name label."""

    def __init__(self, objects: list[Json], extra_namespaces: dict[str, dict[str, str]]):
        self.policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
        self.namespace_labels: dict[str, dict[str, str]] = {}
        declared = {
            o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
            for o in objects
            if o["kind"] == "Namespace"
        }
        for name, labels in {**extra_namespaces, **declared}.items():
            self.namespace_labels[name] = {**labels, "kubernetes.io/metadata.name": name}

    def _types(self, policy: Json) -> list[str]:
        spec = policy["spec"]
        if "policyTypes" in spec:
            types: list[str] = spec["policyTypes"]
            return types
        return ["Ingress", *(["Egress"] if spec.get("egress") else [])]

    def _selecting(self, pod: Pod, direction: str) -> list[Json]:
        return [
            p
            for p in self.policies
            if p["metadata"]["namespace"] == pod.namespace
            and selects(p["spec"].get("podSelector"), pod.labels)
            and direction in self._types(p)
        ]

    def _peer_matches(self, peer: Json, policy_namespace: str, pod: Pod) -> bool:
        if "ipBlock" in peer:
            return False
        namespace_ok = (
            selects(peer["namespaceSelector"], self.namespace_labels[pod.namespace])
            if "namespaceSelector" in peer
            else pod.namespace == policy_namespace
        )
        return namespace_ok and selects(peer.get("podSelector"), pod.labels)

    @staticmethod
    def _port_matches(rule: Json, destination: Pod, port: str) -> bool:
        ports = rule.get("ports") or []
        if not ports:
            return True
        number = destination.ports[port]
        return any(
            entry.get("protocol", "TCP") == "TCP"
            and (entry.get("port") is None or entry["port"] in (port, number))
            for entry in ports
        )

    def _admitted(self, pod: Pod, peer_pod: Pod, direction: str, port_of: Pod, port: str) -> bool:
        selecting = self._selecting(pod, direction)
        if not selecting:
            return True  # not isolated
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        for policy in selecting:
            for rule in policy["spec"].get(key) or []:
                peers = rule.get(peers_key) or []
                peer_ok = not peers or any(
                    self._peer_matches(p, policy["metadata"]["namespace"], peer_pod) for p in peers
                )
                if peer_ok and self._port_matches(rule, port_of, port):
                    return True
        return False

    def allows(self, source: Pod, destination: Pod, port: str) -> bool:
        """May `source` connect to `destination`'s container port named `port` (TCP)?"""
        assert port in destination.ports, (port, destination)
        return self._admitted(source, destination, "Egress", destination, port) and self._admitted(
            destination, source, "Ingress", destination, port
        )

    def isolated(self, pod: Pod, direction: str) -> bool:
        return bool(self._selecting(pod, direction))
