"""The DynamoDB claim store's claims and marks (the hot path: :mod:`.dynamodb`'s doc counts
its requests). The store is :class:`.dynamodb.DynamoDBClaimStore`; this is the part of it that
claims, takes over and marks a run."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims import places, transitions
from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    MarkRequest,
)
from mini_scheduler.claims.dynamodb_batch import BatchWriter, Insert, Update
from mini_scheduler.claims.dynamodb_marks import Tokens, write_marks
from mini_scheduler.claims.dynamodb_places import Caps
from mini_scheduler.claims.dynamodb_reads import DynamoDBReads
from mini_scheduler.claims.dynamodb_slots import JobSlots
from mini_scheduler.claims.dynamodb_table import (
    RUN,
    code,
    condition,
    get_many,
    named,
    run_from,
    run_item,
    run_key,
    write_retried,
)
from mini_scheduler.claims.oneby import Lease, OneByOne
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, firing_from_id

Outcomes = list[ClaimOutcome | None]
"""A batch's answers as they are found, by request (None: not yet known)."""


@dataclass(frozen=True, slots=True)
class _Batch:
    """A batch of claims as asked: one token for all of its inserts (it tells our own insert,
    sent again by the SDK, from a peer's)."""

    claims: Sequence[ClaimRequest]
    now: datetime
    lease_until: datetime
    origin: str
    token: str


