"""A dry run of one tick: what the minute would claim, dispatch and skip, with nothing written.

The plan comes from the real :class:`~mini_scheduler.ticker.Ticker`, so it follows the same
rules (window, watermark, misfire and overlap policies, the sweep) and cannot drift from them.
The ticker runs on three stand-ins:

* :class:`DryRunClaimStore` reads the real store (the watermark and pauses, existing run records,
  the open runs past their deadline) and answers every write as the real store would, remembering
  it instead of writing it;
* :class:`RecordingDispatcher` notes each dispatch and the instant it would happen;
* a :class:`~mini_scheduler.clock.FixedClock`, so the firings later in the minute are "waited
  for" at once.

The active-environment store is only read. The ticker's own log lines, which describe the
actions as done, are captured into the plan rather than printed.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import (
    ClaimResult,
    ClaimStore,
    Control,
    JobStart,
    JobState,
    Redrive,
    RunRecord,
)
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.base import EnvironmentStore
from mini_scheduler.jobs import CronFile, Job, Target
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import Firing, RunStatus, floor_minute, iso_seconds
from mini_scheduler.ticker import Ticker, TickSummary

__all__ = [
    "Action",
    "DryRunClaimStore",
    "Paused",
    "RecordingDispatcher",
    "TickPlan",
    "plan_tick",
]

# Actions, in the words the CLI prints.
DISPATCH = "dispatch"
SKIP = "skip"
SKIP_RANGE = "skip-range"
ALREADY_RECORDED = "already-recorded"
STANDBY = "standby"
PAUSED = "paused"
TIME_OUT = "time-out"
TAKE_OVER = "take-over"
FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Action:
    """One thing the tick would do (or leave alone) for one firing."""

    kind: str
    job: str
    scheduled: datetime
    firing_id: str | None = None
    at: datetime | None = None  # when a dispatch would happen
    service: str | None = None
    reason: str | None = None
    until: datetime | None = None  # a skipped range: its last firing
    count: int = 1
    misfire: bool = False  # scheduled before the tick's window

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "job": self.job,
            "action": self.kind,
            "scheduledTime": iso_seconds(self.scheduled),
        }
        if self.firing_id is not None:
            out["firingId"] = self.firing_id
        if self.service is not None:
            out["service"] = self.service
        if self.at is not None:
            out["at"] = iso_seconds(self.at)
        if self.reason is not None:
            out["reason"] = self.reason
        if self.until is not None:
            out["until"] = iso_seconds(self.until)
            out["count"] = self.count
        if self.misfire:
            out["misfire"] = True
        return out


@dataclass(frozen=True, slots=True)
class Paused:
    job: str
    operator: str
    at: datetime | None
    firings: int  # due in [watermark, window end): what the tick would leave alone


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What a tick of ``minute`` would do, and what it read to decide."""

    minute: datetime
    window: tuple[datetime, datetime]
    region: str
    summary: TickSummary
    watermark: datetime | None
    watermark_after: datetime | None  # None: the watermark would not move
    actions: tuple[Action, ...]
    paused: tuple[Paused, ...]
    disabled: tuple[str, ...]
    log: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        return self.summary.mode

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dryRun": True,
            "region": self.region,
            **self.summary.to_json(),
            "watermark": iso_seconds(self.watermark) if self.watermark else None,
            "watermarkAfter": iso_seconds(self.watermark_after) if self.watermark_after else None,
            "actions": [action.to_json() for action in self.actions],
            "paused": [
                {
                    "job": p.job,
                    "operator": p.operator,
                    "pausedAt": iso_seconds(p.at) if p.at else None,
                    "firings": p.firings,
                }
                for p in self.paused
            ],
            "disabled": list(self.disabled),
            "log": list(self.log),
        }
        return out


