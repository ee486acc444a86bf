"""English for counts: "1 pod", "2 pods". Every message of both programs counts with these,
so that no output says "pod(s)"."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """ "1 plan", "2 plans": English for a count (nouns with a plain -s plural)."""
    return f"{count} {noun_for(count, noun)}"


def noun_for(count: int, noun: str) -> str:
    """The noun alone, in the number `count` asks for: "plan" for 1, "plans" otherwise."""
    return noun if count == 1 else f"{noun}s"