class DynamoDBClaims(DynamoDBReads, OneByOne):
    """The claims and marks of the claim store on the state table (``claim`` and
    ``mark_dispatched`` are batches of one: :class:`.base.OneByOne`)."""

    _writer: BatchWriter
    _slots: JobSlots
    _caps: Caps
    _tokens: Tokens

    def _claim_batch(self, claims: Sequence[ClaimRequest], lease: Lease) -> list[ClaimOutcome]:
        batch = _Batch(claims, lease.now, lease.until, lease.origin, uuid.uuid4().hex)
        outcomes: Outcomes = [None] * len(claims)
        inserts = self._take_places(batch, self._take_slots(batch, outcomes), outcomes)
        items = [Insert(run_item(claims[i].firing, self._claimed(batch, i))) for i in inserts]
        try:
            written_all = self._writer.write(items)
        except StoreError as exc:  # the firings refused their slot keep that answer
            written_all = [exc] * len(items)
        refused: list[int] = []
        for i, written in zip(inserts, written_all, strict=True):
            if written is False:
                refused.append(i)
            else:
                outcomes[i] = ClaimResult.WON if written is True else written
        if refused:
            self._settle_refused(batch, refused, outcomes)
        # Each run won with where it goes is marked in its batch's marks item (.dynamodb_marks).
        self._tokens.claimed(
            [
                request.firing.id
                for request, outcome in zip(claims, outcomes, strict=True)
                if outcome is ClaimResult.WON and request.start is not None
            ],
            batch.token,
        )
        return [outcome for outcome in outcomes if outcome is not None]

    def _take_slots(self, batch: _Batch, outcomes: Outcomes) -> list[int]:
        """Take the exclusive claims' slots, in one batch (a refusal is that claim's answer,
        in ``outcomes``): the requests to insert, by index."""
        inserts: list[int] = []
        exclusive: list[int] = []
        asked: set[str] = set()
        for i, request in enumerate(batch.claims):
            if request.firing.id in asked:  # the first request for it decides; one token
                outcomes[i] = ClaimResult.LOST  # would read a repeat as our own lost answer
                continue
            asked.add(request.firing.id)
            (exclusive if request.exclusive else inserts).append(i)
        if not exclusive:
            return inserts
        takes = [(batch.claims[i].firing, batch.claims[i].over_skipped) for i in exclusive]
        try:
            taken_all = self._slots.take_many(
                self._writer, takes, now=batch.now, lease_until=batch.lease_until
            )
        except StoreError as exc:  # the batch's request failed whole: none was asked
            taken_all = [exc] * len(exclusive)
        for i, taken in zip(exclusive, taken_all, strict=True):
            if isinstance(taken, StoreError):
                outcomes[i] = taken
            elif not taken:
                # Another run holds the slot; a firing recorded already is LOST all the same.
                outcomes[i] = self._overlap_or_lost(batch.claims[i])
            else:
                inserts.append(i)
        return sorted(inserts)

    def _take_places(self, batch: _Batch, inserts: list[int], outcomes: Outcomes) -> list[int]:
        """Take the capped claims' places, one ``UpdateItem`` each (:mod:`.dynamodb_places`):
        a claim refused a place gives back what it took before it (its slot too), and its
        answer is OVERLAP (or LOST, a firing recorded already). The requests left to insert."""
        kept: list[int] = []
        for i in inserts:
            request = batch.claims[i]
            if not request.places:
                kept.append(i)
                continue
            taken: list[str] = []
            try:
                for place in request.places:
                    if not self._caps.take(
                        place.key,
                        request.firing.id,
                        place.limit,
                        lease=batch.lease_until,
                        now=batch.now,
                    ):
                        break
                    taken.append(place.key)
            except StoreError as exc:
                outcomes[i] = self._give_back(request, taken) or exc
                continue
            if len(taken) == len(request.places):
                kept.append(i)
            else:
                outcomes[i] = self._give_back(request, taken) or self._overlap_or_lost(request)
        return kept

    def _give_back(self, request: ClaimRequest, keys: Sequence[str]) -> StoreError | None:
        """A claim that will not be written gives back its places ``keys`` and its slot: None,
        or the StoreError of a release that failed (the place is then released as stale)."""
        try:
            for key in keys:
                self._caps.release(key, request.firing.id)
            if request.exclusive:
                self._slots.release(request.firing.job, request.firing.id, "release job (cap)")
        except StoreError as exc:
            return exc
        return None

    def _settle_refused(self, batch: _Batch, refused: list[int], outcomes: Outcomes) -> None:
        """The answers of the inserts refused: a peer's claim, or our own (the SDK sends a
        request again when its answer was lost, and the second send meets the first's items;
        the token tells them apart), or a SKIPPED record a backfill's claim replaces."""
        claims = batch.claims
        try:
            holders = self._holders([claims[i].firing for i in refused])
        except StoreError as exc:
            holders = {}
            for i in refused:
                outcomes[i] = exc
        for i in refused:
            if outcomes[i] is not None:
                continue
            holder, held_by = holders.get(claims[i].firing.id, (None, None))
            if held_by == batch.token:
                outcomes[i] = ClaimResult.WON
            elif holder is not None and transitions.replaces(claims[i].over_skipped, holder):
                run = self._claimed(batch, i, holder)
                outcomes[i] = self._claim_over_skip(claims[i].firing, holder, run, batch.token)
            else:
                outcomes[i] = self._lost(claims[i], holder)

    def _lost(self, request: ClaimRequest, holder: RunRecord | None) -> ClaimOutcome:
        """A claim lost to ``holder``: an exclusive one gives back the slot it took, unless
        ``holder`` keeps it (:func:`.transitions.lost_keeps_slot`). LOST, or the release's
        StoreError."""
        if request.exclusive and not transitions.lost_keeps_slot(holder):
            try:
                self._slots.release(
                    request.firing.job, request.firing.id, "release job (lost claim)"
                )
            except StoreError as exc:
                return exc
        if request.places and not places.lost_keeps_places(holder):
            keys = [place.key for place in request.places]
            return self._give_back(replace(request, exclusive=False), keys) or ClaimResult.LOST
        return ClaimResult.LOST

    def _claimed(self, batch: _Batch, i: int, over: RunRecord | None = None) -> dict[str, Any]:
        """The run the batch's claim ``i`` writes (``over``: the SKIPPED record it replaces)."""
        request = batch.claims[i]
        return transitions.claimed(
            request.firing,
            now=batch.now,
            lease_until=batch.lease_until,
            origin=batch.origin,
            exclusive=request.exclusive,
            expires_at=batch.now + self._ttl,
            token=batch.token,
            over=over,
            places=places.held(request.places),
            start=request.start,
        )

    def _claim_over_skip(
        self, firing: Firing, skip: RunRecord, run: Mapping[str, Any], token: str
    ) -> ClaimOutcome:
        """A backfill's claim over ``skip``, the firing's SKIPPED record as read: one PutItem
        of the claimed ``run``, on condition that the firing has no record or still that
        skip. Refused, it is LOST, unless the item it met is its own (an earlier send of
        this request, whose answer was lost)."""
        values: dict[str, Any] = {}
        expected = condition(transitions.over_skip(skip), RUN, values)
        request = named(
            {
                "TableName": self.table,
                "Item": run_item(firing, run),
                "ConditionExpression": f"attribute_not_exists(#pk) OR ({expected})",
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        try:
            write_retried(self._client, "put_item", self._sleep, **request)
        except ClientError as exc:
            if code(exc) != "ConditionalCheckFailedException":
                return self._fail("PutItem (claim over skip)", exc)
            met: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if met is None:  # an endpoint that does not return it with a refusal
                try:
                    met_token = self._holders([firing]).get(firing.id, (None, None))[1]
                except StoreError as error:
                    return error
            else:
                met_token = met.get(RUN["claim_token"], {}).get("S")
            return ClaimResult.WON if met_token == token else ClaimResult.LOST
        except BotoCoreError as exc:
            return self._fail("PutItem (claim over skip)", exc)
        return ClaimResult.WON

    def _overlap_or_lost(self, request: ClaimRequest) -> ClaimOutcome:
        try:
            run = self.run(request.firing.id)
        except StoreError as exc:
            return exc
        if run is None or transitions.replaces(request.over_skipped, run):
            return ClaimResult.OVERLAP
        return ClaimResult.LOST

    def _holders(self, firings: Sequence[Firing]) -> dict[str, tuple[RunRecord, str | None]]:
        """Each firing's record and claim token as stored (consistent reads)."""
        found: dict[str, tuple[RunRecord, str | None]] = {}
        keys = [run_key(firing) for firing in firings]
        for raw in get_many(self._client, self.table, "BatchGetItem (claims)", keys, self._sleep):
            run = run_from(raw)
            found[run.firing_id] = run, raw.get(RUN["claim_token"], {}).get("S")
        return found

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        self._watch.add(firing_ids, at)

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        write = transitions.taken_over(run, now=now, lease_until=lease_until, origin=origin)
        if write is None:
            return False
        request = self._run_update(firing_from_id(run.firing_id), write)
        return self._update(request, "UpdateItem (take over)", tolerate_condition=True) is not None

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        """Each claim batch's marks in one item where it can (:mod:`.dynamodb_marks`), the
        others on their runs."""
        grouped, alone = self._tokens.take(marks)
        errors: dict[str, StoreError | None] = {}
        if grouped:
            written = write_marks(
                self._client, self.table, grouped, now=now, ttl=self._ttl, sleep=self._sleep
            )
            for token, group in grouped.items():
                errors.update((mark.firing.id, written[token]) for mark in group)
        if alone:
            outcomes = self._mark_runs(alone, now=now)
            errors.update((mark.firing.id, e) for mark, e in zip(alone, outcomes, strict=True))
        return [errors[mark.firing.id] for mark in marks]

    def _mark_runs(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        # A mark refused (the run closed first, a very fast target, or was taken over) leaves
        # the run as it is: the job's latest state is read from its runs.
        updates = [
            Update(
                run_key(mark.firing),
                transitions.marked(mark, now=now),
                RUN,
            )
            for mark in marks
        ]
        outcomes = self._writer.write(updates)
        refused = [mark for mark, outcome in zip(marks, outcomes, strict=True) if outcome is False]
        if refused:
            # The run ended before its mark (or was taken over: then this changes nothing).
            late = [
                Update(
                    run_key(mark.firing),
                    transitions.started_after_end(now=now, start=mark.start),
                    RUN,
                )
                for mark in refused
            ]
            self._writer.write(late)
        return [outcome if isinstance(outcome, StoreError) else None for outcome in outcomes]
