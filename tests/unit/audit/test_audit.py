"""The audit record, its checks, and what the CloudWatch backend asks of the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.audit.base import AuditRecord, check_identity, check_reason
from mini_scheduler.audit.cloudwatch import CloudWatchAuditLog
from mini_scheduler.errors import AuditError, EventError

AT = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("", "reason must be text"),
        (12, "reason must be text"),
        ("x" * 501, "reason is 501 characters long: at most 500"),
        ("two\nlines", "reason must be one line"),
    ],
    ids=["empty", "number", "too-long", "newline"],
)
def test_a_bad_reason_is_refused_naming_it(reason: Any, message: str) -> None:
    with pytest.raises(EventError, match=message):
        check_reason(reason)


def test_a_reason_and_an_identity_are_kept_stripped() -> None:
    assert check_reason("  incident 4711 ") == "incident 4711"
    assert check_reason(None) is None
    assert check_identity(" arn:aws:iam::1:user/jane ") == "arn:aws:iam::1:user/jane"
    with pytest.raises(EventError, match="identity must be text"):
        check_identity("x" * 2049)


def test_a_record_of_a_later_version_is_skipped_and_unknown_keys_are_kept() -> None:
    record = AuditRecord(at=AT, action="run", operator="jane", region="eu-west-1")
    line = record.to_line()
    assert AuditRecord.from_line(line) == record
    assert AuditRecord.from_line(line.replace('"v":1', '"v":2')) is None
    assert AuditRecord.from_line("not json") is None
    kept = AuditRecord.from_line(line.replace('"v":1', '"v":1,"who":"x"'))
    assert kept is not None and kept.extra == {"who": "x"}
    assert kept.to_json()["who"] == "x"


def test_an_event_cloudwatch_rejects_is_an_audit_error() -> None:
    with mock_aws():
        client = boto3.client("logs", region_name="us-east-1")
        client.create_log_group(logGroupName="audit")
        log = CloudWatchAuditLog("audit", client)
        old = datetime.now(UTC) - timedelta(days=15)
        with pytest.raises(AuditError, match="tooOldLogEventEndIndex"):
            log.append(AuditRecord(at=old, action="run", operator="jane", region="us-east-1"))


def test_a_day_has_one_stream_made_once_and_a_read_filters_on_the_job() -> None:
    with mock_aws():
        client = boto3.client("logs", region_name="us-east-1")
        client.create_log_group(logGroupName="audit")
        now = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
        first, second = CloudWatchAuditLog("audit", client), CloudWatchAuditLog("audit", client)
        for log in (first, second, first):
            log.append(AuditRecord(at=now, action="run", operator="jane", region="r", job="a"))
        streams = client.describe_log_streams(logGroupName="audit")["logStreams"]
        assert [s["logStreamName"] for s in streams] == [f"audit/{now:%Y-%m-%d}"]
        asked: list[dict[str, Any]] = []
        client.meta.events.register(
            "provide-client-params.logs.FilterLogEvents", lambda params, **_: asked.append(params)
        )
        got = first.read(now, now + timedelta(minutes=1), job="a")
        assert len(got) == 3
        assert asked[0]["filterPattern"] == '{ $.job = "a" }'
        assert asked[0]["startTime"] == int(now.timestamp() * 1000)
