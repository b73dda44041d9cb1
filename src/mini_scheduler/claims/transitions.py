"""The transitions of a run record: every write that moves it, and the job state that follows.

A :class:`~.writes.Write` is one conditional write in logical fields (:mod:`.writes`). A
claim, take-over, mark, skip, fail, end, time-out and redrive, and the job state and slot that
follow a run, each build theirs here; a backend only translates a Write into its own request
(DynamoDB's expressions, MongoDB's filter and update document, the memory store's replace).

Which status may follow which:

* a run is written CLAIMED or SKIPPED once, where its firing has no record; a backfill's claim
  (``over_skipped``) may also replace a SKIPPED record, as read (:func:`over_skip`), with its
  CLAIMED run, which keeps what it replaced (:func:`replaced`);
* CLAIMED -> CLAIMED (a take-over, past the lease, of the claim as it was seen) -> DISPATCHED;
* CLAIMED or DISPATCHED -> SUCCEEDED | FAILED | TIMED_OUT, in one write (the sweep's TIMED_OUT:
  DISPATCHED past its deadline only);
* what an end or a redrive does to a run that has ended already, or was redriven, is
  :func:`after_end` and :func:`after_redrive`'s answer, written by :func:`change` conditionally
  on the run being as it was read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from mini_scheduler.claims.base import MarkRequest
from mini_scheduler.claims.records import EarlierEnd, JobStart, Redrive, RunRecord
from mini_scheduler.claims.writes import Expect as Expect
from mini_scheduler.claims.writes import Write as Write
from mini_scheduler.claims.writes import applied as applied
from mini_scheduler.jobs import DEFAULT_FLOW_TIMEOUT
from mini_scheduler.model import Firing, RunStatus, iso_seconds

TIMED_OUT_ERROR = "no completion event before the job's timeout"
EARLIER_ENDS_KEPT = 10
"""How many earlier ends a redriven run keeps: the first, and the latest after it."""
ERROR_KEPT = 4000
"""How many characters of an error an end writes (the item and the history stay small)."""
OPEN: Final = (RunStatus.CLAIMED, RunStatus.DISPATCHED)
"""The statuses of an open run: claimed, or dispatched and not ended."""
ORIGIN_PARAMETER: Final = "_origin"
"""The parameter of a job's latest state that names the region and environment it ran in."""
ENDED: Final = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT)
"""The statuses of a run that was claimed and has ended."""


def new_run(firing: Firing, status: RunStatus, *, origin: str, **more: Any) -> dict[str, Any]:
    """A new run record's fields (written only where the firing has no record yet)."""
    run: dict[str, Any] = {
        "firing_id": firing.id,
        "job": firing.job,
        "scheduled_time": firing.scheduled_time,
        "status": status,
        "origin": origin,
    }
    if firing.manual:
        run["manual"] = True
        run["parameters"] = dict(firing.parameters)
    if firing.operator:
        run["operator"] = firing.operator
    if firing.backfill:
        run["backfill"] = True
    if firing.reruns:
        run["reruns"] = firing.reruns
    if firing.operator_reason:
        run["operator_reason"] = firing.operator_reason
    run.update((name, value) for name, value in more.items() if value is not None)
    return run


def claimed(
    firing: Firing,
    *,
    now: datetime,
    lease_until: datetime,
    origin: str,
    exclusive: bool,
    expires_at: datetime | None = None,
    token: str | None = None,
    over: RunRecord | None = None,
    places: Mapping[str, int] | None = None,
    start: JobStart | None = None,
) -> dict[str, Any]:
    """A claim: the run CLAIMED, open until its lease (``token`` tells the claimer's write);
    with ``over``, a backfill's claim over that SKIPPED record (:func:`replaced`); ``places``:
    the caps it took a place under (:mod:`.places`); ``start``, where it goes (its mark then
    needs to say only when it went, and its deadline)."""
    run = new_run(
        firing,
        RunStatus.CLAIMED,
        origin=origin,
        expires_at=expires_at,
        claimed_at=now,
        deadline=lease_until,
        open=True,
        exclusive=exclusive or None,
        claim_token=token,
        replaced_skip=replaced(over) if over is not None else None,
        places=dict(places) if places else None,
    )
    if start is not None:
        run.update(_started(start))
    return run


