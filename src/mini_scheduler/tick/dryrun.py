"""The dry run of a tick (``mini-scheduler tick``): the tick's own plan, shown, nothing written.

It reads what the tick reads (the cron file, the watermark and pauses, the active environment,
the open runs past their deadline), plans with :func:`~mini_scheduler.tick.plan.plan_tick`, and
describes the plan action by action. What only the writes would tell is looked up, read-only:
a firing that has a record already (the claim would lose), and the slot of an ``overlap: skip``
job that its previous run still holds. A plan that fans out is shown shard by shard.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import BACKFILL, SCHEDULE, ClaimStore, Control, Deferred
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.config import Settings
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.base import EnvironmentStore
from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.logs import Capture, package_logs
from mini_scheduler.model import Firing, RunStatus, SkipReason, floor_minute, iso_seconds, log_keys
from mini_scheduler.tick.lines import (
    DISPATCHED,
    NOT_DISPATCHED,
    SKIPPED,
    SKIPPED_OVERLAP,
    SKIPPED_RANGE,
    TAKEN_OVER,
    log_decisions,
)
from mini_scheduler.tick.plan import (
    Dispatch,
    Shard,
    TickInputs,
    TickPlan,
    plan_tick,
    reads_deferred,
    sweeps,
    window,
)
from mini_scheduler.tick.report import TickSummary

log = logging.getLogger("mini_scheduler.ticker")

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


def dry_run(
    minute: datetime,
    *,
    settings: Settings,
    cron: Callable[[], CronFile],
    claims: ClaimStore,
    environment: EnvironmentStore,
    now: datetime,
    rng: random.Random | None = None,
) -> DryRun:
    """What a tick of ``minute`` would do if it ran at ``now``; nothing is written."""
    minute = floor_minute(minute)
    capture = Capture()
    with package_logs(capture):  # the lines the tick would log, kept for --verbose
        cron_file = cron()
        cron_file.log(log)
        reading = ActiveEnvironment(
            environment, settings.environment_name, settings.known_environments
        ).read()
        control = claims.control(settings.origin)
        sweeping = sweeps(minute, control, reading, None, settings)
        due = claims.due_runs(now) if sweeping else ()
        reads = reads_deferred(sweeping, reading, settings)
        deferred = claims.due_deferred(window(minute, settings)[1]) if reads else ()
        inputs = TickInputs(
            minute, cron_file, control, reading, now, due, can_fan_out=True, deferred=deferred
        )
        first = plan_tick(inputs, settings, rng)
        plans = [first, *_shard_plans(first, inputs, claims, settings, rng)]
        for plan in plans:
            log_decisions(plan)
        describer = _Describer(cron_file, claims, max(now, minute))
        actions = describer.describe(plans)
        _log_actions(actions)
    return DryRun(
        minute=minute,
        window=first.window,
        region=settings.region,
        summary=_summary(first, plans, actions, describer.lost),
        watermark=first.handled,
        watermark_after=_watermark_after(first),
        actions=tuple(sorted(actions, key=lambda a: (a.scheduled, a.job, a.kind))),
        paused=_paused(first, control, cron_file),
        disabled=tuple(job.name for job in cron_file.jobs if not job.enabled),
        log=tuple(capture.lines),
        plan=first,
    )


def _log_actions(actions: Iterable[Action]) -> None:
    """The lines the tick would log for its writes, as it would word them."""
    for a in actions:
        keys = log_keys(a.job, a.firing_id)
        if a.kind == DISPATCH:
            log.info(DISPATCHED, a.job, a.service, a.firing_id, extra=keys)
        elif a.kind == SKIP and a.reason == SkipReason.OVERLAP:
            log.info(SKIPPED_OVERLAP, a.job, a.firing_id, extra=keys)
        elif a.kind == SKIP:
            log.info(SKIPPED, a.job, a.firing_id, a.reason, extra=keys)
        elif a.kind == SKIP_RANGE and a.until is not None:
            log.info(
                SKIPPED_RANGE,
                a.job,
                a.count,
                iso_seconds(a.scheduled),
                iso_seconds(a.until),
                a.reason,
                extra=keys,
            )
        elif a.kind == TAKE_OVER:
            log.warning(TAKEN_OVER, a.job, a.firing_id, extra=keys)
        elif a.kind == FAIL:
            why = (a.reason or "").removeprefix("not dispatched: ")
            log.error(NOT_DISPATCHED, a.job, a.firing_id, why, extra=keys)


def _shard_plans(
    plan: TickPlan,
    inputs: TickInputs,
    claims: ClaimStore,
    settings: Settings,
    rng: random.Random | None,
) -> list[TickPlan]:
    """The shards' plans when ``plan`` fans out (each reads its own watermark)."""
    plans = []
    for index in range(plan.fan_out):
        shard = Shard(index, plan.fan_out)
        control = claims.control(settings.origin + shard.suffix)
        shard_inputs = TickInputs(
            inputs.minute, inputs.cron_file, control, inputs.reading, inputs.now, (), shard
        )
        plans.append(plan_tick(shard_inputs, settings, rng))
    return plans


