"""The console's request body limit: a body larger than any dispatch could carry is refused
with 413 before it is read whole, and before anything is sent to AWS.

A declared ``Content-Length`` over the limit is refused at once; a body without one (chunked)
is counted as it arrives and refused when it passes the limit.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mini_scheduler.jobs.limits import LAMBDA_ASYNC_PAYLOAD_LIMIT

MAX_BODY: Final = LAMBDA_ASYNC_PAYLOAD_LIMIT
"""The largest request body: an asynchronous Lambda invoke's payload, the most any dispatch
carries (a run's parameters must fit less: the target's and the store's limits)."""


def too_large(size: int | None, limit: int = MAX_BODY) -> str:
    """The 413's message, naming the limit."""
    what = f"{size} bytes" if size is not None else "more"
    return (
        f"request body too large: {what}, more than the {limit} bytes the console takes (an "
        "asynchronous Lambda invoke's payload limit)"
    )


class BodyLimit:
    """ASGI middleware: 413 ``{"error": ...}`` for a body over ``limit`` bytes."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await _refuse(scope, receive, send, too_large(declared, self.limit))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise HTTPException(413, too_large(None, self.limit))
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(scope: Scope, receive: Receive, send: Send, message: str) -> None:
    response: Any = JSONResponse({"error": message}, status_code=413)
    await response(scope, receive, send)
