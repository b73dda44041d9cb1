"""The console's web application: seed 000's routes and ours (:mod:`.routes`) over a
:class:`ConsoleService`, the page, CSRF, and every error as a message.

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
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from mini_scheduler.audit.base import MAX_REASON
from mini_scheduler.console.bodylimit import BodyLimit
from mini_scheduler.console.regions import NotFound
from mini_scheduler.console.routes import add_routes
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
            {
                "csrf": csrf,
                "title": title,
                "regions": regions,
                "refresh": refresh,
                "max_reason": MAX_REASON,  # the CLI's --reason bound, on the page's fields
            },
        )

    add_routes(app, service, csrf)
    return app
