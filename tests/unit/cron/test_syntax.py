"""What the parser accepts and refuses, as tables.

Refusals: every field crossed with tokens that are wrong in it (cronsim's layout), each naming
the field in ``CronSyntaxError.field``; plus the field count, the day-of-month / day-of-week ``?``
pairing, and input that is not text. Acceptances: the oddities Quartz accepts, each with the
firings it means (UTC, from 2026-01-01T00:00Z), so that "accepted" is never just "did not raise".
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mini_scheduler.cron import CronSyntaxError, parse

FIELDS = ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year")
GOOD = ("0", "0", "12", "1", "*", "?", "2026")
START = datetime(2026, 1, 1, tzinfo=UTC)


def with_token(field: str, token: str) -> str:
    """A valid statement with ``token`` in ``field`` (day-of-week tokens come with '?' in
    day-of-month)."""
    fields = list(GOOD)
    if field == "day-of-week":
        fields[3] = "?"
    fields[FIELDS.index(field)] = token
    return " ".join(fields)


# Wrong in every field.
ANYWHERE = ("-1", "x", "$", "W", "#", "/", "5-", "1-", "1/", "*/", "1-x", "5,x", ".5")
# Wrong in one field (or a few): out of range, a character the field does not take, a bad name.
IN_FIELD = {
    "second": ("60", "1-60", "*/60", "0/60", "5L", "5W", "1#2", "?", "MON", "JAN", "L"),
    "minute": ("60", "0-60", "*/60", "3W", "1#1", "?", "MON", "L"),
    "hour": ("24", "0-24", "*/24", "12/24", "3L", "?", "JAN", "L"),
    "day-of-month": ("0", "32", "1-32", "*/32", "32W", "L-31", "L,5", "LW,5", "1L", "5#2",
                     "MON", "JAN"),
    "month": ("0", "13", "1-13", "*/13", "FOO", "?", "MON", "1#1", "L"),
    "day-of-week": ("0", "8", "1-8", "*/8", "FOO", "8L", "0L", "2#6", "2#0", "2#", "MON#6",
                    "1#1,2#2", "L,2", "2W", "JAN"),
    "year": ("2030-2020", "abc", "?", "1#1", "JAN", "MON"),
}  # fmt: skip
BAD = [(field, token) for field in FIELDS for token in ANYWHERE] + [
    (field, token) for field, tokens in IN_FIELD.items() for token in tokens
]


@pytest.mark.parametrize(("field", "token"), BAD, ids=[f"{f}:{t}" for f, t in BAD])
def test_bad_token_names_its_field(field: str, token: str) -> None:
    with pytest.raises(CronSyntaxError) as caught:
        parse(with_token(field, token))
    assert caught.value.field == field
    assert caught.value.field in CronSyntaxError.FIELDS
    assert str(caught.value).startswith(f"Bad {field}")


@pytest.mark.parametrize(
    "statement",
    [
        "",
        "   \t ",
        "*",
        "0 0 12 * *",  # 5 fields: Unix cron, not Quartz
        "0 12 * * *",
        "0 0 12 1 * ? 2026 2027",  # 8
        "0 0 12 1 * ? 2026 * *",  # 9
        "0 0 12 1 * ? 2026 x y z",
    ],
)
def test_field_count(statement: str) -> None:
    with pytest.raises(CronSyntaxError) as caught:
        parse(statement)
    assert caught.value.field == "field count"


@pytest.mark.parametrize(
    "statement",
    [
        "0 0 12 ? * ?",  # '?' in both
        "0 0 12 1 * MON",  # neither
        "0 0 12 * * *",
        "0 0 12 L * 6L",
    ],
)
def test_one_of_the_day_fields_is_a_question_mark(statement: str) -> None:
    with pytest.raises(CronSyntaxError) as caught:
        parse(statement)
    assert caught.value.field == "day-of-week"


@pytest.mark.parametrize("value", [None, 42, 4.2, b"0 0 12 * * ?", ["0", "0", "12"], object()])
def test_not_text(value: object) -> None:
    with pytest.raises(CronSyntaxError) as caught:
        parse(value)  # type: ignore[arg-type]
    assert caught.value.field == "field count"


def test_a_cron_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"Bad hour"):
        parse("0 0 24 * * ?")


def test_overlong_statement_is_refused() -> None:
    with pytest.raises(CronSyntaxError):
        parse("0 0 12 ? * " + ",".join(["MON"] * 400))


# What Quartz accepts, and what it then means. Calendar of 2026: Jan 1 is a Thursday, Feb 1 and
# Mar 1 are Sundays, Aug 1 is a Saturday, May 31 a Sunday.
ODDITIES = [
    ("names in lower case", "0 0 12 ? jan,feb mon-fri",
     ["2026-01-01T12:00", "2026-01-02T12:00", "2026-01-05T12:00"]),
    ("names in mixed case", "0 0 12 ? Jan-Mar Sat", ["2026-01-03T12:00", "2026-01-10T12:00"]),
    ("L alone in day-of-week is Saturday", "0 0 12 ? * L",
     ["2026-01-03T12:00", "2026-01-10T12:00", "2026-01-17T12:00"]),
    ("5L: last Thursday", "0 0 12 ? * 5L",
     ["2026-01-29T12:00", "2026-02-26T12:00", "2026-03-26T12:00"]),
    ("FRIL: last Friday", "0 0 12 ? * FRIL",
     ["2026-01-30T12:00", "2026-02-27T12:00", "2026-03-27T12:00"]),
    ("7L: last Saturday", "0 0 12 ? * 7L",
     ["2026-01-31T12:00", "2026-02-28T12:00", "2026-03-28T12:00"]),
    ("6#3: third Friday", "0 0 12 ? * 6#3",
     ["2026-01-16T12:00", "2026-02-20T12:00", "2026-03-20T12:00"]),
    ("sun#1: first Sunday", "0 0 12 ? * sun#1",
     ["2026-01-04T12:00", "2026-02-01T12:00", "2026-03-01T12:00"]),
    ("L: last day", "0 0 12 L * ?", ["2026-01-31T12:00", "2026-02-28T12:00", "2026-03-31T12:00"]),
    ("L-3: third day before the last", "0 0 12 L-3 * ?",
     ["2026-01-28T12:00", "2026-02-25T12:00", "2026-03-28T12:00"]),
    ("LW: last weekday", "0 0 12 LW * ?",
     ["2026-01-30T12:00", "2026-02-27T12:00", "2026-03-31T12:00"]),
    ("L-2W: weekday nearest the day two before the last", "0 0 12 L-2W * ?",
     ["2026-01-29T12:00", "2026-02-26T12:00", "2026-03-30T12:00"]),
    ("15W: weekday nearest the 15th", "0 0 12 15W * ?",
     ["2026-01-15T12:00", "2026-02-16T12:00", "2026-03-16T12:00"]),
    ("1W on a Saturday stays in its month", "0 0 12 1W 8 ?",
     ["2026-08-03T12:00", "2027-08-02T12:00"]),
    ("31W skips short months; a Sunday 31st is the Friday before", "0 0 12 31W * ?",
     ["2026-01-30T12:00", "2026-03-31T12:00", "2026-05-29T12:00"]),
    ("year range, then no more", "0 0 12 1 1 ? 2027-2028",
     ["2027-01-01T12:00", "2028-01-01T12:00"]),
    ("year list and step", "0 0 12 1 1 ? 2030,2026/2",
     ["2026-01-01T12:00", "2028-01-01T12:00", "2030-01-01T12:00"]),
    ("hours wrap around: 22-2", "0 0 22-2 * * ?",
     ["2026-01-01T01:00", "2026-01-01T02:00", "2026-01-01T22:00", "2026-01-01T23:00",
      "2026-01-02T00:00"]),
    ("months wrap around: NOV-FEB", "0 0 12 1 NOV-FEB ?",
     ["2026-01-01T12:00", "2026-02-01T12:00", "2026-11-01T12:00", "2026-12-01T12:00",
      "2027-01-01T12:00"]),
    ("days of the week wrap around: FRI-MON", "0 0 12 ? * FRI-MON",
     ["2026-01-02T12:00", "2026-01-03T12:00", "2026-01-04T12:00", "2026-01-05T12:00",
      "2026-01-09T12:00"]),
    ("seconds wrap around with a step: 50-10/10", "50-10/10 0 0 * * ?",
     ["2026-01-01T00:00:10", "2026-01-01T00:00:50", "2026-01-02T00:00:00"]),
    ("a start and a step in day-of-week: 2/2 is MON,WED,FRI", "0 0 12 ? * 2/2",
     ["2026-01-02T12:00", "2026-01-05T12:00", "2026-01-07T12:00"]),
    ("tabs and extra spaces between fields", " 0\t0  12 1 *\t? ",
     ["2026-01-01T12:00", "2026-02-01T12:00"]),
    # Quartz's own marker for '*' is the number 99, and it leaks: 99 reads as '*'.
    ("99 reads as '*' (a Quartz quirk, kept)", "99 0 12 1 1 ?",
     ["2026-01-01T12:00:00", "2026-01-01T12:00:01", "2026-01-01T12:00:02"]),
    # Quartz reads a number and ignores what follows it when that is no operator.
    ("junk after a number is ignored", "0 0 12x 1 1 ?", ["2026-01-01T12:00", "2027-01-01T12:00"]),
    # Only the first three letters of a name are read, as in Quartz.
    ("JANUARY reads as JAN", "0 0 12 1 JANUARY ?", ["2026-01-01T12:00", "2027-01-01T12:00"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "expected"), [o[1:] for o in ODDITIES], ids=[o[0] for o in ODDITIES]
)
def test_quartz_oddities_are_accepted_with_their_meaning(
    statement: str, expected: list[str]
) -> None:
    expression = parse(statement)
    got: list[datetime] = []
    moment: datetime | None = START
    while len(got) < len(expected):
        assert moment is not None
        moment = expression.next_after(moment, "UTC")
        if moment is None:
            break
        got.append(moment)
    assert got == [datetime.fromisoformat(t).replace(tzinfo=UTC) for t in expected]
    if statement.endswith("2027-2028"):
        assert expression.next_after(got[-1], "UTC") is None


def test_the_statement_is_kept_as_written() -> None:
    assert parse("0 0 12 ? * mon").statement == "0 0 12 ? * mon"
    assert parse("0 0 12 ? * mon") == parse("0 0 12 ? * mon")


def _firings(statement: str, zone: str, start: datetime, count: int) -> list[str]:
    """The first ``count`` firings after ``start``, as ``YYYY-MM-DDTHH:MM:SSZ``."""
    expression = parse(statement)
    got: list[str] = []
    moment: datetime | None = start
    while len(got) < count:
        assert moment is not None
        moment = expression.next_after(moment, zone)
        if moment is None:
            break
        got.append(moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return got


# Day-of-week 0 with '#': Quartz checks no range before '#', and its arithmetic for the nth day
# (days to add = 0 + 7 - today's day of the week) reads 0 as 7, Saturday. The answers are Quartz
# 2.3.2's own (Debian libquartz2-java 2.3.2-4, getNextValidTimeAfter from 2026-01-01T00:00Z).
ZERO_HASH = [
    ("the issue's 0#2: second Saturday", "0 40 4 ? * 0#2", "UTC",
     ["2026-01-10T04:40:00Z", "2026-02-14T04:40:00Z", "2026-03-14T04:40:00Z"]),
    ("0#5: fifth Saturday, in the months that have one", "0 0 12 ? * 0#5", "UTC",
     ["2026-01-31T12:00:00Z", "2026-05-30T12:00:00Z", "2026-08-29T12:00:00Z"]),
    ("00#1,3: the first value, 0, is the one '#' counts", "0 0 12 ? * 00#1,3", "UTC",
     ["2026-01-03T12:00:00Z", "2026-02-07T12:00:00Z", "2026-03-07T12:00:00Z"]),
    ("0#3 in Chatham (+13:45)", "0 0 0 ? * 0#3", "Pacific/Chatham",
     ["2026-01-16T10:15:00Z", "2026-02-20T10:15:00Z", "2026-03-20T10:15:00Z"]),
    ("0#2 in March, New York: a Saturday, before the clocks change", "0 30 2 ? 3 0#2",
     "America/New_York",
     ["2026-03-14T06:30:00Z", "2027-03-13T07:30:00Z", "2028-03-11T07:30:00Z"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "zone", "quartz"), [z[1:] for z in ZERO_HASH], ids=[z[0] for z in ZERO_HASH]
)
def test_day_of_week_0_with_hash_is_saturday_as_in_quartz(
    statement: str, zone: str, quartz: list[str]
) -> None:
    assert _firings(statement, zone, START, len(quartz)) == quartz


@pytest.mark.parametrize("nth", [1, 2, 3, 4, 5])
def test_0_hash_k_is_7_hash_k(nth: int) -> None:
    for zone in ("UTC", "Australia/Sydney"):
        saturday = _firings(f"0 0 12 ? * 7#{nth}", zone, START, 40)
        assert _firings(f"0 0 12 ? * 0#{nth}", zone, START, 40) == saturday
        assert len(saturday) == 40


# Two Quartz oddities kept out on purpose (docs/cron-yaml.md, "Where this differs from Quartz").
def test_99_hash_is_refused_although_quartz_accepts_it() -> None:
    """Quartz accepts 99#1 (99 is its own marker for '*') and then never fires it."""
    with pytest.raises(CronSyntaxError, match=r"99 is not a day of the week") as caught:
        parse("0 0 0 ? * 99#1")
    assert caught.value.field == "day-of-week"


def test_l_minus_n_w_before_the_first_does_not_fire_that_month() -> None:
    """L-30W: L-30 is the 1st of a 31-day month, and falls before the 1st of a 30-day month.
    Quartz 2.3.2 then fires on the 1st (June 2026, from this start) or never answers (from
    2026-01-01 it loops); the engine fires in no such month, as with L-30 alone."""
    start = datetime(2026, 4, 10, tzinfo=UTC)
    # Quartz: 2026-05-01, 2026-06-01, 2026-07-01, 2026-08-03 (Aug 1st is a Saturday).
    assert _firings("0 0 0 L-30W * ?", "UTC", start, 3) == [
        "2026-05-01T00:00:00Z",
        "2026-07-01T00:00:00Z",
        "2026-08-03T00:00:00Z",
    ]
    assert _firings("0 0 0 L-29W 2 ?", "UTC", START, 1) == []
