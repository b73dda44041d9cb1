"""``overlap: cancel_other``: a firing that finds its job's run open stops that run and starts.

When the exclusive claim of such a job's firing is refused (OVERLAP), the tick reads the job's
slot (the open run's firing), stops that run through its target's dispatcher (StopExecution for
a flow, StopTask for an ECS task: the kinds the load allows), records its end FAILED with the
error ``cancelled by firing <id> (overlap: cancel_other)`` (the store's close, which releases
the slot), then claims the firing again. FAILED, because the run did not finish its work and
every reader of a run (history, console, the recorder) knows that status; its error says why,
and no retry follows it (:func:`cancelled`). The stopped target's own end event comes later and
changes nothing: the run has ended.

A run that cannot be stopped (the target refused) is left running, and the firing is recorded
SKIPPED saying so. None of this is on the path of a job with another policy.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from mini_scheduler.claims.base import ClaimOutcome
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.errors import DispatchError, StoreError
from mini_scheduler.model import RunStatus, SkipReason, log_keys
from mini_scheduler.tick.means import Means, Part
from mini_scheduler.tick.plan import Dispatch
from mini_scheduler.tick.report import Tally
from mini_scheduler.tick.skips import Skips

log = logging.getLogger("mini_scheduler.ticker")

CANCEL = "cancel_other"
CANCELLED_BY = "cancelled by firing "
CANCELLED = "Job %s - firing %s cancelled by firing %s (overlap: cancel_other): %s stopped"


def cancelled(run: RunRecord) -> bool:
    """Whether ``run`` ended because a later firing of its job cancelled it (no retry)."""
    return run.status is RunStatus.FAILED and (run.error or "").startswith(CANCELLED_BY)


class Cancels(Part):
    """Stops the open run a ``cancel_other`` firing finds, and claims the firing again."""

    def __init__(self, means: Means, *, dispatchers: Dispatchers, skips: Skips) -> None:
        super().__init__(means)
        self.dispatchers = dispatchers
        self.skips = skips

    def retake(self, d: Dispatch, tally: Tally) -> ClaimOutcome | None:
        """``d``'s claim was refused: stop the run holding the slot, record its end, and
        claim ``d`` again; that claim's answer, or None when the run could not be stopped
        (``d`` is recorded SKIPPED here, saying why)."""
        try:
            state = self.claims.job_state(d.job.name)
            holder = state.open_firing if state is not None else None
            stop = holder is not None and holder != d.firing.id
            if stop and not self._stop(d, str(holder), tally):
                return None
            now = self.clock.now()
            lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
            return self.claims.claim(
                d.firing, now=now, lease_until=lease, origin=self.settings.origin, exclusive=True
            )
        except StoreError as exc:
            return exc

    def _stop(self, d: Dispatch, holder: str, tally: Tally) -> bool:
        why = f"{CANCELLED_BY}{d.firing.id} (overlap: cancel_other)"
        try:
            stopped = self.dispatchers.stop(d.job.target, holder, why)
        except DispatchError as exc:
            tally.add("errors")
            detail = (
                f"its previous run {holder} could not be stopped (overlap: cancel_other): {exc}"
            )
            self.skips.skip(d.job, d.firing, SkipReason.OVERLAP, tally, d.deferred, detail)
            return False
        self.claims.close(holder, RunStatus.FAILED, now=self.clock.now(), error=why)
        tally.add("cancelled")
        log.info(
            CANCELLED, d.job.name, holder, d.firing.id, stopped, extra=log_keys(d.job.name, holder)
        )
        return True