class RecordingDispatcher:
    """A dispatcher that notes what it is handed, and when, and sends nothing."""

    def __init__(self, clock: FixedClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.calls: list[tuple[Target, str, dict[str, Any], datetime]] = []

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        with self._lock:
            self.calls.append((target, firing_id, dict(payload), self._clock.now()))
        return f"dry-run:{target.service}"


class DryRunClaimStore:
    """Reads through to ``store``; every write is answered as the store would answer it and
    remembered in :attr:`writes`, never sent. Thread-safe (the ticker claims concurrently)."""

    def __init__(self, store: ClaimStore) -> None:
        self._store = store
        self.name = f"dry-run of {store.name}"
        self._lock = threading.Lock()
        self._records: dict[str, RunStatus] = {}  # firing id -> the status it would have
        self._slots: dict[str, str | None] = {}  # job -> open firing (overlap: skip)
        self.writes: list[tuple[str, Any]] = []
        self.control_read: Control | None = None
        self.existing: dict[str, RunRecord] = {}  # records found when claiming

    def _note(self, what: str, detail: Any) -> None:
        with self._lock:
            self.writes.append((what, detail))

    def _known(self, firing_id: str) -> RunStatus | None:
        with self._lock:
            if firing_id in self._records:
                return self._records[firing_id]
        found = self._store.run(firing_id)
        if found is None:
            return None
        with self._lock:
            self.existing[firing_id] = found
        return found.status

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
    ) -> ClaimResult:
        if self._known(firing.id) is not None:
            return ClaimResult.LOST
        if exclusive:
            with self._lock:
                known = firing.job in self._slots
                slot = self._slots.get(firing.job)
            if not known:
                state = self._store.job_state(firing.job)
                slot = state.open_firing if state is not None else None
            if slot not in (None, firing.id):
                with self._lock:
                    self._slots.setdefault(firing.job, slot)
                return ClaimResult.OVERLAP
            with self._lock:
                self._slots[firing.job] = firing.id
        with self._lock:
            self._records[firing.id] = RunStatus.CLAIMED
        self._note("claim", firing.id)
        return ClaimResult.WON

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        self._note("take_over", run)
        return True

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        with self._lock:
            self._records[firing.id] = RunStatus.DISPATCHED
        self._note("mark_dispatched", firing.id)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        with self._lock:
            self._records[firing.id] = RunStatus.FAILED
        self._note("fail", (firing, error))

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        if self._known(firing.id) is not None:
            return False
        with self._lock:
            self._records[firing.id] = RunStatus.SKIPPED
        self._note("skip", (firing, reason))
        return True

    def record_skipped_range(
        self,
        job: str,
        first: datetime,
        last: datetime,
        count: int,
        *,
        now: datetime,
        reason: str,
        origin: str,
    ) -> bool:
        if self._known(Firing(job, first).id) is not None:
            return False  # keyed by its first firing, which has a record: nothing written
        self._note("skip_range", (job, first, last, count, reason))
        return True

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        raise NotImplementedError("a tick never closes a run")

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        raise NotImplementedError("a tick never records a redrive")

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        self._note("time_out", run)
        return True

    def due_runs(self, now: datetime, limit: int = 1000) -> Sequence[RunRecord]:
        return self._store.due_runs(now, limit)

    def run(self, firing_id: str) -> RunRecord | None:
        return self._store.run(firing_id)

    def history(self, job: str, limit: int = 20) -> Sequence[RunRecord]:
        return self._store.history(job, limit)

    def job_state(self, job: str) -> JobState | None:
        return self._store.job_state(job)

    def control(self, scope: str) -> Control:
        control = self._store.control(scope)
        with self._lock:
            self.control_read = control
        return control

    def advance_watermark(self, scope: str, to: datetime) -> None:
        self._note("watermark", to)

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        raise NotImplementedError("a tick never pauses a job")


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


@contextmanager
def package_logs(handler: logging.Handler | None, level: int = logging.INFO) -> Iterator[None]:
    """Route the package's log records (``mini_scheduler.*``) to ``handler`` alone, or with
    None to the root logger's handlers, whatever a Lambda runtime set up on its loggers
    (Powertools gives each its own handler and stops propagation); restored afterwards."""
    manager = logging.root.manager
    package = logging.getLogger("mini_scheduler")
    children = [
        logger
        for name, logger in list(manager.loggerDict.items())
        if name.startswith("mini_scheduler.") and isinstance(logger, logging.Logger)
    ]
    saved = [(lg, list(lg.handlers), lg.propagate, lg.level) for lg in (package, *children)]
    for logger in children:
        logger.handlers = []
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    package.handlers = [handler] if handler is not None else []
    package.propagate = handler is None
    package.setLevel(level)
    try:
        yield
    finally:
        for logger, handlers, propagate, was in saved:
            logger.handlers = handlers
            logger.propagate = propagate
            logger.setLevel(was)


def _firings_between(job: Job, start: datetime, end: datetime) -> list[datetime]:
    return list(job.expression.firings(start, end, job.tz)) if start < end else []


