"""The jobs' last runs on the console's list, over every region, in a request or two a region
whatever the number of jobs.

Each region's store is read once for all the jobs (:meth:`.ClaimStore.latest_runs`), naming
each job's runs that can be its newest there:

* its firings that the region's ticks have handled since the console last read it (those before
  the region's watermark, from the control items the pauses come from), from the oldest to the
  newest of the regions' last firings, so that one region's answer can stand for another's, and
  always the region's last one (a run can come to it late: taken over, or backfilled);
* the last run the console found there (its status moves on), and a manual run it sent there.

A store that keeps each job's latest state (MongoDB, memory) answers exactly whatever is named.
DynamoDB reads the runs named by key (a ``BatchGetItem`` per 100 keys). A job's answer in a
region is then known when one of the firings named had started there (it sorts after every run
not named but manual ones), or when the console has seen the job's runs there up to the firings
named (:class:`Seen`). Otherwise another region's answer, when it started after the oldest firing
named, stands for it (a standby region, which runs nothing, is not read in full every time); else
the job is read in full there once (``job_state``: a Query), and remembered. A manual run made
elsewhere (the CLI, another console) is not seen until the console reads the job in full again:
docs/console.md says when.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.base import Control, Latest
from mini_scheduler.claims.records import JobState
from mini_scheduler.console.sites import Site
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.jobs import Job
from mini_scheduler.model import Firing, firing_from_id, iso_seconds

log = logging.getLogger("mini_scheduler.console")

MAX_NAMED: Final = 20  # a job's firings named in one read (after a long gap, the newest only)
_SECOND = timedelta(seconds=1)
_NEVER = datetime.min.replace(tzinfo=UTC)
_WINDOWS = tuple(
    timedelta(**span)
    for span in ({"minutes": 2}, {"hours": 1}, {"days": 1}, {"days": 35}, {"days": 3000})
)
_FAILED = (SchedulerError, BotoCoreError, ClientError)

Each = Callable[[Callable[[Site], Any], Sequence[Site]], list[Any]]
"""How the regions are read: a read of every site at once, its answers in the sites' order."""


def recent_firings(
    job: Job, before: datetime, count: int, since: datetime | None = None
) -> tuple[list[datetime], bool]:
    """``job``'s last ``count`` firings before ``before`` (at or after ``since``), newest first,
    looked for back to about 8 years; and whether older ones there were left out."""
    found: list[datetime] = []
    for window in _WINDOWS:
        begin = before - window
        if since is not None and begin <= since:
            found = list(job.firings(since, before))
            break
        found = list(job.firings(begin, before))
        if len(found) >= count:
            break
    found.reverse()
    return found[:count], len(found) > count


def handled(control: Control, scope: str) -> datetime | None:
    """Until when a region's ticks handled its firings: its watermark, or its shards' newest (a
    fanned-out tick leaves the region's own where it was)."""
    marks = [
        mark
        for name, mark in control.watermarks.items()
        if name == scope or name.startswith(f"{scope}#shard-")
    ]
    if control.watermark is not None:
        marks.append(control.watermark)
    return max(marks, default=None)


@dataclass(frozen=True, slots=True)
class Seen:
    """A job's runs in a region as the console last read them: every run sorted after its
    firing at ``through`` was read (None: the region had handled none of its firings), and
    ``latest`` (a run id; None: none) is the newest of them that started."""

    through: datetime | None
    latest: str | None


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a region's read names for a job: ``ids``; ``floor``, the oldest firing named (a run
    found that sorts at or after it is the region's newest); ``covered``: what sorts before the
    firings named is :class:`Seen`; ``head``, the region's own last firing handled."""

    ids: list[str]
    floor: datetime | None
    covered: bool
    head: datetime | None
    seen: Seen | None


