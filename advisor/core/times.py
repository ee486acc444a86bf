"""RFC 3339 times as the Kubernetes API and the scenario write them: a leaf module, so that
reading a scenario needs nothing of the plans."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time (`2024-05-01T12:00:00Z`) as an aware datetime; None when unreadable."""
    text = text.strip()
    if len(text) < 16 or text[10] not in "Tt ":  # a date and a time, as RFC 3339 asks
        return None
    try:
        when = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def rfc3339(when: datetime) -> str:
    """`when` as RFC 3339, in UTC with a "Z" (a time without a zone is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")
