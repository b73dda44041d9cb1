"""What doctor finds: a :class:`Finding` in one region (ok, a warning, or an error that stops
jobs, each with what to do), what it learned of a region's stack for the checks across regions,
and the :class:`Stop` that ends a check with its finding (no stack, an AWS call refused)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from mini_scheduler.cli.where import Where
from mini_scheduler.errors import describe_aws_error

Level = Literal["ok", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing checked in one region: ``ok``, or a ``warning`` or an ``error`` (jobs stop)
    with what to do."""

    region: str
    level: Level
    check: str
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        found = {"region": self.region, "level": self.level, "check": self.check}
        found["message"] = self.message
        if self.fix:
            found["fix"] = self.fix
        return found


@dataclass(slots=True)
class Region:
    """What doctor learned of one region's stack, for the checks across regions."""

    region: str
    where: Where | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    active: str | None = None  # the active environment the store holds (or its default)


class Stop(Exception):
    """A finding that ends its check (no stack, a call refused)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def aws(region: str, check: str, call: str, fix: str = "") -> Callable[[Exception], Stop]:
    def stop(exc: Exception) -> Stop:
        return Stop(
            Finding(region, "error", check, f"{call} failed - {describe_aws_error(exc)}", fix)
        )

    return stop