def replaces(over_skipped: bool, record: RunRecord) -> bool:
    """Whether a claim wins although its firing has ``record``: a backfill's claim
    (``over_skipped``) over a SKIPPED one, which never ran."""
    return over_skipped and record.status is RunStatus.SKIPPED


def over_skip(skip: RunRecord) -> Expect:
    """The condition of a backfill's claim over ``skip``: the firing's record is still that
    SKIPPED one. A skip is written once and never changes, so its status and its end (the
    instant it was recorded) tell it; a peer's claim over it changes the status, so exactly
    one of the claimers racing over one skip wins."""
    return Expect({"status": (RunStatus.SKIPPED,), "ended_at": (skip.ended_at,)})


def replaced(skip: RunRecord) -> dict[str, Any]:
    """What a backfill's run keeps of the SKIPPED record its claim replaced (``replacedSkip``):
    the skip's ``reason`` and, for a skipped range, its last firing (``until``) and how many
    firings it covered (``count``).

    A range's remainder (its second firing to ``until``) is not written as a range of its own:
    its key, the range's second firing, is the job's cron statement's to tell, and a store has
    none (nor would a second write be atomic with the claim). The run keeps the whole range's
    trace instead; the remainder's firings have no record of their own, so a backfill claims
    them as any firing."""
    kept = {"reason": skip.reason, "until": skip.skipped_until, "count": skip.skipped_count}
    return {name: value for name, value in kept.items() if value is not None}


def skipped(
    firing: Firing,
    *,
    now: datetime,
    reason: str,
    origin: str,
    expires_at: datetime | None = None,
    until: datetime | None = None,
    count: int | None = None,
) -> dict[str, Any]:
    """A skip: the run SKIPPED, ended; with ``until`` and ``count``, a skipped range."""
    return new_run(
        firing,
        RunStatus.SKIPPED,
        origin=origin,
        expires_at=expires_at,
        reason=reason,
        ended_at=now,
        skipped_until=iso_seconds(until) if until is not None else None,
        skipped_count=count,
    )


def taken_over(
    run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
) -> Write | None:
    """A take-over of a CLAIMED run as ``run`` saw it: a new claim time and lease (None for a
    run never claimed)."""
    if run.claimed_at is None:
        return None
    return Write(
        {"claimed_at": now, "deadline": lease_until, "origin": origin},
        Expect({"status": (RunStatus.CLAIMED,), "claimed_at": (run.claimed_at,)}),
        adds={"takeovers": 1},
    )


def dispatched(*, now: datetime, deadline: datetime, start: JobStart | None = None) -> Write:
    """The mark: a CLAIMED run DISPATCHED, with the job's timeout as its deadline; with
    ``start``, where and with what it went (the job's latest state is read from its latest
    run where a store keeps no state written at each dispatch)."""
    sets: dict[str, Any] = {"status": RunStatus.DISPATCHED, "started_at": now, "deadline": deadline}
    sets["claim_token"] = None  # it told our claim from a peer's; settled now, not kept
    if start is not None:
        sets.update(_started(start))
    return Write(sets, Expect({"status": (RunStatus.CLAIMED,)}))


def marked(mark: MarkRequest, *, now: datetime) -> Write:
    """A mark (:func:`dispatched`), or for a run whose dispatch answered its end (a queue took
    the message, a webhook answered: ``mark.ended``) that end in the same write: CLAIMED to
    ended, started and ended at ``now``. One write where a mark and a close were two; the job's
    latest state follows it (:func:`job_marked`) as it follows a run that ended before its mark."""
    write = dispatched(now=now, deadline=mark.deadline, start=mark.start)
    if mark.ended is None:
        return write
    more = {name: value for name, value in write.sets.items() if name != "status"}
    return _closing(mark.ended, now, mark.error, write.expect, **more)


