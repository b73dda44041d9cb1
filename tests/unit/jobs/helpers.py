"""Small builders for cron files in tests."""

from __future__ import annotations

import json
from typing import Any

from mini_scheduler.jobs import CronFile, load

PREFIX = "Invalid job entry#{n}{name} - check name, schedule and service: "
BASE: dict[str, Any] = {"name": "report", "cron": "0 0 9 * * ?", "service": "report-fn"}


def document(*entries: Any, **settings: Any) -> str:
    """A cron file (JSON is YAML) with these entries and top-level settings."""
    return json.dumps({"jobs": list(entries), **settings})


def one(**overrides: Any) -> CronFile:
    """A file with one entry: BASE with ``overrides`` (a None value removes the key)."""
    entry = {**BASE, **overrides}
    entry = {key: value for key, value in entry.items() if value is not None}
    return load(document(entry))


def invalid(reason: str, n: int = 1, name: str | None = BASE["name"]) -> str:
    """The error line of entry ``n`` named ``name`` (None: an entry shown without a name)."""
    return PREFIX.format(n=n, name="" if name is None else f" ({name})") + reason


def errors(cron_file: CronFile) -> list[str]:
    return [p.message for p in cron_file.problems if p.level == "error"]


def warnings(cron_file: CronFile) -> list[str]:
    return [p.message for p in cron_file.problems if p.level == "warning"]
