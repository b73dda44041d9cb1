"""What a dry run of a tick reports (``mini-scheduler tick``): the actions of its executor.

:func:`report` reads them off what the tick did on the predicting store and the dispatcher
that noted its firings: each firing dispatched (and when), recorded SKIPPED (and why), a skipped
range, a run timed out, taken over or failed, a claim or skip a record already had; and the
firings the plans leave alone (standby, paused), for which a tick writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import BACKFILL, BUFFER, SCHEDULE, ClaimResult, Control, Deferred
from mini_scheduler.claims.predicting import PredictingClaimStore, Written
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.jobs import CronFile
from mini_scheduler.jobs.spread import planned_in
from mini_scheduler.model import Firing, firing_from_id, iso_seconds
from mini_scheduler.tick.plan import Dispatch, TickPlan
from mini_scheduler.tick.report import TickSummary

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
CANCEL = "cancel"  # an open run stopped by a later firing (overlap: cancel_other)
WAIT = "wait"  # kept waiting for the job's open run to end (overlap: buffer_one, buffer_all)


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
        optional = {
            "firingId": self.firing_id,
            "service": self.service,
            "at": iso_seconds(self.at) if self.at else None,
            "reason": self.reason,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
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
class DryRun:
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
    plan: TickPlan | None = None

    @property
    def mode(self) -> str:
        return self.summary.mode

    def to_json(self) -> dict[str, Any]:
        return {
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


def report(
    cron_file: CronFile,
    plans: list[TickPlan],
    store: PredictingClaimStore,
    dispatched: Sequence[tuple[str, datetime]],
    began: datetime,
) -> tuple[Action, ...]:
    """The actions of a dry run whose plans are ``plans`` (the tick's, then its shards'), in
    the order of their firings."""
    return _Report(cron_file, plans, store, began).actions(dispatched)


@dataclass
class _Report:
    """The actions of a dry run: what the executor wrote, and dispatched, on the predicting
    store; and the firings the plans left alone (standby, paused), for which it writes
    nothing."""

    cron_file: CronFile
    plans: list[TickPlan]
    store: PredictingClaimStore
    began: datetime
    found: list[Action] = field(default_factory=list)
    planned: dict[str, Dispatch] = field(default_factory=dict)  # by firing id
    services: dict[str, str] = field(default_factory=dict)  # by job (runtime schedules too)
    unrunnable: dict[str, str] = field(default_factory=dict)  # runs the sweep fails, and why

    def __post_init__(self) -> None:
        self.start = self.plans[0].window[0]
        for p in self.plans:
            for d in (*p.dispatches, *(d for group in p.misfire_runs for d in group)):
                self.planned[d.firing.id] = d
            self.services.update((s.job.name, s.job.service) for s in p.skips)
            self.unrunnable.update((run.firing_id, why) for run, why in p.sweep.fails)
        self.services.update((d.job.name, d.job.service) for d in self.planned.values())
        self.services.update((job.name, job.service) for job in self.cron_file.jobs)

    def actions(self, dispatched: Sequence[tuple[str, datetime]]) -> tuple[Action, ...]:
        taken = set()
        for w in list(self.store.writes):
            if w.kind == "take_over" and w.answer:
                taken.add(w.about)
            self._written(w)
        for firing_id, at in dispatched:
            if firing_id not in taken:
                self._dispatched(firing_id, at)
        for plan in self.plans:
            self._left_alone(plan)
        return tuple(sorted(self.found, key=lambda a: (a.scheduled, a.job, a.kind)))

    def _service(self, job: str) -> str | None:
        return self.services.get(job)

    def _add(
        self, kind: str, firing_id: str | None, job: str, scheduled: datetime, **fields: Any
    ) -> None:
        fields.setdefault("service", self._service(job))
        self.found.append(Action(kind, job, scheduled, firing_id, **fields))

    def _written(self, w: Written) -> None:
        firing = firing_from_id(w.about) if "@" in w.about else None
        if firing is None:
            return
        missed = firing.scheduled < self.start
        if w.kind == "claim" and w.answer is ClaimResult.LOST:
            self._already(w.about)
        elif w.kind in ("buffer", "claim") and w.answer in (True, ClaimResult.OVERLAP):
            self._waits(w, firing, missed)
        elif w.kind == "record_skipped" and w.answer:
            reason = str(w.detail["reason"])
            self._add(SKIP, w.about, firing.job, firing.scheduled, reason=reason, misfire=missed)
        elif w.kind == "record_skipped" and not w.answer:
            self._already(w.about)
        elif w.kind == "record_skipped_range" and w.answer is not False:
            self._add(
                SKIP_RANGE,
                None,
                firing.job,
                w.detail["first"],
                reason=str(w.detail["reason"]),
                until=w.detail["last"],
                count=w.detail["count"],
                misfire=True,
            )
        elif w.kind == "time_out" and w.answer:
            self._run(TIME_OUT, w.about, "no completion event before the job's timeout")
        elif w.kind == "take_over" and w.answer:
            self._run(TAKE_OVER, w.about, "claimed but not dispatched within the lease")
        elif w.kind == "close" and w.answer is not None:  # a tick closes a run to cancel it
            self._run(CANCEL, w.about, "stopped: a later firing cancels it (overlap: cancel_other)")
        elif w.kind == "fail" and w.about in self.unrunnable:
            self._run(FAIL, w.about, f"not dispatched: {self.unrunnable[w.about]}", service=False)

    def _waits(self, w: Written, firing: Firing, missed: bool) -> None:
        """A firing kept waiting (``buffer``), or a waiting one whose claim found the run it
        waits for still open."""
        planned = self.planned.get(w.about)
        if w.kind == "buffer":
            reason = "its previous run has not ended: it starts when that run ends"
        elif planned is not None and planned.deferred is not None and _waited(planned):
            reason = "still waits: its previous run has not ended"
        else:
            return  # a refused claim of a job that skips: its skip is the action
        self._add(WAIT, w.about, firing.job, firing.scheduled, reason=reason, misfire=missed)

    def _already(self, firing_id: str) -> None:
        firing = firing_from_id(firing_id)
        known = self.store.run(firing_id)
        status = known.status if known is not None else "by a peer"
        self._add(
            ALREADY_RECORDED,
            firing_id,
            firing.job,
            firing.scheduled,
            reason=f"already recorded {status}",
            misfire=firing.scheduled < self.start,
        )

    def _run(self, kind: str, firing_id: str, reason: str, *, service: bool = True) -> None:
        run = self.store.run(firing_id)
        firing = firing_from_id(firing_id)
        scheduled = firing_scheduled(run) if run is not None else firing.scheduled
        job = firing.job
        self._add(
            kind,
            firing_id,
            job,
            scheduled,
            reason=reason,
            service=self._service(job) if service else None,
        )

    def _dispatched(self, firing_id: str, at: datetime) -> None:
        firing = firing_from_id(firing_id)
        planned = self.planned.get(firing_id)
        deferred = planned.deferred if planned is not None else None
        instant = planned.held_at if planned is not None else firing.scheduled
        missed = deferred is None and instant < self.start
        if planned is not None:  # at its second, or at once (the noted instant can lag that)
            at = max(planned.due, self.began)
        reasons = [] if planned is None or missed else [_spread_reason(planned)]
        if deferred is not None:
            reasons.append(_deferred_reason(deferred, firing))
        elif self.cron_file.deferred_start and not missed:
            reasons.append("plus a random 0-9 s delay (deferred.start)")
        reason = "; ".join(r for r in reasons if r) or None
        self._add(
            DISPATCH, firing_id, firing.job, firing.scheduled, at=at, misfire=missed, reason=reason
        )

    def _left_alone(self, plan: TickPlan) -> None:
        start, end = plan.window
        begin = max(plan.handled or start, start)
        for left in plan.left_alone:
            job = left.job
            if left.pause is None:
                kind, since = STANDBY, begin
                reason = (
                    f"the active environment is {plan.active_environment}, "
                    f"this instance is {plan.environment}"
                )
            else:
                kind, since = PAUSED, plan.handled or start
                reason = f"paused by {left.pause.operator}"
            for at, planned in planned_in(job, since, end):
                self._add(
                    kind,
                    Firing(job.name, at).id,
                    job.name,
                    at,
                    reason=reason,
                    misfire=planned < start,
                )


def paused_jobs(plan: TickPlan, control: Control, cron_file: CronFile) -> tuple[Paused, ...]:
    """Every paused job of the cron file, with the firings the tick would leave alone."""
    start, end = plan.window
    ran = not plan.failed_closed and not plan.already_handled
    paused = []
    for job in cron_file.jobs:
        pause = control.paused.get(job.name)
        if pause is None or not job.enabled:
            continue
        since = plan.handled or start
        due = sum(1 for _ in planned_in(job, since, end)) if ran else 0
        paused.append(Paused(job.name, pause.operator, pause.at, due))
    return tuple(paused)


def firing_scheduled(run: RunRecord) -> datetime:
    """The instant a run record's firing was scheduled (a manual run: when it was asked for)."""
    return datetime.fromisoformat(run.scheduled_time.replace("Z", "+00:00"))


def _waited(d: Dispatch) -> bool:
    return d.deferred is not None and d.deferred.reason == BUFFER and d.job.buffer_limit > 0


def _spread_reason(planned: Dispatch) -> str:
    """How a job's ``jitter`` or ``window`` placed a firing, as the dry run says it ("" when
    it has neither)."""
    job, at = planned.job, planned.planned
    if at is None or not job.spread_seconds:
        return ""
    span = f"jitter {job.jitter} s" if job.jitter else f"window {job.window} min"
    late = int((at - planned.firing.scheduled).total_seconds())
    return f"planned at {iso_seconds(at)} by its {span} (+{late} s)"


def _deferred_reason(deferred: Deferred, firing: Firing) -> str:
    """Why a deferred firing is in the plan, as the dry run says it."""
    if deferred.reason == BACKFILL:
        return f"backfill {deferred.detail.get('backfill', '')}".rstrip()
    if deferred.reason == SCHEDULE:
        return "runtime schedule"
    if deferred.reason == BUFFER:
        return "waited: its previous run has ended"
    return f"{deferred.reason}, attempt {firing.attempt}"
