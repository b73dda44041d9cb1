"""Carry out a tick's plan against the stores, and report what happened.

The executor decides nothing the plan has not decided; what it learns on the way (a claim a
peer won, a job's slot still held by its previous run, a store or target that failed) it reports
in the :class:`~mini_scheduler.tick.report.Tally`. Order: the sweep first (a run it times out
frees its job's overlap slot for this minute, :mod:`.sweeper`), then the fan-out or the minute's
writes (:mod:`.batches`), then the deferred firings whose claim has an answer are forgotten, and
last the watermark, which never moves past a firing that was neither claimed nor recorded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import SCHEDULE, ClaimResult, ClaimStore, Deferred
from mini_scheduler.claims.definitions import moves
from mini_scheduler.clock import Clock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.errors import DispatchError, StoreError
from mini_scheduler.jobs import Job
from mini_scheduler.metrics import Metrics
from mini_scheduler.model import Firing, iso_seconds, log_keys
from mini_scheduler.tick.batches import MinuteWrites
from mini_scheduler.tick.dispatch import Dispatching
from mini_scheduler.tick.lines import SCHEDULE_DELETED, SCHEDULE_MOVED_ON, log_decisions
from mini_scheduler.tick.means import Means
from mini_scheduler.tick.plan import TickPlan
from mini_scheduler.tick.report import Tally
from mini_scheduler.tick.skips import Skips
from mini_scheduler.tick.sweeper import Sweeper
from mini_scheduler.wake import Wake

if TYPE_CHECKING:  # built by the ticker; imported where a run fails (tick.dispatch)
    from mini_scheduler.failures import FinalFailures

log = logging.getLogger("mini_scheduler.ticker")


class Executor:
    """Carries plans out. One per container; ``execute`` is safe to call repeatedly."""

    def __init__(
        self,
        *,
        settings: Settings,
        claims: ClaimStore,
        dispatchers: Dispatchers,
        clock: Clock,
        metrics: Metrics,
        fanout: Callable[[dict[str, Any]], None] | None = None,
        retry_sleep: Callable[[float], None] = time.sleep,
        failures: FinalFailures | None = None,
        wake: Wake | None = None,
    ) -> None:
        self.settings = settings
        self.claims = claims
        self.clock = clock
        self.metrics = metrics
        self.fanout = fanout
        means = Means(settings, claims, clock, metrics)
        self.dispatching = Dispatching(
            means, dispatchers=dispatchers, retry_sleep=retry_sleep, failures=failures, wake=wake
        )
        self.sweeper = Sweeper(means, dispatching=self.dispatching)
        self.writes = MinuteWrites(means, dispatching=self.dispatching, skips=Skips(means))

    def execute(self, plan: TickPlan, *, deadline: datetime | None = None) -> Tally:
        """Carry ``plan`` out. Past ``deadline`` no firing is claimed: each one left is held, so
        the watermark stops at the first and the next tick handles them as misfires."""
        tally = Tally()
        if plan.failed_closed:
            tally.errors += 1
            return tally
        if plan.already_handled:
            return tally
        tally.misfired = plan.misfired
        self._log_decisions(plan, tally)
        self.sweeper.sweep(plan.sweep, tally)
        if plan.fan_out:
            self._fan_out(plan.minute, plan.due_count, tally)
            if (
                plan.dispatches or plan.dropped or plan.moved or plan.skips
            ):  # the deferred firings: the parent's own
                self._write(plan, tally, deadline)
            return tally
        if plan.mode == "active":
            self._write(plan, tally, deadline)
        self._advance(plan, tally)
        return tally

    # -- what the plan decided, said ---------------------------------------------------------

    def _log_decisions(self, plan: TickPlan, tally: Tally) -> None:
        for left in plan.left_alone:
            reason = "standby" if left.pause is None else "paused"
            tally.skip(reason, left.firings)
            self.metrics.add(m.skipped(reason), left.firings)
        log_decisions(plan)

    # -- the minute's writes, then the deferred firings they answered ------------------------

    def _write(self, plan: TickPlan, tally: Tally, deadline: datetime | None) -> None:
        if self.writes.write(plan, tally, deadline):
            self._forget_deferred(plan, tally)

    def _forget_deferred(self, plan: TickPlan, tally: Tally) -> None:
        """Forget the deferred firings whose claim has an answer, and those no job can run
        (said once, here). One that could not be forgotten is read again: its claim is then
        LOST, which changes nothing."""
        for item, why in plan.dropped:
            log.warning(
                "Deferred firing %s (%s) dropped - %s",
                item.firing.id,
                item.reason,
                why,
                extra=log_keys(item.firing.job, item.firing.id),
            )
        done = [*tally.answered, *(item for item, _ in plan.dropped)]
        if not done and not plan.moved:
            return
        answered = {item.key for item in tally.answered}
        steps = [(d.deferred, d.then) for d in plan.dispatches]
        steps += [(s.deferred, s.then) for s in plan.skips]
        advances = {
            deferred.key: (deferred, then)
            for deferred, then in steps
            if then is not None and deferred is not None and deferred.key in answered
        }
        advances.update((done.key, (done, then)) for done, then in plan.moved)
        ends = {
            item.key: item for item in done if item.reason == SCHEDULE and item.key not in advances
        }
        try:
            for deferred, then in advances.values():  # each schedule keeps its next firing
                self._advance_schedule(deferred, then)
            for deferred in ends.values():  # one with none left ends: its definition goes
                self.claims.advance_schedule(deferred, None)
            self.claims.drop_deferred(
                [item for item in done if item.key not in advances and item.key not in ends]
            )
        except StoreError as exc:
            tally.add("errors")
            log.error("Deferred firings not forgotten (read again next tick): %s", exc)

    def _advance_schedule(self, done: Deferred, then: Deferred) -> None:
        """A runtime schedule's next firing in place of the one answered, unless the schedule
        was deleted since the tick read it (a delete is never undone), or another tick of the
        minute (a catch-up, a repeated tick) moved it on first: that tick wrote its next firing,
        which is said at DEBUG only (a catch-up reads the minute's firings too, and this is
        what it finds every time)."""
        if self.claims.advance_schedule(done, then):
            return
        moved_on = moves(self.claims.schedule(done.firing.job), done)
        log.log(
            logging.DEBUG if moved_on else logging.INFO,
            SCHEDULE_MOVED_ON if moved_on else SCHEDULE_DELETED,
            done.firing.job,
            then.firing.id,
            extra=log_keys(done.firing.job, then.firing.id),
        )

    def _advance(self, plan: TickPlan, tally: Tally) -> None:
        if plan.advance_to is None:
            return
        held = min(tally.held_at, default=None)
        target = plan.advance_to if held is None else min(plan.advance_to, held)
        # A first tick that held its first firing still writes the watermark (at that firing):
        # without one, the next tick would count itself the region's first and skip the minute.
        if plan.handled is None or target > plan.handled:
            self.claims.advance_watermark(plan.scope, target)

    # -- the fan-out -------------------------------------------------------------------------

    def _fan_out(self, minute: datetime, due: int, tally: Tally) -> int:
        """Invoke one shard worker (this function, asynchronously) per shard. A shard whose
        invocation fails keeps its watermark: Lambda retries it, or the next tick's shard takes
        its minute as misfires. Nothing is lost."""
        assert self.fanout is not None  # nosec B101 # narrowing: fan-out is planned only with one
        count = self.settings.fanout_shards
        log.info(
            "%d firings due in minute %s - fanning out to %d shards",
            due,
            iso_seconds(minute),
            count,
        )

        def invoke(index: int) -> None:
            assert self.fanout is not None  # nosec B101 # type narrowing, as above
            event = {"tick": iso_seconds(minute), "shard": index, "shards": count}
            try:
                self.fanout(event)
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

    # -- a manual run ------------------------------------------------------------------------

    def run_now(self, job: Job, firing: Firing) -> bool:
        """Claim a manual firing (its id is unique: the claim cannot be lost) and dispatch it;
        whether the dispatch went out."""
        self.claims.watch([firing.id], self.writes.first_deadline([job]))
        now = self.clock.now()
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        result = self.claims.claim(firing, now=now, origin=self.settings.origin, lease_until=lease)
        if result is not ClaimResult.WON:
            raise StoreError(f"manual firing {firing.id} was already recorded")
        tally = Tally()
        self.dispatching.dispatch_now(job, firing, tally)
        return tally.dispatched > 0
