"""``jitter`` and ``window`` (issue 30, item 3): where a firing starts, the keys' checks, and the
minutes that find each firing by its planned instant: each firing once, whatever the edges."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.jobs import Job
from mini_scheduler.jobs.spread import offset, planned, planned_after, planned_in
from mini_scheduler.model import Firing
from tests.unit.jobs.helpers import errors, invalid, one

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def job(cron: str = "0 0 9 * * ?", **keys: object) -> Job:
    cron_file = one(cron=cron, **keys)
    assert cron_file.ok, errors(cron_file)
    return cron_file.jobs[0]


# -- the keys ---------------------------------------------------------------------------------


def test_without_either_key_a_firing_starts_at_its_instant() -> None:
    found = job()
    assert (found.jitter, found.window, found.spread_seconds) == (0, 0, 0)
    assert planned(found, T0) == T0


def test_the_span_is_jitter_s_seconds_or_window_s_minutes() -> None:
    assert job(jitter=90).spread_seconds == 90
    assert job(window=10).spread_seconds == 600
    assert job(jitter=0).spread_seconds == 0


@pytest.mark.parametrize(
    ("keys", "reason"),
    [
        ({"jitter": 3601}, "jitter must be a whole number of seconds from 0 to 3600, not 3601"),
        ({"jitter": -1}, "jitter must be a whole number of seconds from 0 to 3600, not -1"),
        ({"jitter": 1.5}, "jitter must be a whole number of seconds from 0 to 3600, not 1.5"),
        ({"jitter": "30s"}, "jitter must be a whole number of seconds from 0 to 3600, not '30s'"),
        ({"jitter": True}, "jitter must be a whole number of seconds from 0 to 3600, not true"),
        ({"window": 1441}, "window must be a whole number of minutes from 0 to 1440, not 1441"),
        ({"window": "10m"}, "window must be a whole number of minutes from 0 to 1440, not '10m'"),
        (
            {"jitter": 30, "window": 5},
            "jitter and window both spread a firing: give one (window is in minutes, jitter in "
            "seconds)",
        ),
    ],
    ids=["jitter-high", "jitter-negative", "jitter-float", "jitter-text", "jitter-bool",
         "window-high", "window-text", "both"],
)  # fmt: skip
def test_a_bad_value_skips_the_entry_naming_the_key(keys: dict[str, object], reason: str) -> None:
    cron_file = one(**keys)
    assert cron_file.jobs == ()
    assert errors(cron_file) == [invalid(reason)]


def test_the_largest_values_load() -> None:
    assert job(jitter=3600).jitter == 3600
    assert job(window=1440).window == 1440


# -- the offset -------------------------------------------------------------------------------


def test_the_offset_is_a_function_of_the_firing_id_alone() -> None:
    found = job("0 * * * * ?", jitter=600)
    firing_id = Firing(found.name, T0).firing_id
    start = planned(found, T0)
    assert start == T0 + timedelta(seconds=offset(firing_id, 60))  # cut to the next firing
    assert planned(found, T0) == start  # stable
    assert [offset(firing_id, 3600) for _ in range(3)] == [offset(firing_id, 3600)] * 3
    assert offset(firing_id, 1) == 0 and offset(firing_id, 0) == 0
    others = {offset(Firing(f"job-{i}", T0).firing_id, 3600) for i in range(50)}
    assert len(others) > 40  # different firings, different offsets


def test_a_firing_starts_within_its_span_and_before_the_job_s_next_firing() -> None:
    every_5 = job("0 */5 * * * ?", window=10)
    daily = job("0 0 9 * * ?", jitter=3600)
    for i in range(200):
        nominal = T0 + timedelta(minutes=5 * i)
        assert nominal <= planned(every_5, nominal) < nominal + timedelta(minutes=5)
        morning = datetime(2026, 12, 1, 9, tzinfo=UTC) + timedelta(days=i)
        assert morning <= planned(daily, morning) < morning + timedelta(hours=1)


def test_the_last_firing_before_the_job_s_end_spreads_over_its_whole_span() -> None:
    found = job("0 0 9 * * ?", window=60, end="2026-12-01T09:00:01Z")
    last = datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert found.next_after(last) is None
    start = planned(found, last)
    assert start - last == timedelta(seconds=offset(Firing(found.name, last).firing_id, 3600))


def test_a_thousand_jobs_of_one_minute_with_window_10_spread_evenly_over_the_10_minutes() -> None:
    jobs = [job("0 0 12 * * ?", window=10, name=f"export-{i:04d}") for i in range(1000)]
    noon = datetime(2026, 12, 1, 12, tzinfo=UTC)
    minutes = Counter(int((planned(j, noon) - noon).total_seconds()) // 60 for j in jobs)
    assert sorted(minutes) == list(range(10))
    assert all(70 <= n <= 130 for n in minutes.values()), minutes  # 100 each, 3 sd either way
    chi2 = sum((n - 100) ** 2 / 100 for n in minutes.values())
    assert chi2 < 27.9, minutes  # 9 degrees of freedom, p = 0.001
    seconds = Counter(int((planned(j, noon) - noon).total_seconds()) for j in jobs)
    assert max(seconds.values()) <= 8  # no second takes a crowd (about 1.7 each)


# -- each firing found once, by the minute of its planned instant ----------------------------


CASES = [
    ("0 * * * * ?", {"jitter": 90}),  # a span longer than the interval: cut to it
    ("*/20 * * * * ?", {"jitter": 45}),
    ("0 */5 * * * ?", {"window": 10}),
    ("30 59 * * * ?", {"jitter": 3600}),  # each planned in the next hour's
    ("0 0 9 * * ?", {"window": 1440}),
    ("0 * * * * ?", {"jitter": 50, "start": "2026-11-30T14:03:00Z", "end": "2026-11-30T17:00:00Z"}),
    ("0 0 9 * * ?", {}),
]


@pytest.mark.parametrize(("cron", "keys"), CASES, ids=[f"{c} {k}" for c, k in CASES])
def test_minutes_in_a_row_find_each_firing_once_at_its_planned_instant(
    cron: str, keys: dict[str, object]
) -> None:
    """The ticks' windows tile the time: every firing whose planned instant is in the span is
    found by exactly one minute, and at that instant (a window's edges lose and repeat none)."""
    found = job(cron, **keys)
    begin, hours = T0, 50 if "0 0 9" in cron else 4
    seen: Counter[datetime] = Counter()
    for minute in range(hours * 60):
        low = begin + timedelta(minutes=minute)
        for nominal, start in planned_in(found, low, low + timedelta(minutes=1)):
            assert low <= start < low + timedelta(minutes=1)
            assert start == planned(found, nominal)
            seen[nominal] += 1
    end = begin + timedelta(hours=hours)
    back = timedelta(seconds=found.spread_seconds)
    expected = {n for n in found.firings(begin - back, end) if begin <= planned(found, n) < end}
    assert set(seen) == expected and set(seen.values()) == {1}
    assert len(expected) > 1
    # a larger range finds the same firings as its minutes
    assert [n for n, _ in planned_in(found, begin, end)] == sorted(expected)


@pytest.mark.parametrize(("cron", "keys"), CASES, ids=[f"{c} {k}" for c, k in CASES])
def test_the_next_firings_are_the_next_planned_instants(cron: str, keys: dict[str, object]) -> None:
    found = job(cron, **keys)
    after = T0 + timedelta(seconds=17)
    upcoming = planned_after(found, after, 6)
    horizon = upcoming[-1][1] + timedelta(seconds=1)
    assert upcoming == list(planned_in(found, after + timedelta(seconds=1), horizon))[:6]
    assert all(start > after for _, start in upcoming)


def test_an_input_template_takes_the_planned_time_or_else_the_scheduled_one() -> None:
    from mini_scheduler.jobs.inputs import fill_input, placeholders_in

    template = {"at": "<plannedTime>", "note": "run of <scheduledTime> at <plannedTime>"}
    assert placeholders_in(template) == {"plannedTime", "scheduledTime"}
    spread = {"scheduledTime": "2026-11-30T14:00:00Z", "plannedTime": "2026-11-30T14:07:13Z"}
    assert fill_input(template, spread) == {
        "at": "2026-11-30T14:07:13Z",
        "note": "run of 2026-11-30T14:00:00Z at 2026-11-30T14:07:13Z",
    }
    plain = {"scheduledTime": "2026-11-30T14:00:00Z"}
    assert fill_input(template, plain)["at"] == "2026-11-30T14:00:00Z"


def test_the_next_start_is_the_first_planned_after_an_instant() -> None:
    from mini_scheduler.jobs.spread import next_start

    poll = job("0 */5 * * * ?", jitter=90)
    after = T0 + timedelta(seconds=1)
    assert next_start(poll, after) == planned_after(poll, after, 1)[0][1]
    assert next_start(job("0 */5 * * * ?"), after) == T0 + timedelta(minutes=5)
    assert next_start(job("0 0 9 * * ?", jitter=5, end="2026-11-30T09:00:01Z"), T0) is None
