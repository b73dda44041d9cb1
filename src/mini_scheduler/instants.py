"""Instants as the scheduler writes and reads them: UTC, ISO 8601, to the second or the
millisecond. A module of its own so that cron.yaml's reader and the model both use it."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_seconds(moment: datetime) -> str:
    """``2026-11-30T14:00:00Z``: a UTC instant to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_millis(moment: datetime) -> str:
    """``2026-11-30T14:00:00.123Z``: a UTC instant to the millisecond."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def firing_id(job: str, instant: str) -> str:
    """A firing's id, ``<job>@<instant>`` (``instant`` as :func:`iso_seconds` writes a scheduled
    one, or a manual run's ``manual-...``): where :class:`~mini_scheduler.model.Firing` and
    the modules it cannot be imported by write it alike."""
    return f"{job}@{instant}"


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant with a zone (``Z`` or an offset) as an aware UTC datetime."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        raise ValueError(f"{text[:60]!r} has no time zone; write it in UTC with a trailing Z")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text[:60]!r} is out of range: its UTC time is past year 9999") from None
