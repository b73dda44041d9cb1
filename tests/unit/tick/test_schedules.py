"""Runtime schedules: made by an operator, kept as their next firing, fired by the tick like any
firing (issue 14, part 3); and ``start``/``end`` on a job."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

import pytest

from mini_scheduler.claims.base import SCHEDULE, Deferred
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import Definition
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.ticker import route
from mini_scheduler.jobs import load
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.tick.deferred import deferred_job
from tests.unit.tick.harness import Rig, at, rig

CRON = """
jobs:
  - name: "export"
    cron: "0 0 * * * ?"
    service: "export-fn"
"""
FAR = at("2030-01-01T00:00:00Z")


def test_a_one_time_schedule_fires_once_at_its_second_and_ends() -> None:
    r = rig(CRON)
    answer = r.ticker.operator.create_schedules(
        {
            "name": "once",
            "at": "2026-11-30T14:02:30Z",
            "service": "once-fn",
            "parameters": {"n": 1},
        },
        "jane.doe",
    )
    (created,) = answer["created"]
    assert created["kind"] == "one-time" and created["nextFiring"] == "2026-11-30T14:02:30Z"
    assert created["operator"] == "jane.doe"
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.calls == []
    r.tick("2026-11-30T14:02:00Z")
    ((target, run_id, body, sent),) = r.dispatcher.calls
    assert (target, run_id, sent) == (
        "once-fn",
        "once@2026-11-30T14:02:30Z",
        at("2026-11-30T14:02:30Z"),
    )
    assert body["job"] == "once" and body["parameters"] == {"n": 1} and body["attempt"] == 1
    assert r.ticker.operator.list_schedules() == {"schedules": []}  # a one-time schedule ends
    r.tick("2026-11-30T14:03:00Z")
    assert len(r.dispatcher.calls) == 1
    run = r.claims.run("once@2026-11-30T14:02:30Z")
    assert run is not None and run.status is RunStatus.DISPATCHED


def test_a_runtime_cron_schedule_keeps_its_next_firing_and_stops_at_its_end() -> None:
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [
            {
                "name": "every-2",
                "cron": "0 */2 * * * ?",
                "service": "fn",
                "end": "2026-11-30T14:06:00Z",
            }
        ],
        "jane.doe",
    )
    (shown,) = r.ticker.operator.list_schedules()["schedules"]
    assert shown["nextFiring"] == "2026-11-30T14:02:00Z" and shown["entry"]["timezone"] == "UTC"
    for minute in range(1, 9):
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    assert r.dispatcher.firing_ids == [
        "every-2@2026-11-30T14:02:00Z",
        "every-2@2026-11-30T14:04:00Z",
    ]
    assert r.ticker.operator.list_schedules() == {"schedules": []}  # past its end


def test_a_schedule_late_past_the_grace_is_skipped_and_its_next_firing_follows() -> None:
    r = rig(CRON + "misfire.grace: 60\n")
    r.ticker.operator.create_schedules(
        [{"name": "s", "cron": "0 */5 * * * ?", "service": "fn"}], "jane.doe"
    )
    r.tick("2026-11-30T14:01:00Z")
    r.clock.set(at("2026-11-30T15:01:00Z"))  # an hour without a tick
    r.tick("2026-11-30T15:01:00Z")
    skipped = r.claims.run("s@2026-11-30T14:05:00Z")
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason == "misfire_grace"
    (shown,) = r.ticker.operator.list_schedules()["schedules"]
    assert shown["nextFiring"] == "2026-11-30T15:05:00Z"  # one skip, not twelve
    assert [i for i in r.dispatcher.firing_ids if i.startswith("s@")] == []


def test_create_is_all_or_nothing_and_names_every_bad_entry() -> None:
    r = rig(CRON)
    with pytest.raises(EventError) as refused:
        r.ticker.operator.create_schedules(
            [
                {"name": "ok", "at": "2026-11-30T15:00:00Z", "service": "fn"},
                {"name": "export", "cron": "0 * * * * ?", "service": "fn"},
                {"name": "past", "at": "2026-11-30T13:00:00Z", "service": "fn"},
                {
                    "name": "both",
                    "at": "2026-11-30T15:00:00Z",
                    "cron": "0 * * * * ?",
                    "service": "fn",
                },
                {"name": "bad", "cron": "0 0 * * *", "service": "fn", "colour": 1},
                {"name": "ok", "at": "2026-11-30T16:00:00Z", "service": "fn"},
            ],
            "jane.doe",
        )
    message = str(refused.value)
    assert message.startswith("nothing created - ")
    assert "entry 2: name export is a job of" in message
    assert "entry 3: schedule past: at 2026-11-30T13:00:00Z is not in the future" in message
    assert "entry 4: schedule both: cron does not go with at" in message
    assert "entry 5: schedule bad: schedule bad key colour ignored" in message
    assert "entry 6: name ok is given twice" in message
    assert r.claims.pending_deferred("schedule") == []


def test_a_name_is_taken_once_and_delete_frees_it(caplog: pytest.LogCaptureFixture) -> None:
    r = rig(CRON)
    one = {"name": "s", "cron": "0 0 * * * ?", "service": "fn"}
    r.ticker.operator.create_schedules([one], "jane.doe")
    with pytest.raises(EventError, match="a runtime schedule s exists"):
        r.ticker.operator.create_schedules([one], "jane.doe")
    with caplog.at_level(logging.INFO):
        gone = r.ticker.operator.delete_schedule("s", "bob")
    assert gone["deleted"]["name"] == "s" and gone["operator"] == "bob"
    assert "Operator bob deleted runtime schedule s" in caplog.text
    with pytest.raises(EventError, match="no runtime schedule 's'"):
        r.ticker.operator.show_schedule("s")
    r.ticker.operator.create_schedules([one], "jane.doe")  # the name is free again


def test_a_schedule_stored_before_definitions_is_shown_moved_on_and_listed() -> None:
    """A schedule kept as its next firing only (made by an earlier version) fires as before;
    show and delete find it at once, and the tick's first step writes its definition."""
    r = rig(CRON)
    entry = {"name": "old", "cron": "0 */2 * * * ?", "timezone": "UTC", "service": "fn"}
    detail = {"entry": entry, "operator": "jane", "createdAt": "2026-11-01T00:00:00.000Z"}
    first = at("2026-11-30T14:02:00Z")
    r.claims.defer(
        [Deferred(Firing("old", first), first, SCHEDULE, "us-east-1/prod", first, detail)]
    )
    assert r.ticker.operator.list_schedules() == {"schedules": []}
    assert r.ticker.operator.show_schedule("old")["nextFiring"] == "2026-11-30T14:02:00Z"
    r.tick("2026-11-30T14:02:00Z")
    (listed,) = r.ticker.operator.list_schedules()["schedules"]
    assert listed["name"] == "old" and listed["nextFiring"] == "2026-11-30T14:04:00Z"
    assert listed["operator"] == "jane" and listed["createdAt"] == "2026-11-01T00:00:00.000Z"
    r.ticker.operator.delete_schedule("old", "bob")
    for minute in range(3, 7):
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    assert r.dispatcher.firing_ids == ["old@2026-11-30T14:02:00Z"]


