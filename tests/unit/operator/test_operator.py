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
from tests.unit.tick.harness import Rig, at, rig

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
    with pytest.raises(EventError, match=r"runtime schedule nope: not in cron\.yaml"):
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


# -- runtime schedules are paused like cron.yaml's jobs (issue 25) ------------------------------

EVERY_MINUTE = {"name": "every", "cron": "0 * * * * ?", "service": "every-fn"}


def _paused(op: Operator) -> set[str]:
    assert op.claims is not None
    return set(op.claims.control("x").paused)


def test_a_runtime_schedule_is_paused_and_resumed_like_a_cron_yaml_job() -> None:
    op = operator()
    op.create_schedules(EVERY_MINUTE, "jane.doe")
    assert op.set_paused("every", True, "jane.doe") == {
        "job": "every",
        "paused": True,
        "operator": "jane.doe",
    }
    assert _paused(op) == {"every"}
    assert op.set_paused("every", False, "ops")["paused"] is False
    assert _paused(op) == set()


def test_a_name_that_is_neither_a_job_nor_a_schedule_is_refused_saying_where_to_look() -> None:
    op = operator()
    op.create_schedules(EVERY_MINUTE, "jane.doe")
    with pytest.raises(EventError) as refused:
        op.set_paused("evrey", True, "jane.doe")
    assert str(refused.value) == (
        "no cron.yaml job or runtime schedule evrey: not in cron.yaml, nor a runtime schedule "
        "of this region (mini-scheduler jobs lists the cron file's jobs, mini-scheduler schedule "
        "list the runtime schedules)"
    )
    assert _paused(op) == set()


def test_a_pause_left_behind_can_be_resumed() -> None:
    """A job gone from cron.yaml while paused: its pause is lifted, though it is no job now."""
    op = operator()
    assert op.claims is not None
    op.claims.set_paused("retired", True, operator="jane.doe", now=op.clock.now())
    assert op.set_paused("retired", False, "ops")["paused"] is False
    assert _paused(op) == set()


def test_deleting_a_runtime_schedule_clears_its_pause() -> None:
    op = operator()
    op.create_schedules(EVERY_MINUTE, "jane.doe")
    op.set_paused("every", True, "jane.doe")
    op.delete_schedule("every", "jane.doe")
    assert _paused(op) == set()
    op.create_schedules(EVERY_MINUTE, "jane.doe")  # a new one of the same name runs
    assert _paused(op) == set()


def _paused_from_14_02() -> Rig:
    """A schedule firing every minute, run at 14:01, then paused: ticks at 14:02 and 14:03."""
    r = rig(CRON_TEXT)
    op = r.ticker.operator
    op.create_schedules(EVERY_MINUTE, "jane.doe")
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.firing_ids == ["every@2026-11-30T14:01:00Z"]
    op.set_paused("every", True, "jane.doe")
    r.tick("2026-11-30T14:02:00Z")
    r.tick("2026-11-30T14:03:00Z")
    return r


def test_a_paused_runtime_schedule_runs_nothing_and_writes_no_run() -> None:
    r = _paused_from_14_02()
    assert r.dispatcher.firing_ids == ["every@2026-11-30T14:01:00Z"]
    assert [run.firing_id for run in r.claims.history("every")] == ["every@2026-11-30T14:01:00Z"]


def test_a_resumed_runtime_schedule_fires_at_its_next_firing_not_the_pause_s() -> None:
    r = _paused_from_14_02()
    r.ticker.operator.set_paused("every", False, "jane.doe")
    r.tick("2026-11-30T14:04:00Z")
    assert r.dispatcher.firing_ids == [
        "every@2026-11-30T14:01:00Z",
        "every@2026-11-30T14:04:00Z",
    ]


def test_set_environment_persists_first_and_answers_the_status() -> None:
    op = operator()
    status = op.set_environment("DR", "jane.doe")
    assert status["active"] == "DR" and status["mode"] == "standby"
    assert op.environment_status()["active"] == "DR"
    with pytest.raises(EventError, match="not an environment name"):
        op.set_environment("two words", "jane.doe")


# -- the active environment: only a known name, unless forced (issue 15) --------------------------


def _environment(
    active: str | None = None, known: tuple[str, ...] = ("prod", "DR")
) -> tuple[Operator, MemoryEnvironmentStore]:
    store = MemoryEnvironmentStore(active)
    op = Operator(
        cron=None,
        claims=None,
        environment=ActiveEnvironment(store, "prod", known),
        clock=FixedClock(at("2026-11-30T14:00:00Z")),
        origin="us-east-1/prod",
    )
    return op, store


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"active": "DRR"},
            "environment.active 'DRR' is not a known environment (known: prod, DR): no region "
            'would be active. Check the name, or force it with "force": true and a "reason"',
        ),
        ({"active": "DRR", "force": True}, "a forced change needs a reason"),
        ({"active": "DRR", "force": True, "reason": "  "}, "a forced change needs a reason"),
        ({"active": "DRR", "force": True, "reason": "x" * 201}, "at most 200 printable"),
        ({"active": "DRR", "force": "yes", "reason": "why"}, "force must be true or false"),
        ({"active": "DR", "reason": "why"}, 'reason goes with "force": true'),
    ],
)
def test_a_name_the_region_does_not_know_is_refused_and_nothing_written(
    change: dict[str, object], message: str
) -> None:
    op, store = _environment()
    with pytest.raises(EventError) as refused:
        op.set_environment(operator="jane.doe", **change)
    assert message in str(refused.value)
    assert store.value is None


