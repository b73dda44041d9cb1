"""A runtime schedule's entry read: the keys of a cron.yaml job (read by the same code,
:func:`~mini_scheduler.jobs.validate.read_entry`), or ``at`` (an instant, to the second) in
place of ``cron`` for a one-time schedule. An unknown key is refused here (a cron file only
warns: an API caller gets the error at once)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from mini_scheduler.errors import EventError
from mini_scheduler.jobs import Job
from mini_scheduler.jobs.validate import JOB_KEYS, Reading, read_entry, unknown_key
from mini_scheduler.model import iso_millis, iso_seconds, parse_instant

ENTRY_KEYS: Final = (*JOB_KEYS, "at")
_CRON_ONLY: Final = ("timezone", "start", "end", "misfire")


def at_statement(at: datetime) -> str:
    """The Quartz statement that selects the instant ``at`` (UTC) and nothing else."""
    at = at.astimezone(UTC)
    return f"{at.second} {at.minute} {at.hour} {at.day} {at.month} ? {at.year}"


def read_schedule(
    raw: object,
    *,
    default_zone: str,
    now: datetime,
    pools: Mapping[str, int] | None = None,
) -> tuple[Job, dict[str, Any], datetime]:
    """A runtime schedule's job, the entry to store (``timezone`` filled in, instants in UTC)
    and its first firing after ``now``; EventError naming every reason it cannot be one (an
    ``at`` not after ``now``, a cron schedule that never fires after it, a ``pool`` that
    ``pools``, the deployed cron.yaml's, does not define: None when the file is not at hand)."""
    if not isinstance(raw, Mapping):
        raise EventError(f"a schedule is a mapping of job keys, not {type(raw).__name__}")
    name = raw.get("name")
    label = f"schedule {name}" if isinstance(name, str) and name else "schedule"
    reasons = [
        unknown_key(label, key, ENTRY_KEYS)
        for key in raw
        if not isinstance(key, str) or key not in ENTRY_KEYS
    ]
    entry = {str(key): value for key, value in raw.items() if key in ENTRY_KEYS}
    if "at" in entry:
        reasons.extend(_one_time(entry, now))
    elif "cron" not in entry:
        reasons.append("missing cron (a cron statement) or at (an instant, for once)")
    if reasons:
        raise EventError(f"{label}: " + "; ".join(reasons))
    if "at" not in entry:
        entry.setdefault("timezone", default_zone)
        for key in ("start", "end"):
            entry[key] = _instant_text(entry.get(key))
    entry = {key: value for key, value in entry.items() if value is not None}
    job = schedule_job(entry, label, pools)
    if not job.enabled:
        raise EventError(f"{label}: enabled is false - delete the schedule instead")
    first = job.next_after(now)
    if first is None:
        raise EventError(
            f"{label}: {job.statement} @{job.zone} never fires after {iso_seconds(now)}"
            + (" and before its end" if job.end else "")
        )
    try:
        json.dumps(entry)
    except (TypeError, ValueError) as exc:
        raise EventError(f"{label}: parameters must be JSON values: {exc}") from None
    return job, entry, first


def _one_time(entry: dict[str, Any], now: datetime) -> list[str]:
    reasons = [
        f"{key} does not go with at (a one-time schedule)"
        for key in ("cron", *_CRON_ONLY)
        if entry.get(key) is not None
    ]
    value = entry["at"]
    try:
        at = value.astimezone(UTC) if isinstance(value, datetime) else parse_instant(str(value))
    except (ValueError, TypeError) as exc:
        return [
            *reasons,
            f"at {str(value)[:40]!r} is not an instant such as 2027-01-01T09:30:00Z: {exc}",
        ]
    if at.microsecond:
        reasons.append(f"at {iso_millis(at)} must be a whole second")
    elif at <= now:
        reasons.append(f"at {iso_seconds(at)} is not in the future (now {iso_seconds(now)})")
    entry["at"] = iso_seconds(at)
    return reasons


def _instant_text(value: object) -> object:
    """``start``/``end`` as stored: an instant in UTC to the second, or the value as given (for
    the entry's reader to refuse)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return iso_seconds(value)
    if isinstance(value, str):
        try:
            return iso_seconds(parse_instant(value))
        except ValueError:
            return value
    return value


def schedule_job(
    entry: Mapping[str, Any], label: str | None = None, pools: Mapping[str, int] | None = None
) -> Job:
    """The job of a stored runtime schedule's entry (EventError when it is not one: a stored
    entry that today's rules refuse). ``pools``: cron.yaml's, which a ``pool`` must name (None:
    not at hand, any well-formed name)."""
    name = entry.get("name")
    label = label or f"schedule {name}"
    raw: dict[str, Any] = dict(entry)
    at = raw.pop("at", None)
    if at is not None:
        raw["cron"] = at_statement(parse_instant(str(at)))
        raw["timezone"] = "UTC"
    found = read_entry(1, raw, (), Reading(str(raw.get("timezone") or "UTC"), pools=pools))
    problems = [*found.reasons, *found.notes]
    if found.job is None or problems:
        raise EventError(f"{label}: " + "; ".join(problems or ["not a job"]))
    return replace(found.job, runtime=dict(entry))