def _watermark_after(plan: TickPlan) -> datetime | None:
    if plan.advance_to is None:
        return None
    if plan.handled is None or plan.advance_to > plan.handled:
        return plan.advance_to
    return None


def _paused(plan: TickPlan, control: Control, cron_file: CronFile) -> tuple[Paused, ...]:
    """Every paused job of the cron file, with the firings the tick would leave alone."""
    start, end = plan.window
    ran = not plan.failed_closed and not plan.already_handled
    paused = []
    for job in cron_file.jobs:
        pause = control.paused.get(job.name)
        if pause is None or not job.enabled:
            continue
        since = plan.handled or start
        due = sum(1 for _ in job.firings(since, end)) if ran else 0
        paused.append(Paused(job.name, pause.operator, pause.at, due))
    return tuple(paused)


@dataclass
class _Describer:
    """Turns plans into actions, reading (never writing) what only a write would tell."""

    cron_file: CronFile
    claims: ClaimStore
    began: datetime
    slots: dict[str, str | None] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    lost: int = 0  # claims a record already has: the tick would lose them

    def describe(self, plans: Iterable[TickPlan]) -> list[Action]:
        for plan in plans:
            self._sweep(plan)
            start = plan.window[0]
            for group in plan.misfire_runs:
                for d in group:
                    self._claim(d, start, misfire=True)
            for s in plan.skips:
                self._record(s.job, s.firing, s.reason, start)
            for r in plan.ranges:
                self._add(
                    SKIP_RANGE,
                    r.job,
                    r.firings[0],
                    service=r.job.service,
                    reason=r.reason,
                    until=r.firings[-1],
                    count=len(r.firings),
                    misfire=True,
                )
            for d in plan.dispatches:
                self._claim(d, start, misfire=False)
            self._left_alone(plan)
        return self.actions

    def _add(
        self, kind: str, job: Job, scheduled: datetime, firing: Firing | None = None, **fields: Any
    ) -> None:
        firing_id = None if kind == SKIP_RANGE else (firing or Firing(job.name, scheduled)).id
        self.actions.append(Action(kind, job.name, scheduled, firing_id, **fields))

    def _existing(self, firing_id: str) -> RunRecord | None:
        return self.claims.run(firing_id)

    def _claim(self, d: Dispatch, start: datetime, *, misfire: bool) -> None:
        known = self._existing(d.firing.id)
        over_skipped = d.firing.backfill and known is not None and known.status is RunStatus.SKIPPED
        if known is not None and not over_skipped:
            self.lost += 1
            self._already(d.job, d.firing.scheduled, known, start)
            return
        if d.job.overlap == "skip" and self._slot_taken(d.job, d.firing.id):
            self._add(
                SKIP,
                d.job,
                d.firing.scheduled,
                service=d.job.service,
                reason=str(SkipReason.OVERLAP),
                misfire=misfire,
            )
            return
        if d.deferred is not None:  # its own instant (a retry: its attempt's id)
            self._add(
                DISPATCH,
                d.job,
                d.firing.scheduled,
                d.firing,
                at=max(d.due, self.began),
                service=d.job.service,
                misfire=misfire,
                reason=_deferred_reason(d.deferred, d.firing),
            )
            return
        deferred = self.cron_file.deferred_start and not misfire
        self._add(
            DISPATCH,
            d.job,
            d.firing.scheduled,
            at=max(d.firing.scheduled, self.began),
            service=d.job.service,
            misfire=misfire,
            reason="plus a random 0-9 s delay (deferred.start)" if deferred else None,
        )

    def _slot_taken(self, job: Job, firing_id: str) -> bool:
        if job.name not in self.slots:
            state = self.claims.job_state(job.name)
            self.slots[job.name] = state.open_firing if state is not None else None
        slot = self.slots[job.name]
        if slot not in (None, firing_id):
            return True
        self.slots[job.name] = firing_id
        return False

    def _record(self, job: Job, firing: Firing, reason: str, start: datetime) -> None:
        known = self._existing(firing.id)
        if known is not None:
            self._already(job, firing.scheduled, known, start)
            return
        self._add(
            SKIP,
            job,
            firing.scheduled,
            service=job.service,
            reason=reason,
            misfire=firing.scheduled < start,
        )

    def _already(self, job: Job, at: datetime, known: RunRecord, start: datetime) -> None:
        self._add(
            ALREADY_RECORDED,
            job,
            at,
            service=job.service,
            reason=f"already recorded {known.status}",
            misfire=at < start,
        )

    def _sweep(self, plan: TickPlan) -> None:
        sweep = plan.sweep
        for run in sweep.time_outs:
            self._run(TIME_OUT, run, "no completion event before the job's timeout")
        for run, _ in sweep.take_overs:
            self._run(TAKE_OVER, run, "claimed but not dispatched within the lease")
        for run, why in sweep.fails:
            self._run(FAIL, run, f"not dispatched: {why}", service=False)

    def _run(self, kind: str, run: RunRecord, reason: str, *, service: bool = True) -> None:
        job = self.cron_file.job(run.job)
        self.actions.append(
            Action(
                kind,
                run.job,
                firing_scheduled(run),
                run.firing_id,
                service=job.service if job is not None and service else None,
                reason=reason,
            )
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
            for at in job.firings(since, end):
                self._add(kind, job, at, service=job.service, reason=reason, misfire=at < start)


def _summary(
    first: TickPlan, plans: list[TickPlan], actions: list[Action], lost: int
) -> TickSummary:
    kinds = Counter(a.kind for a in actions)
    skipped: Counter[str] = Counter()
    for a in actions:
        if a.kind in (SKIP, SKIP_RANGE):
            skipped[a.reason or ""] += a.count
        elif a.kind in (STANDBY, PAUSED):
            skipped[a.kind] += 1
    if lost:
        skipped["lost_claim"] = lost
    counts = {
        "claimed": kinds[DISPATCH],
        "dispatched": kinds[DISPATCH] + kinds[TAKE_OVER],
        "skipped": dict(sorted(skipped.items())),
        "misfired": sum(p.misfired for p in plans),
        "errors": 1 if first.failed_closed else 0,
        "takenOver": kinds[TAKE_OVER],
        "timedOut": kinds[TIME_OUT],
        "held": 0,
    }
    return TickSummary(
        first.minute,
        first.environment,
        first.active_environment,
        first.mode,
        counts,
        first.window,
        first.note,
        first.error,
    )


def firing_scheduled(run: RunRecord) -> datetime:
    """The instant a run record's firing was scheduled (a manual run: when it was asked for)."""
    return datetime.fromisoformat(run.scheduled_time.replace("Z", "+00:00"))


def _deferred_reason(deferred: Deferred, firing: Firing) -> str:
    """Why a deferred firing is in the plan, as the dry run says it."""
    if deferred.reason == BACKFILL:
        return f"backfill {deferred.detail.get('backfill', '')}".rstrip()
    if deferred.reason == SCHEDULE:
        return "runtime schedule"
    return f"{deferred.reason}, attempt {firing.attempt}"
