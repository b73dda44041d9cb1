"""What an operator does across regions, whoever shows it (the CLI, the console): one region's
outcome, and an action done region by region, a region that fails reported beside the others.

The first piece of the fleet layer that the CLI and the console share; the console imports
nothing from ``cli/``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mini_scheduler.errors import SchedulerError, describe_aws_error


@dataclass(slots=True)
class Outcome:
    """One region's result in an action done region by region."""

    region: str
    ok: bool
    fields: dict[str, Any]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"region": self.region, "ok": self.ok, **self.fields}
        if self.error is not None:
            out["error"] = self.error
        return out


def each_region(
    regions: Sequence[str],
    act: Callable[[str], dict[str, Any]],
    *,
    stops: Callable[[SchedulerError], bool] = lambda exc: False,
) -> list[Outcome]:
    """Do ``act`` in every region in turn; a failure is reported, and the next region done. An
    error that ``stops`` says concerns every region (a usage error) is raised at once."""
    from botocore.exceptions import BotoCoreError, ClientError

    outcomes: list[Outcome] = []
    for region in regions:
        try:
            outcomes.append(Outcome(region, True, act(region)))
        except SchedulerError as exc:
            if stops(exc):
                raise
            outcomes.append(Outcome(region, False, {}, str(exc)))
        except (BotoCoreError, ClientError) as exc:
            outcomes.append(Outcome(region, False, {}, describe_aws_error(exc)))
    return outcomes
