"""The Quartz statement suggested for a five-field Unix cron line (issue 11, item 7).

Each suggestion must parse, and fire when the Unix line fires: croniter, a Unix cron library, is
the second opinion (its five-field reading is Vixie cron's, as the module's is).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_scheduler.cron import parse
from mini_scheduler.cron.unix import quartz_for, unix_hint

START = datetime(2026, 1, 1, tzinfo=UTC)
BOTH_DAYS = (
    "written for Unix cron? Quartz cannot say it in one statement: it restricts day-of-month or "
    "day-of-week, with '?' in the other, and this line restricts both"
)


@pytest.mark.parametrize(
    ("unix", "quartz"),
    [
        ("*/5 * * * *", "0 */5 * * * ?"),
        ("0 9 * * 1-5", "0 0 9 ? * MON-FRI"),
        ("0 0 1 * *", "0 0 0 1 * ?"),
        ("* * * * *", "0 * * * * ?"),
        ("30 2 * * 0", "0 30 2 ? * SUN"),  # Unix 0 is Sunday; Quartz's 0 is no day
        ("30 2 * * 7", "0 30 2 ? * SUN"),  # and so is Unix 7, Quartz's Saturday
        ("0 0 * * 6", "0 0 0 ? * SAT"),  # Quartz's 6 is Friday
        ("0 0 * * 0,6", "0 0 0 ? * SUN,SAT"),
        ("0 0 * * 5-7", "0 0 0 ? * SUN,FRI-SAT"),
        ("0 0 * * */2", "0 0 0 ? * SUN,TUE,THU,SAT"),  # Quartz's */2 would start on Sunday=1
        ("0 0 * * 1-5/2", "0 0 0 ? * MON,WED,FRI"),
        ("0 0 * * sat,SUN", "0 0 0 ? * SUN,SAT"),
        ("*/30 * * * 6,7,0-4", "0 */30 * ? * SUN-THU,SAT"),  # 0 and 7 are one day, not two
        ("0 12 * * mon-fri", "0 0 12 ? * MON-FRI"),
        ("15 10 1 jan-mar/2 *", "0 15 10 1 1-3/2 ?"),  # Quartz drops a step after a name
        ("0 0 1 JAN *", "0 0 0 1 1 ?"),
        ("0 0 1 1-12 *", "0 0 0 1 * ?"),
        ("0-30/10 8-18/2 */3 feb,jun *", "0 0-30/10 8-18/2 */3 2,6 ?"),
        ("59 23 31 * *", "0 59 23 31 * ?"),
        ("0 0 */2 * *", "0 0 0 */2 * ?"),
        ("0 0 * * 0-7", "0 0 0 * * ?"),
        # Vixie cron ANDs the day fields when one starts with '*': all weekdays leave the dates
        ("0 0 */2 * 0-7", "0 0 0 */2 * ?"),
        # and ORs two restricted ones: every date OR weekdays is every day
        ("0 0 1-31 * 1-5", "0 0 0 * * ?"),
        ("0 0 1 * 0-6", "0 0 0 * * ?"),
    ],
)
def test_the_quartz_statement_of_a_unix_line(unix: str, quartz: str) -> None:
    assert quartz_for(unix) == quartz
    parse(quartz)
    assert unix_hint(unix) == f"written for Unix cron? In Quartz it is '{quartz}'"
    assert _quartz_firings(quartz) == _unix_firings(unix)


@pytest.mark.parametrize(
    "unix",
    [
        "0 0 1,15 * 1",  # the 1st, the 15th, and every Monday: Unix ORs the two
        "0 9 13 * 5",  # the 13th or a Friday
        "0 0 */2 * 1",  # odd dates that are Mondays: Vixie cron ANDs a field that starts with *
        "0 0 1 * */2",
    ],
)
def test_both_day_fields_restricted_is_said_not_translated(unix: str) -> None:
    assert quartz_for(unix) is None
    assert unix_hint(unix) == BOTH_DAYS


@pytest.mark.parametrize(
    "statement",
    [
        "0 0 9 * * ?",  # Quartz, six fields
        "0 0 9 * ?",  # five fields, but '?' is not Unix
        "60 * * * *",  # minute out of range
        "* 24 * * *",
        "* * 0 * *",  # day-of-month starts at 1
        "* * 32 * *",
        "* * * 13 *",
        "* * * * 8",
        "0 0 L * *",
        "0 0 15W * *",
        "0 0 * * 5#2",
        "5/10 * * * *",  # n/step is not Vixie cron's
        "*/0 * * * *",
        "10-5 * * * *",  # Unix ranges do not wrap
        "0 0 * * FOO",
        "0 0 1 XYZ *",
        "0 0 ² * *",  # a digit to str.isdigit, not to cron
        "@daily",
        "",
        "0 0 9 * * ? 2030",
    ],
)
def test_anything_else_gets_no_hint(statement: str) -> None:
    assert quartz_for(statement) is None
    assert unix_hint(statement) is None


def _item(low: int, high: int, names: tuple[str, ...]) -> st.SearchStrategy[str]:
    value = st.integers(low, high).map(str)
    if names:
        value = value | st.sampled_from(names)
    # croniter reads a range of one value (5-5) as the whole field; Vixie cron as the value
    bounds = st.lists(st.integers(low, high), min_size=2, max_size=2, unique=True).map(sorted)
    return st.one_of(
        value,
        bounds.map(lambda pair: f"{pair[0]}-{pair[1]}"),
        st.tuples(bounds, st.integers(1, 5)).map(lambda t: f"{t[0][0]}-{t[0][1]}/{t[1]}"),
    )


def _field(low: int, high: int, names: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """A field as people write them: ``*`` or ``*/n`` alone, or a list of values and ranges.
    (Vixie cron and croniter read ``1,*`` and ``*/1`` in a day field differently: whether the
    field starts with ``*`` decides for Vixie cron if the day fields are ANDed or ORed.)"""
    return st.one_of(
        st.just("*"),
        st.integers(2, high).map(lambda step: f"*/{step}"),
        st.lists(_item(low, high, names), min_size=1, max_size=3).map(",".join),
    )


MONTHS = ("jan", "FEB", "Mar", "apr", "dec")
DAYS = ("sun", "MON", "Tue", "fri", "sat")
UNIX_LINES = st.tuples(
    _field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12, MONTHS), _field(0, 7, DAYS)
).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(UNIX_LINES)
def test_every_suggestion_parses_and_fires_when_unix_cron_does(unix: str) -> None:
    quartz = quartz_for(unix)
    if quartz is None:
        assert unix_hint(unix) == BOTH_DAYS
        return
    parse(quartz)
    assert _quartz_firings(quartz) == _unix_firings(unix), (unix, quartz)


def _unix_firings(unix: str, count: int = 60) -> list[datetime]:
    found = croniter(unix, START)
    return [found.get_next(datetime) for _ in range(count)]


def _quartz_firings(quartz: str, count: int = 60) -> list[datetime]:
    expression = parse(quartz)
    found: list[datetime] = []
    moment = START
    for _ in range(count):
        following = expression.next_after(moment, "UTC")
        assert following is not None
        found.append(following)
        moment = following
    return found