def job_marked(mark: MarkRequest, *, now: datetime, ended: RunRecord | None) -> Write:
    """The job's latest state after ``mark``: :func:`job_started`, with the end the mark wrote
    (or ``ended``, the run that had ended before it)."""
    return job_started(mark.firing, now=now, start=mark.start, ended=ended, status=mark.ended)


def _started(start: JobStart) -> dict[str, Any]:
    """What a run records of its dispatch: the service, schedule and parameters it went with
    (its origin is a field of its own, not the ``_origin`` parameter of the job's state)."""
    parameters = {k: v for k, v in start.parameters.items() if k != ORIGIN_PARAMETER}
    started: dict[str, Any] = {
        "service": start.service,
        "schedule": start.schedule,
        "parameters": parameters,
    }
    if start.policy is not None:  # what its failure is retried by (the recorder reads it)
        started["policy"] = start.policy
    if start.buffered:  # a firing may wait for its end: the recorder wakes the ticker then
        started["buffered"] = True
    return started


def started_after_end(*, now: datetime, start: JobStart) -> Write:
    """The mark of a run whose completion came first (a very fast target): it stays ended, and
    records where and when it was dispatched."""
    return Write(
        {"started_at": now, **_started(start)}, Expect({"status": ENDED, "started_at": (None,)})
    )


def _closing(
    status: RunStatus, now: datetime, error: str | None, expect: Expect, **more: Any
) -> Write:
    """An open run's end (its deadline stays; an error kept if the end has none)."""
    sets: dict[str, Any] = {"status": status, "ended_at": now, **more}
    if error is not None:
        sets["error"] = error[:ERROR_KEPT]
    sets["open"] = None
    return Write(sets, expect)


def failed(*, now: datetime, error: str) -> Write:
    """A dispatch failed for good: the open run FAILED."""
    return _closing(RunStatus.FAILED, now, error, Expect({"status": OPEN}))


def ended(status: RunStatus, *, now: datetime, error: str | None = None) -> Write:
    """The usual end: an open run never redriven ends with the completion's status (any other
    end is :func:`after_end`'s, written by :func:`change`)."""
    return _closing(status, now, error, Expect({"status": OPEN, "redrives": (None,)}))


def timed_out(*, now: datetime) -> Write:
    """The sweep's end of a DISPATCHED run past its deadline, noting when (a late completion
    can still be recorded)."""
    expect = Expect({"status": (RunStatus.DISPATCHED,)}, at_most={"deadline": now})
    return _closing(RunStatus.TIMED_OUT, now, TIMED_OUT_ERROR, expect, timed_out_at=now)


CHANGEABLE = (
    "status",
    "ended_at",
    "error",
    "deadline",
    "redrives",
    "redriven_at",
    "timed_out_at",
    "earlier_ends",
)
"""The fields an end or a redrive decided on a read run may change."""


def change(before: RunRecord, after: RunRecord) -> Write:
    """The write that makes the run ``after``, conditional on it being as read: its status, end
    and redrive count (every such change moves one of them)."""
    sets: dict[str, Any] = {}
    for name in CHANGEABLE:
        value = getattr(after, name)
        if value != getattr(before, name):
            sets[name] = value if value != () else None
    if after.status.open != before.status.open:
        sets["open"] = True if after.status.open else None
    expect = Expect(
        {
            "status": (before.status,),
            "ended_at": (before.ended_at,),
            "redrives": (before.redrives,),
        }
    )
    return Write(sets, expect)


def change_run(
    read: Callable[[], RunRecord | None],
    write: Callable[[Write], bool],
    decide: Callable[[RunRecord], RunRecord | None],
    attempts: int,
) -> tuple[RunRecord, RunRecord] | None:
    """Read the run, write ``decide``'s answer with :func:`change` (True: written), and read
    again when the run changed meanwhile: (before, after), or None (an unknown firing, nothing
    to change, or a run that changed under every attempt)."""
    for _ in range(attempts):
        before = read()
        after = decide(before) if before is not None else None
        if before is None or after is None:
            return None
        if write(change(before, after)):
            return before, after
    return None


