"""``rerun``: a past firing run again as a manual run that names it, with the original's
scheduled time (issue 15, part 4), through the one operator path and the ticker's event; and the
final-failure count by job that the runs-failed alarm reads."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mini_scheduler.errors import EventError
from mini_scheduler.handlers.ticker import route
from mini_scheduler.model import Firing, RunStatus
from tests.unit.tick.harness import Rig, at, rig

CRON = """
jobs:
  - name: "export"
    cron: "0 0 * * * ?"
    service: "export-fn"
    parameters: {size: 1}
  - name: "digest"
    cron: "0 30 7 * * ?"
    service: "digest-fn"
"""
FAILED = "export@2026-11-30T14:00:00Z"


def failed_at_14(**kwargs: object) -> Rig:
    """export's 14:00 firing failed at its dispatch (no retry: final), then the clock is 14:20."""
    r = rig(CRON, **kwargs)  # type: ignore[arg-type]
    r.dispatcher.failing.add("export-fn")
    r.tick("2026-11-30T14:00:00Z")
    r.dispatcher.failing.clear()
    r.clock.set(at("2026-11-30T14:20:00Z"))
    return r


def test_a_rerun_is_a_manual_run_with_the_original_s_scheduled_time() -> None:
    r = failed_at_14()
    answer = route(r.ticker, {"rerun": FAILED, "operator": "jane.doe", "parameters": {"day": 2}})
    assert answer["status"] == "DISPATCHED" and answer["mode"] == "active"
    assert (answer["reruns"], answer["scheduledTime"]) == (FAILED, "2026-11-30T14:00:00Z")
    assert answer["firingId"].startswith("export@manual-2026-11-30T14:20:00.000Z-")
    ((target, firing_id, payload, _),) = r.dispatcher.calls
    assert (target, firing_id) == ("export-fn", answer["firingId"])
    assert payload == {
        "job": "export",
        "firingId": answer["firingId"],
        "attempt": 1,
        "scheduledTime": "2026-11-30T14:00:00Z",  # the original's, not when it was asked for
        "origin": "us-east-1/prod",
        "manual": True,
        "operator": "jane.doe",
        "reruns": FAILED,
        "parameters": {"size": 1, "day": 2},
    }
    rerun = r.claims.run(answer["firingId"])
    assert rerun is not None and rerun.status is RunStatus.DISPATCHED
    assert (rerun.reruns, rerun.operator, rerun.manual) == (FAILED, "jane.doe", True)
    assert rerun.to_json()["reruns"] == FAILED
    original = r.claims.run(FAILED)
    assert original is not None and original.status is RunStatus.FAILED  # left as it was


def test_a_rerun_of_an_attempt_reruns_its_firing() -> None:
    r = failed_at_14()
    answer = r.ticker.operator.rerun(f"{FAILED}#3", "jane.doe")
    assert answer["reruns"] == FAILED


def test_a_firing_this_region_has_no_record_of_runs_when_its_job_fires_then() -> None:
    """Its record may be in the other region's table: the statement vouches for the instant."""
    r = failed_at_14()
    answer = r.ticker.operator.rerun("digest@2026-11-29T07:30:00Z", "jane.doe")
    assert answer["scheduledTime"] == "2026-11-29T07:30:00Z"
    assert [c[0] for c in r.dispatcher.calls] == ["digest-fn"]


def test_a_rerun_runs_on_a_standby_region_too() -> None:
    r = failed_at_14(active="DR")
    answer = r.ticker.operator.rerun(FAILED, "jane.doe")
    assert (answer["status"], answer["mode"]) == ("DISPATCHED", "standby")


def test_a_runtime_schedule_s_firing_is_rerun() -> None:
    r = failed_at_14()
    entry = {"name": "quarter-close", "cron": "0 0 * * * ?", "service": "close-fn"}
    r.ticker.operator.create_schedules([entry], "jane.doe")
    answer = r.ticker.operator.rerun("quarter-close@2026-11-30T13:00:00Z", "jane.doe")
    assert answer["status"] == "DISPATCHED"
    assert r.dispatcher.calls[-1][0] == "close-fn"


@pytest.mark.parametrize(
    ("firing_id", "message"),
    [
        ("", "rerun must be a firing id"),
        (42, "rerun must be a firing id"),
        ("export", "'export' is not a firing id of mini-scheduler: <job>@<UTC instant>"),
        ("export@yesterday", "is not a firing id of mini-scheduler"),
        ("export@2026-11-30T14:00:00", "is not a firing id of mini-scheduler"),
        ("bad..job@2026-11-30T14:00:00Z", "does not name a job: name 'bad..job' must not"),
        ("nope@2026-11-30T14:00:00Z", "unknown job 'nope': no job of that name in cron.yaml, nor"),
        ("export@2026-11-30T15:00:00Z", "is later than now: nothing to run again"),
        (
            "export@2026-11-30T13:07:00Z",
            "no firing export@2026-11-30T13:07:00Z: this region holds no record of it, and "
            "export's schedule 0 0 * * * ? @UTC does not fire at 2026-11-30T13:07:00Z",
        ),
        (
            "export@manual-2026-11-30T13:00:00.000Z-0123abcd",
            "no manual run export@manual-2026-11-30T13:00:00.000Z-0123abcd in this region's",
        ),
    ],
)
def test_a_firing_that_is_not_one_of_ours_is_refused_and_nothing_runs(
    firing_id: object, message: str
) -> None:
    r = failed_at_14()
    before = len(r.claims.history("export", 100))
    with pytest.raises(EventError, match=message.replace("?", r"\?").replace("*", r"\*")):
        route(r.ticker, {"rerun": firing_id, "operator": "jane.doe"})
    assert r.dispatcher.calls == []
    assert len(r.claims.history("export", 100)) == before


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"rerun": FAILED}, "operator is required"),
        ({"rerun": FAILED, "operator": "jane doe"}, "must be 1-128 letters"),
        ({"rerun": FAILED, "operator": "jane.doe", "parameters": [1]}, "parameters must be an"),
        ({"rerun": FAILED, "operator": "jane.doe", "job": "x"}, "a rerun takes rerun .*'job'"),
    ],
)
def test_a_bad_rerun_event_is_refused(event: dict[str, object], message: str) -> None:
    r = failed_at_14()
    with pytest.raises(EventError, match=message):
        route(r.ticker, event)
    assert r.dispatcher.calls == []


def test_a_rerun_taken_over_after_its_lease_keeps_what_it_reruns() -> None:
    """A ticker that died between the rerun's claim and its dispatch: the takeover sends the
    same payload (the record keeps ``reruns``)."""
    r = failed_at_14()
    firing = Firing.manual_run(
        "export", r.clock.now(), "jane.doe", {"size": 1}, nonce="0123abcd", reruns=FAILED
    )
    now = r.clock.now()
    r.claims.claim(firing, now=now, origin="us-east-1/prod", lease_until=now + timedelta(minutes=2))
    r.tick("2026-11-30T14:23:00Z")
    payloads = [c[2] for c in r.dispatcher.calls if c[1] == firing.id]
    assert [(p["reruns"], p["scheduledTime"]) for p in payloads] == [
        (FAILED, "2026-11-30T14:00:00Z")
    ]


def test_a_final_failure_is_counted_by_job_too() -> None:
    """RunsFailedFinal twice: the region's total, and by Job (the runs-failed alarm's series)."""
    r = failed_at_14()
    assert r.metrics.totals["RunsFailedFinal"] == 1
    assert dict(r.metrics.by) == {("RunsFailedFinal", (("Job", "export"),)): 1}