def plan_tick(
    minute: datetime,
    *,
    settings: Settings,
    cron: Callable[[], CronFile],
    claims: ClaimStore,
    environment: EnvironmentStore,
    now: datetime,
    rng: random.Random | None = None,
) -> TickPlan:
    """What a tick of ``minute`` would do if it ran at ``now``; nothing is written.

    Reads the cron file, the active-environment store, the watermark and pauses, the records of
    the firings due, and the open runs past their deadline.
    """
    minute = floor_minute(minute)
    loaded: list[CronFile] = []

    def read_cron() -> CronFile:
        cron_file = cron()
        loaded.append(cron_file)
        return cron_file

    clock = FixedClock(max(now, minute))
    began = clock.now()
    dry = DryRunClaimStore(claims)
    dispatcher = RecordingDispatcher(clock)
    ticker = Ticker(
        settings=settings,
        cron=read_cron,
        claims=dry,
        environment=ActiveEnvironment(environment, settings.environment_name),
        dispatchers=Dispatchers({"lambda": dispatcher, "flow": dispatcher}),
        clock=clock,
        metrics=RecordingMetrics(),
        rng=rng,
    )
    capture = _Capture()
    with package_logs(capture):  # the ticker's lines describe the actions as done
        summary = ticker.tick(minute)
    lines = capture.lines
    cron_file = loaded[-1]
    start, end = summary.window
    control = dry.control_read
    watermark = control.watermark if control is not None else None
    begin = max(watermark or start, start)
    jobs = [job for job in cron_file.jobs if job.enabled]
    actions: list[Action] = []

    def service(job_name: str) -> str | None:
        job = cron_file.job(job_name)
        return job.service if job is not None else None

    taken_over = {run.firing_id for what, run in dry.writes if what == "take_over"}
    for target, firing_id, body, _ in dispatcher.calls:
        if firing_id in taken_over:
            continue  # shown as its take-over
        firing_job = str(body["job"])
        scheduled = datetime.fromisoformat(str(body["scheduledTime"]).replace("Z", "+00:00"))
        actions.append(
            Action(
                DISPATCH,
                firing_job,
                scheduled,
                firing_id,
                at=max(scheduled, began),  # at its second, or at once when that has passed
                service=target.service,
                reason="plus a random 0-9 s delay (deferred.start)"
                if cron_file.deferred_start and scheduled >= start
                else None,
                misfire=scheduled < start,
            )
        )
    for what, detail in dry.writes:
        if what == "skip":
            firing, reason = detail
            actions.append(
                Action(
                    SKIP,
                    firing.job,
                    firing.scheduled,
                    firing.id,
                    service=service(firing.job),
                    reason=reason,
                    misfire=firing.scheduled < start,
                )
            )
        elif what == "skip_range":
            job_name, first, last, count, reason = detail
            actions.append(
                Action(
                    SKIP_RANGE,
                    job_name,
                    first,
                    service=service(job_name),
                    reason=reason,
                    until=last,
                    count=count,
                    misfire=True,
                )
            )
        elif what in ("time_out", "take_over"):
            run: RunRecord = detail
            actions.append(
                Action(
                    TIME_OUT if what == "time_out" else TAKE_OVER,
                    run.job,
                    firing_scheduled(run),
                    run.firing_id,
                    service=service(run.job),
                    reason=(
                        "no completion event before the job's timeout"
                        if what == "time_out"
                        else "claimed but not dispatched within the lease"
                    ),
                )
            )
        elif what == "fail":
            firing, error = detail
            actions.append(Action(FAIL, firing.job, firing.scheduled, firing.id, reason=str(error)))
    for firing_id, record in sorted(dry.existing.items()):
        actions.append(
            Action(
                ALREADY_RECORDED,
                record.job,
                firing_scheduled(record),
                firing_id,
                service=service(record.job),
                reason=f"already recorded {record.status}",
                misfire=firing_scheduled(record) < start,
            )
        )

    paused_jobs = dict(control.paused) if control is not None else {}
    if summary.mode == "standby" and summary.active_environment is not None:
        for job in jobs:
            if job.name in paused_jobs:
                continue
            actions.extend(
                Action(
                    STANDBY,
                    job.name,
                    at,
                    Firing(job.name, at).id,
                    service=job.service,
                    reason=(
                        f"the active environment is {summary.active_environment}, "
                        f"this instance is {summary.environment}"
                    ),
                )
                for at in _firings_between(job, begin, end)
            )
    paused: list[Paused] = []
    ran = summary.active_environment is not None and not (watermark and watermark >= end)
    for job in jobs:
        pause = paused_jobs.get(job.name)
        if pause is None:
            continue
        due = _firings_between(job, watermark or start, end) if ran else []
        paused.append(Paused(job.name, pause.operator, pause.at, len(due)))
        if summary.mode == "active":
            actions.extend(
                Action(
                    PAUSED,
                    job.name,
                    at,
                    Firing(job.name, at).id,
                    service=job.service,
                    reason=f"paused by {pause.operator}",
                    misfire=at < start,
                )
                for at in due
            )
    actions.sort(key=lambda a: (a.scheduled, a.job, a.kind))
    moved = [to for what, to in dry.writes if what == "watermark"]
    return TickPlan(
        minute=minute,
        window=(start, end),
        region=settings.region,
        summary=summary,
        watermark=watermark,
        watermark_after=max(moved) if moved else None,
        actions=tuple(actions),
        paused=tuple(paused),
        disabled=tuple(job.name for job in cron_file.jobs if not job.enabled),
        log=tuple(lines),
    )


def firing_scheduled(run: RunRecord) -> datetime:
    """The instant a run record's firing was scheduled (a manual run: when it was asked for)."""
    text = run.scheduled_time.replace("Z", "+00:00")
    return datetime.fromisoformat(text)
