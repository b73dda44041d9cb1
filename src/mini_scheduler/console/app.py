"""The console's web application: seed 000's routes and ours over a :class:`ConsoleService`, the
page, CSRF, and every error as a message.

* Only loopback host names are served (a page of another site that resolves its name to
  127.0.0.1 gets 400), and every POST and DELETE must carry the token of this server's page in
  ``X-CSRF-Token`` (403 without it): another site's page can neither read nor send it.
* An operator's refusal is 400, a name that is nowhere 404, a body over the limit 413 and
  parameters no dispatch could carry 422 (both before any AWS call, naming the limit), a
  region's store or AWS failing 502, each ``{"error": "..."}``; anything else 500 with no
  detail (the console's log has it).
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Annotated, Any, Final

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from mini_scheduler.console import models
from mini_scheduler.console.bodylimit import BodyLimit
from mini_scheduler.console.history import MAX_PAGE
from mini_scheduler.console.regions import NotFound
from mini_scheduler.console.service import ConsoleService
from mini_scheduler.errors import EventError, PayloadError, SchedulerError, describe_aws_error

log = logging.getLogger("mini_scheduler.console")

HERE: Final = Path(__file__).resolve().parent
LOOPBACK: Final = ("127.0.0.1", "localhost", "[::1]")
CSRF_HEADER: Final = "X-CSRF-Token"
_UNSAFE: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
PROBLEMS: Final[dict[int | str, dict[str, Any]]] = {
    400: {"model": models.Problem, "description": "refused: the message says why"},
    403: {"model": models.Problem, "description": "no or wrong X-CSRF-Token"},
    404: {"model": models.Problem, "description": "no such job or schedule"},
    413: {"model": models.Problem, "description": "request body over the limit it names"},
    422: {"model": models.Problem, "description": "a bad body, or parameters over a limit"},
    502: {"model": models.Problem, "description": "a region's store or AWS failed"},
}


_STATUS_BY_ERROR: Final[dict[type[Exception], int]] = {
    NotFound: 404,  # a job or schedule no region has
    PayloadError: 422,  # parameters no dispatch could carry: the message names the limit
    EventError: 400,  # an operator's request refused: the message says why
    SchedulerError: 502,  # a region's store, the cron file or the ticker failed
}


def _problem(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where or 'body'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is not valid"


def _errors(app: FastAPI) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    for kind, status in _STATUS_BY_ERROR.items():  # the most specific class wins

        async def said(_: Request, exc: Exception, status: int = status) -> JSONResponse:
            return _problem(status, str(exc))

        app.add_exception_handler(kind, said)

    @app.exception_handler(ClientError)
    @app.exception_handler(BotoCoreError)
    async def aws(_: Request, exc: Exception) -> JSONResponse:
        return _problem(502, describe_aws_error(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _problem(422, _validation_message(exc))

    @app.exception_handler(HTTPException)
    async def http(_: Request, exc: HTTPException) -> JSONResponse:
        return _problem(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("Console: %s %s failed", request.method, request.url.path, exc_info=exc)
        return _problem(500, "internal error: the console's log has the details")


def create_app(
    service: ConsoleService, *, token: str | None = None, title: str = "", refresh: int = 10
) -> FastAPI:
    """The application over ``service``. ``token`` is the CSRF token (a new random one by
    default); ``title`` names what the console looks at (``make run``, a stack's name);
    ``refresh``: seconds between the page's reads."""
    csrf = token or secrets.token_urlsafe(32)
    app = FastAPI(
        title="mini-scheduler console",
        version="1",
        description=(
            "Seed 000's admin routes and ours, over the regions this console was started for. "
            f"Every POST and DELETE carries the {CSRF_HEADER} header (GET /api/csrf)."
        ),
        docs_url=None,  # Swagger UI loads scripts from a CDN: the document is enough
        redoc_url=None,
    )
    app.state.csrf = csrf
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK))
    app.add_middleware(BodyLimit)  # before anything is read, and so before any AWS call

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        if request.method in _UNSAFE:
            sent = request.headers.get(CSRF_HEADER, "")
            if not secrets.compare_digest(sent.encode(), csrf.encode()):
                return _problem(403, f"missing or wrong {CSRF_HEADER}: reload the page")
        response: Response = await call_next(request)
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if request.url.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    _errors(app)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page(request: Request) -> Response:
        regions = [site.region for site in service.sites]
        return templates.TemplateResponse(
            request,
            "index.html",
            {"csrf": csrf, "title": title, "regions": regions, "refresh": refresh},
        )

    _routes(app, service, csrf)
    return app


