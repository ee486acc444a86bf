"""Scenario files (docs/design.md §4): the advisor's and the exporter's offline input, and
what `snapshot` and `replay --write-scenario` write.

- `parse`: the text to plain data, within bounds (size, depth, values, numbers);
- `strict`: the typed checks every reader makes, each failure one `errors.ScenarioError`
  line naming the file, the path inside it and the problem;
- `fit`: the keys of the rest of the node (§9.1), read and written;
- `profile`: the `scheduler:` block, each profile's defaults, and retargeting a cluster;
- `read`: the data to a `Cluster`, cross-checked (`load_scenario`, `scenario_from_data`);
- `write`: a `Cluster` to the data the reader accepts, written atomically.
"""

from __future__ import annotations

from advisor.defaults import DEFAULT_LIMITS, ScenarioLimits
from advisor.scenario.errors import ScenarioError
from advisor.scenario.parse import parse_text
from advisor.scenario.read import load_scenario, scenario_from_data
from advisor.scenario.write import save_scenario, scenario_to_data, write_atomic

__all__ = [
    "DEFAULT_LIMITS",
    "ScenarioError",
    "ScenarioLimits",
    "load_scenario",
    "parse_text",
    "save_scenario",
    "scenario_from_data",
    "scenario_to_data",
    "write_atomic",
]
