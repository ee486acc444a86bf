"""One entry for every live-state consumer (snapshot, report): read the sources, assemble."""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.model import Cluster, PolicyName
from advisor.defaults import (
    DEFAULT_MAX_ANSWER_BYTES,
    DEFAULT_MAX_EXPORTER_BYTES,
    DEFAULT_MAX_SERIES,
    DEFAULT_STALE_AFTER_S,
    DEFAULT_TIMEOUT_S,
)
from advisor.errors import InputError
from advisor.sources.access import PrometheusAccess
from advisor.sources.answers import AnswerLimit
from advisor.sources.assemble import assemble
from advisor.sources.exporters import EXPORTER_LIMIT, read_exporters
from advisor.sources.http import client_session, run_both, shown_url
from advisor.sources.kubernetes import read_kubernetes
from advisor.sources.profile_detect import SchedulerChoice, scheduler_settings
from advisor.sources.prometheus import read_prometheus
from advisor.sources.values import NODE_INFO, Stale


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """Exactly one metrics source (`prometheus` or `exporters`), optionally Kubernetes.

    `scheduler`: the profile, or "auto" to read it from the cluster (advisor.sources.
    profile_detect). The policies and vGPU limit are the scheduler's settings, which no source
    shows: None takes the profile's defaults.
    """

    prometheus: str | None = None
    exporters: tuple[str, ...] = ()
    kubernetes: bool = False
    kubeconfig: str | None = None
    stale_after_s: float = DEFAULT_STALE_AFTER_S
    timeout_s: float = DEFAULT_TIMEOUT_S
    scheduler: SchedulerChoice = "auto"
    node_policy: PolicyName | None = None
    card_policy: PolicyName | None = None
    max_vgpus_per_card: int | None = None
    # Reaching Prometheus: credentials, TLS, headers, the one cluster's matchers.
    prometheus_access: PrometheusAccess = field(default_factory=PrometheusAccess)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES  # of one Prometheus answer
    max_series: int = DEFAULT_MAX_SERIES  # in all the answers of one Prometheus read
    max_exporter_bytes: int = DEFAULT_MAX_EXPORTER_BYTES  # of one exporter's /metrics


@dataclass(frozen=True, slots=True)
class Gathered:
    cluster: Cluster
    warnings: tuple[str, ...]
    stale: tuple[Stale, ...]
    source: str  # what was read, for report headers: "prometheus URL + kubernetes HOST"
    scheduler: str = "cce (default)"  # the profile and why: "hami (auto: ... on 3 pods)"


async def gather(config: SourceConfig) -> Gathered:
    """The live cluster; SourceError (exit 2) when a source cannot be read completely,
    InputError for settings that make no sense."""
    if (config.prometheus is None) == (not config.exporters):
        raise InputError("give exactly one metrics source: a Prometheus URL or exporter URLs")
    if config.stale_after_s <= 0 or config.timeout_s <= 0:
        raise InputError("the stale limit and the timeout must be positive")
    if min(config.max_answer_bytes, config.max_exporter_bytes, config.max_series) <= 0:
        raise InputError("the answer size limits must be positive")
    if config.scheduler != "auto":  # a policy the named profile lacks fails before any read
        scheduler_settings(
            config.scheduler, config.node_policy, config.card_policy, config.max_vgpus_per_card
        )
    async with client_session(config.timeout_s) as session:
        if config.prometheus is not None:
            metrics_source = f"prometheus {shown_url(config.prometheus)}"
            metrics = read_prometheus(
                config.prometheus,
                session,
                stale_after_s=config.stale_after_s,
                access=config.prometheus_access,
                limit=AnswerLimit(config.max_answer_bytes),
                max_series=config.max_series,
            )
        else:
            metrics_source = f"exporters {', '.join(map(shown_url, config.exporters))}"
            limit = AnswerLimit(config.max_exporter_bytes, EXPORTER_LIMIT.flag)
            metrics = read_exporters(config.exporters, session, limit=limit)
        if config.kubernetes:
            kube_read = read_kubernetes(config.kubeconfig, timeout_s=config.timeout_s)
            samples, kube = await run_both(metrics, kube_read)
        else:
            samples, kube = await metrics, None
    assembled = assemble(
        samples,
        kube,
        stale_after_s=config.stale_after_s,
        scheduler=config.scheduler,
        node_policy=config.node_policy,
        card_policy=config.card_policy,
        max_vgpus_per_card=config.max_vgpus_per_card,
    )
    warnings = list(assembled.warnings)
    if not any(s.metric == NODE_INFO for s in samples):
        warnings.insert(0, f"{metrics_source}: no xgpu exporter series found (no GPU nodes?)")
    if kube is None:
        warnings.append(
            "no Kubernetes source: Pending pods are unknown, the model holds running pods only"
            + (
                "; --scheduler auto cannot read the scheduler either: modelled as cce"
                if config.scheduler == "auto"
                else ""
            )
        )
    source = metrics_source if kube is None else f"{metrics_source} + {kube.source}"
    return Gathered(
        assembled.cluster, tuple(warnings), assembled.stale, source, assembled.scheduler
    )