class _MadeMeanwhile(MemoryClaimStore):
    """A store where another operator makes ``taken`` between a create's read of the names and
    its conditional write of the definitions."""

    def __init__(self, taken: str) -> None:
        super().__init__()
        self.taken = taken

    def create_schedule(self, definition: Definition) -> bool:
        if definition.name == self.taken:
            super().create_schedule(replace(definition, operator="bob", generation="bob's"))
        return super().create_schedule(definition)


def test_a_name_made_meanwhile_is_refused_by_the_store_and_nothing_is_created() -> None:
    """The store's condition, not the read before it, keeps a name unique: of two creates of
    one name at once one fails, and it leaves none of its other schedules behind."""
    claims = _MadeMeanwhile("b")
    r = rig(CRON, claims=claims)
    entries = [{"name": name, "cron": "0 * * * * ?", "service": "fn"} for name in "abc"]
    with pytest.raises(EventError, match="nothing created - a runtime schedule b exists"):
        r.ticker.operator.create_schedules(entries, "jane.doe")
    assert [d.name for d in claims.schedules()] == ["b"]  # bob's, alone
    assert claims.pending_deferred(SCHEDULE) == []
    assert r.ticker.operator.show_schedule("b")["operator"] == "bob"


def test_a_cron_yaml_job_that_takes_a_schedule_s_name_wins() -> None:
    """cron.yaml stays the source of the deployed jobs: a job deployed later under a runtime
    schedule's name makes the tick drop the schedule (with a line), never run both."""
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [{"name": "later", "at": "2026-11-30T14:01:10Z", "service": "fn"}], "jane.doe"
    )
    (item,) = r.claims.pending_deferred(SCHEDULE)
    deployed = load(CRON + "  - name: later\n    cron: '0 0 3 * * ?'\n    service: later-fn\n")
    job, why = deferred_job(item, deployed)
    assert job is None and why == "runtime schedule later has the name of a job of <string>"
    job, why = deferred_job(item, load(CRON))
    assert job is not None and job.name == "later" and job.runtime is not None


