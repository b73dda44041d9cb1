"""What cron.yaml declares once it is read: a :class:`Job` per entry that loaded, its
:class:`Target` and :class:`Retry`, and the :class:`CronFile` with its settings and its load
report."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal, Protocol, get_args
from zoneinfo import ZoneInfo

from mini_scheduler.cron import CronExpression

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_FACTOR",
    "DEFAULT_FLOW_TIMEOUT",
    "DEFAULT_LAMBDA_TIMEOUT",
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MAX_BUFFERED",
    "DEFAULT_MISFIRE_GRACE",
    "DEFAULT_MISFIRE_MAX",
    "DEFAULT_TIMEOUTS",
    "DEFAULT_TIMEZONE",
    "FLOW_PREFIX",
    "MAX_BACKOFF",
    "MAX_BUFFERED",
    "MAX_FACTOR",
    "MAX_MISFIRE_GRACE",
    "MAX_MISFIRE_MAX",
    "MAX_NAME_LENGTH",
    "MAX_PAUSE_AFTER_FAILURES",
    "MAX_RETRIES",
    "MAX_TIMEOUT",
    "MISFIRE_POLICIES",
    "OVERLAP_POLICIES",
    "RETRY_BOUNDS",
    "RUNTIME_SCHEDULE",
    "TARGET_KINDS",
    "TARGET_PREFIXES",
    "CronFile",
    "FailurePolicy",
    "Job",
    "Level",
    "LogSink",
    "Misfire",
    "Overlap",
    "Problem",
    "Retry",
    "Target",
    "TargetKind",
    "in_retry_bounds",
    "scheduled_line",
]

DEFAULT_TIMEZONE: Final = "UTC"
MAX_NAME_LENGTH: Final = 64
MAX_TIMEOUT: Final = 7 * 86400
DEFAULT_LAMBDA_TIMEOUT: Final = 900
DEFAULT_FLOW_TIMEOUT: Final = 3600
DEFAULT_TIMEOUTS: Final[Mapping[str, int]] = {"lambda": DEFAULT_LAMBDA_TIMEOUT, "ecs": 3600}
"""A run's deadline by its kind of target (a flow's for a kind missing; a queue's, a topic's,
a bus's and a webhook's run ends with its dispatch)."""
DEFAULT_MISFIRE_GRACE: Final = 3600
MAX_MISFIRE_GRACE: Final = 7 * 86400
DEFAULT_MISFIRE_MAX: Final = 100
MAX_MISFIRE_MAX: Final = 10_000
MAX_RETRIES: Final = 20
MAX_BACKOFF: Final = 86400
MAX_FACTOR: Final = 10
DEFAULT_BACKOFF: Final = 60
DEFAULT_FACTOR: Final = 2.0
DEFAULT_MAX_BACKOFF: Final = 3600
MAX_PAUSE_AFTER_FAILURES: Final = 100
PAUSE_AFTER_FAILURES: Final = "pause_after_failures"
RUNTIME_SCHEDULE: Final = "runtimeSchedule"
DEAD_LETTER: Final = "deadLetter"

Level = Literal["error", "warning", "info"]
Misfire = Literal["fire_now", "fire_all", "skip"]
Overlap = Literal["allow", "skip", "buffer_one", "buffer_all", "cancel_other"]
TargetKind = Literal["lambda", "flow", "sqs", "sns", "events", "ecs", "https"]
TARGET_KINDS: Final[tuple[str, ...]] = get_args(TargetKind)
MISFIRE_POLICIES: Final[tuple[Misfire, ...]] = ("fire_now", "fire_all", "skip")
OVERLAP_POLICIES: Final[tuple[Overlap, ...]] = get_args(Overlap)
BUFFERING: Final[Mapping[str, int]] = {"buffer_one": 1}
"""The policies that keep a firing waiting for the open run's end, and how many may wait
(``buffer_all``'s is its ``max_buffered``)."""
DEFAULT_MAX_BUFFERED: Final = 10
MAX_BUFFERED: Final = 100
"""``buffer_all``'s ``max_buffered``: its default and its most (the job's state item keeps the
waiting firings' ids)."""
FLOW_PREFIX: Final = "flow://"
TARGET_PREFIXES: Final[Mapping[str, str]] = {
    "flow": FLOW_PREFIX,
    "sqs": "sqs://",
    "sns": "sns://",
    "events": "events://",
    "ecs": "ecs://",
}
"""The kinds whose ``service`` starts with a scheme of ours; a webhook's is its own URL, a Lambda
function's its name."""


@dataclass(frozen=True, slots=True)
class Place:
    """A cap a run holds a place under while it is open: its job's ``max_running``
    (``job:<name>``) or a named pool (``pool:<name>``), at most ``limit`` holders at once."""

    key: str
    limit: int


@dataclass(frozen=True, slots=True)
class Target:
    """What a job runs: a Lambda function, a Step Functions state machine (a "flow"), an SQS
    queue, an SNS topic, an EventBridge bus, an ECS task, or an HTTPS webhook."""

    kind: TargetKind
    name: str
    """Lambda: a function name, ``name:alias``/``name:version``, a partial or a full ARN.
    Flow, queue, topic, bus: a name or ARN (a queue's URL too), without the scheme. ECS:
    ``CLUSTER/TASK-DEFINITION``. Webhook: the whole URL."""
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """The job's mapping for its kind, as read: ``ecs`` for a task, ``http`` for a webhook
    (empty for the other kinds)."""

    @property
    def service(self) -> str:
        """The target as written in cron.yaml (``flow://x`` for a flow)."""
        return TARGET_PREFIXES.get(self.kind, "") + self.name


RETRY_BOUNDS: Final[Mapping[str, tuple[int, int, bool]]] = {
    "retries": (1, MAX_RETRIES, True),
    "backoff": (0, MAX_BACKOFF, True),
    "factor": (1, MAX_FACTOR, False),
    "max_backoff": (0, MAX_BACKOFF, True),
}
"""The keys of a :class:`Retry`, in order, each with its lowest and highest value and whether
it is a whole number (``max_backoff`` must also be at least ``backoff``)."""


def in_retry_bounds(value: object, key: str) -> bool:
    """Whether ``value`` is one :data:`RETRY_BOUNDS` allows for ``key``: a boolean is not a
    number, and NaN is within no bounds."""
    low, high, whole = RETRY_BOUNDS[key]
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        return False
    return low <= value <= high


@dataclass(frozen=True, slots=True)
class Retry:
    """A job's ``retry``: a failed attempt of a firing is followed by another, up to
    ``retries`` more, each after a wait that grows by ``factor`` up to ``max_backoff`` seconds.

    cron.yaml's reader checks the bounds (1 to :data:`MAX_RETRIES` retries, waits of 0 to
    :data:`MAX_BACKOFF` seconds, a factor of 1 to :data:`MAX_FACTOR`, ``max_backoff`` at least
    ``backoff``); :meth:`from_record` checks them again for a policy read back from a store."""

    retries: int
    backoff: int = DEFAULT_BACKOFF
    factor: float = DEFAULT_FACTOR
    max_backoff: int = DEFAULT_MAX_BACKOFF

    def delay(self, attempt: int) -> int | None:
        """Seconds to wait before attempt ``attempt + 1`` once attempt ``attempt`` failed
        (attempt 1 is the first run): ``backoff * factor ** (attempt - 1)``, at most
        ``max_backoff``, rounded half up to whole seconds; None when no attempt is left."""
        if attempt < 1:
            raise ValueError(f"attempt {attempt} is not one: attempts count from 1")
        if attempt > self.retries:
            return None
        wait = min(self.max_backoff, self.backoff * self.factor ** (attempt - 1))
        return math.floor(wait + 0.5)

    def as_record(self) -> dict[str, int | float]:
        """The policy as a run record keeps it."""
        return {
            "retries": self.retries,
            "backoff": self.backoff,
            "factor": self.factor,
            "max_backoff": self.max_backoff,
        }

    @classmethod
    def from_record(cls, record: object) -> Retry | None:
        """The policy :meth:`as_record` wrote; None when ``record`` is missing or is not one
        (a key missing, a value of the wrong type or out of bounds). Never raises."""
        if not isinstance(record, Mapping):
            return None
        values: list[Any] = [record.get(key) for key in RETRY_BOUNDS]
        if not all(map(in_retry_bounds, values, RETRY_BOUNDS)):
            return None
        retries, backoff, factor, max_backoff = values
        if max_backoff < backoff:
            return None
        return cls(retries, backoff, float(factor), max_backoff)


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """What a run keeps of its job's failure policy when it is dispatched: its ``retry``, its
    ``pause_after_failures``, and for a runtime schedule's run with a retry the schedule's entry
    (``runtime``: its next attempt is run from it, as no cron file holds the job). The
    recorder, the sweep and a failed dispatch read a failure's policy from the run, so all of
    them decide as the run was dispatched. A store keeps it as :meth:`as_record`'s map."""

    retry: Retry | None = None
    pause_after: int | None = None
    runtime: Mapping[str, Any] | None = None
    dead_letter: str | None = None
    """The ``sqs://`` queue a final failure is sent to (the job's ``dead_letter``)."""

    def as_record(self) -> dict[str, Any]:
        """The map a store keeps (the :class:`Retry`'s keys, ``pause_after_failures``,
        ``runtimeSchedule``, ``deadLetter``)."""
        record: dict[str, Any] = self.retry.as_record() if self.retry is not None else {}
        if self.pause_after is not None:
            record[PAUSE_AFTER_FAILURES] = self.pause_after
        if self.runtime is not None:
            record[RUNTIME_SCHEDULE] = dict(self.runtime)
        if self.dead_letter is not None:
            record[DEAD_LETTER] = self.dead_letter
        return record

    @classmethod
    def from_record(cls, record: object) -> FailurePolicy | None:
        """The policy :meth:`as_record` wrote; None when ``record`` holds none. A part out of
        bounds reads as missing (a stored map is never trusted more than cron.yaml). Never
        raises."""
        if not isinstance(record, Mapping):
            return None
        pause_after = record.get(PAUSE_AFTER_FAILURES)
        if (
            isinstance(pause_after, bool)
            or not isinstance(pause_after, int)
            or not 1 <= pause_after <= MAX_PAUSE_AFTER_FAILURES
        ):
            pause_after = None
        runtime = record.get(RUNTIME_SCHEDULE)
        queue = record.get(DEAD_LETTER)
        policy = cls(
            Retry.from_record(record),
            pause_after,
            dict(runtime) if isinstance(runtime, Mapping) else None,
            queue if isinstance(queue, str) and queue.startswith("sqs://") else None,
        )
        return policy if policy != cls() else None

    @classmethod
    def of(
        cls,
        retry: Retry | None,
        pause_after: int | None,
        runtime: Mapping[str, Any] | None,
        dead_letter: str | None = None,
    ) -> FailurePolicy | None:
        """A job's policy; None when it has no retry, no pause after failures and no
        dead-letter queue (a runtime schedule's entry is kept only with a retry: only a next
        attempt reads it)."""
        if retry is None and pause_after is None and dead_letter is None:
            return None
        return cls(retry, pause_after, dict(runtime) if retry and runtime else None, dead_letter)


@dataclass(frozen=True, slots=True)
class Job:
    """One loaded entry of cron.yaml. ``parameters`` is a plain dict: treat it as read-only."""

    name: str
    statement: str
    expression: CronExpression
    zone: str
    tz: ZoneInfo
    target: Target
    parameters: Mapping[str, Any] = field(hash=False)
    description: str | None
    misfire: Misfire
    overlap: Overlap
    timeout: int
    enabled: bool
    entry: int
    retry: Retry | None = None
    """None: a failed run is not retried."""
    start: datetime | None = None
    """No firing before this instant (None: from the first)."""
    end: datetime | None = None
    """No firing at or after this instant (None: for ever)."""
    pause_after_failures: int | None = None
    """Pause the job after this many final failures in a row (None: never)."""
    runtime: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)
    """A runtime schedule's stored entry (:mod:`mini_scheduler.schedules`); None: cron.yaml's."""
    input: Mapping[str, Any] | None = field(default=None, hash=False)
    """The body its target receives, with the firing's values filled in
    (:mod:`mini_scheduler.jobs.inputs`); None: the envelope itself."""
    dead_letter: Target | None = None
    """An ``sqs://`` queue that receives the firing's envelope and its last error when a run
    fails for good (None: none)."""
    max_buffered: int | None = None
    """``overlap: buffer_all``: how many firings may wait (None: :data:`DEFAULT_MAX_BUFFERED`)."""
    jitter: int = 0
    """Seconds each firing may start after its instant (0: none; :mod:`.spread`)."""
    window: int = 0
    """Minutes each firing may start after its instant (0: none; :mod:`.spread`)."""
    max_running: int = 1
    """How many of its runs may be open at once, with an ``overlap`` other than ``allow``
    (:mod:`.caps`)."""
    pool: str | None = None
    """The named pool (``pools`` at the top of cron.yaml) its runs count against (None: none)."""
    pool_limit: int = 0
    """The pool's size, as the file says it (0: no pool, or not known where it is read)."""

    @property
    def spread_seconds(self) -> int:
        """The span a firing's start is placed in, in seconds (0: at its instant)."""
        return self.jitter or self.window * 60

    def firings(self, begin: datetime, end: datetime) -> Iterator[datetime]:
        """The job's firings in ``[begin, end)`` that its ``start`` and ``end`` allow, in
        order, as aware UTC datetimes."""
        if self.start is not None and self.start > begin:
            begin = self.start
        if self.end is not None and self.end < end:
            end = self.end
        if begin >= end:
            return iter(())
        return self.expression.firings(begin, end, self.tz)

    def next_after(self, moment: datetime) -> datetime | None:
        """The job's first firing strictly after ``moment`` that ``start`` and ``end`` allow."""
        if self.start is not None and self.start > moment:
            moment = self.start - timedelta(seconds=1)
        following = self.expression.next_after(moment, self.tz)
        if following is not None and self.start is not None and following < self.start:
            following = self.expression.next_after(following, self.tz)  # a start within a second
        if following is None or (self.end is not None and following >= self.end):
            return None
        return following

    @property
    def service(self) -> str:
        return self.target.service

    @property
    def exclusive(self) -> bool:
        """Whether its claims take the job's open slot: every policy but ``allow``, with one
        run at a time (``max_running`` above 1 is a place instead: :attr:`places`)."""
        return self.overlap != "allow" and self.max_running == 1

    @property
    def places(self) -> tuple[Place, ...]:
        """The places each of its runs holds while open, beside the slot: its own, for a
        ``max_running`` above 1, and its pool's."""
        places = []
        if self.overlap != "allow" and self.max_running > 1:
            places.append(Place(f"job:{self.name}", self.max_running))
        if self.pool is not None:
            places.append(Place(f"pool:{self.pool}", self.pool_limit))
        return tuple(places)

    @property
    def capped(self) -> bool:
        """Whether a claim of its firings may be refused for a run still open (OVERLAP): it
        takes the slot, or a place; its run's end is then always written by the store, which
        gives them back."""
        return self.exclusive or bool(self.places)

    @property
    def buffer_limit(self) -> int:
        """How many firings may wait for its open run's end (0: none waits, one that finds the
        slot held is skipped)."""
        if self.overlap == "buffer_all":
            return self.max_buffered or DEFAULT_MAX_BUFFERED
        return BUFFERING.get(self.overlap, 0)

    @property
    def schedule(self) -> str:
        """``<statement> @<zone>``, the job state record's schedule (as Mercury writes it)."""
        return f"{self.statement} @{self.zone}"

    @property
    def failure_policy(self) -> FailurePolicy | None:
        """What its runs keep of ``retry`` and ``pause_after_failures``."""
        queue = self.dead_letter.service if self.dead_letter is not None else None
        return FailurePolicy.of(self.retry, self.pause_after_failures, self.runtime, queue)


