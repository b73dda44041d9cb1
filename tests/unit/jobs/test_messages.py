"""What the load report says about an entry (issue 11, items 7 and 12): the entry's name, the
Quartz form of a Unix statement, a statement that never fires, the zone a typo meant, and names
or keys that must not forge a log line."""

from __future__ import annotations

import logging

import pytest

from mini_scheduler.cron.zones import suggest_zone
from mini_scheduler.jobs import load, readable_name
from tests.unit.jobs.helpers import BASE, document, errors, invalid, one, warnings


def test_an_invalid_entry_is_named_by_its_name() -> None:
    cron_file = load(
        document(
            BASE,
            {**BASE, "name": "bad-cron", "cron": "0 0 25 * * ?"},
            {"cron": "0 0 25 * * ?", "service": "fn"},
        )
    )
    assert errors(cron_file) == [
        "Invalid job entry#2 (bad-cron) - check name, schedule and service: Bad hour in "
        "'0 0 25 * * ?': values are 0 to 23",
        "Invalid job entry#3 - check name, schedule and service: missing name; Bad hour in "
        "'0 0 25 * * ?': values are 0 to 23",
    ]


@pytest.mark.parametrize(
    ("name", "readable"),
    [
        ("report", True),
        ("a", True),
        ("Report_2.v-1", True),
        ("-report", True),  # invalid as a name, but one: the reason says what is wrong with it
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        ("a b", False),
        ("rapport-é", False),
        ("x\nERROR forged", False),
        ("x) - check name, schedule and service: fine (y", False),
        ("\u202ereport", False),  # a right-to-left override
        (123, False),
        (None, False),
        (["report"], False),
    ],
)
def test_the_name_is_shown_only_when_it_is_readable(name: object, readable: bool) -> None:
    assert readable_name(name) == (name if readable else None)


def test_an_unreadable_name_forges_no_line_in_a_warning() -> None:
    cron_file = one(name="x\nERROR Invalid job entry#9", colour="blue", cron="0 0 9 * * ?")
    assert warnings(cron_file)[0].startswith("Job entry#1 key colour ignored - the keys are ")
    assert all("\n" not in problem.message for problem in cron_file.problems)


def test_keys_are_shown_on_one_short_line() -> None:
    cron_file = one(**{"colour\nERROR forged": 1, "k" * 1000: 2}, parameters={"_x\ny": 1})
    assert warnings(cron_file) == [
        "Job report key colour\\nERROR forged ignored - the keys are name, cron, service, "
        "timezone, parameters, description, resolver, misfire, overlap, max_buffered, "
        "max_running, pool, timeout, retry, pause_after_failures, enabled, start, end, input, "
        "dead_letter, ecs, http, jitter, window",
        f"Job report key {'k' * 40}... ignored - the keys are name, cron, service, timezone, "
        "parameters, description, resolver, misfire, overlap, max_buffered, max_running, pool, "
        "timeout, retry, pause_after_failures, enabled, start, end, input, dead_letter, ecs, "
        "http, jitter, window",
        "Job report parameter _x\\ny ignored - a key that starts with '_' is reserved for the "
        "system",
    ]


def test_a_shared_huge_name_is_quoted_cut() -> None:
    name = "n" * 100_000
    cron_file = load(document({**BASE, "name": name}, {**BASE, "name": name}))
    shared = (
        f"name {'n' * 20!r}... is longer than 64 characters; name {'n' * 64!r}... is used by "
        "entries #1 and #2 - every entry with this name is skipped"
    )
    assert errors(cron_file) == [invalid(shared, 1, None), invalid(shared, 2, None)]


# -- a Unix statement -----------------------------------------------------------------------------


def test_a_unix_statement_is_refused_with_its_quartz_form() -> None:
    cron_file = load(document(BASE, {**BASE, "name": "every-5", "cron": "*/5 * * * *"}))
    assert errors(cron_file) == [
        "Invalid job entry#2 (every-5) - check name, schedule and service: Bad field count in "
        "'*/5 * * * *': 5 fields; a statement has 6 or 7 - written for Unix cron? In Quartz it "
        "is '0 */5 * * * ?'"
    ]


def test_a_unix_statement_quartz_cannot_say_is_refused_saying_so() -> None:
    assert errors(one(cron="0 9 1 * 1")) == [
        invalid(
            "Bad field count in '0 9 1 * 1': 5 fields; a statement has 6 or 7 - written for "
            "Unix cron? Quartz cannot say it in one statement: it restricts day-of-month or "
            "day-of-week, with '?' in the other, and this line restricts both"
        )
    ]


