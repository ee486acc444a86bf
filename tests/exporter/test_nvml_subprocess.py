"""exporter.nvml in a fresh process that finds the fake library through LD_LIBRARY_PATH."""

from __future__ import annotations

import ctypes.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.exporter.fakenvml.state import FakeCard, FakeNvml, FakeProcess, FakeState

pytestmark = pytest.mark.realservices  # Python processes loading the fake library

REPO = Path(__file__).resolve().parents[2]

# Reads once per line on stdin and prints each reading as JSON.
READER_SCRIPT = """
import dataclasses, json, sys
from exporter.nvml import NvmlReader, NvmlUnavailable
reader = NvmlReader(call_timeout_s=2.0)
for _ in sys.stdin:
    try:
        print(json.dumps(dataclasses.asdict(reader.read())), flush=True)
    except NvmlUnavailable as error:
        print(json.dumps({"unavailable": dataclasses.asdict(error.error)}), flush=True)
reader.close()
"""


def start_reader(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", READER_SCRIPT],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def ask(process: subprocess.Popen[str]) -> dict[str, Any]:
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write("read\n")
    process.stdin.flush()
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    return answer


def test_a_running_process_sees_the_state_file_change(fake_nvml: FakeNvml) -> None:
    state = FakeState(
        driver="535.161.08",
        cards=[FakeCard("GPU-aaaa", mem_used=2**30)],
        processes=[FakeProcess(card=0, pid=99, mem=2**30)],
    )
    fake_nvml.write(state)
    process = start_reader(fake_nvml.env())
    try:
        first = ask(process)
        state.cards[0].lost = True
        fake_nvml.write(state)
        second = ask(process)
    finally:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.close()
        process.wait(timeout=10)
        process.stdout.close()

    assert first["driver_version"] == "535.161.08"
    assert first["cards"] == [
        {
            "index": 0,
            "uuid": "GPU-aaaa",
            "name": "Tesla T4",
            "memory_total_bytes": 16 * 2**30,
            "memory_used_bytes": 2**30,
            "utilization_ratio": 0.0,
            "healthy": True,
            "health_problems": [],
            "mig_mode": None,  # a T4: no MIG
        }
    ]
    assert first["processes"] == [
        {
            "pid": 99,
            "gpu_index": 0,
            "memory_used_bytes": 2**30,
            "sm_utilization_ratio": 0.0,
            "gpu_instance_id": None,
        }
    ]
    assert first["mig_instances"] == []
    assert second["errors"] == [
        {"function": "nvmlDeviceGetHandleByIndex_v2", "code": "gpu_is_lost"}
    ]
    assert second["cards"][0]["health_problems"] == ["gpu lost"]
    assert process.returncode == 0


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None, reason="a real NVML is installed here"
)
def test_without_the_library_nvml_is_unavailable(fake_nvml: FakeNvml) -> None:
    env = fake_nvml.env()
    env.pop("LD_LIBRARY_PATH")
    process = start_reader(env)
    try:
        answer = ask(process)
    finally:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.close()
        process.wait(timeout=10)
        process.stdout.close()

    assert answer == {"unavailable": {"function": "nvmlInitWithFlags", "code": "library_not_found"}}
