"""Fixtures starting real parts (tests/realparts.py): exporters and Prometheus, stopped at the
end of the module."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack

import pytest

from tests.realparts import Exporter, Prometheus, scrape_config
from tests.realparts import start_exporter as start_exporter_process
from tests.realparts import start_prometheus as start_prometheus_process


@pytest.fixture(scope="module")
def start_exporter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Exporter]]:
    with ExitStack() as started:

        def start(args: Sequence[str], env: Mapping[str, str] | None = None) -> Exporter:
            log = tmp_path_factory.mktemp("exporter") / "exporter.log"
            exporter = start_exporter_process(args, log, env=env)
            started.callback(exporter.stop)
            return exporter

        yield start


@pytest.fixture(scope="module")
def start_prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Prometheus]]:
    with ExitStack() as started:

        def start(targets: Mapping[str, str]) -> Prometheus:
            """targets: exporter URL -> node name (added as the `node` target label)."""
            home = tmp_path_factory.mktemp("prometheus")
            prometheus = start_prometheus_process(home, scrape_config(targets))
            started.callback(prometheus.stop)
            return prometheus

        yield start
