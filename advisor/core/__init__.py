"""The scheduler core: a pure model of multi-card even-split vGPU scheduling (docs/design.md §1–§3)."""
