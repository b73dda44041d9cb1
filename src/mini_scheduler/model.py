"""The scheduler's vocabulary: firings, their ids, run statuses and the dispatch payload."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from mini_scheduler.instants import firing_id
from mini_scheduler.instants import iso_millis as iso_millis
from mini_scheduler.instants import iso_seconds as iso_seconds
from mini_scheduler.instants import parse_instant as parse_instant
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
    PAUSED = "paused"  # a paused one-time schedule's firing: it has no later one
    ELSEWHERE = "elsewhere"  # a waiting firing another region ran, or may have run
    BUFFER_FULL = "buffer_full"  # overlap buffer_*: as many firings as the job keeps are waiting


def floor_minute(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


_MANUAL = re.compile(
    r"manual-(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)-(?P<nonce>[0-9a-f]{8})"
)


MAX_ATTEMPT = 99
"""The highest attempt a firing's id can name (a job's ``retry.retries`` is at most 20)."""


@dataclass(frozen=True, slots=True)
class Firing:
    """One firing of a job: scheduled by the cron statement, or run by hand; ``attempt`` 2 and
    on are its retries, each a run (and a claim) of its own."""

    job: str
    scheduled: datetime  # aware UTC; for a manual run, the instant it was asked for
    manual: bool = False
    nonce: str = ""  # 8 hex digits for a manual run
    operator: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    attempt: int = 1
    backfill: bool = False  # a past firing run again on an operator's backfill
    reruns: str | None = None  # a manual run's only: the firing id of the firing it repeats
    operator_reason: str | None = None  # a manual run's only: the operator's --reason
    # Made on first use and kept: a tick reads a firing's id about ten times (its claim, its
    # payload, log lines, its mark), each a strftime (make bench).
    _scheduled_time: str = field(default="", init=False, repr=False, compare=False)
    _firing_id: str = field(default="", init=False, repr=False, compare=False)
    _sort_key: str = field(default="", init=False, repr=False, compare=False)

    @classmethod
    def manual_run(
        cls,
        job: str,
        at: datetime,
        operator: str,
        parameters: Mapping[str, Any],
        nonce: str | None = None,
        reruns: str | None = None,
        operator_reason: str | None = None,
    ) -> Firing:
        """A manual run asked for ``at``; with ``reruns``, a firing run again (its target is
        sent that firing's ``scheduledTime``: :func:`payload`)."""
        return cls(
            job,
            at.astimezone(UTC),
            True,
            nonce or secrets.token_hex(4),
            operator,
            parameters,
            reruns=reruns,
            operator_reason=operator_reason,
        )

    @property
    def firing_id(self) -> str:
        """``<job>@<scheduled UTC instant>``, or ``<job>@manual-<instant with ms>-<8 hex>``:
        a manual run's id can never equal a scheduled one. Every attempt of a firing has the
        same: it is the ``firingId`` a target receives (and deduplicates on)."""
        found = self._firing_id
        if not found:
            if self.manual:
                found = firing_id(self.job, f"manual-{self.scheduled_time}-{self.nonce}")
            else:
                found = firing_id(self.job, self.scheduled_time)
            object.__setattr__(self, "_firing_id", found)  # frozen: set once, always the same
        return found

    @property
    def id(self) -> str:
        """The run's id, what it is claimed and recorded by: the firing id, then ``#<attempt>``
        from the second attempt on."""
        if self.attempt == 1:
            return self.firing_id
        return f"{self.firing_id}#{self.attempt}"

    @property
    def sort_key(self) -> str:
        """The run record's sort key: time first, so a job's history sorts newest first, each
        firing's attempts together (the latest first)."""
        key = self._sort_key
        if not key:
            key = iso_millis(self.scheduled)
            if self.manual:
                key = f"{key}#manual-{self.nonce}"
            if self.attempt > 1:
                key = f"{key}#attempt-{self.attempt:02d}"
            object.__setattr__(self, "_sort_key", key)
        return key

    def retry(self) -> Firing:
        """The firing's next attempt."""
        if self.attempt >= MAX_ATTEMPT:
            raise ValueError(f"{self.id} is attempt {self.attempt}: no attempt follows it")
        return replace(self, attempt=self.attempt + 1)

    @property
    def scheduled_time(self) -> str:
        found = self._scheduled_time
        if not found:
            found = iso_millis(self.scheduled) if self.manual else iso_seconds(self.scheduled)
            object.__setattr__(self, "_scheduled_time", found)
        return found


def firing_from_id(firing_id: str) -> Firing:
    """The firing a firing id or a run's id names (``#<attempt>`` after it, 2 and on; a
    ValueError when it is not one of ours)."""
    job, sep, rest = firing_id.rpartition("@")
    if not sep or not job:
        raise ValueError(f"{firing_id[:100]!r} is not a firing id (<job>@<instant>)")
    rest, marked, number = rest.partition("#")
    attempt = attempt_number(number) if marked else 1
    if attempt is None or (marked and attempt < 2):
        raise ValueError(f"{firing_id[:100]!r} names no attempt (#2 to #{MAX_ATTEMPT})")
    manual = _MANUAL.fullmatch(rest)
    if manual:
        return Firing(job, parse_instant(manual["at"]), True, manual["nonce"], attempt=attempt)
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rest):
        raise ValueError(f"{firing_id[:100]!r} is not a firing id (<job>@<instant>)")
    return Firing(job, parse_instant(rest), attempt=attempt)


