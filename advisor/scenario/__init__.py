"""Scenario files (docs/design.md §4): the advisor's and the exporter's offline input, and
what `snapshot` and `replay --write-scenario` write.

- `text`: the file's text, within bounds (size, encoding), loading neither PyYAML nor the core;
- `parse`: the text to plain data, within bounds (depth, values, numbers);
- `strict`: the typed checks every reader makes, each failure one `errors.ScenarioError`
  line naming the file, the path inside it and the problem;
- `fit`: the keys of the rest of the node (§9.1), read and written;
- `profile`: the `scheduler:` block, each profile's defaults, and retargeting a cluster;
- `read`: the data to a `Cluster`, cross-checked (`load_scenario`, `scenario_from_data`);
- `write`: a `Cluster` to the data the reader accepts, written atomically.

The readers and writers load on first use, not with the package: `read` loads the core and
numpy, `parse` PyYAML, and a command imports `scenario.text` to read its input before it
loads those (README "Start-up").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from advisor.defaults import DEFAULT_LIMITS, ScenarioLimits
from advisor.scenario.errors import ScenarioError

if TYPE_CHECKING:
    from advisor.scenario.parse import parse_text
    from advisor.scenario.read import load_scenario, scenario_from_data, scenario_from_text
    from advisor.scenario.write import save_scenario, scenario_to_data, write_atomic

# Each name loaded on first use, from its module.
_LAZY = {
    "parse_text": "advisor.scenario.parse",
    "load_scenario": "advisor.scenario.read",
    "scenario_from_data": "advisor.scenario.read",
    "scenario_from_text": "advisor.scenario.read",
    "save_scenario": "advisor.scenario.write",
    "scenario_to_data": "advisor.scenario.write",
    "write_atomic": "advisor.scenario.write",
}

__all__ = [
    "DEFAULT_LIMITS",
    "ScenarioError",
    "ScenarioLimits",
    "load_scenario",
    "parse_text",
    "save_scenario",
    "scenario_from_data",
    "scenario_from_text",
    "scenario_to_data",
    "write_atomic",
]


if not TYPE_CHECKING:  # mypy reads the imports above, and still refuses any other name

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        globals()[name] = value  # once: later lookups find it without this call
        return value