def _plan(
    job: Job, span: tuple[datetime, datetime] | None, head: datetime | None, seen: Seen | None
) -> _Plan:
    """The region's read of ``job``, given the regions' oldest and newest last firings."""
    firings: list[datetime] = []
    more = False
    if span is not None:
        since = span[0] if seen is None or seen.through is None else seen.through + _SECOND
        firings, more = recent_firings(job, span[1] + _SECOND, MAX_NAMED, since)
    if seen is None:
        covered = False
    elif seen.through is None:
        covered = head is None  # it still handled none: its runs are the ones it was seen with
    else:
        covered = not more
    if head is not None and head not in firings:  # named every time: a take-over, a backfill
        firings = sorted([*firings, head], reverse=True)
    ids = [Firing(job.name, at).id for at in firings]
    return _Plan(ids, firings[-1] if firings else None, covered, head, seen)


def _started(latest: Latest | None) -> JobState | None:
    state = latest.state if latest is not None else None
    return state if state is not None and state.start is not None else None


def _sorts_after(run_id: str, than: str) -> bool:
    """Whether the run ``run_id`` sorts at or after the run ``than`` (a job's history order)."""
    return firing_from_id(run_id).sort_key >= firing_from_id(than).sort_key


def _newer(state: JobState, than: str) -> bool:
    """Whether ``state``'s run sorts at or after the run ``than``."""
    mine = state.last_firing_id
    return mine is not None and _sorts_after(mine, than)


def view(region: str, state: JobState) -> dict[str, Any]:
    """A job's last run as the list shows it."""
    start, end = state.start, state.end
    took = None
    if start is not None and end is not None and end >= start:
        took = int((end - start).total_seconds() * 1000)
    return {
        "firingId": state.last_firing_id,
        "status": str(state.last_status) if state.last_status else None,
        "started": iso_seconds(start) if start else None,
        "ended": iso_seconds(end) if end else None,
        "durationMs": took,
        "region": region,
    }


