"""The sweep: open runs past their deadline. A DISPATCHED run whose completion never came times
out (so ``overlap: skip`` cannot block a job forever); a CLAIMED run whose claimer died between
claim and dispatch is taken over and dispatched, or failed when it can no longer run. A tick
sweeps before its minute's claims, so a run it times out frees its job's slot for the minute."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mini_scheduler.claims.records import RunRecord
from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.model import RunStatus, firing_from_id


@dataclass(frozen=True, slots=True)
class Sweep:
    """Open runs past their deadline: DISPATCHED ones time out; CLAIMED ones whose claimer died
    are taken over and dispatched, or failed when they can no longer run (active only)."""

    time_outs: tuple[RunRecord, ...] = ()
    take_overs: tuple[tuple[RunRecord, Job], ...] = ()
    fails: tuple[tuple[RunRecord, str], ...] = ()

    def __len__(self) -> int:
        return len(self.time_outs) + len(self.take_overs) + len(self.fails)


def plan_sweep(
    due_runs: Sequence[RunRecord], cron_file: CronFile, now: datetime, *, active: bool
) -> Sweep:
    """What the sweep does with the open runs past their deadline. A standby region only times
    runs out: taking a claim over dispatches, which only the active region does."""
    time_outs: list[RunRecord] = []
    take_overs: list[tuple[RunRecord, Job]] = []
    fails: list[tuple[RunRecord, str]] = []
    grace = timedelta(seconds=cron_file.misfire_grace)
    for run in due_runs:
        if run.status is RunStatus.DISPATCHED:
            time_outs.append(run)
        elif active and run.status is RunStatus.CLAIMED:
            job = cron_file.job(run.job)
            if job is None:
                fails.append((run, "its job is no longer in cron.yaml"))
            elif now - firing_from_id(run.firing_id).scheduled > grace:
                fails.append(
                    (run, "the claim's lease expired and the firing is older than misfire.grace")
                )
            else:
                take_overs.append((run, job))
    return Sweep(tuple(time_outs), tuple(take_overs), tuple(fails))
