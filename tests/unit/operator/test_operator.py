"""The one operator path: what the ticker's events and the CLI both call."""

from __future__ import annotations

import pytest

from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.clock import FixedClock
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.memory import MemoryEnvironmentStore
from mini_scheduler.errors import EventError
from mini_scheduler.jobs import load
from mini_scheduler.model import Firing
from mini_scheduler.operator import Operator
from tests.unit.tick.harness import at

CRON = load(
    """
jobs:
  - name: "report"
    cron: "0 0 9 * * ?"
    service: "report-fn"
    parameters: {region: "east"}
""",
    source="test.yaml",
)


def operator(*, cron: bool = True, runs: list[Firing] | None = None) -> Operator:
    store = MemoryEnvironmentStore(None)
    return Operator(
        cron=(lambda: CRON) if cron else None,
        claims=MemoryClaimStore(),
        environment=ActiveEnvironment(store, "prod"),
        clock=FixedClock(at("2026-11-30T14:00:00Z")),
        run=(lambda job, firing: runs.append(firing) or True) if runs is not None else None,
    )


def test_run_now_merges_parameters_and_drops_reserved_keys() -> None:
    runs: list[Firing] = []
    answer = operator(runs=runs).run_now("report", "jane.doe", {"day": 1, "_secret": "x"})
    assert answer["status"] == "DISPATCHED" and answer["manual"] is True
    assert runs[0].parameters == {"region": "east", "day": 1}
    assert runs[0].operator == "jane.doe" and runs[0].manual


@pytest.mark.parametrize(
    ("job", "who", "message"),
    [
        ("nope", "jane.doe", "unknown job 'nope'"),
        ("report", "", "operator is required"),
        ("report", "jane doe", "must be 1-128 letters"),
    ],
)
def test_a_bad_request_is_refused_and_nothing_runs(job: str, who: str, message: str) -> None:
    runs: list[Firing] = []
    with pytest.raises(EventError, match=message):
        operator(runs=runs).run_now(job, who)
    assert runs == []


def test_without_a_dispatcher_a_run_is_refused() -> None:
    with pytest.raises(EventError, match="cannot dispatch"):
        operator().run_now("report", "jane.doe")


def test_pause_needs_a_known_job_when_there_is_a_cron_file() -> None:
    op = operator()
    with pytest.raises(EventError, match="unknown job"):
        op.set_paused("nope", True, "jane.doe")
    assert op.set_paused("report", True, "jane.doe") == {
        "job": "report",
        "paused": True,
        "operator": "jane.doe",
    }


def test_without_a_cron_file_a_pause_checks_the_name_s_form_only() -> None:
    op = operator(cron=False)
    assert op.set_paused("elsewhere", True, "jane.doe")["paused"] is True
    with pytest.raises(EventError, match="not a job name"):
        op.set_paused("-bad-", True, "jane.doe")


def test_set_environment_persists_first_and_answers_the_status() -> None:
    op = operator()
    status = op.set_environment("DR", "jane.doe")
    assert status["active"] == "DR" and status["mode"] == "standby"
    assert op.environment_status()["active"] == "DR"
    with pytest.raises(EventError, match="not an environment name"):
        op.set_environment("two words", "jane.doe")