def test_its_own_name_and_the_known_ones_are_accepted_without_regard_to_case() -> None:
    op, store = _environment(known=("DR",))
    assert op.set_environment("dr", "jane.doe")["mode"] == "standby"
    assert op.set_environment("PROD", "jane.doe")["mode"] == "active"  # its own name
    assert store.value == "PROD"
    with pytest.raises(EventError, match="known: prod, DR"):
        op.set_environment("blue", "jane.doe")


def test_a_forced_name_is_written_and_its_reason_logged_with_the_operator(
    caplog: pytest.LogCaptureFixture,
) -> None:
    op, store = _environment()
    with caplog.at_level("WARNING", logger="mini_scheduler.environment"):
        answer = op.set_environment("maintenance", "jane.doe", True, " stop  all jobs ")
    assert store.value == "maintenance"
    assert (answer["active"], answer["mode"], answer["forced"], answer["reason"]) == (
        "maintenance",
        "standby",
        True,
        "stop all jobs",
    )
    assert answer["warning"].startswith("maintenance is not a known environment (prod, DR")
    assert [r.getMessage() for r in caplog.records] == [
        "Active environment set to maintenance by jane.doe, forced: stop all jobs - this "
        "instance (prod) is on standby; maintenance is not a known environment (prod, DR: this "
        "region's name and KNOWN_ENVIRONMENTS) - no stack has it, so no region is active"
    ]
    # read back: the status warns too
    assert op.environment_status()["warning"] == answer["warning"]


def test_the_answer_says_the_other_regions_were_not_changed() -> None:
    op, _ = _environment()
    answer = op.set_environment("DR", "jane.doe")
    assert answer["otherRegions"] == (
        "not changed: this wrote memory in us-east-1 only; a region that reads another store "
        "keeps its value, and the regions disagree until mini-scheduler failover --to DR "
        "--regions R1,R2 writes them all"
    )
    assert "warning" not in answer and "forced" not in answer


@pytest.mark.parametrize(
    ("active", "unknown"),
    [(None, 0.0), ("prod", 0.0), ("dr", 0.0), ("DRR", 1.0)],
    ids=["default", "own", "known", "typo"],
)
def test_each_tick_reports_whether_it_knows_the_active_name(
    active: str | None, unknown: float
) -> None:
    from mini_scheduler import metrics as m
    from tests.unit.tick.harness import rig

    r = rig(CRON_TEXT, active=active)
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")
    assert r.metrics.totals[m.ACTIVE_ENVIRONMENT_UNKNOWN] == 2 * unknown
    assert m.ACTIVE_ENVIRONMENT_UNKNOWN in r.metrics.totals  # 0 is written too


def test_a_tick_that_fails_closed_reports_no_name() -> None:
    from mini_scheduler import metrics as m
    from tests.unit.tick.harness import rig

    r = rig(CRON_TEXT)
    r.store.failing = RuntimeError("throttled")
    r.tick("2026-11-30T14:00:00Z")
    assert m.ACTIVE_ENVIRONMENT_UNKNOWN not in r.metrics.totals


CRON_TEXT = """
jobs:
  - name: "report"
    cron: "0 0 9 * * ?"
    service: "report-fn"
"""


def test_a_name_no_stack_has_is_a_warning_once_per_value_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryEnvironmentStore("DRR")
    environment = ActiveEnvironment(store, "prod", ("prod", "DR"))
    with caplog.at_level("WARNING", logger="mini_scheduler.environment"):
        for value in ("DRR", "DRR", "prod", "DRR"):
            store.value = value
            environment.read()
    assert [r.getMessage() for r in caplog.records if "KNOWN" in r.getMessage()] == [
        "Active environment DRR read from memory - no job runs in this region: DRR is not a "
        "known environment (prod, DR: this region's name and KNOWN_ENVIRONMENTS) - no stack "
        "has it, so no region is active"
    ] * 2


def test_parameters_over_the_target_s_limit_are_refused_naming_it_and_nothing_runs() -> None:
    from mini_scheduler.errors import PayloadError
    from mini_scheduler.jobs.limits import parameters_limit
    from mini_scheduler.operator import check_sendable

    runs: list[Firing] = []
    blob = {"blob": "x" * parameters_limit("lambda")}
    with pytest.raises(PayloadError, match=f"more than the {parameters_limit('lambda')} a Lambda"):
        operator(runs=runs).run_now("report", "jane.doe", blob)
    assert runs == []
    with pytest.raises(PayloadError, match="a Lambda target allows"):
        check_sendable(blob)
    assert check_sendable({"day": 1}) == {"day": 1}
