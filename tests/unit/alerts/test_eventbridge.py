"""Alerts on EventBridge: one PutEvents entry each, on the configured bus; a failed entry is
tried again, a failed request is an AlertError at once (the SDK has retried it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mini_scheduler.alerts import JobPaused, JobRunFailed
from mini_scheduler.alerts.eventbridge import ATTEMPTS, EventBridgeAlerts
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import AlertError
from mini_scheduler.model import RunStatus
from tests.eventbridge import listening_bus
from tests.published import assert_published

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
FAILED = RunRecord(
    "export@2026-11-30T14:00:00Z#3",
    "export",
    "2026-11-30T14:00:00Z",
    RunStatus.TIMED_OUT,
    origin="us-east-1/prod",
    ended_at=T0,
    parameters={"size": 1},
)
FAILED_DETAIL = JobRunFailed.from_run(FAILED, "us-east-1/prod")


@pytest.mark.parametrize("bus", ["default", "ops-alerts"])
def test_both_events_reach_the_bus_with_their_source_type_and_detail(
    monkeypatch: pytest.MonkeyPatch, bus: str
) -> None:
    with listening_bus(monkeypatch, bus) as listening:
        listening.alerts.run_failed(FAILED_DETAIL)
        listening.alerts.job_paused(JobPaused("export", 3, FAILED.firing_id, "us-east-1/prod", T0))
        failed, paused = listening.heard()
    assert (failed["source"], failed["detail-type"]) == ("mini-scheduler", "Job Run Failed")
    assert failed["detail"] == {
        "schemaVersion": 1,
        "job": "export",
        "firingId": "export@2026-11-30T14:00:00Z#3",
        "scheduledTime": "2026-11-30T14:00:00Z",
        "attempt": 3,
        "retries": 0,
        "status": "TIMED_OUT",
        "origin": "us-east-1/prod",
        "manual": False,
        "backfill": False,
        "endedAt": "2026-11-30T14:00:00Z",
    }
    assert_published("Job Run Failed", failed["detail"])
    assert (paused["source"], paused["detail-type"]) == ("mini-scheduler", "Job Paused")
    assert paused["detail"]["job"] == "export" and paused["detail"]["failures"] == 3
    assert_published("Job Paused", paused["detail"])


class _Answers:
    """An events client that answers PutEvents from a list (the last answer repeats)."""

    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers = list(answers)
        self.entries: list[list[dict[str, Any]]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries.append(Entries)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


THROTTLED = {
    "FailedEntryCount": 1,
    "Entries": [{"ErrorCode": "ThrottlingException", "ErrorMessage": "Rate exceeded"}],
}
ACCEPTED = {"FailedEntryCount": 0, "Entries": [{"EventId": "1"}]}


def test_a_failed_entry_is_tried_again_with_back_off() -> None:
    client, waits = _Answers(THROTTLED, ACCEPTED), []
    alerts = EventBridgeAlerts("ops", lambda: client, sleep=waits.append)
    alerts.run_failed(FAILED_DETAIL)
    assert waits == [0.2] and len(client.entries) == 2
    (entry,) = client.entries[0]
    assert entry["EventBusName"] == "ops" and entry["Source"] == "mini-scheduler"


def test_an_entry_failed_every_time_is_an_alert_error_naming_the_bus_and_the_cause() -> None:
    client, waits = _Answers(THROTTLED), []
    alerts = EventBridgeAlerts("ops", lambda: client, sleep=waits.append)
    with pytest.raises(AlertError) as raised:
        alerts.job_paused(JobPaused("export", 3, FAILED.firing_id, "us-east-1/prod", T0))
    assert str(raised.value) == (
        f"EventBridge PutEvents (Job Paused) to bus ops failed {ATTEMPTS} times - "
        "ThrottlingException: Rate exceeded"
    )
    assert len(client.entries) == ATTEMPTS and waits == [0.2, 0.4]


def test_a_refused_request_is_an_alert_error_at_once() -> None:
    refused = ClientError(
        {
            "Error": {
                "Code": "ResourceNotFoundException",
                "Message": "Event bus ops does not exist.",
            }
        },
        "PutEvents",
    )
    client = _Answers(refused)
    alerts = EventBridgeAlerts("ops", lambda: client, sleep=lambda _: None)
    with pytest.raises(AlertError, match="ResourceNotFoundException: Event bus ops does not"):
        alerts.run_failed(FAILED_DETAIL)
    assert len(client.entries) == 1


def test_the_client_is_made_on_the_first_alert_only() -> None:
    made: list[_Answers] = []

    def client() -> _Answers:
        made.append(_Answers(ACCEPTED))
        return made[-1]

    EventBridgeAlerts("default", client)
    assert made == []
