"""The API's requests and answers as typed models: FastAPI checks each request against them
and writes the OpenAPI document (``/openapi.json``) from them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from mini_scheduler.audit.base import MAX_REASON

OPERATOR = Field(
    description="who asks: 1-128 letters, digits, '.', '_', '-' or '@' (logged with the action)",
    examples=["jane.doe"],
)
REGION = Field(
    None,
    description="the region to act in (default: the active region, else the console's first)",
    examples=["us-east-1"],
)


Reason = Annotated[
    Any,
    WithJsonSchema({"anyOf": [{"type": "string", "maxLength": MAX_REASON}, {"type": "null"}]}),
]
"""An operator's reason, as its schema says it; checked by the operator path as the CLI's
``--reason`` is (:func:`~mini_scheduler.audit.base.check_reason`): one too long, or not text,
is a 400 that names ``reason``, and nothing is done."""
REASON = Field(
    None,
    description=f"why (one line, at most {MAX_REASON} characters): kept in the audit trail, "
    "and on a manual run",
    examples=["incident 4711"],
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunNow(Strict):
    """Seed 000's run-now body, with the parameters to merge over the job's."""

    operator: str = OPERATOR
    parameters: dict[str, Any] | None = Field(None, description="merged over the job's")
    region: str | None = REGION
    reason: Reason = REASON


class OperatorOnly(Strict):
    operator: str = OPERATOR
    reason: Reason = REASON


class InRegion(Strict):
    operator: str = OPERATOR
    region: str | None = REGION
    reason: Reason = REASON


class Rerun(Strict):
    firingId: str = Field(
        description="the firing to run again", examples=["nightly-export@2026-11-30T02:00:00Z"]
    )
    operator: str = OPERATOR
    region: str | None = REGION
    reason: Reason = REASON


class EnvironmentChange(Strict):
    """Seed 000's body: the environment to make active, and who asks."""

    active: str = Field(description="an environment name, e.g. prod or DR", examples=["DR"])
    operator: str = OPERATOR
    force: bool = Field(False, description="write a name no region knows (needs a reason)")
    reason: Reason = REASON