def _routes(app: FastAPI, service: ConsoleService, csrf: str) -> None:
    @app.get("/api/csrf", response_model=models.Csrf, tags=["console"])
    def csrf_token() -> dict[str, Any]:
        """The token every POST and DELETE must carry in X-CSRF-Token."""
        return {"token": csrf}

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

    @app.post("/api/schedule/{name}", response_model=models.Open, responses=PROBLEMS, tags=["jobs"])
    def run_now(name: str, body: models.RunNow) -> dict[str, Any]:
        """Run the job now (seed 000's run-now): a firing of its own, by the region's ticker,
        on a region on standby too."""
        return service.run_now(name, body.operator, body.parameters, body.region)

    @app.post(
        "/api/schedule/{name}/pause", response_model=models.Open, responses=PROBLEMS, tags=["jobs"]
    )
    def pause(name: str, body: models.OperatorOnly) -> dict[str, Any]:
        """Pause the job in every region: ticks skip it until it is resumed."""
        return service.set_paused(name, True, body.operator)

    @app.post(
        "/api/schedule/{name}/resume", response_model=models.Open, responses=PROBLEMS, tags=["jobs"]
    )
    def resume(name: str, body: models.OperatorOnly) -> dict[str, Any]:
        """Resume the job in every region."""
        return service.set_paused(name, False, body.operator)

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

    @app.get(
        "/api/schedule/{name}/next",
        response_model=models.NextFirings,
        responses=PROBLEMS,
        tags=["jobs"],
    )
    def next_firings(name: str, count: Annotated[int, Query(ge=1, le=100)] = 10) -> dict[str, Any]:
        """The job's next firings, in its zone and in UTC."""
        return service.next_firings(name, count)

    @app.post(
        "/api/schedule/{name}/backfill",
        response_model=models.Open,
        responses=PROBLEMS,
        tags=["deferred"],
    )
    def backfill(name: str, body: models.Backfill) -> dict[str, Any]:
        """Run the job's firings of a past window again, at a bounded rate (each once)."""
        return service.backfill(name, body.start, body.end, body.rate, body.operator, body.region)

    @app.get("/api/timeline", response_model=models.Timeline, tags=["jobs"])
    def timeline(hours: Annotated[int, Query(ge=1, le=168)] = 24) -> dict[str, Any]:
        """Each job's firings in the next hours, and its zone's clock changes."""
        return service.timeline(hours)

    @app.post("/api/rerun", response_model=models.Open, responses=PROBLEMS, tags=["jobs"])
    def rerun(body: models.Rerun) -> dict[str, Any]:
        """Run a past firing again, as a manual run that names it."""
        return service.rerun(body.firingId, body.operator, body.region)

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

    @app.get("/api/schedules", response_model=models.Open, tags=["deferred"])
    def schedules() -> dict[str, Any]:
        """Every region's runtime schedules."""
        return service.schedules()

    @app.post("/api/schedules", response_model=models.Open, responses=PROBLEMS, tags=["deferred"])
    def create_schedules(body: models.SchedulesCreate) -> dict[str, Any]:
        """Create runtime schedules in one region: all of them, or none."""
        return service.create_schedules(body.schedules, body.operator, body.region)

    @app.delete(
        "/api/schedules/{name}", response_model=models.Open, responses=PROBLEMS, tags=["deferred"]
    )
    def delete_schedule(name: str, body: Annotated[models.InRegion, Body()]) -> dict[str, Any]:
        """Delete a runtime schedule."""
        return service.delete_schedule(name, body.operator, body.region)

    @app.get("/api/backfills", response_model=models.Open, tags=["deferred"])
    def backfills() -> dict[str, Any]:
        """Every region's backfills with firings left to dispatch."""
        return service.backfills()
