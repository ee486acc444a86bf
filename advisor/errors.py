"""The advisor's error for bad input, raised where the bad input is found.

`InputError` is what a flag, a file or a live source (Prometheus, the exporters, Kubernetes)
raises when it cannot be used: `xgpu-advisor` prints its message as one line and exits 2.
It lives here, below every layer that raises it, so that no module has to import a layer
above its own to say "bad input" (docs/architecture.md). The other two errors that end a run
the same way live with what they guard: `ScenarioError` in `advisor.scenario_reader`,
`TraceError` in `advisor.trace_rows` (the openb trace's reader).
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input or unreachable source: exit code 2 with this message."""
