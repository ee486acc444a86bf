"""The scheduler core: a pure model of the cluster's GPU scheduler (docs/design.md §1–§3, §9)."""