class Backfill(Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    start: str = Field(
        alias="from", description="ISO 8601 instant", examples=["2026-11-30T00:00:00Z"]
    )
    end: str = Field(alias="to", description="ISO 8601 instant, not after now")
    rate: int | None = Field(None, description="firings dispatched a minute (default 60)")
    operator: str = OPERATOR
    region: str | None = REGION
    reason: Reason = REASON


class SchedulesCreate(Strict):
    schedules: list[dict[str, Any]] | dict[str, Any] = Field(
        description="runtime schedule entries: cron.yaml's keys, or `at` for a one-time one",
        examples=[[{"name": "one-off-report", "at": "2026-12-24T18:00:00Z", "service": "report"}]],
    )
    operator: str = OPERATOR
    region: str | None = REGION
    reason: Reason = REASON


# -- answers --------------------------------------------------------------------------------


class Open(BaseModel):
    """An answer that may carry more fields than those listed."""

    model_config = ConfigDict(extra="allow")


class Problem(BaseModel):
    error: str = Field(description="what is wrong, for people")


class Firing(BaseModel):
    utc: str = Field(description="when it starts (a job's jitter or window places it)")
    local: str = Field(description="ISO 8601 in the job's zone, with its offset")
    abbreviation: str | None
    zone: str
    scheduled: str | None = Field(
        default=None, description="its own instant, when its job's jitter or window spreads it"
    )
    spreadSeconds: int | None = Field(default=None, description="how long after it it starts")


class LastRun(BaseModel):
    firingId: str | None
    status: str | None
    started: str
    ended: str | None
    durationMs: int | None
    region: str


class JobSummary(BaseModel):
    name: str
    kind: str = Field(description="cron.yaml, runtime or one-time")
    region: str | None = Field(description="the region holding a runtime schedule")
    statement: str
    words: str | None = Field(description="the statement in words")
    zone: str
    service: str
    description: str | None
    enabled: bool
    next: list[Firing] = Field(description="the next three firings")
    lastRun: LastRun | None
    paused: bool
    pausedIn: list[str]
    pausedBy: list[str]


class WaitingIn(BaseModel):
    region: str
    count: int | None = None
    running: dict[str, int] = Field(
        default={}, description="each cap's places taken now (job:<name>, pool:<name>)"
    )
    error: str | None = Field(default=None, description="why the region could not be read")


class Pool(BaseModel):
    name: str
    size: int = Field(description="how many runs of its jobs may be open at once")


class JobDetail(JobSummary):
    parameters: dict[str, Any] = Field(description="without the keys that start with _")
    target: str
    misfire: str
    overlap: str
    maxBuffered: int | None = Field(
        default=None, description="overlap buffer_all: how many firings may wait"
    )
    waiting: int | None = Field(
        default=None,
        description="firings waiting now for the open run's end, every region (none: unread)",
    )
    waitingIn: list[WaitingIn] = Field(default=[], description="each region's waiting count")
    maxRunning: int = Field(default=1, description="how many of its runs may be open at once")
    pool: Pool | None = Field(default=None, description="the pool its runs count against")
    timeout: int
    retry: dict[str, Any] | None
    start: str | None
    end: str | None
    jitter: int = Field(default=0, description="seconds a firing may start late (0: none)")
    window: int = Field(default=0, description="minutes a firing may start late (0: none)")


class Jobs(BaseModel):
    now: str
    jobs: list[JobSummary]


class Run(BaseModel):
    firingId: str
    job: str
    region: str
    status: str
    scheduled: str
    started: str | None
    ended: str | None
    durationMs: int | None
    attempt: int
    manual: bool
    operator: str | None
    backfill: bool
    note: str


class Unread(BaseModel):
    region: str
    error: str


class History(BaseModel):
    job: str
    runs: list[Run] = Field(description="newest first")
    next: str | None = Field(description="the cursor of the next page (none: the last)")
    unread: list[Unread] = Field(description="regions that could not be read")


class PendingRetry(BaseModel):
    firingId: str = Field(description="the firing it retries (what the target receives)")
    runId: str = Field(description="the attempt's own id: <firingId>#<attempt>")
    attempt: int
    due: str = Field(description="when a tick dispatches it (UTC)")
    region: str = Field(description="the region whose store holds it, and runs it while active")
    writtenAt: str


class Retries(BaseModel):
    job: str
    retries: list[PendingRetry] = Field(description="soonest first")
    unread: list[Unread] = Field(description="regions that could not be read")


class NextFirings(BaseModel):
    job: str
    firings: list[Firing]


class ClockChange(BaseModel):
    at: str
    zone: str
    offsetBefore: int
    offsetAfter: int
    text: str


class TimelineRow(BaseModel):
    job: str
    zone: str
    firings: list[str]
    dense: bool = Field(description="more firings than drawn")
    clockChanges: list[ClockChange]


class Timeline(BaseModel):
    from_: str = Field(alias="from")
    to: str
    rows: list[TimelineRow]


class RegionStatus(Open):
    region: str
    ok: bool
    where: str


class EnvironmentStatus(Open):
    """Seed 000's status (environment, active, mode, persistent, store) of the console's first
    region, and every region's."""

    environment: str | None
    active: str | None
    mode: str | None
    persistent: bool | None
    store: str | None
    regions: list[RegionStatus]
    known: list[str]
    activeRegions: list[str]
    problem: str | None


class AuditRecord(BaseModel):
    """One operator action (docs/audit.md): keys of a later version are kept."""

    model_config = ConfigDict(extra="allow")
    v: int
    at: str
    action: str
    operator: str
    region: str
    stack: str | None = None
    identity: str | None = Field(None, description="the caller's identity, as the caller told it")
    via: str | None = Field(None, description="who wrote it: cli, console, a function's ARN")
    job: str | None = None
    subject: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    reason: str | None = None


class Audit(BaseModel):
    records: list[AuditRecord]
    unread: list[Unread]


class Csrf(BaseModel):
    token: str = Field(description="send it as the X-CSRF-Token header of every POST and DELETE")
