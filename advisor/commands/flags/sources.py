"""Command-line flags for the live sources, shared by every command that reads them.

The flags are the CLI's; `advisor.sources` takes the plain `SourceConfig` that
`source_config` makes of them, and knows nothing of argparse.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from advisor.commands.flags.scheduler import add_scheduler_argument
from advisor.commands.flags.values import byte_size, count, positive_seconds
from advisor.defaults import (
    DEFAULT_MAX_ANSWER_BYTES,
    DEFAULT_MAX_EXPORTER_BYTES,
    DEFAULT_MAX_SERIES,
    DEFAULT_STALE_AFTER_S,
    DEFAULT_TIMEOUT_S,
    NODE_POLICIES,
    size_text,
)
from advisor.errors import InputError
from advisor.flagparse import given_flags

if TYPE_CHECKING:
    from advisor.core.model import PolicyName, ProfileName
    from advisor.sources.access import PrometheusAccess
    from advisor.sources.gather import SourceConfig

CARD_POLICIES: tuple[PolicyName, ...] = ("binpack", "spread", "legacy")  # legacy: volcano-vgpu


def add_source_arguments(
    parser: argparse.ArgumentParser, *, required: bool = True, several_schedulers: bool = False
) -> None:
    metrics = parser.add_mutually_exclusive_group(required=required)
    metrics.add_argument(
        "--prometheus", metavar="URL", help="Prometheus (or any store with its HTTP API)"
    )
    metrics.add_argument(
        "--exporters", metavar="URL[,URL...]", help="scrape these xgpu exporters directly"
    )
    parser.add_argument(
        "--kubernetes",
        action="store_true",
        help="read Pending pods, priorities, owners, every pod's cpu and memory requests and "
        "node constraints, and the nodes' allocatable, labels, taints and cordons from the "
        "Kubernetes API (the kubeconfig --kubeconfig or $KUBECONFIG names, else in-cluster "
        "inside a pod, else ~/.kube/config)",
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig file (implies --kubernetes)"
    )
    parser.add_argument(
        "--stale-after",
        type=positive_seconds,
        default=DEFAULT_STALE_AFTER_S,
        metavar="SECONDS",
        help=f"series older than this are reported and left out ({DEFAULT_STALE_AFTER_S:g})",
    )
    parser.add_argument(
        "--source-timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="each step of a request: connecting, waiting for the answer, reading it "
        f"({DEFAULT_TIMEOUT_S:g})",
    )
    # None: the scheduler profile's default (cce binpack/binpack 20, hami binpack/spread 10,
    # volcano-vgpu binpack/legacy 10).
    parser.add_argument(
        "--node-policy", choices=NODE_POLICIES, help="default: the scheduler profile's"
    )
    parser.add_argument(
        "--card-policy",
        choices=CARD_POLICIES,
        help="default: the scheduler profile's (legacy: volcano-vgpu's n-1..0 walk)",
    )
    parser.add_argument(
        "--max-vgpus-per-card", type=count(1), metavar="N", help="default: the scheduler profile's"
    )
    _add_prometheus_arguments(parser)
    # every command reading a live source judges by a profile (whatif: by several)
    add_scheduler_argument(parser, several=several_schedulers)


def _add_prometheus_arguments(parser: argparse.ArgumentParser) -> None:
    """Real Prometheus setups (credentials, TLS, tenants, shared stores) and answer caps."""
    group = parser.add_argument_group("Prometheus access and answer limits")
    group.add_argument(
        "--prometheus.bearer-token-file",
        dest="prometheus_bearer_token_file",
        metavar="FILE",
        help="send 'Authorization: Bearer' with the token this file holds (read at start)",
    )
    group.add_argument(
        "--prometheus.basic-auth-file",
        dest="prometheus_basic_auth_file",
        metavar="FILE",
        help="HTTP basic auth from this file: one line 'user:password' (read at start)",
    )
    group.add_argument(
        "--prometheus.ca-file",
        dest="prometheus_ca_file",
        metavar="FILE",
        help="verify Prometheus's TLS certificate against these CA certificates (PEM)",
    )
    group.add_argument(
        "--prometheus.insecure-skip-verify",
        dest="prometheus_insecure_skip_verify",
        action="store_true",
        help="do not verify Prometheus's TLS certificate (tests only)",
    )
    group.add_argument(
        "--prometheus.header",
        dest="prometheus_headers",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra header on every request, e.g. 'X-Scope-OrgID: team-a' (repeatable)",
    )
    group.add_argument(
        "--prometheus.selector",
        dest="prometheus_selector",
        metavar="MATCHERS",
        help="label matchers added to every series the advisor queries, e.g. "
        "'cluster=\"prod-a\"' for one cluster of a shared Thanos, Mimir or VictoriaMetrics",
    )
    group.add_argument(
        "--prometheus.max-answer-bytes",
        dest="prometheus_max_answer_bytes",
        type=byte_size,
        default=DEFAULT_MAX_ANSWER_BYTES,
        metavar="SIZE",
        help=f"refuse a larger answer to one query ({size_text(DEFAULT_MAX_ANSWER_BYTES)}; "
        "bytes, or with KiB, MiB, GiB)",
    )
    group.add_argument(
        "--prometheus.max-series",
        dest="prometheus_max_series",
        type=count(1),
        default=DEFAULT_MAX_SERIES,
        metavar="N",
        help=f"refuse more series than this in all the answers of one read "
        f"({DEFAULT_MAX_SERIES:,})",
    )
    group.add_argument(
        "--exporters.max-answer-bytes",
        dest="exporters_max_answer_bytes",
        type=byte_size,
        default=DEFAULT_MAX_EXPORTER_BYTES,
        metavar="SIZE",
        help=f"refuse a larger /metrics page ({size_text(DEFAULT_MAX_EXPORTER_BYTES)})",
    )


def refuse_exporters_flags(args: argparse.Namespace) -> None:
    """--exporters.max-answer-bytes without --exporters is one line, not silently ignored."""
    if args.exporters is None and "--exporters.max-answer-bytes" in given_flags(args):
        raise InputError("--exporters.max-answer-bytes applies to --exporters only")


def refuse_prometheus_flags(args: argparse.Namespace) -> None:
    """The credentials, TLS, headers, selector and caps of --prometheus, any of them without
    --prometheus (with --exporters or --scenario), are one line, not silently ignored."""
    if args.prometheus is not None:
        return
    chosen = [
        flag
        for flag, value in (
            ("--prometheus.bearer-token-file", args.prometheus_bearer_token_file),
            ("--prometheus.basic-auth-file", args.prometheus_basic_auth_file),
            ("--prometheus.ca-file", args.prometheus_ca_file),
            ("--prometheus.insecure-skip-verify", args.prometheus_insecure_skip_verify),
            ("--prometheus.header", args.prometheus_headers),
            ("--prometheus.selector", args.prometheus_selector),
        )
        if value
    ]
    chosen += [
        f
        for f in ("--prometheus.max-answer-bytes", "--prometheus.max-series")
        if f in given_flags(args)
    ]
    if chosen:
        raise InputError(f"{chosen[0]} applies to --prometheus only")


def prometheus_access(args: argparse.Namespace) -> PrometheusAccess:
    """The credentials, TLS, headers and selector for --prometheus (none without it)."""
    refuse_prometheus_flags(args)
    # the sources, only once a live read runs (the parser and a scenario read stay light)
    from advisor.sources.access import PrometheusAccess, load_access

    if args.prometheus is None:
        return PrometheusAccess()
    return load_access(
        bearer_token_file=args.prometheus_bearer_token_file,
        basic_auth_file=args.prometheus_basic_auth_file,
        ca_file=args.prometheus_ca_file,
        insecure_skip_verify=args.prometheus_insecure_skip_verify,
        headers=tuple(args.prometheus_headers),
        selector=args.prometheus_selector,
    )


# The credential files of --prometheus, each opened before the sources load.
CREDENTIAL_FILES = (
    ("--prometheus.bearer-token-file", "prometheus_bearer_token_file"),
    ("--prometheus.basic-auth-file", "prometheus_basic_auth_file"),
    ("--prometheus.ca-file", "prometheus_ca_file"),
)


def refuse_unreadable_files(args: argparse.Namespace) -> None:
    """A credential file that cannot be opened, refused before the sources and the core
    they import load (README "Start-up"), in the line `load_access` would give; what a
    file holds is still `load_access`'s to judge."""
    if args.prometheus is None:
        return
    for flag, dest in CREDENTIAL_FILES:
        path = getattr(args, dest)
        if path is None:
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as error:
            raise InputError(f"{flag} {path}: {error.strerror or type(error).__name__}") from None


