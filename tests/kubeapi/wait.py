"""Polling for a condition that a background task makes true (no fixed sleeps in tests):
`eventually` of tests/wait.py, kept here for the API double's users."""

from __future__ import annotations

from tests.wait import eventually

__all__ = ["eventually"]
