"""The sweep carried out (:mod:`.sweep` decides it): DISPATCHED runs past their deadline time out
and get their retry; CLAIMED runs whose claimer died are taken over and dispatched, or failed
when they can no longer run. Each run on its own: one that fails leaves the others."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial

from mini_scheduler import metrics as m
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import Job
from mini_scheduler.model import Firing, RunStatus, firing_from_id, log_keys
from mini_scheduler.tick.dispatch import Dispatching
from mini_scheduler.tick.lines import NOT_DISPATCHED, TAKEN_OVER
from mini_scheduler.tick.means import Means, Part
from mini_scheduler.tick.report import Tally
from mini_scheduler.tick.sweep import Sweep

log = logging.getLogger("mini_scheduler.ticker")


class Sweeper(Part):
    """Times out, takes over or fails the open runs a :class:`~.sweep.Sweep` names."""

    def __init__(self, means: Means, *, dispatching: Dispatching) -> None:
        super().__init__(means)
        self.dispatching = dispatching

    def sweep(self, sweep: Sweep, tally: Tally) -> None:
        """Runs past their deadline, each on its own: one that fails leaves the others."""
        now = self.clock.now()
        steps: list[tuple[RunRecord, Callable[[], None]]] = [
            (run, partial(self._time_out, run, now, tally)) for run in sweep.time_outs
        ]
        steps += [(run, partial(self._fail_unrunnable, run, why, now)) for run, why in sweep.fails]
        steps += [
            (run, partial(self._take_over, run, job, now, tally)) for run, job in sweep.take_overs
        ]
        for run, step in steps:
            try:
                step()
            except StoreError as exc:
                tally.add("errors")
                log.error("Sweep of firing %s failed: %s", run.firing_id, exc)

    def _fail_unrunnable(self, run: RunRecord, why: str, now: datetime) -> None:
        self.claims.fail(firing_from_id(run.firing_id), now=now, error=f"not dispatched: {why}")
        log.error(
            NOT_DISPATCHED,
            run.job,
            run.firing_id,
            why,
            extra=log_keys(run.job, run.firing_id),
        )

    def _time_out(self, run: RunRecord, now: datetime, tally: Tally) -> None:
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
        timed_out = replace(run, status=RunStatus.TIMED_OUT, ended_at=now, timed_out_at=now)
        self.dispatching.defer_retry(timed_out, str(RunStatus.TIMED_OUT), tally, run.pause_after)

    def _take_over(self, run: RunRecord, job: Job, now: datetime, tally: Tally) -> None:
        base = firing_from_id(run.firing_id)
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        if not self.claims.take_over(run, now=now, lease_until=lease, origin=self.settings.origin):
            return
        tally.add("taken_over")
        log.warning(
            TAKEN_OVER,
            run.job,
            run.firing_id,
            extra=log_keys(run.job, run.firing_id),
        )
        firing = Firing(
            base.job,
            base.scheduled,
            base.manual,
            base.nonce,
            run.operator,
            run.parameters or {},
            base.attempt,
            reruns=run.reruns,
            operator_reason=run.operator_reason,
        )
        self.dispatching.dispatch_now(job, firing, tally)
