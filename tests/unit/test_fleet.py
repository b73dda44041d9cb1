"""The fleet layer's decisions, as tables: the names a deployment knows, the verdict on who is
active, which regions a failover must write and the check of each afterwards, a history merged
across regions and paged."""

from __future__ import annotations

import pytest

from mini_scheduler import fleet
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import SchedulerError
from mini_scheduler.fleet import Outcome, Placed
from mini_scheduler.model import RunStatus

EAST, WEST = "us-east-1", "us-west-2"
STACKS = {EAST: "prod", WEST: "DR"}


def test_known_names_keep_the_first_spelling_of_each() -> None:
    assert fleet.known_names(["prod", None], ["PROD", "DR"], ["dr", "qa"]) == ("prod", "DR", "qa")


@pytest.mark.parametrize(
    ("east", "west", "active", "problem"),
    [
        ("prod", "prod", [EAST], None),
        ("DR", "DR", [WEST], None),
        ("prod", "DR", [EAST, WEST], "2 regions are active"),
        ("DR", "prod", [], "No region is active"),
        ("prod", None, [EAST], None),  # west not read
    ],
    ids=["prod", "DR", "both", "neither", "unread"],
)
def test_judge(east: str, west: str | None, active: list[str], problem: str | None) -> None:
    outcomes = [Outcome(EAST, True, {"active": east})]
    outcomes.append(
        Outcome(WEST, False, {}, "boom") if west is None else Outcome(WEST, True, {"active": west})
    )
    judged = fleet.judge(outcomes, STACKS, ("prod", "DR"))
    assert judged.active_regions == active
    assert (judged.problem or "").startswith(problem or "")
    assert bool(judged.problem) == bool(problem)
    assert judged.agree == (west is None or east == west)


@pytest.mark.parametrize(
    ("regions", "names", "target", "gap"),
    [
        ([EAST, WEST], STACKS, "DR", None),
        ([WEST], STACKS, "DR", fleet.Gap("DR", (WEST,), ("prod", "DR"), ("prod",), (WEST,))),
        ([EAST], STACKS, "DR", None),  # no region given becomes active
        ([EAST], {}, "DR", fleet.Gap("DR", (EAST,), ("prod", "DR"))),  # names not known
    ],
    ids=["every-region", "prod-left-out", "none-becomes-active", "unnamed"],
)
def test_left_out(
    regions: list[str], names: dict[str, str], target: str, gap: fleet.Gap | None
) -> None:
    assert fleet.left_out(regions, names, ("prod", "DR"), target) == gap


def test_check_written() -> None:
    assert fleet.check_written("ssm:/p", "dr", "DR") == "dr"
    with pytest.raises(SchedulerError, match="holds 'prod' after the write, not DR"):
        fleet.check_written("ssm:/p", "prod", "DR")
    with pytest.raises(SchedulerError, match="holds None"):
        fleet.check_written("ssm:/p", None, "DR")


def _run(minute: int, job: str = "report", attempt: int = 1) -> RunRecord:
    firing = f"{job}@2026-12-01T09:{minute:02d}:00Z" + (
        f"#attempt-{attempt:02d}" if attempt > 1 else ""
    )
    return RunRecord(firing, job, f"2026-12-01T09:{minute:02d}:00Z", RunStatus.SUCCEEDED)


def test_newest_first_then_job_then_region_and_a_page_keeps_a_firing_whole() -> None:
    runs = [
        Placed(EAST, _run(1)),
        Placed(WEST, _run(2)),
        Placed(EAST, _run(2)),
        Placed(EAST, _run(1, attempt=2)),
        Placed(WEST, _run(1, job="tick")),
    ]
    merged = fleet.newest_first(runs)
    assert [(p.region, p.run.firing_id) for p in merged] == [
        (WEST, "report@2026-12-01T09:02:00Z"),
        (EAST, "report@2026-12-01T09:02:00Z"),
        (EAST, "report@2026-12-01T09:01:00Z#attempt-02"),  # a later attempt first
        (WEST, "tick@2026-12-01T09:01:00Z"),
        (EAST, "report@2026-12-01T09:01:00Z"),
    ]
    shown, after = fleet.page(merged, 1)
    assert len(shown) == 2 and after == merged[1].run.sort_key  # both regions' 09:02
    assert fleet.page(merged, 5) == (merged, None)


@pytest.mark.parametrize(
    ("east", "west", "regions"),
    [
        (True, False, [EAST]),
        (True, None, [EAST, WEST]),  # west not read: tried, its failure reported
        (False, None, None),  # no region read holds it: no runtime schedule
        (False, False, None),
    ],
    ids=["one-holds", "one-unread", "unread-only", "none-holds"],
)
def test_holders(east: bool, west: bool | None, regions: list[str] | None) -> None:
    outcomes = [Outcome(EAST, True, {"holds": east})]
    outcomes.append(
        Outcome(WEST, False, {}, "boom") if west is None else Outcome(WEST, True, {"holds": west})
    )
    assert fleet.holders(outcomes) == regions


def test_spelled_as_the_stack_spells_it() -> None:
    assert fleet.spelled("dr", [None, "prod", "DR"]) == "DR"
    assert fleet.spelled("qa", ["prod", "DR"]) == "qa"
