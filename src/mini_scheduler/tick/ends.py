"""The runs whose dispatch answered their end: a queue, a topic or a bus took the message
(SUCCEEDED), a webhook answered (SUCCEEDED, or FAILED with its status). The store writes such an
end in the run's mark (:func:`mini_scheduler.claims.transitions.marked`: one write a firing,
where a mark and a close were two), and what follows an end is the recorder's, as for any
completion: the end's line and count, a failed run's retry or final failure.

An ``overlap: skip`` run holds its job's slot, which only the store's close releases: its end is
kept here until its mark is written, then closed as a completion is (a write more)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mini_scheduler.claims.base import ClaimStore, MarkRequest
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.clock import Clock
from mini_scheduler.errors import StoreError
from mini_scheduler.metrics import Metrics
from mini_scheduler.model import RunStatus, log_keys
from mini_scheduler.tick.report import Tally
from mini_scheduler.wake import Wake

if TYPE_CHECKING:  # the recorder is imported at the first end, not at a cold start
    from mini_scheduler.failures import FinalFailures
    from mini_scheduler.recorder import Recorder

log = logging.getLogger("mini_scheduler.ticker")

Held = tuple[RunStatus, str | None]
_SAME = timedelta(milliseconds=1)  # a store keeps instants to the millisecond
ATTEMPTS = 3  # tries of what follows an end, on top of the SDK's retries (as a mark's)
NOT_CLOSED = (
    "Job %s - the end of firing %s (%s) was not recorded: the run holds its job's slot until "
    "the sweep times it out at its deadline: %s"
)
NOT_FOLLOWED = (
    "Job %s - firing %s ended %s, and what follows was not recorded (a FAILED run's retry is "
    "lost): %s"
)


class DispatchEnds:
    """The ends of a ticker's dispatches, recorded once their marks are written."""

    def __init__(
        self,
        claims: ClaimStore,
        clock: Clock,
        metrics: Metrics,
        *,
        origin: str,
        failures: FinalFailures | None,
        wake: Wake | None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._claims, self._clock, self._metrics = claims, clock, metrics
        self._origin, self._failures, self._wake = origin, failures, wake
        self._sleep = sleep  # worker threads back off on it, not on the clock
        self._lock = threading.Lock()
        self._held: dict[str, Held] = {}
        self._recorder: Recorder | None = None

    def hold(self, firing_id: str, status: RunStatus, error: str | None) -> None:
        """An exclusive run's end, closed by the store once its mark is written."""
        with self._lock:
            self._held[firing_id] = (status, error)

    def marked(self, marks: Sequence[tuple[MarkRequest, datetime]], tally: Tally) -> None:
        """``marks`` are written, each at its instant: what follows the ends they carry, or
        hold."""
        with self._lock:
            held = {m.firing.id: self._held.pop(m.firing.id, None) for m, _ in marks}
        for mark, at in marks:
            end = (mark.ended, mark.error) if mark.ended is not None else held[mark.firing.id]
            if end is None:
                continue
            if mark.ended is RunStatus.FAILED and not self._ended_here(mark, at):
                continue
            self._end(mark, end, closed=mark.ended is not None, tally=tally)

    def _ended_here(self, mark: MarkRequest, at: datetime) -> bool:
        """Whether the FAILED end ``mark`` carried is the run's, written at ``at``: a mark the
        store refused (a peer took the run over past its lease, and dispatched it itself)
        answers as one written, and the retry, the final failure's event and its dead letter
        are then the peer's to decide. One read, for a failure only."""
        try:
            run = self._claims.run(mark.firing.id)
        except StoreError:
            return True  # unread: its retry is deferred once (the deferred firing's key)
        if run is None or run.status is not RunStatus.FAILED or run.started_at is None:
            return False
        if abs(run.started_at - at) < _SAME:
            return True
        log.info(
            "Job %s - firing %s was taken over before its end was written here: what follows "
            "it is its new claimer's",
            mark.firing.job,
            mark.firing.id,
            extra=log_keys(mark.firing.job, mark.firing.id),
        )
        return False

    def _end(self, mark: MarkRequest, end: Held, *, closed: bool, tally: Tally) -> None:
        from mini_scheduler.recorder import Completion

        status, error = end
        now = self._clock.now()
        completion = Completion(mark.firing.id, status, now, error, source="dispatch")
        for attempt in range(ATTEMPTS):
            if attempt:
                self._sleep(0.2 * 2 ** (attempt - 1))
            try:
                if closed:
                    before = _as_marked(mark, now, self._origin)
                    self.recorder().ended_at_dispatch(before, completion)
                else:
                    self.recorder().record(completion)
                return
            except StoreError as exc:
                why = exc
        tally.add("errors")
        job = mark.firing.job
        log.error(
            NOT_CLOSED if not closed else NOT_FOLLOWED,
            job,
            mark.firing.id,
            status,
            why,
            extra=log_keys(job, mark.firing.id),
        )

    def recorder(self) -> Recorder:
        """The recorder of these ends, made at the first (a tick of Lambda and flow targets
        never imports it)."""
        with self._lock:
            if self._recorder is None:
                from mini_scheduler.recorder import Recorder

                self._recorder = Recorder(
                    self._claims,
                    self._clock,
                    self._metrics,
                    origin=self._origin,
                    failures=self._failures,
                    wake=self._wake,
                )
            return self._recorder


def _as_marked(mark: MarkRequest, now: datetime, origin: str) -> RunRecord:
    """The run as its mark found it, DISPATCHED at ``now`` (what the recorder reads of a run
    before its end: its policy, where it went, when it started)."""
    firing, start = mark.firing, mark.start
    parameters = {k: v for k, v in start.parameters.items() if not k.startswith("_")}
    return RunRecord(
        firing.id,
        firing.job,
        firing.scheduled_time,
        RunStatus.DISPATCHED,
        origin=origin,
        started_at=now,
        deadline=mark.deadline,
        operator=firing.operator,
        manual=firing.manual,
        parameters=parameters,
        service=start.service,
        schedule=start.schedule,
        policy=start.policy,
        backfill=firing.backfill,
        reruns=firing.reruns,
        operator_reason=firing.operator_reason,
    )
