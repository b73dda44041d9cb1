"""The audit trail's contract (mini_scheduler.audit.base.AuditLog), on every backend: a record
appended reads back whole; reads are newest first, bounded by time, job, actor and limit;
writers share the trail; a backend out of reach is an AuditError naming it.

CloudWatch Logs takes events of the last 14 days only: the records here are of the last hour
of the real clock (moto applies that rule as AWS does)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.audit.base import MAX_STATE_BYTES, AuditRecord
from mini_scheduler.errors import AuditError
from tests.contract.audit.conftest import Logs

NOW = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
LATER = NOW + timedelta(hours=2)


def _record(minutes: int, action: str = "pause", **more: object) -> AuditRecord:
    fields: dict[str, object] = {
        "at": NOW + timedelta(minutes=minutes),
        "action": action,
        "operator": "jane.doe",
        "region": "us-east-1",
        "stack": "mini-scheduler",
        "job": "nightly-export",
    }
    fields.update(more)
    return AuditRecord(**fields)  # type: ignore[arg-type]


def test_a_record_reads_back_whole(audit: Logs) -> None:
    record = _record(
        1,
        identity="arn:aws:sts::123456789012:assumed-role/Operators/jane.doe",
        via="cli",
        before={"paused": False},
        after={"paused": True},
        reason="incident 4711: the export overloads the warehouse",
    )
    audit.log.append(record)
    assert audit.log.read(NOW, LATER) == [record]


def test_reads_are_newest_first_within_the_range(audit: Logs) -> None:
    for minutes in (5, 1, 3):
        audit.log.append(_record(minutes))
    got = audit.log.read(NOW + timedelta(minutes=2), NOW + timedelta(minutes=5))
    assert [r.at for r in got] == [NOW + timedelta(minutes=3)]  # until excluded
    every = audit.log.read(NOW, LATER)
    assert [r.at for r in every] == sorted((r.at for r in every), reverse=True)
    assert len(audit.log.read(NOW, LATER, limit=2)) == 2


@pytest.mark.parametrize(
    ("job", "actor", "expected"),
    [
        ("nightly-export", None, ["pause", "run"]),
        (None, "bob", ["resume"]),
        (None, "jane.doe", ["pause", "run"]),  # the last part of an identity's ARN
        (None, "arn:aws:sts::1:assumed-role/Ops/jane.doe", ["pause"]),
        ("hourly", "jane.doe", []),
    ],
    ids=["job", "operator", "arn-last-part", "whole-arn", "neither"],
)
def test_reads_are_filtered_by_job_and_actor(
    audit: Logs, job: str | None, actor: str | None, expected: list[str]
) -> None:
    audit.log.append(_record(1, "run", operator="janed", identity="arn:aws:sts::1:user/jane.doe"))
    audit.log.append(_record(2, "pause", identity="arn:aws:sts::1:assumed-role/Ops/jane.doe"))
    audit.log.append(_record(3, "resume", operator="bob", job="hourly"))
    got = audit.log.read(NOW, LATER, job=job, actor=actor)
    assert [r.action for r in got] == expected


def test_writers_share_the_trail(audit: Logs) -> None:
    audit.log.append(_record(1, "pause"))
    audit.peer.append(_record(2, "resume"))
    assert [r.action for r in audit.peer.read(NOW, LATER)] == ["resume", "pause"]
    assert [r.action for r in audit.log.read(NOW, LATER)] == ["resume", "pause"]


def test_a_large_state_is_kept_as_its_size(audit: Logs) -> None:
    big = {"entry": "x" * (MAX_STATE_BYTES + 10)}
    audit.log.append(_record(1, "schedule.create", after=big))
    (got,) = audit.log.read(NOW, LATER)
    assert got.after is not None and got.after["truncated"] is True
    assert got.after["bytes"] > MAX_STATE_BYTES


def test_an_unreachable_trail_is_an_audit_error_naming_it(audit: Logs) -> None:
    with pytest.raises(AuditError) as written:
        audit.broken.append(_record(1))
    assert audit.broken.name in str(written.value)
    with pytest.raises(AuditError) as read:
        audit.broken.read(NOW, LATER)
    assert audit.broken.name in str(read.value)
    assert audit.log.read(NOW, LATER) == []  # nothing half-written elsewhere
