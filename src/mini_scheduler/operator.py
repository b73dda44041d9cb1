"""What an operator asks of the scheduler: run a job now or a past firing again, pause or
resume it, read or set the active environment, create, list, show or delete runtime
schedules, backfill a job's past window and follow it. One implementation, called by the
ticker's events and by the CLI alike.

Each action checks its operator and its job before anything is written, and logs who asked;
once done, it writes its audit record (:mod:`mini_scheduler.audit.trail`) with the state before
and after, and the operator's reason.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Final

from mini_scheduler.audit.trail import Audited, Trail, run_state, stored_active
from mini_scheduler.backfill import check_rate, check_window, plan_backfill, start_backfill
from mini_scheduler.backfill import status as backfill_status
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.clock import Clock
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.errors import EventError, PayloadError
from mini_scheduler.fleet import no_such_job
from mini_scheduler.jobs import (
    CronFile,
    Job,
    Target,
    check_parameters_fit,
    name_problem,
    reserved_note,
    split_reserved,
)
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_seconds, log_keys
from mini_scheduler.schedules import MAX_LEAD, RuntimeSchedule, Schedules
from mini_scheduler.wake import Wake

log = logging.getLogger("mini_scheduler.ticker")

_OPERATOR = re.compile(r"[A-Za-z0-9._@-]{1,128}")


def check_operator(operator: Any) -> str:
    """The operator who asked: required, at most 128 letters, digits, '.', '_', '-', '@'."""
    if not isinstance(operator, str) or not operator.strip():
        raise EventError('operator is required: name who asks (e.g. "operator": "jane.doe")')
    operator = operator.strip()
    if not _OPERATOR.fullmatch(operator):
        raise EventError(
            f"operator {operator[:140]!r} must be 1-128 letters, digits, '.', '_', '-' or '@'"
        )
    return str(operator)


def past_firing(firing_id: Any, now: datetime) -> Firing:
    """The firing (its first attempt) a rerun names: one of ours, of a well-formed job name,
    not later than ``now``."""
    example = "e.g. nightly-export@2026-11-30T02:00:00Z, as history shows it"
    if not isinstance(firing_id, str) or not firing_id.strip():
        raise EventError(f"rerun must be a firing id ({example})")
    try:
        firing = firing_from_id(firing_id.strip())
    except ValueError:
        raise EventError(
            f"{firing_id[:120]!r} is not a firing id of mini-scheduler: <job>@<UTC instant> "
            f"({example})"
        ) from None
    problem = name_problem(firing.job)
    if problem:
        raise EventError(f"firing id {firing_id[:120]!r} does not name a job: {problem}")
    if firing.scheduled > now:
        raise EventError(
            f"firing {firing.firing_id[:160]} is later than now: nothing to run again "
            "(mini-scheduler run JOB runs a job now)"
        )
    return replace(firing, attempt=1)


def run_parameters(job: Job, parameters: Any) -> dict[str, Any]:
    """What a manual run of ``job`` sends: the job's parameters with the operator's (an object
    of text keys; reserved keys dropped, with a warning) merged over them. PayloadError, naming
    the limit, when the job's target or the store cannot take them."""
    kept = _operator_parameters(parameters, f"Job {job.name}", job.name)
    merged = {**job.parameters, **kept}
    problem = check_parameters_fit(job.target, merged)
    if problem:
        raise PayloadError(f"parameters for {job.name}: {problem}")
    return merged


_ANY_TARGET: Final = Target("lambda", "any")  # the kind that takes the most parameters


def check_sendable(parameters: Any) -> dict[str, Any]:
    """An operator's parameters checked before they are sent to a ticker that will merge them
    over a job's (the CLI's ``run``, which does not read the job): an object of text keys that
    fits the most any target takes. PayloadError, naming the limit, when it does not."""
    kept = _operator_parameters(parameters, "Run", None)
    problem = check_parameters_fit(_ANY_TARGET, kept)
    if problem:
        raise PayloadError(f"parameters: {problem}")
    return dict(parameters)


def _operator_parameters(parameters: Any, label: str, job: str | None) -> dict[str, Any]:
    """The operator's parameters without the reserved keys (each dropped with a warning)."""
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, Mapping) or not all(isinstance(k, str) for k in parameters):
        raise PayloadError("parameters must be an object whose keys are text")
    kept, dropped = split_reserved(parameters)
    for key in dropped:
        log.warning("%s", reserved_note(label, key), extra=log_keys(job) if job else None)
    return kept


