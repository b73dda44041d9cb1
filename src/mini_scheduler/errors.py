"""One root error for the project; every error a user can meet derives from it."""

from __future__ import annotations

import re


class SchedulerError(Exception):
    """The root of every error mini-scheduler raises on purpose."""


class CronSyntaxError(SchedulerError, ValueError):
    """A cron statement that Quartz would refuse; ``field`` names the field that is wrong."""

    FIELDS = (
        "second",
        "minute",
        "hour",
        "day-of-month",
        "month",
        "day-of-week",
        "year",
        "field count",
    )

    def __init__(self, field: str, reason: str, statement: str | None = None) -> None:
        self.field = field
        self.reason = reason
        self.statement = statement
        where = f" in {statement!r}" if statement is not None else ""
        super().__init__(f"Bad {field}{where}: {reason}")


class UnknownTimeZoneError(SchedulerError, ValueError):
    """A time zone id that the pinned zone data does not know."""

    def __init__(self, zone: str) -> None:
        self.zone = zone
        super().__init__(f"Unknown time zone {zone!r}")


class CronFileError(SchedulerError):
    """The cron file cannot be read as a whole: missing, not YAML, or not a mapping with jobs."""


class CronFileUnreadableError(CronFileError):
    """The cron file's location exists but could not be read just now (network, permissions,
    throttling): a warm container keeps the last good file it read."""


class ConfigurationError(SchedulerError):
    """A setting (an environment variable) is missing or wrong."""


class StoreError(SchedulerError):
    """A backend (DynamoDB, MongoDB, SSM) failed after its retries; the message names it."""


class EnvironmentStoreError(StoreError):
    """The active-environment store cannot be read or written."""


class DispatchError(SchedulerError):
    """The target refused the firing or could not be reached after the retries."""


class AlertError(SchedulerError):
    """An alert (an event about a failed run or a paused job) was not published after the
    retries; the message names the bus and the cause."""


class EventError(SchedulerError, ValueError):
    """An event the functions cannot act on; nothing was written for it."""


class PayloadError(EventError):
    """An operator's parameters that no dispatch could carry (over a target's or the store's
    limit, or not JSON): refused before anything is sent or written; the message names the
    limit."""


NOT_AWS_HINT = (
    "not an answer of AWS: check the endpoint (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>) "
    "or the proxy in between"
)
"""What an answer with no AWS error code means (an emulator that failed, a web server or a proxy
answering in AWS's place), and where to look."""
_LONGEST = 300
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def describe_aws_error(exc: BaseException) -> str:
    """One line saying why an AWS call failed: ``Code: message`` of an AWS error; for an answer
    that is not AWS's (a status with no AWS error code, an HTML page, a body the SDK cannot
    parse) the operation, the HTTP status, what came back and :data:`NOT_AWS_HINT`, never the
    page itself; the type and text of any other error."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        code = str(error.get("Code") or "")
        message = str(error.get("Message") or "")
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or code
        aws_code = code and not code.isdigit()  # botocore puts the status there when AWS gave none
        if aws_code or _bodiless(status, message):
            return f"{code}: {one_line(message)}".rstrip(": ")
        return _not_aws(getattr(exc, "operation_name", None), status, message)
    if type(exc).__name__ == "ResponseParserError":  # botocore's: "...received...:\n<body>"
        body = str(exc).split("\n", 1)[-1]
        if len(body) > 2 and body[0] == "b" and body[1] in "'\"":  # the bytes' repr
            body = body[2:-1]
        return _not_aws(None, None, body)
    return f"{type(exc).__name__}: {one_line(str(exc))}"


def _bodiless(status: object, message: str) -> bool:
    """A 4xx whose message is only the status's reason phrase: an answer with no body by design
    (S3's HeadObject: ``404: Not Found``), not a stranger's."""
    phrase = message.strip()
    return (
        str(status).isdigit()
        and 400 <= int(str(status)) < 500
        and len(phrase) <= 40
        and not any(mark in phrase for mark in "<{[\n")
    )


def _not_aws(operation: object, status: object, body: str) -> str:
    answer = f"HTTP {status} answer" if status else "an answer"
    to = f" to {operation}" if operation else ""
    return f"{answer}{to} with no AWS error code ({_what(body)}) - {NOT_AWS_HINT}"


def _what(body: str) -> str:
    """What a body that is not AWS's holds, in a few words."""
    text = body.strip()
    lower = text.lower()
    if "<html" in lower or "<!doctype html" in lower:
        title = _TITLE.search(text)
        return f"an HTML page: {one_line(title.group(1), 80)}" if title else "an HTML page"
    if not text:
        return "an empty body"
    return f"the body {one_line(text, 80)!r}"


def one_line(text: str, longest: int = _LONGEST) -> str:
    """``text`` on one line (its whitespace runs made one space), cut to ``longest``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= longest else flat[: longest - 3] + "..."


class AuditError(SchedulerError):
    """An audit record was not kept, or the audit trail cannot be read; the message names the
    store and the cause. The action it records was done all the same."""
