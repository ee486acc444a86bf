"""The scheduler core: a pure model of multi-card even-split vGPU scheduling (DESIGN.md §1–§3)."""
