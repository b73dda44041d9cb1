"""``start`` and ``end``: instants with their zone that bound a job's firings (issue 14, part 3),
and the exact text of each refusal."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.unit.jobs.helpers import errors, invalid, one


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_unbounded_by_default() -> None:
    job = one().jobs[0]
    assert (job.start, job.end) == (None, None)


def test_bounds_read_in_utc_whatever_the_offset() -> None:
    job = one(start="2027-01-01T00:00:00+01:00", end="2027-01-02T00:00:00Z").jobs[0]
    assert job.start == utc("2026-12-31T23:00:00+00:00")
    assert job.end == utc("2027-01-02T00:00:00+00:00")


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (
            {"start": "2027-01-01T00:00:00"},
            "start '2027-01-01T00:00:00' is not an instant: '2027-01-01T00:00:00' has no time "
            "zone; write it in UTC with a trailing Z",
        ),
        (
            {"end": "next tuesday"},
            "end 'next tuesday' is not an instant: write it as 2027-01-01T00:00:00Z (ISO 8601, "
            "with its zone)",
        ),
        (
            {"start": 20270101},
            "start must be an instant such as 2027-01-01T00:00:00Z, not 20270101",
        ),
        (
            {"start": "2027-01-02T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
            "end 2027-01-01T00:00:00Z is not after start 2027-01-02T00:00:00Z",
        ),
        (
            {"start": "2027-01-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
            "end 2027-01-01T00:00:00Z is not after start 2027-01-01T00:00:00Z",
        ),
    ],
)
def test_refused(fields: dict[str, object], reason: str) -> None:
    (error,) = errors(one(**fields))
    assert error.startswith(invalid(reason))


def test_the_firings_and_the_next_one_stay_within_the_bounds() -> None:
    job = one(cron="0 0 * * * ?", start="2027-01-01T10:30:00Z", end="2027-01-01T13:00:00Z").jobs[0]
    day = (utc("2027-01-01T00:00:00+00:00"), utc("2027-01-02T00:00:00+00:00"))
    assert [at.hour for at in job.firings(*day)] == [11, 12]
    assert job.next_after(utc("2026-06-01T00:00:00+00:00")) == utc("2027-01-01T11:00:00+00:00")
    assert job.next_after(utc("2027-01-01T12:00:00+00:00")) is None
