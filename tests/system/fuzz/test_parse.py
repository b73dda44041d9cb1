"""``parse`` on bad input, past what tests/unit/cron/test_properties.py covers.

That file fuzzes ``parse`` with short random text and token soups (300 examples, and 10,000 in
its ``slow`` variant). Here: near misses of real statements (every statement of Quartz's golden
file, edited by a character, a token or a field), input around the
1,024-character bound, and the questions asked of whatever ``parse`` accepts (``next_after`` and
``firings`` at any instant from year 1 to 9999, with any UTC offset, in zones with odd rules).

Each statement either raises CronSyntaxError naming one of its fields, or parses into an
expression whose answers are aware UTC instants in order, after (or within) what was asked; and
nothing takes long (no hang): parsing and each question within a bound.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mini_scheduler.cron import CronSyntaxError, parse
from tests.unit.cron.test_golden import ROWS
from tests.unit.cron.test_properties import ALPHABET, TOKENS

STATEMENTS = tuple(dict.fromkeys(row.statement for row in ROWS))
ZONES = (
    "UTC",
    "America/New_York",
    "Pacific/Apia",
    "Pacific/Kiritimati",
    "Pacific/Chatham",
    "Australia/Lord_Howe",
    "Antarctica/Troll",
    "Africa/Casablanca",
    "Etc/GMT+12",
    "Etc/GMT-14",
)
DEFAULT = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(DEFAULT, max_examples=10_000)


def _aware_utc(moment: datetime) -> bool:
    return moment.tzinfo is not None and moment.utcoffset() == timedelta(0)


SEEDS = st.sampled_from(STATEMENTS)
"""A statement of Quartz's golden file: 667 statements, valid and not, over its whole syntax.
(test_properties.py's generator of valid statements is thorough, and too slow to draw 10,000
seeds from.)"""
EDITS = st.sampled_from(
    ["insert", "delete", "replace", "token", "drop", "double", "swap", "join", "gap"]
)
CHARACTERS = st.one_of(st.sampled_from(ALPHABET), st.characters())
GAPS = st.sampled_from(["\t", "  ", "\u00a0", "\n", " \t "])
TOKEN = st.sampled_from(TOKENS)


@st.composite
def edits(draw: st.DrawFn, text: str) -> str:
    """``text`` edited once: a character, a token or a field."""
    fields = text.split(" ")
    how = draw(EDITS)
    if how in ("insert", "delete", "replace"):
        where = draw(st.integers(0, max(0, len(text) - 1)))
        if how == "delete":
            return text[:where] + text[where + 1 :]
        char = draw(CHARACTERS)
        return text[:where] + char + text[where + (how == "replace") :]
    field = draw(st.integers(0, len(fields) - 1))
    if how == "token":
        fields[field] = draw(TOKEN)
    elif how == "drop" and len(fields) > 1:
        del fields[field]
    elif how == "double":
        fields.insert(field, fields[field])
    elif how == "swap":
        other = draw(st.integers(0, len(fields) - 1))
        fields[field], fields[other] = fields[other], fields[field]
    elif how == "join":
        return "".join(fields[: field + 1]) + " " + " ".join(fields[field + 1 :])
    elif how == "gap":
        return draw(GAPS).join(fields)
    return " ".join(fields)


@st.composite
def near_misses(draw: st.DrawFn) -> str:
    text = draw(SEEDS)
    for _ in range(draw(st.integers(1, 3))):
        text = draw(edits(text))
    return text


OFFSETS = st.integers(-23 * 60 - 59, 23 * 60 + 59)
MOMENTS = st.one_of(
    st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30)),
    st.datetimes(datetime(1960, 1, 1), datetime(3010, 1, 1)),
    st.sampled_from([datetime(1, 1, 2), datetime(9999, 12, 30, 23, 59)]),
)


@st.composite
def instants(draw: st.DrawFn) -> datetime:
    """Any aware instant from year 1 to 9999, with any whole-minute offset: the edges of
    datetime's range included, where converting to UTC can overflow."""
    offset = timedelta(minutes=draw(OFFSETS))
    return draw(MOMENTS).replace(tzinfo=timezone(offset))


def check(text: str, after: datetime, zone: str) -> None:
    try:
        expression = parse(text)
    except CronSyntaxError as exc:
        assert exc.field in CronSyntaxError.FIELDS, exc
        return

    following = expression.next_after(after, zone)
    if following is not None:
        assert _aware_utc(following) and following > after, (text, after, following)

    start = after.astimezone(UTC) if after.year < 9999 else after
    end = start + timedelta(minutes=5)
    found = list(expression.firings(start, end, zone))
    assert all(_aware_utc(f) and start <= f < end for f in found), (text, start, found[:3])
    assert found == sorted(set(found))


@DEFAULT
@given(near_misses(), instants(), st.sampled_from(ZONES))
@example("0 0 12 ? * 8\x00", datetime(2026, 1, 1, tzinfo=UTC), "UTC")
@example(
    "* * * * * ?", datetime(9999, 12, 30, 23, 59, tzinfo=timezone(-timedelta(hours=23))), "UTC"
)
@example("* * * * * ?", datetime(1, 1, 2, tzinfo=timezone(timedelta(hours=23))), "Etc/GMT-14")
def test_near_misses_of_real_statements(text: str, after: datetime, zone: str) -> None:
    check(text, after, zone)


@pytest.mark.slow
@SLOW
@given(near_misses(), instants(), st.sampled_from(ZONES))
def test_near_misses_of_real_statements_at_length(text: str, after: datetime, zone: str) -> None:
    check(text, after, zone)


LONG = st.one_of(
    st.text(alphabet=ALPHABET, min_size=900, max_size=1200),
    st.lists(st.sampled_from(TOKENS), min_size=200, max_size=400).map(" ".join),
    st.integers(990, 1100).map(lambda n: ("0 0 0 ? * MON " + "1," * n)[:n]),
    st.integers(1000, 1100).map(lambda n: "0 0 12 * * ?".ljust(n)),
    st.integers(1, 60).map(lambda n: ",".join(["0-59/1"] * n) + " * * * * ?"),
)


@settings(DEFAULT, max_examples=100)
@given(LONG, instants(), st.sampled_from(ZONES))
def test_long_input_is_refused_or_parsed_quickly(text: str, after: datetime, zone: str) -> None:
    check(text, after, zone)


@pytest.mark.parametrize(
    "text",
    [
        "0 0 0 ? 2 1#5 2999",  # a fifth Sunday in February: only in a leap year starting Sunday
        "0 0 0 29 2 ? 2096-2999/400",
        "0 0 0 LW 2 ? 2999",
        "59 59 23 31 12 ? 2999",
        "0 0 0 30 2 ?",  # never
        "0 0 0 L-30 2 ?",
        "0 0 2 ? 3 1#2 2027",  # the skipped hour of New York's spring change, once
        "0 30 2 * * ?",
    ],
)
@pytest.mark.parametrize("zone", ZONES)
def test_sparse_statements_answer_quickly_from_any_edge(text: str, zone: str) -> None:
    for after in (
        datetime(1, 1, 2, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, tzinfo=UTC),
        datetime(2026, 11, 30, tzinfo=UTC),
        datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC),
        datetime(9999, 12, 30, tzinfo=UTC),
    ):
        check(text, after, zone)