def attempt_number(value: Any) -> int | None:
    """An attempt, 1 to :data:`MAX_ATTEMPT`, from a payload's ``attempt`` or an id's digits
    (None when it is not one)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and value[0] != "0":
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPT:
        return None
    return value


def payload(
    firing: Firing, parameters: Mapping[str, Any], origin: str, planned: datetime | None = None
) -> dict[str, Any]:
    """What the target receives (the Lambda event, or the execution input); a parameter key
    that starts with ``_`` is reserved for the system and never sent (``split_reserved``). A
    rerun (a manual run with ``reruns``) carries the firing id it repeats as ``reruns`` and
    that firing's ``scheduledTime``: its own ``firingId`` is a manual run's. ``planned``, the
    instant a job's ``jitter`` or ``window`` started the firing at, is sent as
    ``plannedTime`` beside the firing's own ``scheduledTime``."""
    scheduled = firing.scheduled_time
    if firing.reruns is not None:
        scheduled = firing_from_id(firing.reruns).scheduled_time
    body: dict[str, Any] = {
        "job": firing.job,
        "firingId": firing.firing_id,
        "attempt": firing.attempt,
        "scheduledTime": scheduled,
    }
    if planned is not None:
        body["plannedTime"] = iso_seconds(planned)
    body |= {
        "origin": origin,
        "manual": firing.manual,
    }
    if firing.operator is not None:
        body["operator"] = firing.operator
    if firing.backfill:
        body["backfill"] = True
    if firing.reruns is not None:
        body["reruns"] = firing.reruns
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


FIRING_LINE = "firingLine"
"""The mark (a log record's key) of a firing's own line, written once for each firing: its
dispatch, and a run's end at INFO. On Lambda it goes without the invocation's keys, and a run's
end carries the invocation's metrics (handlers/_runtime.py); the mark itself is not written."""


def log_keys(
    job: str, firing_id: str | None = None, *, named: bool = False, **more: Any
) -> dict[str, Any]:
    """A job's log line's structured keys (JSON keys in the functions' logs), so a search can
    use them without parsing the message. ``named``: a firing's own line (:data:`FIRING_LINE`),
    whose message names the job and the firing: the keys do not repeat them, and the line is
    marked, which leaves out more on Lambda (docs/reference.md, "Log lines")."""
    if named:
        return {FIRING_LINE: True, **more}
    keys: dict[str, Any] = {"job": job, **more}
    if firing_id:
        keys["firingId"] = firing_id
    return keys
