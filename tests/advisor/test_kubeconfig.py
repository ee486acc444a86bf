"""One precedence for the Kubernetes configuration, shared by the advisor and the exporter:
--kubeconfig, $KUBECONFIG, in-cluster when running in a pod, ~/.kube/config. Real loading runs
the real kubernetes_asyncio client against the local API double."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.errors import SourceError
from advisor.kubeconfig import (
    KUBECONFIG,
    SERVICE_HOST,
    ConfigChoice,
    KubeConfigError,
    choose_config,
    load_configuration,
)
from advisor.sources.kubernetes import read_kubernetes
from exporter.pods_kube import KubePodSource
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi.server import KubeApiDouble
from tests.realparts import DEMO, Exporter, simulated_exporter

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
    with pytest.raises(SourceError, match=r"^Kubernetes: in-cluster config: \S"):
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


# -- no usable configuration: one line from the command, naming what was tried -------------

POINT = "name a kubeconfig file with --kubeconfig FILE or KUBECONFIG=FILE"


@pytest.fixture(scope="module")
def exporter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exporter]:
    """A real exporter to read beside Kubernetes, so that only the kubeconfig can fail."""
    running = simulated_exporter(DEMO, "v100-node-1", tmp_path_factory.mktemp("kubeconfig"))
    yield running
    running.stop()


def snapshot_with(
    exporter: Exporter, home: Path, *flags: str, kubeconfig: str | None = None
) -> tuple[int, str]:
    """`xgpu-advisor snapshot --exporters URL FLAGS...` as a process outside any pod, with
    `home` as its home and $KUBECONFIG as given (None: unset); its exit status and stderr."""
    environ = {k: v for k, v in os.environ.items() if k not in (KUBECONFIG, SERVICE_HOST)}
    environ["HOME"] = str(home)
    if kubeconfig is not None:
        environ[KUBECONFIG] = kubeconfig
    out = home / "snapshot.yaml"
    script = Path(sys.executable).parent / "xgpu-advisor"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "advisor.cli"]
    argv = [*command, "snapshot", "--exporters", exporter.url, *flags, "--output", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, check=False)
    assert not out.exists()
    return proc.returncode, proc.stderr


@pytest.mark.realservices  # a real exporter, xgpu-advisor as a process
@pytest.mark.parametrize("kubeconfig", [None, ""])  # unset, or set to nothing
def test_no_configuration_at_all_is_one_line_naming_every_step_tried(
    exporter: Exporter, tmp_path: Path, kubeconfig: str | None
) -> None:
    code, err = snapshot_with(exporter, tmp_path, "--kubernetes", kubeconfig=kubeconfig)
    assert code == 2
    assert err == (
        "xgpu-advisor: error: Kubernetes: no configuration found: tried --kubeconfig (not "
        "given), $KUBECONFIG (not set), the in-cluster service account (not in a pod: "
        f"$KUBERNETES_SERVICE_HOST is not set), {tmp_path}/.kube/config (no such file); "
        f"{POINT}\n"
    )


@pytest.mark.realservices
def test_a_kubeconfig_named_that_is_not_there_says_who_named_it(
    exporter: Exporter, tmp_path: Path
) -> None:
    missing = tmp_path / "gone" / "config"
    code, err = snapshot_with(exporter, tmp_path, "--kubernetes", kubeconfig=str(missing))
    assert (code, err) == (
        2,
        f"xgpu-advisor: error: Kubernetes: kubeconfig {missing}: no such file (named by "
        f"$KUBECONFIG); {POINT}\n",
    )
    both = f"{missing}:{tmp_path / 'other'}"
    code, err = snapshot_with(exporter, tmp_path, "--kubeconfig", both)
    assert (code, err) == (
        2,
        f"xgpu-advisor: error: Kubernetes: kubeconfig {both}: none of these files exists "
        f"(named by --kubeconfig); {POINT}\n",
    )


@pytest.mark.realservices
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("clusters: [\n", "not YAML: while parsing a flow node expected the node content"),
        ("", "not a kubeconfig: empty, or not a YAML mapping (of clusters, contexts, users)"),
        ("just words\n", "not a kubeconfig: empty, or not a YAML mapping"),
        ("- a\n- b\n", "not a kubeconfig: empty, or not a YAML mapping"),
    ],
)
def test_a_kubeconfig_that_is_no_kubeconfig_says_so(
    exporter: Exporter, tmp_path: Path, text: str, problem: str
) -> None:
    broken = tmp_path / "config"
    broken.write_text(text)
    code, err = snapshot_with(exporter, tmp_path, "--kubernetes", kubeconfig=str(broken))
    assert code == 2
    assert err.startswith(f"xgpu-advisor: error: Kubernetes: kubeconfig {broken}: {problem}")
    assert err.count("\n") == 1, err
