"""The published events' details keep their JSON Schemas (events/published/): what FinalFailures
publishes, the examples, and the dataclasses field by field; and no internal field of the run
record (its failure policy, a runtime schedule's entry, its claim, its parameters) leaks
(issue 26, point 3)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.alerts import JobPaused, JobRunFailed, RecordingAlerts
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.clock import FixedClock
from mini_scheduler.failures import FinalFailures
from mini_scheduler.jobs.model import FailurePolicy, Retry
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import Firing, RunStatus
from tests.published import (
    KEYWORDS,
    KINDS,
    PUBLISHED,
    assert_published,
    example,
    problems,
    schema,
)

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
ENTRY = {"name": "export", "cron": "0 * * * * ?", "service": "export-fn", "retry": {"retries": 3}}
POLICY = FailurePolicy.of(Retry(3, 60), 2, ENTRY)  # retries, pause_after_failures, runtime entry
INTERNAL = (
    "retry",
    "runtimeSchedule",
    "entry",
    "pause_after_failures",
    "claimToken",
    "claimedAt",
    "deadline",
    "exclusive",
    "replacedSkip",
    "takeovers",
    "expiresAt",
    "open",
    "parameters",
)


def _last_attempt(**more: Any) -> RunRecord:
    """Attempt 4 of export's 14:00 firing, ended FAILED with everything a record can hold."""
    firing = Firing("export", T0, attempt=4)
    fields: dict[str, Any] = {
        "status": RunStatus.FAILED,
        "origin": ORIGIN,
        "claimed_at": T0 + timedelta(minutes=7),
        "started_at": T0 + timedelta(minutes=7, seconds=1),
        "ended_at": T0 + timedelta(minutes=7, seconds=41, microseconds=250_000),
        "deadline": T0 + timedelta(minutes=22),
        "error": "ConnectionError: report database unreachable",
        "parameters": {"size": 1, "token": "s3cr3t"},
        "exclusive": True,
        "service": "export-fn",
        "schedule": "0 * * * * ? @UTC",
        "policy": POLICY,
        "replaced_skip": {"reason": "OVERLAP", "until": "x", "count": 1},
        **more,
    }
    return RunRecord(firing.id, "export", firing.scheduled_time, **fields)


def _published(*runs: RunRecord, pause_after: int | None = None) -> RecordingAlerts:
    """``runs`` handed to FinalFailures in turn (the real path), its alerts kept."""
    alerts = RecordingAlerts()
    clock = FixedClock(T0 + timedelta(hours=1))
    failures = FinalFailures(MemoryClaimStore(), alerts, clock, RecordingMetrics(), origin=ORIGIN)
    for run in runs:
        failures.failed(run, pause_after)
    return alerts


def _keys(value: Any) -> set[str]:
    """Every key of ``value``, at any depth."""
    if isinstance(value, dict):
        return set(value) | {k for item in value.values() for k in _keys(item)}
    if isinstance(value, list):
        return {k for item in value for k in _keys(item)}
    return set()


def test_a_final_failure_is_published_as_its_schema_says_and_nothing_internal_leaks() -> None:
    alerts = _published(_last_attempt(), pause_after=1)
    (detail,) = alerts.of("Job Run Failed")
    assert_published("Job Run Failed", detail)
    assert detail == {
        "schemaVersion": 1,
        "job": "export",
        "firingId": "export@2026-11-30T14:00:00Z#4",
        "scheduledTime": "2026-11-30T14:00:00Z",
        "attempt": 4,
        "retries": 3,
        "status": "FAILED",
        "origin": ORIGIN,
        "manual": False,
        "backfill": False,
        "error": "ConnectionError: report database unreachable",
        "startedAt": "2026-11-30T14:07:01Z",
        "endedAt": "2026-11-30T14:07:41Z",
        "service": "export-fn",
    }
    assert _keys(detail) & set(INTERNAL) == set()
    assert "s3cr3t" not in json.dumps(detail)
    (paused,) = alerts.of("Job Paused")
    assert_published("Job Paused", paused)
    assert paused["firingId"] == "export@2026-11-30T14:00:00Z"


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        pytest.param(
            _last_attempt(status=RunStatus.TIMED_OUT, timed_out_at=T0 + timedelta(minutes=22)),
            {"status": "TIMED_OUT"},
            id="timed-out",
        ),
        pytest.param(
            _last_attempt(started_at=None, claimed_at=None, policy=None, error="Lambda Invoke"),
            {"retries": 0, "error": "Lambda Invoke"},
            id="a-failed-dispatch-with-no-policy",
        ),
        pytest.param(
            replace(
                _last_attempt(
                    manual=True, operator="jane.doe", reruns="export@2026-11-30T13:00:00Z"
                ),
                firing_id=Firing.manual_run("export", T0, "jane.doe", {}, "0a1b2c3d").id,
                scheduled_time="2026-11-30T14:00:00.000Z",
            ),
            {
                "manual": True,
                "operator": "jane.doe",
                "reruns": "export@2026-11-30T13:00:00Z",
                "retries": 0,
                "attempt": 1,
            },
            id="a-manual-rerun-is-never-retried",
        ),
        pytest.param(_last_attempt(backfill=True), {"backfill": True}, id="a-backfill"),
        pytest.param(_last_attempt(origin=None), {"origin": ORIGIN}, id="no-origin-kept"),
        pytest.param(_last_attempt(policy=FailurePolicy(None, 2)), {"retries": 0}, id="pause-only"),
    ],
)
def test_every_kind_of_final_failure_keeps_the_schema(
    run: RunRecord, expected: dict[str, Any]
) -> None:
    (detail,) = _published(run).of("Job Run Failed")
    assert_published("Job Run Failed", detail)
    assert {key: detail[key] for key in expected} == expected
    assert _keys(detail) & set(INTERNAL) == set()


