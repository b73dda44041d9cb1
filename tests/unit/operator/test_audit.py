"""Every operator action writes one audit record through the one operator path: who (the
operator, the identity the caller told, who wrote it), what, the state before and after, the
reason, where; a record that cannot be written leaves the action done and says so."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mini_scheduler.audit import MemoryAuditLog
from mini_scheduler.audit.base import AuditRecord
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.routing import route
from mini_scheduler.notes import run_note
from tests.unit.tick.harness import Rig, at, rig

CRON = """
jobs:
  - name: "report"
    cron: "0 0 9 * * ?"
    service: "report-fn"
"""
ARN = "arn:aws:sts::123456789012:assumed-role/Operators/jane.doe"
VIA = "arn:aws:lambda:us-east-1:123456789012:function:ticker"


def _audited() -> tuple[Rig, MemoryAuditLog]:
    r = rig(CRON, stack_name="mini-scheduler", function_name="ticker")
    audit = MemoryAuditLog()
    r.ticker.audit = audit  # before the operator path is built (on the first event)
    return r, audit


def _records(r: Rig, audit: MemoryAuditLog) -> list[AuditRecord]:
    now = r.clock.now()
    return audit.read(now - timedelta(days=1), now + timedelta(days=1))


def test_a_manual_run_records_who_why_and_its_firing_and_its_run_keeps_the_reason() -> None:
    r, audit = _audited()
    event = {"job": "report", "operator": "jane.doe", "reason": " incident 4711 ", "identity": ARN}
    answer = route(r.ticker, event, via=VIA)
    assert "auditError" not in answer
    (record,) = _records(r, audit)
    assert (record.action, record.operator, record.identity, record.via) == (
        "run",
        "jane.doe",
        ARN,
        VIA,
    )
    assert (record.job, record.reason, record.region, record.stack) == (
        "report",
        "incident 4711",
        "us-east-1",
        "mini-scheduler",
    )
    ran = {"firingId": answer["firingId"], "status": "DISPATCHED", "mode": "active"}
    assert record.after == ran
    run = r.claims.run(answer["firingId"])
    assert run is not None and run.operator_reason == "incident 4711"
    assert run.to_json()["operatorReason"] == "incident 4711"
    assert run_note(run) == "manual run by jane.doe; reason: incident 4711"


def test_a_rerun_names_the_firing_it_repeats() -> None:
    r, audit = _audited()
    r.clock.set(at("2026-12-01T10:00:00Z"))
    route(r.ticker, {"rerun": "report@2026-12-01T09:00:00Z", "operator": "jane.doe"})
    (record,) = _records(r, audit)
    assert (record.action, record.subject, record.via) == (
        "rerun",
        "report@2026-12-01T09:00:00Z",
        "ticker",  # no invocation context: the function's name
    )


def test_pause_and_resume_record_the_state_before_and_after() -> None:
    r, audit = _audited()
    route(r.ticker, {"pause": "report", "operator": "jane.doe", "reason": "warehouse down"})
    r.clock.advance(60)
    route(r.ticker, {"resume": "report", "operator": "bob"})
    resumed, paused = _records(r, audit)
    assert (paused.action, paused.before, paused.after, paused.reason) == (
        "pause",
        {"paused": False},
        {"paused": True},
        "warehouse down",
    )
    assert (resumed.action, resumed.before, resumed.after, resumed.operator) == (
        "resume",
        {"paused": True},
        {"paused": False},
        "bob",
    )


def test_a_change_of_the_active_environment_records_it_before_and_after() -> None:
    r, audit = _audited()
    event = {"environment": {"active": "DR", "operator": "jane.doe"}, "reason": "drill"}
    route(r.ticker, event)
    (record,) = _records(r, audit)
    assert (record.action, record.before, record.after, record.reason) == (
        "environment",
        {"active": None},  # nothing stored before: the default
        {"active": "DR"},
        "drill",
    )


def test_schedules_and_backfills_record_their_definition() -> None:
    r, audit = _audited()
    entry = {"name": "s", "at": "2026-11-30T15:00:00Z", "service": "fn"}
    route(r.ticker, {"schedule": "create", "operator": "jane.doe", "schedules": [entry]})
    r.clock.advance(1)
    route(r.ticker, {"schedule": "delete", "name": "s", "operator": "jane.doe"})
    r.clock.advance(1)
    window = {"from": "2026-11-27T00:00:00Z", "to": "2026-11-30T00:00:00Z", "rate": 10}
    route(r.ticker, {"backfill": "report", "operator": "jane.doe", **window})
    backfill, deleted, created = _records(r, audit)
    assert (created.action, created.job, created.after and created.after["name"]) == (
        "schedule.create",
        "s",
        "s",
    )
    assert (deleted.action, deleted.before and deleted.before["name"], deleted.after) == (
        "schedule.delete",
        "s",
        None,
    )
    assert backfill.action == "backfill" and backfill.job == "report"
    assert backfill.after is not None and backfill.after["total"] == 3


def test_a_record_not_written_leaves_the_action_done_and_says_so() -> None:
    r, audit = _audited()
    audit.failing = ConnectionError("no route")
    answer = route(r.ticker, {"pause": "report", "operator": "jane.doe"})
    assert "report" in r.claims.control("-").paused  # done all the same
    assert answer["auditError"].startswith(
        "pause done, but its audit record was not written to memory: audit trail memory "
        "unavailable: no route"
    )


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"pause": "report", "operator": "jane", "reason": "a\nb"}, "reason must be one line"),
        ({"pause": "report", "operator": "jane", "identity": 5}, "identity must be text"),
        ({"tick": "2026-11-30T14:00:00Z", "reason": "why"}, "a tick takes no reason"),
    ],
    ids=["reason", "identity", "tick"],
)
def test_a_bad_reason_or_identity_is_refused_before_anything_is_written(
    event: dict[str, object], message: str
) -> None:
    r, audit = _audited()
    with pytest.raises(EventError, match=message):
        route(r.ticker, event)
    assert not r.claims.control("-").paused
    assert _records(r, audit) == []
