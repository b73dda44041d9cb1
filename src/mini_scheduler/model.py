"""The scheduler's vocabulary: firings, their ids, run statuses and the dispatch payload."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from mini_scheduler.jobs.limits import split_reserved

_SECOND = timedelta(seconds=1)


class RunStatus(StrEnum):
    CLAIMED = "CLAIMED"
    DISPATCHED = "DISPATCHED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    SKIPPED = "SKIPPED"

    @property
    def open(self) -> bool:
        return self in (RunStatus.CLAIMED, RunStatus.DISPATCHED)


class SkipReason(StrEnum):
    """Why a firing was recorded SKIPPED (also the metric and count names)."""

    MISFIRE = "misfire"
    MISFIRE_MAX = "misfire_max"
    MISFIRE_GRACE = "misfire_grace"
    OVERLAP = "overlap"


def iso_seconds(moment: datetime) -> str:
    """``2026-11-30T14:00:00Z``: a UTC instant to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_millis(moment: datetime) -> str:
    """``2026-11-30T14:00:00.123Z``: a UTC instant to the millisecond."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant with a zone (``Z`` or an offset) as an aware UTC datetime."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        raise ValueError(f"{text[:60]!r} has no time zone; write it in UTC with a trailing Z")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text[:60]!r} is out of range: its UTC time is past year 9999") from None


def floor_minute(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


_MANUAL = re.compile(
    r"manual-(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)-(?P<nonce>[0-9a-f]{8})"
)


@dataclass(frozen=True, slots=True)
class Firing:
    """One firing of a job: scheduled by the cron statement, or run by hand."""

    job: str
    scheduled: datetime  # aware UTC; for a manual run, the instant it was asked for
    manual: bool = False
    nonce: str = ""  # 8 hex digits for a manual run
    operator: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def manual_run(
        cls,
        job: str,
        at: datetime,
        operator: str,
        parameters: Mapping[str, Any],
        nonce: str | None = None,
    ) -> Firing:
        return cls(
            job, at.astimezone(UTC), True, nonce or secrets.token_hex(4), operator, parameters
        )

    @property
    def id(self) -> str:
        """``<job>@<scheduled UTC instant>``, or ``<job>@manual-<instant with ms>-<8 hex>``:
        a manual run's id can never equal a scheduled one."""
        if self.manual:
            return f"{self.job}@manual-{iso_millis(self.scheduled)}-{self.nonce}"
        return f"{self.job}@{iso_seconds(self.scheduled)}"

    @property
    def sort_key(self) -> str:
        """The run record's sort key: time first, so a job's history sorts newest first."""
        if self.manual:
            return f"{iso_millis(self.scheduled)}#manual-{self.nonce}"
        return iso_millis(self.scheduled)

    @property
    def scheduled_time(self) -> str:
        return iso_millis(self.scheduled) if self.manual else iso_seconds(self.scheduled)


def firing_from_id(firing_id: str) -> Firing:
    """The firing a firing id names (ValueError when it is not one of ours)."""
    job, sep, rest = firing_id.rpartition("@")
    if not sep or not job:
        raise ValueError(f"{firing_id[:100]!r} is not a firing id (<job>@<instant>)")
    manual = _MANUAL.fullmatch(rest)
    if manual:
        return Firing(job, parse_instant(manual["at"]), True, manual["nonce"])
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rest):
        raise ValueError(f"{firing_id[:100]!r} is not a firing id (<job>@<instant>)")
    return Firing(job, parse_instant(rest))


def payload(firing: Firing, parameters: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """What the target receives (the Lambda event, or the execution input); a parameter key
    that starts with ``_`` is reserved for the system and never sent (``split_reserved``)."""
    body: dict[str, Any] = {
        "job": firing.job,
        "firingId": firing.id,
        "scheduledTime": firing.scheduled_time,
        "origin": origin,
        "manual": firing.manual,
    }
    if firing.operator is not None:
        body["operator"] = firing.operator
    body["parameters"], _ = split_reserved(parameters)
    return body


_SFN_REFUSED = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")
_SFN_NAME_MAX = 80


def execution_name(firing_id: str) -> str:
    """A Step Functions execution name for a firing: the firing id with refused characters
    replaced (``:`` becomes ``-``). Past 80 characters the job's name is cut and marked ``..``
    (which no job name holds, so a cut name never reads as a firing id, nor equals an uncut
    one), and a short hash of the whole id follows the instant, so two firings never share a
    name: ``<job, cut>..@2026-11-30T14-00-00Z-<10 hex>`` keeps the instant (and a manual run's
    nonce) readable."""
    name = _SFN_REFUSED.sub("-", firing_id)
    if len(name) <= _SFN_NAME_MAX:
        return name
    digest = hashlib.sha256(firing_id.encode()).hexdigest()[:10]
    job, _, rest = name.rpartition("@")
    tail = f"@{rest}-{digest}"
    keep = _SFN_NAME_MAX - len(tail) - 2
    if not job or keep < 1:  # not a firing id of ours: keep its start and the hash
        return f"{name[: _SFN_NAME_MAX - len(digest) - 1]}-{digest}"
    return f"{job[:keep]}..{tail}"


def job_of(firing_id: str) -> str:
    return firing_id.rpartition("@")[0]


def log_keys(job: str, firing_id: str | None = None, **more: Any) -> dict[str, Any]:
    """A job's log line's structured keys (JSON keys in the functions' logs), so a search can
    use them without parsing the message."""
    keys: dict[str, Any] = {"job": job, **more}
    if firing_id:
        keys["firingId"] = firing_id
    return keys
