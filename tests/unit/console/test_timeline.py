"""The next hours' picture: firings per job and the zones' clock changes, to the second.

Transitions used (from the tz database): Europe/Paris 2027-03-28 01:00:00Z (+1 -> +2) and
2026-10-25 01:00:00Z (+2 -> +1); Australia/Lord_Howe 2027-04-03 15:00:00Z (+11 -> +10:30, a
half-hour change); America/St_Johns 2027-03-14 05:30:00Z (-3:30 -> -2:30); Asia/Tokyo: none."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest

from mini_scheduler.console.timeline import MAX_MARKS, clock_changes, row
from mini_scheduler.console.words import in_words
from mini_scheduler.jobs import load
from mini_scheduler.model import iso_seconds
from tests.unit.tick.harness import at


@pytest.mark.parametrize(
    ("zone", "begin", "at_utc", "before", "after", "text"),
    [
        ("Europe/Paris", "2027-03-27T12:00:00Z", "2027-03-28T01:00:00Z", 3600, 7200,
         "Europe/Paris: clocks go forward 1 h"),
        ("Europe/Paris", "2026-10-24T12:00:00Z", "2026-10-25T01:00:00Z", 7200, 3600,
         "Europe/Paris: clocks go back 1 h"),
        ("Australia/Lord_Howe", "2027-04-03T00:00:00Z", "2027-04-03T15:00:00Z", 39600, 37800,
         "Australia/Lord_Howe: clocks go back 30 min"),
        ("America/St_Johns", "2027-03-14T00:00:00Z", "2027-03-14T05:30:00Z", -12600, -9000,
         "America/St_Johns: clocks go forward 1 h"),
    ],
)  # fmt: skip
def test_a_clock_change_is_found_to_the_second(
    zone: str, begin: str, at_utc: str, before: int, after: int, text: str
) -> None:
    start = at(begin)
    (change,) = clock_changes(ZoneInfo(zone), start, start + timedelta(hours=24))
    assert iso_seconds(change.at) == at_utc.replace("Z", "Z")
    assert (change.before, change.after) == (before, after)
    assert change.to_json(zone)["text"] == text


def test_a_zone_without_changes_and_a_window_that_ends_before_one() -> None:
    start = at("2027-03-27T12:00:00Z")
    assert clock_changes(ZoneInfo("Asia/Tokyo"), start, start + timedelta(days=7)) == []
    assert clock_changes(ZoneInfo("Europe/Paris"), start, at("2027-03-28T01:00:00Z")) == []


JOBS = load(
    """
jobs:
  - {name: "paris", cron: "0 30 9 * * ?", timezone: "Europe/Paris", service: "f"}
  - {name: "often", cron: "*/30 * * * * ?", service: "f"}
  - {name: "off", cron: "0 0 * * * ?", service: "f", enabled: false}
""",
    source="t.yaml",
)


def test_a_row_has_the_job_s_firings_and_a_dense_job_is_flagged() -> None:
    begin = at("2027-03-27T12:00:00Z")
    end = begin + timedelta(hours=24)
    paris, often, off = (row(job, begin, end) for job in JOBS.jobs)
    # 09:30 in Paris is 08:30Z before the change and 07:30Z after it
    assert [iso_seconds(f) for f in paris.firings] == ["2027-03-28T07:30:00Z"]
    assert [c.to_json("Europe/Paris")["at"] for c in paris.changes] == ["2027-03-28T01:00:00Z"]
    assert often.dense and len(often.firings) == MAX_MARKS
    assert off.firings == [] and not off.dense


@pytest.mark.parametrize(
    ("statement", "words"),
    [
        ("0 0 9 ? * MON-FRI", "At 09:00, Monday through Friday"),
        ("0 15 10 ? * 6#3", "At 10:15, on the third Friday of the month"),
        ("0 0 9 ? * 1", "At 09:00, only on Sunday"),
        ("0 15 10 L * ?", "At 10:15, on the last day of the month"),
        ("*/20 * * * * ?", "Every 20 seconds"),
    ],
)
def test_a_statement_in_words_uses_quartz_s_day_numbers(statement: str, words: str) -> None:
    assert in_words(statement) == words


def test_a_statement_that_cannot_be_worded_has_no_words() -> None:
    assert in_words("not a statement") is None
