"""``overlap`` and ``max_buffered`` read from an entry, and from a runtime schedule's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mini_scheduler.errors import EventError
from mini_scheduler.jobs.compare import values
from mini_scheduler.schedule_entry import read_schedule
from tests.unit.jobs.helpers import errors, invalid, one


@pytest.mark.parametrize(
    ("overrides", "limit"),
    [
        ({}, 0),
        ({"overlap": "skip"}, 0),
        ({"overlap": "buffer_one"}, 1),
        ({"overlap": "buffer_all"}, 10),
        ({"overlap": "buffer_all", "max_buffered": 3}, 3),
        ({"overlap": "buffer_all", "max_buffered": 100}, 100),
    ],
)
def test_each_policy_loads_with_how_many_may_wait(overrides: dict[str, Any], limit: int) -> None:
    (job,) = one(**overrides).jobs
    assert job.buffer_limit == limit
    assert job.exclusive is (job.overlap != "allow")


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (
            {"overlap": "buffer_all", "max_buffered": 0},
            "max_buffered must be a whole number from 1 to 100 (the firings that may wait; 10 "
            "when not set), not 0",
        ),
        (
            {"overlap": "buffer_all", "max_buffered": 101},
            "max_buffered must be a whole number from 1 to 100 (the firings that may wait; 10 "
            "when not set), not 101",
        ),
        (
            {"overlap": "buffer_all", "max_buffered": "5"},
            "max_buffered must be a whole number from 1 to 100 (the firings that may wait; 10 "
            "when not set), not '5'",
        ),
        (
            {"overlap": "buffer_one", "max_buffered": 2},
            "max_buffered goes with overlap buffer_all only, not with overlap buffer_one "
            "(buffer_one keeps one firing waiting)",
        ),
        (
            {"max_buffered": 2},
            "max_buffered goes with overlap buffer_all only, not with overlap allow",
        ),
    ],
)
def test_a_bad_max_buffered_is_refused_naming_it(overrides: dict[str, Any], reason: str) -> None:
    cron_file = one(**overrides)
    assert cron_file.jobs == ()
    assert errors(cron_file) == [invalid(reason)]


def test_plan_compares_max_buffered() -> None:
    (job,) = one(overlap="buffer_all", max_buffered=4).jobs
    assert values(job)["overlap"] == "buffer_all" and values(job)["max_buffered"] == 4


def test_a_runtime_schedule_takes_the_policies_and_refuses_a_bad_one() -> None:
    now = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
    entry = {"name": "s", "cron": "0 * * * * ?", "service": "fn", "overlap": "buffer_all"}
    job, stored, _ = read_schedule({**entry, "max_buffered": 7}, default_zone="UTC", now=now)
    assert job.buffer_limit == 7 and stored["max_buffered"] == 7
    with pytest.raises(EventError, match="max_buffered goes with overlap buffer_all only"):
        read_schedule({**entry, "overlap": "skip", "max_buffered": 7}, default_zone="UTC", now=now)