class LastRuns:
    """The jobs' last runs over the console's regions, and what it remembers of each region's
    runs of each job between two reads (:class:`Seen`), and of the manual runs it sent."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], Seen] = {}
        self._sent: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def sent(self, region: str, answer: Mapping[str, Any]) -> None:
        """A ticker's answer to a manual run (or a rerun) the console sent to ``region``: the
        run is named in the region's next reads, until one finds it or a newer one."""
        job, run_id = answer.get("job"), answer.get("firingId")
        if not isinstance(job, str) or not isinstance(run_id, str):
            return
        try:
            if firing_from_id(run_id).job != job:
                return
        except ValueError:
            return
        with self._lock:
            self._sent[(region, job)] = run_id

    def read(
        self,
        jobs: Sequence[Job],
        marks: Mapping[str, datetime | None],
        sites: Sequence[Site],
        each: Each,
    ) -> dict[str, dict[str, Any] | None]:
        """Each job's last run over ``sites`` (None: none), read in each region at once;
        ``marks``: how far each region's ticks handled its firings (:func:`handled`; a region
        not in it could not be read, and is left out)."""
        readable = [s for s in sites if s.region in marks and s.operator.claims is not None]
        plans = self._plans(jobs, marks, readable)
        answers = each(lambda site: _ask(site, plans[site.region]), readable)
        known, unknown = self._judge(dict(zip(plans, answers, strict=True)), plans)
        if any(unknown.values()):
            full = each(lambda site: _full(site, unknown[site.region]), readable)
            self._remember_full(dict(zip(plans, full, strict=True)), plans, known)
        latest: dict[str, dict[str, Any] | None] = {}
        for job in jobs:
            found = known.get(job.name, [])
            newest = max(found, key=lambda placed: placed[1].start or _NEVER, default=None)
            latest[job.name] = view(*newest) if newest is not None else None
        return latest

    def _plans(
        self, jobs: Sequence[Job], marks: Mapping[str, datetime | None], sites: Sequence[Site]
    ) -> dict[str, dict[str, _Plan]]:
        """What each region's read names, job by job."""
        with self._lock:
            seen = dict(self._seen)
            sent = dict(self._sent)
        plans: dict[str, dict[str, _Plan]] = {site.region: {} for site in sites}
        for job in jobs:
            by_mark: dict[datetime, datetime | None] = {}
            for mark in {m for r in plans if (m := marks[r]) is not None}:
                firings, _ = recent_firings(job, mark, 1)
                by_mark[mark] = firings[0] if firings else None
            heads = {r: by_mark.get(m) if (m := marks[r]) is not None else None for r in plans}
            known = [head for head in heads.values() if head is not None]
            span = (min(known), max(known)) if known else None
            for region, planned in plans.items():
                key = (region, job.name)
                plan = _plan(job, span, heads[region], seen.get(key))
                extra = [plan.seen.latest if plan.seen else None, sent.get(key)]
                plan.ids.extend(i for i in dict.fromkeys(extra) if i and i not in plan.ids)
                planned[job.name] = plan
        return plans

    def _judge(
        self,
        answers: Mapping[str, Mapping[str, Latest] | None],
        plans: Mapping[str, Mapping[str, _Plan]],
    ) -> tuple[dict[str, list[tuple[str, JobState]]], dict[str, list[str]]]:
        """Each job's runs known by region, and by region the jobs to read in full there."""
        known: dict[str, list[tuple[str, JobState]]] = {}
        undecided: list[tuple[str, str]] = []
        seen: dict[tuple[str, str], Seen] = {}
        for region, answer in answers.items():
            if answer is None:
                continue  # unreadable: logged, left out
            for job, plan in plans[region].items():
                latest = answer.get(job)
                state = _started(latest)
                exact = latest is not None and latest.exact
                if not exact:
                    floor = Firing(job, plan.floor).id if plan.floor is not None else None
                    if not (plan.covered or (state and floor and _newer(state, floor))):
                        undecided.append((region, job))
                        continue
                    seen[(region, job)] = _seen(plan, state)
                if state is not None:
                    known.setdefault(job, []).append((region, state))
        self._remember(seen)
        unknown: dict[str, list[str]] = {region: [] for region in plans}
        for region, job in undecided:
            oldest = plans[region][job].floor
            starts = [s.start for _, s in known.get(job, []) if s.start is not None]
            if oldest is None or not starts or max(starts) < oldest:
                unknown[region].append(job)
        return known, unknown

    def _remember_full(
        self,
        full: Mapping[str, Mapping[str, JobState | None] | None],
        plans: Mapping[str, Mapping[str, _Plan]],
        known: dict[str, list[tuple[str, JobState]]],
    ) -> None:
        """The jobs read in full: their runs known, and remembered."""
        seen: dict[tuple[str, str], Seen] = {}
        for region, states in full.items():
            for job, state in (states or {}).items():
                started = state if state is not None and state.start is not None else None
                if started is not None:
                    known.setdefault(job, []).append((region, started))
                seen[(region, job)] = _seen(plans[region][job], started)
        self._remember(seen)

    def _remember(self, seen: Mapping[tuple[str, str], Seen]) -> None:
        with self._lock:
            self._seen.update(seen)
            for key, now in seen.items():
                sent = self._sent.get(key)
                if sent is not None and now.latest is not None and _sorts_after(now.latest, sent):
                    del self._sent[key]


def _seen(plan: _Plan, state: JobState | None) -> Seen:
    """What a region's read of a job leaves known: its runs up to its own last firing."""
    through = plan.head if plan.head is not None else (plan.seen.through if plan.seen else None)
    return Seen(through, state.last_firing_id if state is not None else None)


def _ask(site: Site, plans: Mapping[str, _Plan]) -> Mapping[str, Latest] | None:
    """The region's read of every job's runs named (None: it failed, and is logged)."""
    claims = site.operator.claims
    if claims is None:
        return None
    try:
        return claims.latest_runs({job: plan.ids for job, plan in plans.items()})
    except _FAILED as exc:
        log.warning("Last runs in %s unreadable: %s", site.region, _describe(exc))
        return None


def _full(site: Site, jobs: Sequence[str]) -> dict[str, JobState | None] | None:
    """These jobs read in full in the region (``job_state``: a Query each on DynamoDB)."""
    claims = site.operator.claims
    if claims is None or not jobs:
        return None
    states: dict[str, JobState | None] = {}
    for job in jobs:
        try:
            states[job] = claims.job_state(job)
        except _FAILED as exc:
            log.warning("Job %s unreadable in %s: %s", job, site.region, _describe(exc))
    return states


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SchedulerError) else describe_aws_error(exc)