def test_schedule_events_go_through_the_operator_path() -> None:
    r = rig(CRON)
    made = route(
        r.ticker,
        {
            "schedule": "create",
            "operator": "jane.doe",
            "schedules": [{"name": "s", "at": "2026-11-30T15:00:00Z", "service": "fn"}],
        },
    )
    assert made["created"][0]["name"] == "s"
    assert (
        route(r.ticker, {"schedule": "show", "name": "s"})["entry"]["at"] == "2026-11-30T15:00:00Z"
    )
    assert [s["name"] for s in route(r.ticker, {"schedule": "list"})["schedules"]] == ["s"]
    with pytest.raises(EventError, match="schedule delete takes name, operator; unknown: 'at'"):
        route(r.ticker, {"schedule": "delete", "name": "s", "at": 1})
    with pytest.raises(EventError, match="operator is required"):
        route(r.ticker, {"schedule": "delete", "name": "s"})
    route(r.ticker, {"schedule": "delete", "name": "s", "operator": "jane.doe"})
    assert route(r.ticker, {"schedule": "list"}) == {"schedules": []}
    with pytest.raises(EventError, match="schedule must be one of create, list, show, delete"):
        route(r.ticker, {"schedule": "update"})


def test_start_and_end_bound_a_cron_yaml_job() -> None:
    r = rig("""
jobs:
  - name: "bounded"
    cron: "0 * * * * ?"
    service: "fn"
    start: "2026-11-30T14:02:00Z"
    end: "2026-11-30T14:04:00Z"
""")
    for minute in range(0, 7):
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    assert r.dispatcher.firing_ids == [
        "bounded@2026-11-30T14:02:00Z",
        "bounded@2026-11-30T14:03:00Z",
    ]


def test_a_runtime_schedule_s_failed_run_is_retried_from_its_entry() -> None:
    """No cron file holds the job: the run keeps the schedule's entry with its retry policy, so
    the sweep, the recorder and a failed dispatch all defer an attempt the tick can run."""
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [
            {
                "name": "once",
                "at": "2026-11-30T14:01:00Z",
                "service": "flaky-fn",
                "retry": {"retries": 1, "backoff": 60},
            }
        ],
        "jane.doe",
    )
    r.dispatcher.failing.add("flaky-fn")
    r.tick("2026-11-30T14:01:00Z")
    failed = r.claims.run("once@2026-11-30T14:01:00Z")
    assert failed is not None and failed.status is RunStatus.FAILED
    (retry,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert retry.reason == "retry" and retry.detail["entry"]["service"] == "flaky-fn"
    r.dispatcher.failing.clear()
    r.tick("2026-11-30T14:02:00Z")
    assert r.dispatcher.firing_ids == ["once@2026-11-30T14:01:00Z#2"]
    ((_, _, body, _),) = r.dispatcher.calls
    assert (body["firingId"], body["attempt"]) == ("once@2026-11-30T14:01:00Z", 2)
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []


def test_a_runtime_schedule_s_run_failed_at_its_target_is_retried_by_the_recorder() -> None:
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [
            {
                "name": "s",
                "cron": "0 */5 * * * ?",
                "service": "fn",
                "parameters": {"x": 1.5},
                "retry": {"retries": 1, "backoff": 30},
            }
        ],
        "jane.doe",
    )
    r.tick("2026-11-30T14:05:00Z")
    run = r.claims.run("s@2026-11-30T14:05:00Z")
    assert run is not None and run.policy is not None and run.policy.runtime is not None
    assert run.policy.runtime["parameters"] == {"x": 1.5}
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod")
    recorder.record(
        Completion(
            "s@2026-11-30T14:05:00Z", RunStatus.FAILED, at("2026-11-30T14:05:20Z"), "boom", "lambda"
        )
    )
    (retry,) = r.claims.pending_deferred("retry")
    assert retry.firing.id == "s@2026-11-30T14:05:00Z#2" and retry.detail["entry"]["name"] == "s"
    r.tick("2026-11-30T14:06:00Z")
    assert "s@2026-11-30T14:05:00Z#2" in r.dispatcher.firing_ids  # due 14:05:50
    assert r.claims.run("s@2026-11-30T14:05:00Z#2") is not None


