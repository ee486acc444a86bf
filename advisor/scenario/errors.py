"""The scenario's input error, a kind of `advisor.errors.InputError` (exit 2): what every
reader of the format raises, from the text's bounds to the last cross-check."""

from __future__ import annotations

from advisor.errors import InputError


class ScenarioError(InputError):
    """Bad scenario input: str() is 'FILE: PATH: PROBLEM'."""
