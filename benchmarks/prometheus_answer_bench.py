"""`python -m benchmarks.prometheus_answer_bench [--size MB]`: `xgpu-advisor snapshot`
against a Prometheus answering 500 MB to every query (issue 11's figure: exit 2 with peak
RSS <= 300 MB; the CronJob's memory limit is 1 GiB).

The stand-in Prometheus is a separate process (its memory is not the advisor's): it answers
`time()` honestly, then streams each other query a chunked vector answer of `size` bytes,
generated as it goes. All 17 queries of a snapshot go out at once, as they do against a real
server. The figures are the advisor's exit code, its one line of stderr, its wall time and its
own peak RSS (`wait4` of that child alone), and how many bytes the server managed to send
before the advisor hung up.

Also offers `cases()` / `run_case()` for `benchmarks.run` (see `benchmarks.measure`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.measure import Case, Outcome, Params, Timings, child_env, cli_command

MODULE = "benchmarks.prometheus_answer_bench"
PHASE = "xgpu-advisor snapshot against 500 MB answers"
ANSWER_BYTES = 500 * 10**6
GOAL_RSS_MIB = 300 * 10**6 / 2**20  # 300 MB
SERIES = b'{"metric":{"node":"n1","gpu_index":"0","gpu_uuid":"GPU-0"},"value":[1,"1"]},'
TABLES = {
    "hostile": (
        "`xgpu-advisor snapshot` against a Prometheus answering 500 MB to every query",
        "case",
    )
}


def cases(quick: bool) -> list[Case]:
    return [
        Case(
            MODULE,
            "large-answer",
            "500 MB answers, default cap (64 MiB)",
            "hostile",
            {"size": ANSWER_BYTES},
            repeats=1 if quick else 3,
            goal_phase=PHASE,
            goal_rss_mib=GOAL_RSS_MIB,
        )
    ]


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name != "large-answer":
        raise ValueError(f"unknown case {name!r}")
    timings = Timings()
    facts: dict[str, Any] = {}
    peak = 0
    for _ in range(repeats):
        facts = measure(int(params["size"]))
        peak = max(peak, int(facts["peak_rss_kib"]))
        timings.add(PHASE, facts["wall_seconds"], facts["cpu_seconds"])
    facts["peak_rss_kib"] = peak  # the advisor's, not this worker's
    return Outcome(timings, facts)


def measure(size: int) -> dict[str, Any]:
    """One snapshot against a fresh server answering `size` bytes."""
    with tempfile.TemporaryDirectory(prefix="xgpu-bench-") as tmp:
        port_file, sent_file = Path(tmp) / "port", Path(tmp) / "sent"
        server = subprocess.Popen(
            [sys.executable, "-m", MODULE, "--serve", str(size), str(port_file), str(sent_file)],
            env=child_env(),
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while not port_file.exists() or not port_file.read_text().strip():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the stand-in Prometheus did not start")
                time.sleep(0.05)
            url = f"http://127.0.0.1:{port_file.read_text().strip()}"
            output = Path(tmp) / "snapshot.yaml"
            command = [*cli_command(), "snapshot", "--prometheus", url, "--output", str(output)]
            start = time.perf_counter()
            child = subprocess.Popen(command, stderr=subprocess.PIPE, env=child_env())
            assert child.stderr is not None
            stderr = child.stderr.read().decode(errors="replace")
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
            child.returncode = code = os.waitstatus_to_exitcode(status)
            wrote = output.exists()
        finally:
            server.terminate()
            server.wait(timeout=30)
        sent = int(sent_file.read_text() or 0) if sent_file.exists() else 0
    peak_mib = usage.ru_maxrss / 1024
    met = code == 2 and not wrote and peak_mib <= GOAL_RSS_MIB
    return {
        "answer_bytes": size,
        "exit_code": code,
        "stderr": stderr.strip(),
        "wrote_output": wrote,
        "wall_seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_kib": usage.ru_maxrss,
        "peak_rss_mb": round(usage.ru_maxrss * 1024 / 10**6, 1),
        "server_sent_bytes": sent,
        "goal_met": met,
        "note": f"exit {code}, {len(stderr.strip().splitlines())} line of stderr; the server "
        f"sent {sent / 10**6:.0f} MB in all before the advisor hung up; goal (exit 2, "
        f"≤ 300 MB): {'met' if met else '**not met**'}",
    }


# -- the stand-in Prometheus (a process of its own) ------------------------------------


async def _serve(size: int, port_file: Path, sent_file: Path) -> None:
    from aiohttp import web

    sent = 0
    block = SERIES * (64 * 1024 // len(SERIES))

    async def query(request: web.Request) -> web.StreamResponse:
        nonlocal sent
        if request.query.get("query") == "time()":
            data = {"resultType": "scalar", "result": [time.time(), str(time.time())]}
            return web.json_response({"status": "success", "data": data})
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        written = 0
        try:
            await response.prepare(request)
            await response.write(b'{"status":"success","data":{"resultType":"vector","result":[')
            while written < size:
                await response.write(block)
                written += len(block)
                sent += len(block)
                sent_file.write_text(str(sent))
            await response.write(SERIES.rstrip(b",") + b"]}}")
        except (ConnectionError, asyncio.CancelledError):
            pass  # the advisor hung up: what it was meant to do
        return response

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    app.router.add_get("/api/v1/query_range", query)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port_file.write_text(str(runner.addresses[0][1]))
    await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.prometheus_answer_bench", description=__doc__
    )
    parser.add_argument("--size", type=int, default=500, metavar="MB", help="answer size")
    parser.add_argument("--serve", nargs=3, metavar=("BYTES", "PORT_FILE", "SENT_FILE"))
    args = parser.parse_args(argv)
    if args.serve:
        size, port_file, sent_file = args.serve
        asyncio.run(_serve(int(size), Path(port_file), Path(sent_file)))
        return 0
    facts = measure(args.size * 10**6)
    print(
        f"exit {facts['exit_code']}, {facts['wall_seconds']:.1f} s, "
        f"peak RSS {facts['peak_rss_mb']} MB, server sent {facts['server_sent_bytes']:,} bytes"
    )
    print(facts["stderr"])
    return 0 if facts["goal_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
