"""Where the Kubernetes API's address and credentials come from: one rule for both programs.

The advisor's live source (`advisor.sources.kubernetes`) and the exporter's pod watch
(`exporter.pods_kube`) both load their client configuration here, first that applies:

1. the kubeconfig file named on the command line (`--kubeconfig`);
2. the file(s) `$KUBECONFIG` names (a `:`-separated list is merged, as kubectl merges it);
3. the pod's service account (in-cluster config), when running in a pod
   (`$KUBERNETES_SERVICE_HOST` is set);
4. `~/.kube/config`.

Why this order: a file someone names, on the command line or in the environment, is a
deliberate choice and wins even inside a pod (a DaemonSet debugged against another cluster,
CI that runs in a cluster but tests a kind cluster), as it does for kubectl and client-go's
`BuildConfigFromFlags`. Without one, a pod uses its service account, the identity the
manifests grant RBAC to, rather than a `~/.kube/config` that an image happens to carry (the
one place this differs from kubectl, which would read that file first). Before this module
the advisor went in-cluster inside a pod even when `$KUBECONFIG` was set; the exporter already
followed this order.

Failures are one line, `KubeConfigError`, naming what was tried: "kubeconfig PATH: reason" or
"in-cluster config: reason", and with nothing to try at all every step of the order, each
with why it did not apply, and how to name a file. kubernetes_asyncio is imported only when a
configuration is loaded, so a program that never talks to Kubernetes never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import SourceError, known

SERVICE_HOST = "KUBERNETES_SERVICE_HOST"  # set by the kubelet in every container of a pod
KUBECONFIG = "KUBECONFIG"


class KubeConfigError(SourceError):
    """The chosen configuration cannot be loaded; the message is one line."""


@dataclass(frozen=True, slots=True)
class ConfigChoice:
    """Which configuration the precedence picked: in-cluster, or the kubeconfig at `path`."""

    in_cluster: bool
    path: str | None = None  # the kubeconfig file(s); None in-cluster

    def __str__(self) -> str:
        return "in-cluster config" if self.in_cluster else f"kubeconfig {self.path}"


def choose_config(
    kubeconfig: str | None,
    environ: Mapping[str, str],
    home: Path,
    *,
    in_cluster: bool | None = None,
) -> ConfigChoice:
    """The precedence in the module docstring; `in_cluster` True or False forces the choice
    (tests, and a caller that knows). An empty name counts as none, as kubectl counts it."""
    named = kubeconfig or environ.get(KUBECONFIG) or None
    if in_cluster is None:
        in_cluster = named is None and bool(environ.get(SERVICE_HOST))
    if in_cluster:
        return ConfigChoice(in_cluster=True)
    return ConfigChoice(in_cluster=False, path=named or str(home / ".kube" / "config"))


async def load_configuration(
    kubeconfig: str | None = None,
    *,
    in_cluster: bool | None = None,
) -> Any:
    """A kubernetes_asyncio `Configuration` loaded as `choose_config` picks from this
    process's environment."""
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import Configuration

    choice = choose_config(kubeconfig, os.environ, Path.home(), in_cluster=in_cluster)
    if not choice.in_cluster:
        _check_files(choice, kubeconfig, os.environ)
    configuration = Configuration()
    try:
        if choice.in_cluster:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            await config.load_kube_config(
                config_file=choice.path, client_configuration=configuration, persist_config=False
            )
    except Exception as error:  # ConfigException, OSError, YAML errors: all "cannot use it"
        raise KubeConfigError(f"{choice}: {_reason(error, choice.path or '')}") from None
    return configuration


def _check_files(choice: ConfigChoice, kubeconfig: str | None, environ: Mapping[str, str]) -> None:
    """At least one of the chosen files must be there. kubernetes_asyncio would log "Config
    not found" and then blame the empty configuration it made ("Expected key
    current-context"); as kubectl, it skips the missing files of a list."""
    path = known(choice.path, "the kubeconfig path of an out-of-cluster choice")
    paths = _files(path)
    if any(os.path.exists(p) for p in paths):
        return
    if kubeconfig:
        named = "--kubeconfig"
    elif environ.get(KUBECONFIG):
        named = f"${KUBECONFIG}"
    else:  # the last step of the order: say every step and why none applied
        raise KubeConfigError(
            "no configuration found: tried --kubeconfig (not given), "
            f"${KUBECONFIG} (not set), the in-cluster service account (not in a pod: "
            f"${SERVICE_HOST} is not set), {choice.path} (no such file); {_POINT}"
        )
    files = "no such file" if len(paths) == 1 else "none of these files exists"
    raise KubeConfigError(f"{choice}: {files} (named by {named}); {_POINT}")


_POINT = "name a kubeconfig file with --kubeconfig FILE or KUBECONFIG=FILE"


def _reason(error: BaseException, paths: str) -> str:
    """What is wrong with a file that is there, in words: not the library's TypeError on a
    file that is empty or holds a YAML scalar."""
    import yaml

    if isinstance(error, yaml.YAMLError):
        return f"not YAML: {_one_line(error)}"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    if isinstance(error, (TypeError, AttributeError)) and not all(map(_a_mapping, _files(paths))):
        return "not a kubeconfig: empty, or not a YAML mapping (of clusters, contexts, users)"
    return _one_line(error)


def _files(paths: str) -> list[str]:
    """The files a kubeconfig path list names (`:`-separated, as kubectl reads it)."""
    return [os.path.expanduser(p) for p in paths.split(os.pathsep) if p]


def _a_mapping(path: str) -> bool:
    """A missing file is skipped, so it counts as fine; the file parsed already."""
    import yaml

    try:
        with open(path, encoding="utf-8") as file:
            return isinstance(yaml.safe_load(file), dict)
    except FileNotFoundError:
        return True


def _one_line(error: BaseException) -> str:
    return " ".join((str(error) or type(error).__name__).split())
