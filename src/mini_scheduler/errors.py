"""One root error for the project; every error a user can meet derives from it."""

from __future__ import annotations


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


def describe_aws_error(exc: BaseException) -> str:
    """``Code: message`` of a botocore ClientError, or the type and text of any other error."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"
