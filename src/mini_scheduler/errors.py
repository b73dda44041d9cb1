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
