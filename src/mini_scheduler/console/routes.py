"""The console's JSON API, route by route, by page (as :mod:`.service` does them): the jobs,
what is done to a job, its history, the regions' active environment, runtime schedules and
backfills. Each route is one call of the :class:`~mini_scheduler.console.service.ConsoleService`;
the application (CSRF, errors as messages, the page) is :mod:`.app`'s."""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import Body, FastAPI, Query

from mini_scheduler.console import models
from mini_scheduler.console.history import MAX_PAGE
from mini_scheduler.console.service import ConsoleService
from mini_scheduler.errors import EventError

PROBLEMS: Final[dict[int | str, dict[str, Any]]] = {
    400: {"model": models.Problem, "description": "refused: the message says why"},
    403: {"model": models.Problem, "description": "no or wrong X-CSRF-Token"},
    404: {"model": models.Problem, "description": "no such job or schedule"},
    413: {"model": models.Problem, "description": "request body over the limit it names"},
    422: {"model": models.Problem, "description": "a bad body, or parameters over a limit"},
    502: {"model": models.Problem, "description": "a region's store or AWS failed"},
}


def add_routes(app: FastAPI, service: ConsoleService, csrf: str) -> None:
    """Every route of the API on ``app``; ``csrf``: the token its page carries."""

    @app.get("/api/csrf", response_model=models.Csrf, tags=["console"])
    def csrf_token() -> dict[str, Any]:
        """The token every POST and DELETE must carry in X-CSRF-Token."""
        return {"token": csrf}

    for routes in (_jobs, _actions, _history, _environment, _deferred, _audit):
        routes(app, service)


def _jobs(app: FastAPI, service: ConsoleService) -> None:
    """The jobs page: every job, one job, its next firings, the timeline."""

    @app.get("/api/schedule", response_model=models.Jobs, tags=["jobs"])
    def jobs() -> dict[str, Any]:
        """Every job: cron.yaml's and the runtime schedules, with next firings, last run and
        pauses."""
        return service.jobs()

    @app.get(
        "/api/schedule/{name}", response_model=models.JobDetail, responses=PROBLEMS, tags=["jobs"]
    )
    def job(name: str) -> dict[str, Any]:
        """One job, its parameters without the keys that start with _."""
        return service.job(name)

    @app.get(
        "/api/schedule/{name}/next",
        response_model=models.NextFirings,
        responses=PROBLEMS,
        tags=["jobs"],
    )
    def next_firings(name: str, count: Annotated[int, Query(ge=1, le=100)] = 10) -> dict[str, Any]:
        """The job's next firings, in its zone and in UTC."""
        return service.next_firings(name, count)

    @app.get("/api/timeline", response_model=models.Timeline, tags=["jobs"])
    def timeline(hours: Annotated[int, Query(ge=1, le=168)] = 24) -> dict[str, Any]:
        """Each job's firings in the next hours, and its zone's clock changes."""
        return service.timeline(hours)


def _actions(app: FastAPI, service: ConsoleService) -> None:
    """What is done to a job: run it now, run a past firing again, pause and resume it."""

    @app.post("/api/schedule/{name}", response_model=models.Open, responses=PROBLEMS, tags=["jobs"])
    def run_now(name: str, body: models.RunNow) -> dict[str, Any]:
        """Run the job now (seed 000's run-now): a firing of its own, by the region's ticker,
        on a region on standby too."""
        return service.run_now(name, body.operator, body.parameters, body.region, body.reason)

    @app.post("/api/rerun", response_model=models.Open, responses=PROBLEMS, tags=["jobs"])
    def rerun(body: models.Rerun) -> dict[str, Any]:
        """Run a past firing again, as a manual run that names it."""
        return service.rerun(body.firingId, body.operator, body.region, body.reason)

    @app.post(
        "/api/schedule/{name}/pause", response_model=models.Open, responses=PROBLEMS, tags=["jobs"]
    )
    def pause(name: str, body: models.OperatorOnly) -> dict[str, Any]:
        """Pause the job in every region: ticks skip it until it is resumed."""
        return service.set_paused(name, True, body.operator, body.reason)

    @app.post(
        "/api/schedule/{name}/resume", response_model=models.Open, responses=PROBLEMS, tags=["jobs"]
    )
    def resume(name: str, body: models.OperatorOnly) -> dict[str, Any]:
        """Resume the job in every region."""
        return service.set_paused(name, False, body.operator, body.reason)