def test_a_runtime_schedule_firing_every_15_seconds_runs_each_firing_of_a_minute() -> None:
    """One deferred item keeps the schedule, whatever its pace: the tick that reads it runs the
    schedule's every firing of its window, and keeps the first after the window."""
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [{"name": "fast", "cron": "*/15 * * * * ?", "service": "fn"}], "jane.doe"
    )
    r.tick("2026-11-30T14:00:00Z")  # created at 14:00:00: its first firing is 14:00:15
    r.tick("2026-11-30T14:01:00Z")
    expected = ["00:15", "00:30", "00:45", "01:00", "01:15", "01:30", "01:45"]
    fast = [(i, sent) for _, i, _, sent in r.dispatcher.calls if i.startswith("fast@")]
    assert fast == [(f"fast@2026-11-30T14:{ms}Z", at(f"2026-11-30T14:{ms}Z")) for ms in expected]
    (shown,) = r.ticker.operator.list_schedules()["schedules"]
    assert shown["nextFiring"] == "2026-11-30T14:02:00Z"


def test_a_runtime_schedule_is_paused_and_resumed_like_a_job() -> None:
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [{"name": "s", "cron": "30 * * * * ?", "service": "fn"}], "jane.doe"
    )
    assert route(r.ticker, {"pause": "s", "operator": "jane.doe"})["paused"] is True
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")
    assert not [i for i in r.dispatcher.firing_ids if i.startswith("s@")]
    route(r.ticker, {"resume": "s", "operator": "jane.doe"})
    r.tick("2026-11-30T14:02:00Z")  # as a paused job's: the pause's firings are not run later
    assert [i for i in r.dispatcher.firing_ids if i.startswith("s@")] == [
        "s@2026-11-30T14:02:30Z",
    ]
    for paused in ("s@2026-11-30T14:00:30Z", "s@2026-11-30T14:01:30Z"):
        assert r.claims.run(paused) is None  # nothing written for a paused firing
    with pytest.raises(EventError, match=r"runtime schedule nope: not in cron\.yaml"):
        route(r.ticker, {"pause": "nope", "operator": "jane.doe"})


def _schedule_line(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    meanwhile: Callable[[Rig, Callable[[], bool]], None],
) -> tuple[Rig, logging.LogRecord]:
    """A schedule firing at second 30 of every minute, ticked once with ``meanwhile`` done just
    before the tick moves it on (given the rig, and the move a peer tick would make): the rig,
    and the one line the tick said of the schedule."""
    r = rig(CRON)
    r.ticker.operator.create_schedules(
        [{"name": "s", "cron": "30 * * * * ?", "service": "fn"}], "jane.doe"
    )
    advance = r.claims.advance_schedule

    def after_meanwhile(done: Deferred, following: Deferred | None) -> bool:
        meanwhile(r, lambda: advance(done, following))
        return advance(done, following)

    monkeypatch.setattr(r.claims, "advance_schedule", after_meanwhile)
    with caplog.at_level(logging.DEBUG, logger="mini_scheduler.ticker"):
        r.tick("2026-11-30T14:01:00Z")
    (line,) = [rec for rec in caplog.records if rec.msg.startswith("Runtime schedule")]
    return r, line


def test_a_schedule_another_tick_moved_on_first_is_said_at_debug_only(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def peer(r: Rig, move_on: Callable[[], bool]) -> None:
        assert move_on()  # a catch-up of the minute moved it on just before

    r, line = _schedule_line(monkeypatch, caplog, peer)
    assert line.levelno == logging.DEBUG and "moved on by another tick" in line.getMessage()
    (shown,) = r.ticker.operator.list_schedules()["schedules"]
    assert shown["nextFiring"] == "2026-11-30T14:02:30Z"  # the peer's next firing stands


def test_a_schedule_deleted_during_the_tick_is_said_at_info_and_stays_deleted(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def delete(r: Rig, move_on: Callable[[], bool]) -> None:
        r.ticker.operator.delete_schedule("s", "bob")

    r, line = _schedule_line(monkeypatch, caplog, delete)
    assert line.levelno == logging.INFO and "was deleted during this tick" in line.getMessage()
    assert r.ticker.operator.list_schedules() == {"schedules": []}