# -- the job's state and slot -------------------------------------------------------------------


def job_started(
    firing: Firing,
    *,
    now: datetime,
    start: JobStart,
    ended: RunRecord | None,
    status: RunStatus | None = None,
) -> Write:
    """The job's latest state at a dispatch; with ``ended``, of a run whose completion came
    before the dispatch was marked (its status and end, not DISPATCHED); with ``status``, the
    end its mark wrote (:func:`marked`)."""
    if ended is not None:
        last, end = ended.status, ended.ended_at
    else:
        last, end = (status, now) if status is not None else (RunStatus.DISPATCHED, None)
    return Write(
        {
            "service": start.service,
            "schedule": start.schedule,
            "parameters": dict(start.parameters),
            "start": now,
            "last_firing_id": firing.id,
            "last_status": last,
            "end": end,
        }
    )


def job_follows(firing_id: str, after: RunRecord) -> Write:
    """The job's latest state follows its last firing's run (and no other)."""
    return Write(
        {"end": after.ended_at, "last_status": after.status},
        Expect({"last_firing_id": (firing_id,)}),
    )


def take_slot(
    firing_id: str, *, over_skip: bool = False, lease_until: datetime | None = None
) -> Write:
    """An exclusive run takes the job's open slot, if no other run holds it; ``over_skip``: for
    a backfill's claim over its firing's SKIPPED record (:func:`stale_slot`); ``lease_until``:
    a claim's take notes its lease, how long the slot holds with no run yet (``open_until``)."""
    sets: dict[str, Any] = {"open_firing": firing_id, "open_over_skip": True if over_skip else None}
    if lease_until is not None:
        sets["open_until"] = lease_until
    return Write(sets, Expect({"open_firing": (None, firing_id)}))


def stale_slot(
    holder: RunRecord | None, lease: datetime | None, now: datetime, *, over_skip: bool = False
) -> str | None:
    """Why a job's slot may be released although ``holder``'s firing holds it: its run has
    ended (its release was lost), or no run was recorded within its claim's ``lease`` (the
    claimer died between taking the slot and writing the claim); None while it is held. A slot
    taken ``over_skip`` (by a backfill's claim, which replaces the firing's SKIPPED record
    after taking the slot) counts that SKIPPED record as no run yet: held until its lease."""
    if holder is not None and not (over_skip and holder.status is RunStatus.SKIPPED):
        return None if holder.status.open else "its run has ended"
    if lease is not None and lease <= now:
        return "no run was recorded within its claim's lease"
    return None


def release_slot(firing_id: str) -> Write:
    """An exclusive run releases the job's open slot, if it holds it (never another's)."""
    return Write(
        {"open_firing": None, "open_over_skip": None}, Expect({"open_firing": (firing_id,)})
    )


def slot_follows(firing_id: str, before: RunRecord, after: RunRecord) -> Write | None:
    """The slot write that follows an exclusive run's change, or None: its end releases the
    slot, its reopening (a redrive) takes it back (a failed take: :func:`.places.log_slot_held`)."""
    if not before.exclusive or after.status.open == before.status.open:
        return None
    return take_slot(firing_id) if after.status.open else release_slot(firing_id)


def may_wait(waiting: Sequence[str], firing_id: str, limit: int) -> bool:
    """Whether a buffered firing holds a place among its job's ``waiting`` firings after its
    take: it held one already (a peer buffered it too), or fewer than ``limit`` wait (each
    store writes this condition: DynamoDB's ``size``/``contains``, MongoDB's array index)."""
    return firing_id in waiting or len(waiting) < limit


def joined(waiting: Sequence[str], firing_id: str) -> tuple[str, ...]:
    """The job's waiting firings once ``firing_id`` takes its place (a set: once each)."""
    return tuple(sorted({*waiting, firing_id}))