def source_config(args: argparse.Namespace, scheduler: ProfileName | None) -> SourceConfig:
    """The sources' settings from the flags; `scheduler` as `--scheduler` names it (None:
    auto, and whatif's several profiles, which judge the cluster as read)."""
    refuse_prometheus_flags(args)
    refuse_unreadable_files(args)
    from advisor.sources.exporters import parse_exporter_list
    from advisor.sources.gather import SourceConfig

    exporters = parse_exporter_list(args.exporters) if args.exporters is not None else ()
    if args.exporters is not None and not exporters:
        raise InputError("--exporters: no URL given")
    return SourceConfig(
        prometheus=args.prometheus,
        exporters=exporters,
        kubernetes=args.kubernetes or args.kubeconfig is not None,
        kubeconfig=args.kubeconfig,
        stale_after_s=args.stale_after,
        timeout_s=args.source_timeout,
        scheduler=scheduler or "auto",
        node_policy=args.node_policy,
        card_policy=args.card_policy,
        max_vgpus_per_card=args.max_vgpus_per_card,
        prometheus_access=prometheus_access(args),
        max_answer_bytes=args.prometheus_max_answer_bytes,
        max_series=args.prometheus_max_series,
        max_exporter_bytes=args.exporters_max_answer_bytes,
    )