def _history(app: FastAPI, service: ConsoleService) -> None:
    """A job's runs over every region, and its retries waiting."""

    @app.get(
        "/api/schedule/{name}/history",
        response_model=models.History,
        responses=PROBLEMS,
        tags=["jobs"],
    )
    def history(
        name: str,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
        cursor: Annotated[str | None, Query(max_length=300)] = None,
    ) -> dict[str, Any]:
        """The job's runs over every region, newest first, a page at a time (``next`` is the
        cursor of the page after)."""
        try:
            return service.history(name, limit, cursor)
        except ValueError as exc:
            if isinstance(exc, EventError):
                raise
            raise EventError(f"cursor: {exc}") from None

    @app.get(
        "/api/schedule/{name}/retries",
        response_model=models.Retries,
        responses=PROBLEMS,
        tags=["jobs"],
    )
    def retries(name: str) -> dict[str, Any]:
        """The job's failed runs' next attempts, waiting in each region's store, soonest
        first."""
        return service.pending_retries(name)


def _environment(app: FastAPI, service: ConsoleService) -> None:
    """The active environment of every region, and a failover."""

    @app.get(
        "/api/scheduler/environment", response_model=models.EnvironmentStatus, tags=["regions"]
    )
    def environment() -> dict[str, Any]:
        """Seed 000's status, and every region's active environment."""
        return service.environment()

    @app.post(
        "/api/scheduler/environment",
        response_model=models.EnvironmentStatus,
        responses=PROBLEMS,
        tags=["regions"],
    )
    def failover(body: models.EnvironmentChange) -> dict[str, Any]:
        """Make an environment active in every region (seed 000's body)."""
        return service.set_environment(body.active, body.operator, body.force, body.reason)


def _deferred(app: FastAPI, service: ConsoleService) -> None:
    """Runtime schedules and backfills."""

    @app.get("/api/schedules", response_model=models.Open, tags=["deferred"])
    def schedules() -> dict[str, Any]:
        """Every region's runtime schedules."""
        return service.schedules()

    @app.post("/api/schedules", response_model=models.Open, responses=PROBLEMS, tags=["deferred"])
    def create_schedules(body: models.SchedulesCreate) -> dict[str, Any]:
        """Create runtime schedules in one region: all of them, or none."""
        return service.create_schedules(body.schedules, body.operator, body.region, body.reason)

    @app.delete(
        "/api/schedules/{name}", response_model=models.Open, responses=PROBLEMS, tags=["deferred"]
    )
    def delete_schedule(name: str, body: Annotated[models.InRegion, Body()]) -> dict[str, Any]:
        """Delete a runtime schedule."""
        return service.delete_schedule(name, body.operator, body.region, body.reason)

    @app.post(
        "/api/schedule/{name}/backfill",
        response_model=models.Open,
        responses=PROBLEMS,
        tags=["deferred"],
    )
    def backfill(name: str, body: models.Backfill) -> dict[str, Any]:
        """Run the job's firings of a past window again, at a bounded rate (each once)."""
        window = (body.start, body.end)
        return service.backfill(name, window, body.rate, body.operator, body.region, body.reason)

    @app.get("/api/backfills", response_model=models.Open, tags=["deferred"])
    def backfills() -> dict[str, Any]:
        """Every region's backfills with firings left to dispatch."""
        return service.backfills()


def _audit(app: FastAPI, service: ConsoleService) -> None:
    """The audit trail: who did what, when and why, in every region."""

    @app.get("/api/audit", response_model=models.Audit, responses=PROBLEMS, tags=["audit"])
    def audit(
        hours: Annotated[int, Query(ge=1, le=24 * 400)] = 168,
        job: Annotated[str | None, Query(max_length=200)] = None,
        actor: Annotated[str | None, Query(max_length=2048)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> dict[str, Any]:
        """The operator actions of the last hours in every region, newest first (docs/audit.md:
        one record each, with the state before and after and the reason)."""
        return service.audit(hours, job, actor, limit)
