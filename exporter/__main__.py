"""`python -m exporter`: the same as the `xgpu-exporter` console script."""

from __future__ import annotations

import sys

from exporter.cli import main

sys.exit(main())