def _check_fired(claims: ClaimStore | None, job: Job, original: Firing) -> None:
    """The firing a rerun repeats: one with a record in ``claims``, or an instant its job's
    statement selects (so a mistyped instant is refused)."""
    if claims is not None and claims.run(original.firing_id) is not None:
        return
    if original.manual:
        raise EventError(
            f"no manual run {original.firing_id[:160]} in this region's records: rerun it "
            "in the region whose history shows it"
        )
    second = timedelta(seconds=1)
    if job.next_after(original.scheduled - second) != original.scheduled:
        raise EventError(
            f"no firing {original.firing_id[:160]}: this region holds no record of it, and "
            f"{job.name}'s schedule {job.schedule} does not fire at "
            f"{iso_seconds(original.scheduled)}"
        )


def _mode(environment: ActiveEnvironment, job: Job) -> str:
    """``active`` or ``standby``, with the line that says an operator's run goes ahead."""
    reading = environment.read()
    if environment.is_active(reading.active):
        return "active"
    log.warning(
        "Manual run of %s on an instance on standby - the active environment is "
        "%s, this instance is %s; the operator's run goes ahead",
        job.name,
        reading.active,
        environment.environment_name,
        extra=log_keys(job.name),
    )
    return "standby"


def _job_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise EventError("job must be the name of a job in cron.yaml")
    problem = name_problem(name)
    if problem:
        raise EventError(f"not a job name: {problem}")
    return name