def left(waiting: Sequence[str], firing_id: str) -> tuple[str, ...]:
    """The job's waiting firings once ``firing_id`` gives its place back (none: unchanged)."""
    return tuple(found for found in waiting if found != firing_id)


def lost_keeps_slot(holder: RunRecord | None) -> bool:
    """Whether the slot an exclusive claim took stays taken when the claim is lost to
    ``holder``, the firing's record: only for an open exclusive run (the same firing's, so the
    slot is its own). A skipped, ended or plain record never runs under it: the claimer gives
    the slot back at once, rather than leave it to the next claim's stale release."""
    return holder is not None and holder.status.open and holder.exclusive


# -- ends, late ends and redrives: decided on the run as read -----------------------------------


def after_end(
    run: RunRecord,
    status: RunStatus,
    *,
    now: datetime,
    error: str | None = None,
    redrive: Redrive | None = None,
) -> RunRecord | None:
    """The run after a completion event (``redrive``: the redriven attempt it ends, None for
    the first), or None when the event changes nothing:

    * an open run ends with the event's status;
    * a run the sweep marked TIMED_OUT ends with the event's status and keeps ``timed_out_at``
      (a late completion: the real end, and that it had timed out);
    * a run that ended FAILED or TIMED_OUT ends again when the event comes from a later redrive
      (its RUNNING event was not heard): the earlier end is kept in ``earlier_ends``;
    * anything else is a duplicate, or the end of an attempt before the latest redrive."""
    count, seen = (redrive.count if redrive else 0), (run.redrives or 0)
    if count < seen:
        return None
    ended = replace(run, status=status, ended_at=now, error=error)
    if run.status.open:
        return _redriven(ended, run, redrive) if count > seen and redrive else ended
    if count > seen and redrive and run.status in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        return _redriven(
            replace(ended, earlier_ends=_earlier_ends(run), timed_out_at=None), run, redrive
        )
    if run.swept and count == seen:
        return ended
    return None


def after_redrive(run: RunRecord, redrive: Redrive) -> RunRecord | None:
    """The run after the RUNNING event of a redrive, or None when it changes nothing: a run that
    ended FAILED or TIMED_OUT is DISPATCHED again (its end kept in ``earlier_ends``), with the
    job's timeout counted again from the redrive; an open run only notes the redrive (its
    earlier end was not heard). A redrive already heard, or of a run that succeeded or was
    skipped (Step Functions redrives neither), changes nothing."""
    if redrive.count <= (run.redrives or 0):
        return None
    if run.status.open:
        return _redriven(run, run, redrive)
    if run.status not in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        return None
    reopened = replace(
        run,
        status=RunStatus.DISPATCHED,
        ended_at=None,
        error=None,
        timed_out_at=None,
        earlier_ends=_earlier_ends(run),
    )
    return _redriven(reopened, run, redrive)


def _earlier_ends(run: RunRecord) -> tuple[EarlierEnd, ...]:
    ends = (*run.earlier_ends, EarlierEnd(run.status, run.ended_at, run.error))
    return ends if len(ends) <= EARLIER_ENDS_KEPT else (ends[0], *ends[1 - EARLIER_ENDS_KEPT :])


def _redriven(after: RunRecord, before: RunRecord, redrive: Redrive) -> RunRecord:
    """``after`` noting ``redrive``; its deadline is the job's timeout (as the run's deadline
    was set from its start, or from its last redrive) counted from the redrive."""
    base = before.redriven_at or before.started_at
    timeout = timedelta(seconds=DEFAULT_FLOW_TIMEOUT)
    if before.deadline is not None and base is not None and before.deadline > base:
        timeout = before.deadline - base
    try:
        deadline = redrive.at + timeout
    except OverflowError:
        deadline = datetime.max.replace(tzinfo=UTC)
    return replace(after, redrives=redrive.count, redriven_at=redrive.at, deadline=deadline)
