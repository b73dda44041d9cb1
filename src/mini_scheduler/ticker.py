"""One tick: is this region active? Expand the due firings, claim each once, dispatch the winners.

No event dicts here: the handler parses events and calls :class:`Ticker`. Every dependency
(the cron file, the stores, the dispatchers, the clock, the metrics) is injected.

A tick of minute M owns the firings in ``[M + lead, M + lead + 60 s)``. The region's watermark
records the end of the last window handled; firings between it and the window are misfires and
follow each job's ``misfire`` policy. The watermark only moves forward, and never past a firing
of an active minute that was neither claimed nor recorded as skipped.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import ClaimResult, ClaimStore, Control, JobStart, RunRecord
from mini_scheduler.clock import Clock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.errors import CronFileUnreadableError, DispatchError, EventError, StoreError
from mini_scheduler.jobs import CronFile, Job, check_parameters_fit, printable
from mini_scheduler.metrics import Metrics, RecordingMetrics
from mini_scheduler.model import (
    Firing,
    RunStatus,
    SkipReason,
    firing_from_id,
    floor_minute,
    iso_seconds,
    log_keys,
    payload,
)

log = logging.getLogger("mini_scheduler.ticker")

_OPERATOR = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_STANDBY_DETAIL_LIMIT = 20  # more standby lines than this in one tick: one summary line
_RANGE_CAP = 100_000  # firings counted in one skipped range (a bound on the work, not a limit)
_MARK_ATTEMPTS = 3  # tries of a dispatched firing's mark, on top of the SDK's own retries


def _latest(*moments: datetime | None) -> datetime | None:
    return max((m for m in moments if m is not None), default=None)


def check_operator(operator: Any) -> str:
    """The operator who asked: required, at most 128 letters, digits, '.', '_', '-', '@'."""
    if not isinstance(operator, str) or not operator.strip():
        raise EventError('operator is required: name who asks (e.g. "operator": "jane.doe")')
    operator = operator.strip()
    if not _OPERATOR.fullmatch(operator):
        raise EventError(
            f"operator {operator[:140]!r} must be 1-128 letters, digits, '.', '_', '-' or '@'"
        )
    return str(operator)


@dataclass(frozen=True, slots=True)
class Shard:
    """A part of the jobs, picked by a stable hash of the name (fan-out past one ticker)."""

    index: int
    count: int

    def holds(self, job: str) -> bool:
        return zlib.crc32(job.encode()) % self.count == self.index

    @property
    def suffix(self) -> str:
        return f"#shard-{self.index}-of-{self.count}"


@dataclass(slots=True)
class _Plan:
    job: Job
    firing: Firing
    due: datetime


@dataclass
class _Tally:
    claimed: int = 0
    dispatched: int = 0
    misfired: int = 0
    errors: int = 0
    taken_over: int = 0
    timed_out: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    held_at: list[datetime] = field(default_factory=list)  # firings neither claimed nor recorded
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, value: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + value)

    def skip(self, reason: str, value: int = 1) -> None:
        with self.lock:
            self.skipped[reason] += value

    def hold(self, moment: datetime) -> None:
        with self.lock:
            self.held_at.append(moment)

    def to_json(self) -> dict[str, Any]:
        return {
            "claimed": self.claimed,
            "dispatched": self.dispatched,
            "skipped": dict(sorted(self.skipped.items())),
            "misfired": self.misfired,
            "errors": self.errors,
            "takenOver": self.taken_over,
            "timedOut": self.timed_out,
            "held": len(self.held_at),  # left to the next tick: not claimed, nothing recorded
        }


@dataclass(frozen=True, slots=True)
class TickSummary:
    minute: datetime
    environment: str
    active_environment: str | None
    mode: str
    counts: dict[str, Any]
    window: tuple[datetime, datetime]
    note: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "minute": iso_seconds(self.minute),
            "environment": self.environment,
            "activeEnvironment": self.active_environment,
            "mode": self.mode,
            "counts": self.counts,
            "window": [iso_seconds(self.window[0]), iso_seconds(self.window[1])],
        }
        if self.note:
            out["note"] = self.note
        if self.error:
            out["error"] = self.error
        return out


class Ticker:
    """The scheduler's core. One instance per container; ``tick`` is safe to call repeatedly."""

    def __init__(
        self,
        *,
        settings: Settings,
        cron: Callable[[], CronFile],
        claims: ClaimStore,
        environment: ActiveEnvironment,
        dispatchers: Dispatchers,
        clock: Clock,
        metrics: Metrics | None = None,
        rng: random.Random | None = None,
        fanout: Callable[[dict[str, Any]], None] | None = None,
        retry_sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self._cron = cron
        self.claims = claims
        self.environment = environment
        self._dispatchers = dispatchers
        self.clock = clock
        self.metrics: Metrics = metrics if metrics is not None else RecordingMetrics()
        self._rng = rng or random.Random()  # nosec B311 # deferred.start jitter, not security
        self._reported_version: str | None = None
        self._last_good: CronFile | None = None
        self._fanout = fanout
        self._retry_sleep = retry_sleep  # worker threads back off on it, not on the clock

    # -- the cron file ---------------------------------------------------------------------

    def cron_file(self) -> CronFile:
        """The current cron file; its load report is logged once per version."""
        try:
            cron_file = self._cron()
        except CronFileUnreadableError as exc:
            if self._last_good is None:
                raise
            log.warning(
                "Cron file unreadable - keeping the last good file read (%s, version %s): %s",
                self._last_good.source,
                self._last_good.version[:12],
                exc,
            )
            return self._last_good
        self._last_good = cron_file
        if self._reported_version is None:
            log.info(
                "Scheduler instance %s - the job state receives it as _origin",
                self.settings.origin,
            )
        if cron_file.version != self._reported_version:
            cron_file.log(log)
            self._reported_version = cron_file.version
        return cron_file

    def _job(self, name: Any) -> Job:
        if not isinstance(name, str) or not name:
            raise EventError("job must be the name of a job in cron.yaml")
        job = self.cron_file().job(name)
        if job is None:
            raise EventError(f"unknown job {name[:100]!r}: no job of that name in cron.yaml")
        return job

    # -- the tick --------------------------------------------------------------------------

    def tick(
        self, scheduled: datetime, shard: Shard | None = None, *, deadline: datetime | None = None
    ) -> TickSummary:
        """Handle the minute ``scheduled`` names (``shard``'s jobs only, with a shard). Past
        ``deadline`` (the handler's: the function's timeout less a margin) no firing is claimed:
        each one left is held, so the watermark stops at the first and the next tick handles them
        under their misfire policies, instead of Lambda ending the tick mid-claim."""
        minute = floor_minute(scheduled)
        start = minute + timedelta(seconds=self.settings.tick_lead_seconds)
        end = start + timedelta(seconds=60)
        cron_file = self.cron_file()
        jobs = [j for j in cron_file.jobs if j.enabled and (shard is None or shard.holds(j.name))]
        scope = self.settings.origin + (shard.suffix if shard else "")
        now = self.clock.now()
        self.metrics.add(m.TICKS)
        self.metrics.add(m.TICK_LAG, max(0.0, (now - minute).total_seconds()), "Seconds")
        control = self.claims.control(scope)
        reading = self.environment.read()
        tally = _Tally()

        def summary(mode: str, note: str | None = None, error: str | None = None) -> TickSummary:
            return TickSummary(
                minute,
                self.environment.environment_name,
                reading.active,
                mode,
                tally.to_json(),
                (start, end),
                note,
                error,
            )

        handled = self._handled_until(control, shard)
        watermark = handled if handled is not None else start
        if reading.active is None:
            tally.errors += 1
            return summary(
                "standby",
                "the active environment is unknown: failing closed, "
                "the watermark stays for the next tick",
                reading.error,
            )
        active = self.environment.is_active(reading.active)
        if watermark >= end:
            return summary(
                "active" if active else "standby",
                f"minute already handled (watermark {iso_seconds(watermark)})",
            )
        begin = max(watermark, start)
        if not active:
            self._standby(jobs, control.paused, begin, end, reading.active, tally)
            if shard is None:
                self._sweep(now, cron_file, tally, active=False)
            self.claims.advance_watermark(scope, end)
            return summary("standby")

        if shard is None and self._fanout is not None:
            due_count = sum(
                1
                for job in jobs
                if job.name not in control.paused
                for _ in job.expression.firings(begin, end, job.tz)
            )
            if due_count > self.settings.fanout_threshold:
                # The sweep first: a run it times out frees its job's slot for the shards.
                self._sweep(now, cron_file, tally, active=True)
                shards = self._fan_out(minute, due_count, tally)
                return summary("active", f"{due_count} firings due: fanned out to {shards} shards")

        plans: list[_Plan] = []
        misfire_runs: list[list[_Plan]] = []
        skips: list[tuple[Job, Firing, str]] = []
        ranges: list[tuple[Job, list[datetime], str]] = []
        for job in jobs:
            if job.name in control.paused:
                self._paused(job, control.paused[job.name].operator, watermark, end, tally)
                continue
            if watermark < start:
                runs, skipped, ranged = self._misfires(job, cron_file, watermark, start, tally)
                if runs:
                    misfire_runs.append([_Plan(job, Firing(job.name, at), now) for at in runs])
                skips.extend((job, Firing(job.name, at), reason) for at, reason in skipped)
                ranges.extend((job, firings, reason) for firings, reason in ranged)
            for at in job.expression.firings(begin, end, job.tz):
                due = at
                if cron_file.deferred_start:
                    delay = self._rng.randint(0, 9)
                    if delay:
                        log.info(
                            "Defer execution of %s for %d seconds",
                            job.name,
                            delay,
                            extra=log_keys(job.name, Firing(job.name, at).id),
                        )
                        due = at + timedelta(seconds=delay)
                plans.append(_Plan(job, Firing(job.name, at), due))

        self._execute(
            plans,
            misfire_runs,
            skips,
            ranges,
            cron_file,
            now,
            tally,
            sweep=shard is None,
            deadline=deadline,
        )
        held = min(tally.held_at, default=None)
        target = end if held is None else min(end, held)
        # A first tick that held its first firing still writes the watermark (at that firing):
        # without one, the next tick would count itself the region's first and skip the minute.
        if target > watermark or handled is None:
            self.claims.advance_watermark(scope, target)
        return summary("active")

    def _handled_until(self, control: Control, shard: Shard | None) -> datetime | None:
        """Where this tick's window starts being new. The region's own watermark, and each
        shard's: a shard also counts what unsharded ticks handled, and an unsharded tick what
        every shard handled, so crossing FANOUT_THRESHOLD either way replays nothing."""
        base = self.settings.origin
        if shard is not None:
            return _latest(control.watermark, control.watermarks.get(base))
        count = self.settings.fanout_shards
        marks = [control.watermarks.get(base + Shard(i, count).suffix) for i in range(count)]
        if all(mark is not None for mark in marks):
            return _latest(control.watermark, min(mark for mark in marks if mark is not None))
        return control.watermark

    def _fan_out(self, minute: datetime, due: int, tally: _Tally) -> int:
        """Invoke one shard worker (this function, asynchronously) per shard. A shard whose
        invocation fails keeps its watermark: Lambda retries it, or the next tick's shard takes
        its minute as misfires. Nothing is lost."""
        assert self._fanout is not None  # nosec B101 # type narrowing: tick() checked it
        count = self.settings.fanout_shards
        log.info(
            "%d firings due in minute %s - fanning out to %d shards",
            due,
            iso_seconds(minute),
            count,
        )

        def invoke(index: int) -> None:
            assert self._fanout is not None  # nosec B101 # type narrowing, as above
            event = {"tick": iso_seconds(minute), "shard": index, "shards": count}
            try:
                self._fanout(event)
            except DispatchError as exc:
                tally.add("errors")
                log.error(
                    "Shard %d of %d for minute %s not invoked: %s",
                    index,
                    count,
                    iso_seconds(minute),
                    exc,
                )

        # The shard invocations go out together: one after another, 40 of them took a second.
        with ThreadPoolExecutor(max_workers=min(count, 16), thread_name_prefix="fanout") as pool:
            list(pool.map(invoke, range(count)))
        return count

    def _standby(
        self,
        jobs: Iterable[Job],
        paused: Mapping[str, Any],
        begin: datetime,
        end: datetime,
        active: str,
        tally: _Tally,
    ) -> None:
        lines: list[str] = []
        for job in jobs:
            if job.name in paused:
                continue
            due = sum(1 for _ in job.expression.firings(begin, end, job.tz))
            if due:
                tally.skip("standby", due)
                self.metrics.add(m.skipped("standby"), due)
                lines.append(job.name)
        name = self.environment.environment_name
        text = "Standby: job %s skipped - the active environment is %s, this instance is %s"
        detail = log.debug if len(lines) > _STANDBY_DETAIL_LIMIT else log.info
        for job_name in lines:
            detail(text, job_name, active, name, extra=log_keys(job_name))
        if len(lines) > _STANDBY_DETAIL_LIMIT:
            log.info(
                "Standby: %d jobs skipped - the active environment is %s, this instance is %s",
                len(lines),
                active,
                name,
            )

    def _paused(
        self, job: Job, operator: str, begin: datetime, end: datetime, tally: _Tally
    ) -> None:
        due = sum(1 for _ in job.expression.firings(begin, end, job.tz))
        if due:
            tally.skip("paused", due)
            self.metrics.add(m.skipped("paused"), due)
            log.info(
                "Job %s skipped - paused by %s (%d firings)",
                job.name,
                operator,
                due,
                extra=log_keys(job.name),
            )

    def _misfires(
        self, job: Job, cron_file: CronFile, watermark: datetime, start: datetime, tally: _Tally
    ) -> tuple[list[datetime], list[tuple[datetime, str]], list[tuple[list[datetime], str]]]:
        """Split the firings missed in ``[watermark, start)`` into runs, single skips and
        skipped ranges, by the job's policy."""
        grace_start = max(watermark, start - timedelta(seconds=cron_file.misfire_grace))
        older: list[datetime] = []
        if watermark < grace_start:
            for at in job.expression.firings(watermark, grace_start, job.tz):
                older.append(at)
                if len(older) >= _RANGE_CAP:
                    break
        recent = list(job.expression.firings(grace_start, start, job.tz))
        if not older and not recent:
            return [], [], []
        tally.add("misfired", len(older) + len(recent))
        limit = cron_file.misfire_max
        if job.misfire == "fire_now":
            runs, skipped, reason = recent[-1:], recent[:-1], SkipReason.MISFIRE
        elif job.misfire == "fire_all":
            runs, skipped, reason = recent[:limit], recent[limit:], SkipReason.MISFIRE_MAX
        else:
            runs, skipped, reason = [], recent, SkipReason.MISFIRE
        ranged: list[tuple[list[datetime], str]] = []
        if older:
            ranged.append((older, SkipReason.MISFIRE_GRACE))
        singles: list[tuple[datetime, str]] = []
        if len(skipped) > limit:
            ranged.append((skipped, reason))
        else:
            singles = [(at, str(reason)) for at in skipped]
        log.warning(
            "Job %s missed %d firings from %s - misfire %s: running %d, skipping %d",
            job.name,
            len(older) + len(recent),
            iso_seconds((older or recent)[0]),
            job.misfire,
            len(runs),
            len(older) + len(skipped),
            extra=log_keys(job.name),
        )
        return runs, singles, ranged

    def _execute(
        self,
        plans: list[_Plan],
        misfire_runs: list[list[_Plan]],
        skips: list[tuple[Job, Firing, str]],
        ranges: list[tuple[Job, list[datetime], str]],
        cron_file: CronFile,
        now: datetime,
        tally: _Tally,
        *,
        sweep: bool = True,
        deadline: datetime | None = None,
    ) -> None:
        plans.sort(key=lambda p: p.due)
        # The sweep finishes before the minute's claims: a hung run it times out frees its job's
        # overlap slot for this minute's firing. Shards leave the sweep to the tick that fanned
        # out (which sweeps before it invokes them).
        if sweep:
            self._sweep(now, cron_file, tally, active=True)
        workers = max(
            1,
            min(
                self.settings.dispatch_workers,
                len(plans) + len(misfire_runs) + len(skips) + len(ranges),
            ),
        )
        futures: list[Future[None]] = []
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dispatch") as pool:
            futures.extend(pool.submit(self._skip_range, *r, tally) for r in ranges)
            futures.extend(pool.submit(self._skip, *s, tally) for s in skips)
            futures.extend(
                pool.submit(self._fire_in_order, g, tally, deadline) for g in misfire_runs
            )
            for plan in plans:
                if deadline is not None and plan.due >= deadline:
                    self._out_of_time(plan, tally, deadline)  # no sleeping past the deadline
                    continue
                wait = (plan.due - self.clock.now()).total_seconds()
                if wait > 0:
                    self.clock.sleep(wait)
                futures.append(pool.submit(self._fire, plan, tally, deadline))
            for future in futures:
                future.result()

    # -- one firing ------------------------------------------------------------------------

    def _fire_in_order(
        self, plans: list[_Plan], tally: _Tally, deadline: datetime | None = None
    ) -> None:
        for plan in plans:
            self._fire(plan, tally, deadline)

    def _out_of_time(self, plan: _Plan, tally: _Tally, deadline: datetime) -> None:
        tally.hold(plan.firing.scheduled)
        self.metrics.add(m.FIRINGS_HELD)
        log.warning(
            "Job %s not claimed this tick - firing %s: the tick is out of time (its deadline "
            "was %s); the next tick handles it",
            plan.job.name,
            plan.firing.id,
            iso_seconds(deadline),
            extra=log_keys(plan.job.name, plan.firing.id),
        )

    def _fire(self, plan: _Plan, tally: _Tally, deadline: datetime | None = None) -> None:
        job, firing = plan.job, plan.firing
        now = self.clock.now()
        if deadline is not None and now >= deadline:
            self._out_of_time(plan, tally, deadline)
            return
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        try:
            result = self.claims.claim(
                firing,
                now=now,
                lease_until=lease,
                origin=self.settings.origin,
                exclusive=job.overlap == "skip",
            )
        except StoreError as exc:
            tally.add("errors")
            tally.hold(firing.scheduled)
            self.metrics.add(m.CLAIM_ERRORS)
            log.error(
                "Job %s not claimed this tick - firing %s: %s",
                job.name,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            return
        if result is ClaimResult.LOST:
            tally.skip("lost_claim")
            self.metrics.add(m.skipped("lost_claim"))
            log.debug(
                "Job %s claimed by a peer - firing %s",
                job.name,
                firing.id,
                extra=log_keys(job.name, firing.id),
            )
            return
        if result is ClaimResult.OVERLAP:
            self._skip(job, firing, SkipReason.OVERLAP, tally)
            return
        tally.add("claimed")
        self.metrics.add(m.FIRINGS_CLAIMED)
        self._dispatch(job, firing, tally)

    def _dispatch(self, job: Job, firing: Firing, tally: _Tally) -> None:
        parameters = dict(firing.parameters) if firing.manual else dict(job.parameters)
        body = payload(firing, parameters, self.settings.origin)
        try:
            reference = self._dispatchers.dispatch(job.target, firing.id, body)
        except DispatchError as exc:
            tally.add("errors")
            self.metrics.add(m.DISPATCH_ERRORS)
            log.error(
                "Job %s dispatch to %s failed - firing %s: %s",
                job.name,
                job.service,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            try:
                self.claims.fail(firing, now=self.clock.now(), error=str(exc))
            except StoreError as store_exc:
                log.error(
                    "Job %s - firing %s could not be recorded FAILED: %s",
                    job.name,
                    firing.id,
                    store_exc,
                    extra=log_keys(job.name, firing.id),
                )
            return
        log.info(
            "Job %s dispatched to %s - firing %s",
            job.name,
            job.service,
            firing.id,
            extra=log_keys(job.name, firing.id, reference=reference),
        )
        tally.add("dispatched")
        self.metrics.add(m.FIRINGS_DISPATCHED)
        now = self.clock.now()
        start = JobStart(job.service, job.schedule, {**parameters, "_origin": self.settings.origin})
        error: StoreError | None = None
        # Once dispatched, the run must say so, or a takeover would dispatch it again: the mark
        # gets attempts of its own on top of the SDK's retries.
        for attempt in range(_MARK_ATTEMPTS):
            try:
                self.claims.mark_dispatched(
                    firing, now=now, deadline=now + timedelta(seconds=job.timeout), start=start
                )
                return
            except StoreError as exc:
                if attempt + 1 < _MARK_ATTEMPTS:
                    self._retry_sleep(0.2 * 2**attempt)
                    continue
                error = exc
        if error is not None:
            tally.add("errors")
            log.error(
                "Job %s dispatched but not marked - firing %s may be dispatched again after "
                "its lease: %s",
                job.name,
                firing.id,
                error,
                extra=log_keys(job.name, firing.id),
            )

    def _skip(self, job: Job, firing: Firing, reason: str, tally: _Tally) -> None:
        try:
            written = self.claims.record_skipped(
                firing, now=self.clock.now(), reason=str(reason), origin=self.settings.origin
            )
        except StoreError as exc:
            tally.add("errors")
            tally.hold(firing.scheduled)
            log.error(
                "Job %s - firing %s could not be recorded SKIPPED: %s",
                job.name,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            return
        if not written:
            return  # it has a record already (a peer claimed or skipped it)
        tally.skip(str(reason))
        self.metrics.add(m.skipped(str(reason)))
        if reason == SkipReason.OVERLAP:
            log.info(
                "Job %s skipped - its previous run has not ended (overlap: skip) - firing %s",
                job.name,
                firing.id,
                extra=log_keys(job.name, firing.id),
            )
        else:
            log.info(
                "Job %s skipped - firing %s (%s)",
                job.name,
                firing.id,
                reason,
                extra=log_keys(job.name, firing.id),
            )

    def _skip_range(self, job: Job, firings: list[datetime], reason: str, tally: _Tally) -> None:
        # The range's record is keyed by its first firing. When that firing has a record of its
        # own (a tick that held the watermark behind it claimed it), the store writes nothing:
        # the range then starts at the next firing, or the rest would have no record at all.
        first = 0
        try:
            while first < len(firings):
                written = self.claims.record_skipped_range(
                    job.name,
                    firings[first],
                    firings[-1],
                    len(firings) - first,
                    now=self.clock.now(),
                    reason=str(reason),
                    origin=self.settings.origin,
                )
                if written is not False:  # None: a store that cannot tell
                    break
                first += 1
        except StoreError as exc:
            tally.add("errors")
            tally.hold(firings[first])
            log.error(
                "Job %s - %d missed firings could not be recorded SKIPPED: %s",
                job.name,
                len(firings) - first,
                exc,
                extra=log_keys(job.name),
            )
            return
        if first == len(firings):
            return  # every one of them has a record already
        firings = firings[first:]
        tally.skip(str(reason), len(firings))
        self.metrics.add(m.skipped(str(reason)), len(firings))
        log.info(
            "Job %s skipped %d firings from %s to %s (%s)",
            job.name,
            len(firings),
            iso_seconds(firings[0]),
            iso_seconds(firings[-1]),
            reason,
            extra=log_keys(job.name),
        )

    # -- the sweep -------------------------------------------------------------------------

    def _sweep(self, now: datetime, cron_file: CronFile, tally: _Tally, *, active: bool) -> None:
        """Runs past their deadline: a DISPATCHED run times out; a CLAIMED one whose claimer
        died is taken over and dispatched (active regions only)."""
        try:
            due = self.claims.due_runs(now)
        except StoreError as exc:
            tally.add("errors")
            log.error("Sweep of open runs failed: %s", exc)
            return
        for run in due:
            try:
                if run.status is RunStatus.DISPATCHED:
                    self._time_out(run, now, tally)
                elif active:
                    self._take_over(run, now, cron_file, tally)
            except StoreError as exc:
                tally.add("errors")
                log.error("Sweep of firing %s failed: %s", run.firing_id, exc)

    def _time_out(self, run: RunRecord, now: datetime, tally: _Tally) -> None:
        if not self.claims.time_out(run, now=now):
            return
        tally.add("timed_out")
        self.metrics.add(m.RUNS_TIMED_OUT)
        took = int((now - run.started_at).total_seconds() * 1000) if run.started_at else 0
        log.warning(
            "Job %s ended %s after %d ms - firing %s",
            run.job,
            RunStatus.TIMED_OUT,
            took,
            run.firing_id,
            extra=log_keys(run.job, run.firing_id),
        )

    def _take_over(self, run: RunRecord, now: datetime, cron_file: CronFile, tally: _Tally) -> None:
        job = cron_file.job(run.job)
        base = firing_from_id(run.firing_id)
        too_old = now - base.scheduled > timedelta(seconds=cron_file.misfire_grace)
        if job is None or too_old:
            why = (
                "its job is no longer in cron.yaml"
                if job is None
                else "the claim's lease expired and the firing is older than misfire.grace"
            )
            self.claims.fail(base, now=now, error=f"not dispatched: {why}")
            log.error(
                "Job %s not dispatched - firing %s: %s",
                run.job,
                run.firing_id,
                why,
                extra=log_keys(run.job, run.firing_id),
            )
            return
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        if not self.claims.take_over(run, now=now, lease_until=lease, origin=self.settings.origin):
            return
        tally.add("taken_over")
        log.warning(
            "Job %s - firing %s taken over: its claim was not dispatched within the lease",
            run.job,
            run.firing_id,
            extra=log_keys(run.job, run.firing_id),
        )
        firing = Firing(
            base.job, base.scheduled, base.manual, base.nonce, run.operator, run.parameters or {}
        )
        self._dispatch(job, firing, tally)

    # -- operator events -------------------------------------------------------------------

    def run_manual(self, job_name: Any, operator: Any, parameters: Any = None) -> dict[str, Any]:
        """Run a job now for an operator: no claim, on a standby region too; a firing of its
        own that never takes a scheduled firing's place."""
        operator = check_operator(operator)
        job = self._job(job_name)
        if parameters is None:
            parameters = {}
        if not isinstance(parameters, Mapping) or not all(isinstance(k, str) for k in parameters):
            raise EventError("parameters must be an object whose keys are text")
        merged = dict(job.parameters)
        for key, value in parameters.items():
            if key.startswith("_"):
                log.warning(
                    "Job %s parameter %s ignored - a key that starts with '_' is reserved "
                    "for the system",
                    job.name,
                    printable(key, 40),
                    extra=log_keys(job.name),
                )
            else:
                merged[key] = value
        problem = check_parameters_fit(job.target, merged)
        if problem:
            raise EventError(f"parameters for {job.name}: {problem}")
        reading = self.environment.read()
        mode = "active" if self.environment.is_active(reading.active) else "standby"
        if mode == "standby":
            log.warning(
                "Manual run of %s on an instance on standby - the active environment is "
                "%s, this instance is %s; the operator's run goes ahead",
                job.name,
                reading.active,
                self.environment.environment_name,
                extra=log_keys(job.name),
            )
        log.info("Operator %s runs %s manually", operator, job.name, extra=log_keys(job.name))
        now = self.clock.now()
        firing = Firing.manual_run(job.name, now, operator, merged)
        tally = _Tally()
        result = self.claims.claim(
            firing,
            now=now,
            origin=self.settings.origin,
            lease_until=now + timedelta(seconds=self.settings.claim_lease_seconds),
        )
        if result is not ClaimResult.WON:  # cannot happen: a manual firing id is unique
            raise StoreError(f"manual firing {firing.id} was already recorded")
        self._dispatch(job, firing, tally)
        status = RunStatus.DISPATCHED if tally.dispatched else RunStatus.FAILED
        return {
            "job": job.name,
            "firingId": firing.id,
            "operator": operator,
            "manual": True,
            "status": str(status),
            "mode": mode,
            "parameters": merged,
        }

    def environment_status(self) -> dict[str, Any]:
        reading = self.environment.read()
        status = self.environment.status(reading.active)
        if reading.error:
            status["error"] = reading.error
        return status

    def set_environment(self, active: Any, operator: Any) -> dict[str, Any]:
        operator = check_operator(operator)
        if not isinstance(active, str):
            raise EventError('environment.active must be an environment name, e.g. "DR"')
        return self.environment.activate(active, operator, self.clock.now())

    def set_paused(self, job_name: Any, paused: bool, operator: Any) -> dict[str, Any]:
        operator = check_operator(operator)
        job = self._job(job_name)
        self.claims.set_paused(job.name, paused, operator=operator, now=self.clock.now())
        log.info(
            "Job %s %s by %s",
            job.name,
            "paused" if paused else "resumed",
            operator,
            extra=log_keys(job.name),
        )
        return {"job": job.name, "paused": paused, "operator": operator}
