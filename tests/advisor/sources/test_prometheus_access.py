"""Prometheus as real setups serve it: behind an authenticating proxy (bearer token, basic
auth, a tenant header as Mimir's X-Scope-OrgID, TLS with a private CA), and holding more than
one cluster, told apart by `--prometheus.selector`. Real Prometheus (backfilled with promtool)
and real VictoriaMetrics (Debian's `victoria-metrics`), both holding the same series of two
clusters (`cluster="a"` and `"b"`, node gpu-1 in both); `xgpu-advisor snapshot` in process."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.model import Cluster
from advisor.scenario import load_scenario
from tests.advisor.sources.gateway import (
    CLUSTERS,
    PASSWORD,
    TENANT,
    TOKEN,
    USER,
    Gateway,
    Tls,
    exposition,
    gateway,
    make_tls,
    openmetrics,
)
from tests.realparts import (
    Prometheus,
    free_port,
    installed,
    running_process,
    start_prometheus,
    write_backfill,
)

pytestmark = pytest.mark.realservices

A = 'cluster="a"'
METRIC = re.compile(r"\b(xgpu_[a-z_]+|gpu_schedule_policy)\b(\{[^}]*\})?")


def cards_by_node(cluster: Cluster) -> dict[str, int]:
    return {n.name: len(n.cards) for n in cluster.nodes}


def snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, *extra: str
) -> tuple[int, str, Cluster | None]:
    """Exit code, stderr and (when written) the scenario of `snapshot --prometheus URL`."""
    out = tmp_path / "snapshot.yaml"
    out.unlink(missing_ok=True)
    code = main(["snapshot", "--prometheus", url, "--output", str(out), *extra])
    err = capsys.readouterr().err
    return code, err, load_scenario(out) if out.exists() else None


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    home = tmp_path_factory.mktemp("prometheus-two-clusters")
    write_backfill(openmetrics(exposition(time.time())), home / "data")
    prom = start_prometheus(home)
    try:
        prom.wait_for("xgpu_node_info", lambda r: len(r) == 4)  # gpu-1, gpu-2 (a); gpu-1, gpu-3
        yield prom
    finally:
        prom.stop()


@pytest.fixture(scope="module")
def proxy(prometheus: Prometheus) -> Iterator[Gateway]:
    with gateway(prometheus.url) as g:
        yield g


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_proxy(prometheus: Prometheus, tls: Tls) -> Iterator[Gateway]:
    with gateway(prometheus.url, tls.server) as g:
        yield g


# -- credentials ------------------------------------------------------------------------


def test_bearer_token_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")  # as a Secret is usually written: a trailing newline
    code, err, cluster = snapshot(
        tmp_path, capsys, proxy.base("bearer"), "--prometheus.selector", A,
        "--prometheus.bearer-token-file", str(token),
    )  # fmt: skip
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS["a"]


@pytest.mark.parametrize("given", ["wrong", None])
def test_bearer_token_wrong_or_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway, given: str | None
) -> None:
    extra: list[str] = []
    if given is not None:
        token = tmp_path / "token"
        token.write_text("not-the-" + TOKEN)
        extra = ["--prometheus.bearer-token-file", str(token)]
    code, err, cluster = snapshot(tmp_path, capsys, proxy.base("bearer"), *extra)
    assert code == 2
    assert cluster is None
    assert err == (
        f"xgpu-advisor: error: Prometheus {proxy.base('bearer')}: HTTP 401: access refused "
        "(credentials: --prometheus.bearer-token-file, --prometheus.basic-auth-file, "
        "--prometheus.header)\n"
    )
    assert TOKEN not in err


def test_basic_auth_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    secret = tmp_path / "basic"
    secret.write_text(f"{USER}:{PASSWORD}\n")
    code, err, cluster = snapshot(
        tmp_path, capsys, proxy.base("basic"), "--prometheus.selector", A,
        "--prometheus.basic-auth-file", str(secret),
    )  # fmt: skip
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS["a"]
    secret.write_text(f"{USER}:not-{PASSWORD}\n")
    code, err, _ = snapshot(
        tmp_path, capsys, proxy.base("basic"), "--prometheus.basic-auth-file", str(secret)
    )
    assert code == 2
    assert "HTTP 401: access refused" in err
    assert PASSWORD not in err
    assert "not-" not in err


def test_a_basic_auth_file_without_a_colon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    secret = tmp_path / "basic"
    secret.write_text("just-a-password\n")
    code, err, _ = snapshot(
        tmp_path, capsys, proxy.base("basic"), "--prometheus.basic-auth-file", str(secret)
    )
    assert code == 2
    assert err == (
        f"xgpu-advisor: error: --prometheus.basic-auth-file {secret}: "
        "expected one line 'user:password'\n"
    )


def test_tenant_header(tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway) -> None:
    code, err, cluster = snapshot(
        tmp_path, capsys, proxy.base("tenant"), "--prometheus.selector", A,
        "--prometheus.header", f"X-Scope-OrgID: {TENANT}",
    )  # fmt: skip
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS["a"]
    code, err, _ = snapshot(
        tmp_path, capsys, proxy.base("tenant"), "--prometheus.header", "X-Scope-OrgID: team-b"
    )
    assert code == 2
    assert "HTTP 401: access refused" in err


def test_a_malformed_header_never_shows_its_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    code, err, _ = snapshot(
        tmp_path, capsys, proxy.base("open"), "--prometheus.header", "Authorization Bearer xyz123"
    )
    assert code == 2
    assert err == "xgpu-advisor: error: --prometheus.header: expected 'Name: value'\n"


def test_credentials_in_the_url_are_not_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # nothing listens there
    code, err, _ = snapshot(tmp_path, capsys, f"http://user:hunter2@127.0.0.1:{port}")
    assert code == 2
    assert err.startswith(f"xgpu-advisor: error: Prometheus http://127.0.0.1:{port}: cannot reach")
    assert "hunter2" not in err


# -- TLS --------------------------------------------------------------------------------


def test_tls_with_the_ca_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tls_proxy: Gateway, tls: Tls
) -> None:
    code, err, cluster = snapshot(
        tmp_path, capsys, tls_proxy.base("open"), "--prometheus.selector", A,
        "--prometheus.ca-file", str(tls.ca),
    )  # fmt: skip
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS["a"]


def test_tls_without_the_ca_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tls_proxy: Gateway
) -> None:
    code, err, _ = snapshot(tmp_path, capsys, tls_proxy.base("open"))
    assert code == 2
    assert err.startswith(f"xgpu-advisor: error: Prometheus {tls_proxy.base('open')}: cannot ")
    assert "certificate verify failed" in err
    assert err.count("\n") == 1


def test_tls_insecure_skip_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tls_proxy: Gateway
) -> None:
    code, err, cluster = snapshot(
        tmp_path, capsys, tls_proxy.base("open"), "--prometheus.selector", A,
        "--prometheus.insecure-skip-verify",
    )  # fmt: skip
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS["a"]


def test_a_ca_file_that_holds_no_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tls_proxy: Gateway
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate\n")
    code, err, _ = snapshot(
        tmp_path, capsys, tls_proxy.base("open"), "--prometheus.ca-file", str(ca)
    )
    assert code == 2
    assert err.startswith(f"xgpu-advisor: error: --prometheus.ca-file {ca}: ")
    assert err.count("\n") == 1


# -- one cluster of a shared store ------------------------------------------------------


def _every_selector_carries(queries: list[str], matchers: str) -> None:
    """Each metric named in each query is selected with exactly `{matchers}`."""
    assert queries
    for query in queries:
        if query == "time()":
            continue
        found = METRIC.findall(query)
        assert found, query
        assert all(selector == f"{{{matchers}}}" for _, selector in found), query


def test_selector_on_prometheus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    proxy.queries.clear()
    code, err, cluster = snapshot(
        tmp_path, capsys, proxy.base("open"), "--prometheus.selector", 'cluster="b"'
    )
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS["b"]
    # 24 queries: time(), 11 families x (value, newest: the MIG mode, instances and the
    # instances pods use among them), the ended-nodes subquery.
    assert len(proxy.queries) == 24
    _every_selector_carries(proxy.queries, 'cluster="b"')


def test_selector_that_is_not_matchers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    code, err, _ = snapshot(
        tmp_path, capsys, proxy.base("open"), "--prometheus.selector", 'cluster="a"} or vector(1'
    )
    assert code == 2
    assert err.startswith("xgpu-advisor: error: --prometheus.selector ")
    assert "expected label matchers" in err


@pytest.fixture(scope="module")
def victoria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("victoria-metrics")
    url = f"http://127.0.0.1:{free_port()}"
    command = [
        installed("victoria-metrics"),
        f"-httpListenAddr={url.removeprefix('http://')}",
        f"-storageDataPath={home / 'data'}",
        "-retentionPeriod=100y",
        "-search.latencyOffset=0s",  # serve the newest samples at once
        "-loggerLevel=ERROR",
    ]
    with running_process(command, f"{url}/health", home / "victoria-metrics.log"):
        body = "\n".join(exposition(time.time())).encode() + b"\n"
        request = urllib.request.Request(f"{url}/api/v1/import/prometheus", data=body)
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 204
        urllib.request.urlopen(f"{url}/internal/force_flush", timeout=10).close()
        Prometheus(url).wait_for("xgpu_node_info", lambda r: len(r) == 4)
        yield url


@pytest.mark.parametrize("name", ["a", "b"])
def test_selector_on_victoria_metrics_sees_one_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], victoria: str, name: str
) -> None:
    with gateway(victoria) as recording:
        code, err, cluster = snapshot(
            tmp_path, capsys, recording.base("open"), "--prometheus.selector", f'cluster="{name}"'
        )
        queries = list(recording.queries)
    assert code == 0, err
    assert cluster is not None
    assert cards_by_node(cluster) == CLUSTERS[name]
    _every_selector_carries(queries, f'cluster="{name}"')


def test_credentials_in_the_url_and_a_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    url = proxy.base("bearer").replace("http://", "http://user:hunter2@")
    code, err, _ = snapshot(tmp_path, capsys, url, "--prometheus.bearer-token-file", str(token))
    assert code == 2
    assert err == (
        f"xgpu-advisor: error: Prometheus {proxy.base('bearer')}: credentials in the URL and "
        "in a flag: give one\n"
    )


def test_report_history_goes_through_the_same_access(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy: Gateway
) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    proxy.queries.clear()
    code = main(
        [
            "report", "--prometheus", proxy.base("bearer"), "--output-dir", str(tmp_path / "r"),
            "--prometheus.bearer-token-file", str(token), "--prometheus.selector", A,
            "--history", "2m", "--history-step", "15s",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    # The state's 24 queries, then time() and 4 usage measures over the 2 minutes (one range
    # query each: 9 steps, far under the 10,000 points of one).
    assert len(proxy.queries) == 24 + 1 + 4
    assert sum("xgpu_memory_used" in q for q in proxy.queries) == 1
    _every_selector_carries(proxy.queries, A)