class Operator(Audited):
    """Operator actions over one region's stores. ``run`` is the function that claims and
    dispatches a manual firing (the tick's executor); without one, runs are refused (the CLI
    runs a job by invoking the ticker, which has one). Without ``cron`` (the CLI when it cannot
    read the deployed cron file), a job is checked by its name's form only."""

    def __init__(
        self,
        *,
        cron: Callable[[], CronFile] | None,
        claims: ClaimStore | None,
        environment: ActiveEnvironment | None,
        clock: Clock,
        run: Callable[[Job, Firing], bool] | None = None,
        origin: str = "operator",
        default_zone: str = "UTC",
        wake: Wake | None = None,
        lead_seconds: int = MAX_LEAD,
        in_step: Callable[[], Mapping[str, Any]] | None = None,
        audit: Trail | None = None,
    ) -> None:
        self._cron = cron
        self.claims = claims
        self.environment = environment
        self.clock = clock
        self._run = run
        self._origin = origin  # who writes a schedule's or a backfill's firings
        self._default_zone = default_zone  # a runtime schedule's zone when it names none
        self._wake = wake  # told of firings deferred, in case one is due in this minute
        self._lead = lead_seconds  # the tickers' TICK_LEAD_SECONDS (unknown: the most)
        self._in_step = in_step  # after a write: the peers brought in step (carry/)
        self.audit = audit  # where each action done is recorded (none: not recorded)

    def _carried(self, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer``, with the regions brought in step after the write (when there are
        peers): the one written is in its own store whatever they say."""
        if self._in_step is not None:
            answer["regions"] = dict(self._in_step())
        return answer

    def job(self, name: Any) -> Job:
        """The cron file's job ``name``; EventError naming it when there is none."""
        if not isinstance(name, str) or not name:
            raise EventError("job must be the name of a job in cron.yaml")
        if self._cron is None:
            raise EventError("no cron file to find the job in")
        job = self._cron().job(name)
        if job is None:
            raise EventError(f"unknown job {name[:100]!r}: no job of that name in cron.yaml")
        return job

    def cron_file(self) -> CronFile:
        """The cron file the jobs come from; EventError when this path has none."""
        if self._cron is None:
            raise EventError("no cron file to find the jobs in")
        return self._cron()

    def runtime_schedules(self) -> list[RuntimeSchedule]:
        """The runtime schedules this region's store holds, by name."""
        return self._schedules().all()

    def run_now(self, job_name: Any, operator: Any, parameters: Any = None) -> dict[str, Any]:
        """Run a job now for an operator: no claim to win, on a standby region too; a firing of
        its own that never takes a scheduled firing's place."""
        operator = check_operator(operator)
        job = self.job(job_name)
        merged = run_parameters(job, parameters)
        if self._run is None:
            raise EventError("this operator path cannot dispatch: run the job through the ticker")
        mode = _mode(self._environment(), job)
        log.info("Operator %s runs %s manually", operator, job.name, extra=log_keys(job.name))
        firing = self.manual_firing(job.name, operator, merged)
        dispatched = self._run(job, firing)
        answer = {
            "job": job.name,
            "firingId": firing.id,
            "operator": operator,
            "manual": True,
            "status": str(RunStatus.DISPATCHED if dispatched else RunStatus.FAILED),
            "mode": mode,
            "parameters": merged,
        }
        return self._audited(answer, "run", operator, job=job.name, after=run_state(answer))

    def rerun(self, firing_id: Any, operator: Any, parameters: Any = None) -> dict[str, Any]:
        """Run a past firing again for an operator: a manual run (a firing id of its own, no
        claim to win, on a standby region too) whose target is sent the original's
        ``scheduledTime`` and ``reruns``: the firing id it repeats. The firing must be ours, of
        a job of cron.yaml or a runtime schedule, not in the future, and either recorded here
        or an instant its job's statement selects (so a mistyped instant is refused)."""
        operator = check_operator(operator)
        original = past_firing(firing_id, self.clock.now())
        job = self._runnable(original.job)
        _check_fired(self.claims, job, original)
        merged = run_parameters(job, parameters)
        if self._run is None:
            raise EventError("this operator path cannot dispatch: run the job through the ticker")
        mode = _mode(self._environment(), job)
        log.info(
            "Operator %s runs %s manually - a rerun of firing %s",
            operator,
            job.name,
            original.firing_id,
            extra=log_keys(job.name, original.firing_id),
        )
        firing = self.manual_firing(job.name, operator, merged, original.firing_id)
        dispatched = self._run(job, firing)
        answer = {
            "job": job.name,
            "firingId": firing.id,
            "reruns": original.firing_id,
            "scheduledTime": original.scheduled_time,
            "operator": operator,
            "manual": True,
            "status": str(RunStatus.DISPATCHED if dispatched else RunStatus.FAILED),
            "mode": mode,
            "parameters": merged,
        }
        done = {"job": job.name, "subject": original.firing_id, "after": run_state(answer)}
        return self._audited(answer, "rerun", operator, **done)

    def _runnable(self, name: str) -> Job:
        """The job a firing names: cron.yaml's, else a runtime schedule's."""
        try:
            return self.job(name)
        except EventError:
            if self._cron is None or self.claims is None:
                raise
            try:
                return self._schedules().show(name).job
            except EventError:
                pass
            raise EventError(
                f"unknown job {name[:100]!r}: no job of that name in cron.yaml, nor a runtime "
                "schedule (a one-time schedule that has fired is gone: create it again)"
            ) from None

    def set_paused(self, job_name: Any, paused: bool, operator: Any) -> dict[str, Any]:
        """Pause or resume a job, cron.yaml's or a runtime schedule alike (one that
        ``pause_after_failures`` paused is resumed so): persisted; ticks run none of a paused
        job's firings, and after a resume it fires at its next one. A pause left behind (its
        job gone from cron.yaml) can always be resumed."""
        operator = check_operator(operator)
        if self.claims is None:
            raise EventError("no claim store here to keep pauses in")
        name = _job_name(job_name)
        was = name in self.claims.control("-").paused
        if paused or not was:
            name = self._pausable(name)
        self.claims.set_paused(name, paused, operator=operator, now=self.clock.now())
        log.info(
            "Job %s %s by %s",
            name,
            "paused" if paused else "resumed",
            operator,
            extra=log_keys(name),
        )
        answer = self._carried({"job": name, "paused": paused, "operator": operator})
        action = "pause" if paused else "resume"
        states = {"before": {"paused": was}, "after": {"paused": paused}}
        return self._audited(answer, action, operator, job=name, **states)

    def _pausable(self, job_name: Any) -> str:
        """A job of cron.yaml, else a runtime schedule's name (read only when the cron file has
        none of that name); without a cron file, any well-formed name."""
        name = _job_name(job_name)
        if self._cron is None or self._cron().job(name) is not None:
            return name
        if self.holds_schedule(name):
            return name
        raise EventError(no_such_job(name[:100], "cron.yaml", ["this region"]))

    def holds_schedule(self, name: str) -> bool:
        """Whether this region's store holds a runtime schedule ``name`` (one read)."""
        try:
            self._schedules().show(name)
        except EventError:
            return False
        return True

    def _environment(self) -> ActiveEnvironment:
        if self.environment is None:
            raise EventError("no active-environment store here")
        return self.environment

    def environment_status(self) -> dict[str, Any]:
        """The active-environment status (environment, active, mode, persistent, store)."""
        environment = self._environment()
        reading = environment.read()
        status = environment.status(reading.active)
        if reading.error:
            status["error"] = reading.error
        return status

    def set_environment(
        self, active: Any, operator: Any, force: Any = False, reason: Any = None
    ) -> dict[str, Any]:
        """Persist ``active`` as the active environment in this region's store, then answer
        the status and that the other regions were not changed. A name the region does not
        know is refused unless ``force`` with a ``reason`` (logged with the operator)."""
        operator = check_operator(operator)
        if not isinstance(active, str):
            raise EventError('environment.active must be an environment name, e.g. "DR"')
        if not isinstance(force, bool):
            raise EventError("environment.force must be true or false")
        if reason is not None and not force:
            raise EventError('environment.reason goes with "force": true (a known name needs none)')
        environment = self._environment()
        if force and reason is None:
            reason = self._asking.reason  # the audit's reason is the forced name's too
        before = stored_active(environment.store)
        status = environment.activate(
            active, operator, self.clock.now(), force=force, reason=reason
        )
        here = self._origin.split("/")[0] if "/" in self._origin else "this region"
        status["otherRegions"] = (
            f"not changed: this wrote {environment.store.name} in {here} only; a region "
            "that reads another store keeps its value, and the regions disagree until "
            f"mini-scheduler failover --to {status['active']} --regions R1,R2 writes them all"
        )
        states = {"before": {"active": before}, "after": {"active": status.get("active")}}
        return self._audited(status, "environment", operator, subject=str(active), **states)

    # -- runtime schedules and backfills -----------------------------------------------------

    def _claims(self) -> ClaimStore:
        if self.claims is None:
            raise EventError("no claim store here to keep schedules and backfills in")
        return self.claims

    def _schedules(self) -> Schedules:
        return Schedules(
            self._claims(),
            cron=self._cron() if self._cron is not None else None,
            origin=self._origin,
            default_zone=self._default_zone,
        )

    def create_schedules(self, entries: Any, operator: Any) -> dict[str, Any]:
        """Create runtime schedules (a list of entries, or one): all of them, or none."""
        operator = check_operator(operator)
        if isinstance(entries, Mapping):
            entries = [entries]
        if not isinstance(entries, list):
            raise EventError("schedules must be a list of schedule entries (or one entry)")
        made = self._schedules().create(entries, operator=operator, now=self.clock.now())
        self._woken([s.next_firing for s in made if s.next_firing is not None])
        answer = self._carried({"created": [s.to_json() for s in made], "operator": operator})
        for schedule in made:
            made_one = {"after": schedule.to_json(), "job": schedule.name}
            answer = self._audited(answer, "schedule.create", operator, **made_one)
        return answer

    def _woken(self, dues: list[datetime]) -> None:
        if self._wake is not None and dues:
            self._wake(dues)

    def list_schedules(self) -> dict[str, Any]:
        return {"schedules": [s.to_json() for s in self._schedules().all()]}

    def show_schedule(self, name: Any) -> dict[str, Any]:
        return self._schedules().show(_job_name(name)).to_json()

    def delete_schedule(self, name: Any, operator: Any) -> dict[str, Any]:
        """Delete a runtime schedule, then its pause (a new schedule of that name is not born
        paused)."""
        operator = check_operator(operator)
        name = _job_name(name)
        gone = self._schedules().delete(
            name, operator=operator, clock=self.clock, lead_seconds=self._lead
        )
        self._claims().set_paused(name, False, operator=operator, now=self.clock.now())
        before = gone.to_json() if gone else None
        answer = self._carried({"deleted": before or {"name": name}, "operator": operator})
        return self._audited(answer, "schedule.delete", operator, job=name, before=before)

    def backfill(
        self, job_name: Any, start: Any, end: Any, rate: Any, operator: Any
    ) -> dict[str, Any]:
        """Backfill a cron.yaml job's firings of ``[start, end)`` at ``rate`` a minute."""
        operator = check_operator(operator)
        job = self.job(job_name)
        if not job.enabled:
            raise EventError(f"job {job.name} is disabled: enable it to backfill it")
        now = self.clock.now()
        begin, stop = check_window(start, end, now)
        items = plan_backfill(
            job, begin, stop, rate=check_rate(rate), operator=operator, origin=self._origin, now=now
        )
        started = start_backfill(self._claims(), items)
        self._woken([item.due for item in items[:1]])  # the first firings are due now
        answer = self._carried(started.to_json())
        return self._audited(answer, "backfill", operator, job=job.name, after=started.to_json())

    def backfill_status(self, job_name: Any = None) -> dict[str, Any]:
        """The backfills with firings left to dispatch (of one job, or all)."""
        name = None if job_name is None else _job_name(job_name)
        return {"backfills": [b.to_json() for b in backfill_status(self._claims(), name)]}
