"""Parts of the claim store's protocol that a backend may fill from its others: ``claim`` and
``mark_dispatched`` as batches of one (:class:`OneByOne`), ``latest_runs`` from ``job_state``
(:class:`FromJobStates`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Latest,
    MarkRequest,
    named_firings,
)
from mini_scheduler.claims.records import JobStart, JobState
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs.model import Place
from mini_scheduler.model import Firing


@dataclass(frozen=True, slots=True)
class Lease:
    """A batch of claims' common terms: made at ``now`` by ``origin``, held until ``until``."""

    now: datetime
    until: datetime
    origin: str


class OneByOne:
    """``claim`` and ``mark_dispatched`` as batches of one, for a store that writes batches;
    ``claim_many`` hands the batch's common terms on as one :class:`Lease`
    (:meth:`_claim_batch`)."""

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        return self._claim_batch(claims, Lease(now, lease_until, origin))

    def _claim_batch(self, claims: Sequence[ClaimRequest], lease: Lease) -> list[ClaimOutcome]:
        raise NotImplementedError

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        raise NotImplementedError

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
        over_skipped: bool = False,
        places: Sequence[Place] = (),
    ) -> ClaimResult:
        (outcome,) = self.claim_many(
            [ClaimRequest(firing, exclusive, over_skipped, tuple(places))],
            now=now,
            lease_until=lease_until,
            origin=origin,
        )
        if isinstance(outcome, StoreError):
            raise outcome
        return outcome

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        (error,) = self.mark_many([MarkRequest(firing, deadline, start)], now=now)
        if error is not None:
            raise error


class FromJobStates:
    """``latest_runs`` from ``job_state``, job by job: exact, for a store whose job state is
    its own to read (the dry run's, which never reads many)."""

    def job_state(self, job: str) -> JobState | None:
        raise NotImplementedError

    def latest_runs(self, named: Mapping[str, Sequence[str]]) -> dict[str, Latest]:
        named_firings(named)
        return {job: Latest(self.job_state(job), exact=True) for job in named}
