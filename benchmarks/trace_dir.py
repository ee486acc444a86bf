"""Where the Alibaba openb trace (cluster-trace-gpu-v2023) is found, for tests and benchmarks.

It is not part of the repository (`make openb` fetches it). The places looked in, in order:
`$XGPU_OPENB_DIR`, the git-ignored `data/openb` folder inside the repository, and a
`shared/data/openb` folder beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODES_CSV = "openb_node_list_gpu_node.csv"


def candidates() -> list[Path]:
    places = [REPO / "data" / "openb", REPO.parent / "shared" / "data" / "openb"]
    chosen = os.environ.get("XGPU_OPENB_DIR")
    return [Path(chosen), *places] if chosen else places


def find_openb() -> Path | None:
    """The first place holding the trace's node list, or None."""
    return next((p for p in candidates() if (p / NODES_CSV).is_file()), None)


def not_found() -> str:
    looked = ", ".join(str(p) for p in candidates())
    return f"openb trace not found (looked in {looked}; set XGPU_OPENB_DIR)"