@dataclass(frozen=True, slots=True)
class Problem:
    """Something to report about a file: ``message`` is the exact log text."""

    level: Level
    message: str
    entry: int | None = None


class LogSink(Protocol):
    """What :meth:`CronFile.log` needs: a ``logging.Logger`` or a Powertools ``Logger``."""

    def info(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = ...
    ) -> None: ...

    def warning(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = ...
    ) -> None: ...

    def error(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = ...
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class CronFile:
    """A cron file read as a whole: the jobs that loaded, the settings, and what to report."""

    jobs: tuple[Job, ...]
    source: str
    deferred_start: bool
    leader_election: bool
    misfire_grace: int
    misfire_max: int
    problems: tuple[Problem, ...]
    version: str
    entries: int = 0
    """How many entries the ``jobs`` list holds, loaded or skipped."""
    pools: Mapping[str, int] = field(default_factory=dict, hash=False)
    """The file's ``pools``: each name's size (:mod:`.caps`)."""

    def job(self, name: str) -> Job | None:
        for job in self.jobs:
            if job.name == name:
                return job
        return None

    @property
    def ok(self) -> bool:
        """No error: every entry loaded (warnings allowed)."""
        return not any(problem.level == "error" for problem in self.problems)

    @property
    def skipped(self) -> int:
        """How many entries were skipped."""
        return self.entries - len(self.jobs)

    def lines(self) -> tuple[Problem, ...]:
        """Every line of the load report in file order: the file's own problems, then for each
        entry its problems followed by its ``Scheduled job: ...`` line when it loaded."""
        by_entry: dict[int | None, list[Problem]] = {}
        for problem in self.problems:
            by_entry.setdefault(problem.entry, []).append(problem)
        loaded = {job.entry: job for job in self.jobs}
        report = list(by_entry.pop(None, []))
        numbers = sorted({*(n for n in by_entry if n is not None), *loaded})
        for entry in numbers:
            report.extend(by_entry.get(entry, []))
            job = loaded.get(entry)
            if job is not None:
                report.append(Problem("info", scheduled_line(job), entry))
        return tuple(report)

    def log(self, logger: LogSink) -> None:
        """Log the load report, each line at its level."""
        for line in self.lines():
            extra = {"cronFile": self.source, "entry": line.entry}
            if line.level == "error":
                logger.error(line.message, extra=extra)
            elif line.level == "warning":
                logger.warning(line.message, extra=extra)
            else:
                logger.info(line.message, extra=extra)


def scheduled_line(job: Job) -> str:
    """The load report's line for a job that loaded (Mercury's text)."""
    return (
        f"Scheduled job: {job.name}, service: {job.service}, statement: {job.statement}, "
        f"time zone: {job.zone}"
    )