def test_a_leaked_field_breaks_the_schema() -> None:
    """What the detail was before issue 26: the run record, its policy and parameters."""
    (detail,) = _published(_last_attempt()).of("Job Run Failed")
    for leak in (
        {"retry": POLICY.as_record() if POLICY else {}},
        {"parameters": {"size": 1}},
        {"claimedAt": "2026-11-30"},
    ):
        assert problems({**detail, **leak}, schema("Job Run Failed")) != []
    without_version = {k: v for k, v in detail.items() if k != "schemaVersion"}
    assert problems(without_version, schema("Job Run Failed")) == [
        "detail: schemaVersion is missing"
    ]


def test_a_run_that_did_not_fail_has_no_failure_detail() -> None:
    with pytest.raises(ValueError, match="ended SUCCEEDED: not a failure"):
        JobRunFailed.from_run(_last_attempt(status=RunStatus.SUCCEEDED), ORIGIN)


# -- the schemas and the dataclasses, field by field ---------------------------------------------

EVERY_FIELD = {
    "Job Run Failed": JobRunFailed(
        "export",
        "export@2026-11-30T14:00:00Z#2",
        "2026-11-30T14:00:00Z",
        2,
        1,
        RunStatus.TIMED_OUT,
        ORIGIN,
        manual=True,
        backfill=True,
        error="boom",
        started_at=T0,
        ended_at=T0,
        service="export-fn",
        operator="jane.doe",
        reruns="export@2026-11-30T13:00:00Z",
    ).to_detail(),
    "Job Paused": JobPaused("export", 3, "export@2026-11-30T14:00:00Z", ORIGIN, T0).to_detail(),
}
FEWEST_FIELDS = {
    "Job Run Failed": JobRunFailed(
        "export",
        "export@2026-11-30T14:00:00Z",
        "2026-11-30T14:00:00Z",
        1,
        0,
        RunStatus.FAILED,
        ORIGIN,
    ).to_detail(),
    "Job Paused": EVERY_FIELD["Job Paused"],
}


@pytest.mark.parametrize("detail_type", sorted(KINDS))
def test_the_schema_names_each_field_the_detail_can_carry_and_requires_those_it_always_does(
    detail_type: str,
) -> None:
    rules = schema(detail_type)
    assert set(EVERY_FIELD[detail_type]) == set(rules["properties"])
    assert set(FEWEST_FIELDS[detail_type]) == set(rules["required"])
    assert problems(EVERY_FIELD[detail_type], rules) == []
    assert problems(FEWEST_FIELDS[detail_type], rules) == []


@pytest.mark.parametrize("detail_type", sorted(KINDS))
def test_the_schema_s_version_is_the_one_the_detail_carries(detail_type: str) -> None:
    rules = schema(detail_type)
    version = {"Job Run Failed": JobRunFailed, "Job Paused": JobPaused}[detail_type].SCHEMA_VERSION
    assert rules["properties"]["schemaVersion"] == {
        "const": version,
        "description": "This schema's version.",
    }
    assert rules["$id"].endswith(f":{version}") and f"schemaVersion {version}" in rules["title"]
    assert EVERY_FIELD[detail_type]["schemaVersion"] == version


@pytest.mark.parametrize("detail_type", sorted(KINDS))
def test_the_example_is_an_eventbridge_event_whose_detail_keeps_the_schema(
    detail_type: str,
) -> None:
    event = example(detail_type)
    assert set(event) == {
        "version",
        "id",
        "detail-type",
        "source",
        "account",
        "time",
        "region",
        "resources",
        "detail",
    }
    assert (event["source"], event["detail-type"]) == ("mini-scheduler", detail_type)
    assert_published(detail_type, event["detail"])
    assert event["region"] == event["detail"]["origin"].split("/")[0]


def test_published_holds_a_schema_and_an_example_of_each_kind_and_nothing_else() -> None:
    names = {path.name for path in PUBLISHED.iterdir()}
    assert names == {f"{stem}{end}" for stem in KINDS.values() for end in (".json", ".schema.json")}


def _keywords(rules: Any) -> set[str]:
    if not isinstance(rules, dict):
        return set()
    inner = rules.get("properties", {})
    return (set(rules) - {"properties"}) | {k for sub in inner.values() for k in _keywords(sub)}


@pytest.mark.parametrize("detail_type", sorted(KINDS))
def test_the_schema_uses_only_what_the_tests_validator_reads(detail_type: str) -> None:
    assert _keywords(schema(detail_type)) <= KEYWORDS