# -- a statement that never fires -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "zone"),
    [
        ("0 0 0 30 2 ?", "UTC"),  # 30 February
        ("0 0 12 31 4,6,9,11 ?", "Europe/Paris"),  # the 31st of a 30-day month
        ("0 0 0 L-30 2 ?", "UTC"),
        ("0 0 0 29 2 ? 2100", "UTC"),  # 2100 is not a leap year
        ("0 30 2 8 3 ? 2026", "America/New_York"),  # the clocks skip 02:00-03:00 that day
    ],
)
def test_a_statement_that_never_fires_loads_with_a_warning(statement: str, zone: str) -> None:
    cron_file = one(cron=statement, timezone=zone)
    assert cron_file.ok and [job.statement for job in cron_file.jobs] == [statement]
    assert warnings(cron_file) == [
        f"Job report never fires - {statement} selects no time in {zone} from 1970 to 2999: "
        "check its day, month and year fields"
    ]


@pytest.mark.parametrize(
    ("statement", "zone"),
    [
        ("0 30 2 8 3 ? 2026", "UTC"),
        ("0 30 2 8 3 ? 2026", "Europe/Paris"),
        ("0 0 0 29 2 ?", "UTC"),  # leap years
        ("0 0 0 29 2 ? 2096", "UTC"),
        ("0 0 0 ? 2 1#5", "UTC"),  # a fifth Sunday in February: 2032, 2060, ...
        ("0 0 0 1 1 ? 1970", "Asia/Tokyo"),
        # A statement whose firings are all past fired: the load report cannot say "never"
        # (it does not read the clock); mini-scheduler next shows "no firing after that".
        ("0 0 0 1 1 ? 2020", "UTC"),
    ],
)
def test_a_statement_that_fires_at_all_gets_no_warning(statement: str, zone: str) -> None:
    cron_file = one(cron=statement, timezone=zone)
    assert cron_file.ok and cron_file.problems == ()


def test_the_never_fires_warning_is_logged_before_the_job_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="test.jobs"):
        one(cron="0 0 0 30 2 ?").log(logging.getLogger("test.jobs"))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "Job report never fires - 0 0 0 30 2 ? selects no time in UTC from 1970 to 2999: "
            "check its day, month and year fields",
        ),
        (
            "INFO",
            "Scheduled job: report, service: report-fn, statement: 0 0 0 30 2 ?, time zone: UTC",
        ),
    ]


# -- an unknown zone ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "meant"),
    [
        ("America/NewYork", "America/New_York"),
        ("america/new_york", "America/New_York"),
        ("America/New York", "America/New_York"),
        ("America/New-York", "America/New_York"),
        ("Europe/Pariss", "Europe/Paris"),
        ("US/Pacifc", "US/Pacific"),
        ("Amercia/Chicago", "America/Chicago"),
        ("Austrlia/Sydney", "Australia/Sydney"),
        ("New York", "America/New_York"),  # a place with one zone
        ("Kolkata", "Asia/Kolkata"),
        ("utc", "UTC"),
        ("etc/gmt+5", "Etc/GMT+5"),  # a case slip keeps its digits
        ("GMT+5", None),  # Etc/GMT+5 is UTC-5: a near miss of an offset is not a typo
        ("Etc/GMT+15", None),
        ("EST5", None),
        ("PST", None),  # MST is as close, and wrong
        ("Eastern", None),  # US/Eastern or Canada/Eastern
        ("Mars/Base", None),
        ("", None),
        ("Europe/" + "x" * 60, None),
    ],
)
def test_the_zone_a_typo_meant(zone: str, meant: str | None) -> None:
    assert suggest_zone(zone) == meant


def test_an_unknown_zone_is_refused_with_the_zone_it_meant() -> None:
    assert errors(one(timezone="Europe/Pariss")) == [
        invalid("unknown time zone 'Europe/Pariss' - did you mean Europe/Paris?")
    ]
    assert errors(one(timezone="Mars/Base")) == [invalid("unknown time zone 'Mars/Base'")]


def test_spelling_guesses_are_bounded_per_file() -> None:
    """Each spelling guess compares with ~600 zone ids: a file of thousands of misspelt zones
    gets 20, then only the cheap guesses (a slip of case, a place's name)."""
    zones = [f"Europe/Paris{n:02}" for n in range(25)]
    entries = [{**BASE, "name": f"j{n}", "timezone": zone} for n, zone in enumerate(zones)]
    entries += [
        {**BASE, "name": "again", "timezone": zones[0]},
        {**BASE, "name": "case", "timezone": "europe/paris"},
    ]
    reasons = [message.split(": ", 1)[1] for message in errors(load(document(*entries)))]
    guessed = [f"unknown time zone {zone!r} - did you mean Europe/Paris?" for zone in zones]
    bare = [f"unknown time zone {zone!r}" for zone in zones]
    assert reasons == [
        *guessed[:20],
        *bare[20:],
        guessed[0],  # a zone already guessed costs nothing
        "unknown time zone 'europe/paris' - did you mean Europe/Paris?",
    ]
