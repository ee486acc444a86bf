"""One precedence for the Kubernetes configuration, shared by the advisor and the exporter:
--kubeconfig, $KUBECONFIG, in-cluster when running in a pod, ~/.kube/config. Real loading runs
the real kubernetes_asyncio client against the local API double."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.kubeconfig import ConfigChoice, KubeConfigError, choose_config, load_configuration
from advisor.sources.kubernetes import read_kubernetes
from exporter.pods_kube import KubePodSource
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi.server import KubeApiDouble

pytest_plugins = ["tests.kubeapi.fixtures"]

HOME = Path("/home/someone")
IN_A_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
DEFAULT_FILE = "/home/someone/.kube/config"


@pytest.mark.parametrize(
    ("flag", "environ", "forced", "chosen"),
    [
        # 1. the flag wins over everything, in a pod too
        ("/a", {**IN_A_POD, "KUBECONFIG": "/b"}, None, ConfigChoice(False, "/a")),
        # 2. then $KUBECONFIG, in a pod too (the advisor went in-cluster here before)
        (None, {**IN_A_POD, "KUBECONFIG": "/b:/c"}, None, ConfigChoice(False, "/b:/c")),
        # 3. then the service account, in a pod only
        (None, IN_A_POD, None, ConfigChoice(True)),
        # 4. then the home directory's file
        (None, {}, None, ConfigChoice(False, DEFAULT_FILE)),
        (None, {"KUBERNETES_SERVICE_HOST": ""}, None, ConfigChoice(False, DEFAULT_FILE)),
        # an empty name is no name, as for kubectl
        ("", {**IN_A_POD, "KUBECONFIG": ""}, None, ConfigChoice(True)),
        ("", {"KUBECONFIG": ""}, None, ConfigChoice(False, DEFAULT_FILE)),
        # a caller may force either
        (None, IN_A_POD, False, ConfigChoice(False, DEFAULT_FILE)),
        ("/a", {}, True, ConfigChoice(True)),
    ],
)
def test_the_precedence(
    flag: str | None, environ: dict[str, str], forced: bool | None, chosen: ConfigChoice
) -> None:
    assert choose_config(flag, environ, HOME, in_cluster=forced) == chosen


def test_a_choice_names_itself_for_error_messages() -> None:
    assert str(ConfigChoice(True)) == "in-cluster config"
    assert str(ConfigChoice(False, "/b:/c")) == "kubeconfig /b:/c"


@pytest.fixture
def in_a_pod(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This process as a container of a pod with no service account mounted, and a home
    directory with no ~/.kube/config."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    for name, value in IN_A_POD.items():
        monkeypatch.setenv(name, value)


@pytest.mark.realservices  # the API double
@pytest.mark.usefixtures("in_a_pod")
async def test_kubeconfig_from_the_environment_wins_in_a_pod_for_both_programs(
    kube_api: KubeApiDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube_api.add_pod(cce_pod("web/a", memory_mib=4096, core=20, node="gpu-node-1", cards=(0,)))
    monkeypatch.setenv("KUBECONFIG", str(kube_api.write_kubeconfig(tmp_path / "config")))
    configuration = await load_configuration()
    assert configuration.host == kube_api.url
    # the advisor's live source, with no --kubeconfig
    state = await read_kubernetes(None, timeout_s=5)
    assert [(pod.namespace, pod.name) for pod in state.pods] == [("web", "a")]
    # the exporter's pod watch, with no --kubeconfig either
    source = KubePodSource("gpu-node-1", backoff_initial_s=0.01, start_timeout_s=5)
    try:
        await source.start()
        view = source.view()
        assert view.ok, view.error
        assert [(a.namespace, a.pod) for a in view.allotments] == [("web", "a")]
    finally:
        await source.close()


@pytest.mark.usefixtures("in_a_pod")
async def test_in_a_pod_without_a_service_account_each_program_says_so_in_one_line() -> None:
    with pytest.raises(KubeConfigError, match=r"^in-cluster config: \S") as failed:
        await load_configuration()
    assert "\n" not in str(failed.value)
    with pytest.raises(InputError, match=r"^Kubernetes: in-cluster config: \S"):
        await read_kubernetes(None, timeout_s=5)
    source = KubePodSource("gpu-node-1", backoff_initial_s=0.01, start_timeout_s=2)
    try:
        await source.start()
        error = source.view().error
        assert error is not None
        assert error.startswith("Kubernetes API: client setup failed: in-cluster config: ")
    finally:
        await source.close()


async def test_a_kubeconfig_that_is_not_there_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(KubeConfigError, match=rf"^kubeconfig {missing}: \S"):
        await load_configuration(str(missing))
