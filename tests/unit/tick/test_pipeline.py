"""Issue 28: a tick's phases overlap. A claim batch's winners are dispatched as soon as that
batch answers, not after every claim batch queued before them, and a batch's marks are written
as soon as its dispatches have answered, not after the tick's last dispatch. Each test makes the
store wait on the event the pipeline must bring about (a bounded wait: a tick that runs its
phases one after another ends with the wait timed out, and the test fails)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import ClaimOutcome, ClaimRequest, MarkRequest
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import Target
from tests.unit.tick.harness import FakeDispatcher, rig

HANG = 10.0  # seconds: a bound far above what the event takes (a hang fails, it never blocks)
JOBS = 500  # twenty claim batches of 25: more than the dispatch workers (16)


def _cron(jobs: int) -> str:
    lines = ["jobs:"]
    lines += [
        f'  - {{name: "job-{i:03d}", cron: "0 * * * * ?", service: "fn-{i:03d}"}}'
        for i in range(jobs)
    ]
    return "\n".join(lines) + "\n"


class Dispatched(FakeDispatcher):
    """Sets ``first`` at the first dispatch; a dispatch ``held`` names waits for ``marked``."""

    def __init__(self) -> None:
        super().__init__()
        self.first = threading.Event()
        self.marked = threading.Event()
        self.held: Callable[[str], bool] = lambda _: False
        self.gate_timed_out = False

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        self.first.set()
        if self.held(firing_id) and not self.marked.wait(HANG):
            self.gate_timed_out = True
        return super().dispatch(target, firing_id, payload)


class Claims(MemoryClaimStore):
    """A memory store whose later claim batches wait for the first dispatch, and whose marks
    say when they come."""

    def __init__(self, dispatcher: Dispatched) -> None:
        super().__init__()
        self.dispatcher = dispatcher
        self.batches = 0
        self.waited_in_vain = False
        self.last_batch: set[str] = set()
        self.lock = threading.Lock()

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        with self.lock:
            self.batches += 1
            later = self.batches > 2
            if self.batches == JOBS // 25:
                self.last_batch = {request.firing.id for request in claims}
        if later and not self.dispatcher.first.wait(HANG):
            self.waited_in_vain = True
        return super().claim_many(claims, now=now, lease_until=lease_until, origin=origin)

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        answer = super().mark_many(marks, now=now)
        self.dispatcher.marked.set()
        return answer


def test_the_first_dispatch_leaves_before_the_last_claim_batch_is_answered() -> None:
    dispatcher = Dispatched()
    claims = Claims(dispatcher)
    r = rig(_cron(JOBS), claims=claims, dispatcher=dispatcher)
    summary = r.tick("2026-11-30T14:01:00Z")
    assert summary["counts"]["dispatched"] == JOBS
    assert claims.batches == JOBS // 25
    assert not claims.waited_in_vain, "claim batches 3-20 waited for a dispatch that never came"


def test_a_batch_is_marked_before_the_last_dispatch_answers() -> None:
    """The last claim batch's dispatches wait until a mark has been written: the earlier
    batches' marks must go when their own dispatches have answered."""
    dispatcher = Dispatched()
    claims = Claims(dispatcher)
    dispatcher.held = lambda firing_id: firing_id in claims.last_batch
    r = rig(_cron(JOBS), claims=claims, dispatcher=dispatcher)
    summary = r.tick("2026-11-30T14:01:00Z")
    assert summary["counts"]["dispatched"] == JOBS
    assert not dispatcher.gate_timed_out, "no mark was written until the tick's last dispatch"
    for firing_id in dispatcher.firing_ids:
        run = claims.run(firing_id)
        assert run is not None and run.status.name == "DISPATCHED"
