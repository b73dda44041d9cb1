"""Backfill: a past window of a job's firings, each claimed by its own firing id, dispatched at
the rate asked across ticks (issue 14, part 4)."""

from __future__ import annotations

import pytest

from mini_scheduler.errors import EventError
from mini_scheduler.handlers.ticker import route
from mini_scheduler.model import RunStatus
from tests.unit.tick.harness import at, rig

CRON = """
jobs:
  - name: "export"
    cron: "0 */10 * * * ?"
    service: "export-fn"
"""


def test_a_backfill_runs_what_never_ran_at_its_rate_and_says_so_in_the_payload() -> None:
    r = rig(CRON, start="2026-11-30T14:00:00Z")
    for minute in range(0, 31):  # 14:00, 14:10, 14:20 and 14:30 run on schedule
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    r.clock.set(at("2026-11-30T14:30:30Z"))
    started = r.ticker.operator.backfill(
        "export", "2026-11-30T13:00:00Z", "2026-11-30T14:30:00Z", 2, "jane.doe"
    )
    assert (started["total"], started["pending"], started["rate"]) == (9, 9, 2)
    assert started["from"] == "2026-11-30T13:00:00Z" and started["operator"] == "jane.doe"
    status = r.ticker.operator.backfill_status("export")["backfills"]
    assert [b["pending"] for b in status] == [9]
    before = len(r.dispatcher.calls)
    r.tick("2026-11-30T14:31:00Z")  # due before its window's end: 2 now, 2 at 14:31:30
    sent = [(c[1], c[3]) for c in r.dispatcher.calls[before:] if c[2].get("backfill")]
    assert sent == [
        ("export@2026-11-30T13:00:00Z", at("2026-11-30T14:31:00Z")),
        ("export@2026-11-30T13:10:00Z", at("2026-11-30T14:31:00Z")),
        ("export@2026-11-30T13:20:00Z", at("2026-11-30T14:31:30Z")),
        ("export@2026-11-30T13:30:00Z", at("2026-11-30T14:31:30Z")),
    ]
    for minute in range(32, 38):
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    backfilled = [c for c in r.dispatcher.calls if c[2].get("backfill")]
    ids = [c[1] for c in backfilled]
    assert ids == [f"export@2026-11-30T13:{m}0:00Z" for m in range(6)]  # 14:x0 ran: LOST
    assert all(c[2]["scheduledTime"] == c[1].split("@")[1] for c in backfilled)
    assert r.ticker.operator.backfill_status()["backfills"] == []


def test_a_backfill_sent_twice_dispatches_nothing_twice() -> None:
    r = rig(CRON, start="2026-11-30T15:00:00Z")
    for second in ("00", "30"):  # twice, or by two operators
        r.clock.set(at(f"2026-11-30T15:00:{second}Z"))
        r.ticker.operator.backfill(
            "export", "2026-11-30T13:00:00Z", "2026-11-30T14:00:00Z", None, "jane.doe"
        )
    assert [b["total"] for b in r.ticker.operator.backfill_status()["backfills"]] == [6, 6]
    r.tick("2026-11-30T15:01:00Z")
    r.tick("2026-11-30T15:02:00Z")
    backfilled = [c[1] for c in r.dispatcher.calls if c[2].get("backfill")]
    assert len(backfilled) == 6 and len(set(backfilled)) == 6
    assert r.ticker.operator.backfill_status()["backfills"] == []
    run = r.claims.run("export@2026-11-30T13:00:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED


@pytest.mark.parametrize(
    ("start", "end", "rate", "message"),
    [
        ("2026-11-30T14:00:00Z", "2026-11-30T13:00:00Z", None, "is not after from"),
        ("2026-11-30T14:00:00Z", "2026-11-30T16:00:00Z", None, "is in the future"),
        ("yesterday", "2026-11-30T14:00:00Z", None, "from 'yesterday' is not an instant"),
        (None, "2026-11-30T14:00:00Z", None, "from is required"),
        ("2026-11-30T14:01:00Z", "2026-11-30T14:05:00Z", None, "has no firing from"),
        ("2026-01-01T00:00:00Z", "2026-11-30T14:00:00Z", None, "holds more than 10000"),
        ("2026-11-30T13:00:00Z", "2026-11-30T14:00:00Z", 0, "rate must be a whole number"),
        ("2026-11-30T13:00:00Z", "2026-11-30T14:00:00Z", "5", "rate must be a whole number"),
    ],
)
def test_a_bad_backfill_is_refused_and_writes_nothing(
    start: object, end: object, rate: object, message: str
) -> None:
    r = rig(CRON, start="2026-11-30T15:00:00Z")
    with pytest.raises(EventError, match=message):
        r.ticker.operator.backfill("export", start, end, rate, "jane.doe")
    assert r.claims.pending_deferred("backfill") == []


def test_backfill_events_go_through_the_operator_path() -> None:
    r = rig(CRON, start="2026-11-30T15:00:00Z")
    with pytest.raises(EventError, match="unknown job 'nope'"):
        route(
            r.ticker,
            {
                "backfill": "nope",
                "from": "2026-11-30T13:00:00Z",
                "to": "2026-11-30T14:00:00Z",
                "operator": "jane.doe",
            },
        )
    with pytest.raises(EventError, match="unknown: 'since'"):
        route(r.ticker, {"backfill": "export", "since": "x", "operator": "jane.doe"})
    answer = route(
        r.ticker,
        {
            "backfill": "export",
            "from": "2026-11-30T13:00:00Z",
            "to": "2026-11-30T14:00:00Z",
            "rate": 3,
            "operator": "jane.doe",
        },
    )
    assert answer["total"] == 6 and answer["id"].startswith(
        "export@backfill-2026-11-30T15:00:00.000Z-"
    )
    (status,) = route(r.ticker, {"backfillStatus": {"job": "export"}})["backfills"]
    assert status["pending"] == 6 and status["lastDue"] == "2026-11-30T15:01:00Z"
    assert route(r.ticker, {"backfillStatus": {}})["backfills"] == [status]


def test_a_backfill_runs_the_firings_recorded_skipped_and_keeps_what_they_were() -> None:
    """An outage past the grace: the misfires are recorded SKIPPED (the first of a range keys
    it). They never ran, so the backfill runs each, the range's first too."""
    r = rig(CRON + "misfire.grace: 60\n", start="2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:00:00Z")
    r.clock.set(at("2026-11-30T15:00:30Z"))
    r.tick("2026-11-30T15:00:00Z")  # 14:10 to 14:50 missed, past the grace: SKIPPED
    first = r.claims.run("export@2026-11-30T14:10:00Z")
    assert first is not None and first.status is RunStatus.SKIPPED
    r.ticker.operator.backfill(
        "export", "2026-11-30T14:00:00Z", "2026-11-30T15:00:00Z", 10, "jane.doe"
    )
    r.tick("2026-11-30T15:01:00Z")
    ids = [c[1] for c in r.dispatcher.calls if c[2].get("backfill")]
    assert ids == [f"export@2026-11-30T14:{m}0:00Z" for m in range(1, 6)]  # 14:00 ran
    rerun = r.claims.run("export@2026-11-30T14:10:00Z")
    assert rerun is not None and rerun.status is RunStatus.DISPATCHED and rerun.backfill
