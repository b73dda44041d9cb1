"""``schedule`` and ``backfill``: the CLI sends the ticker its event (here a ticker on memory
stores, invoked in-process) and prints the answer; ``backfill`` draws its progress."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mini_scheduler.cli.context import Invocation
from mini_scheduler.cli.main import main
from mini_scheduler.errors import EventError
from mini_scheduler.handlers._runtime import error_answer
from mini_scheduler.handlers.ticker import route
from mini_scheduler.schedules import Schedules
from tests.unit.cli.conftest import TABLE, Aws
from tests.unit.cli.test_operator import NOW, FakeInvoker
from tests.unit.cli.test_operator import cli as cli_aws
from tests.unit.tick.harness import Rig, rig

CRON = """
jobs:
  - name: "export"
    cron: "0 */10 * * * ?"
    service: "export-fn"
"""
ENV = {"AWS_REGION": "us-east-1"}
OPERATOR = ("--operator", "jane.doe")
WINDOW = ("--from", "2026-11-30T13:00:00Z", "--to", "2026-11-30T14:00:00Z")
ASKED_BY = {"create", "delete", "export"}  # the commands that take an operator


class TickerInvoker:
    """The ticker function, in-process: what the handler answers, refusals included."""

    def __init__(self, r: Rig) -> None:
        self.rig = r
        self.events: list[dict[str, Any]] = []

    def __call__(self, region: str, function: str, event: Mapping[str, Any]) -> Invocation:
        self.events.append(dict(event))
        try:
            return Invocation(json.loads(json.dumps(route(self.rig.ticker, event))), None)
        except EventError as exc:
            return Invocation(error_answer(str(exc)), None)


def cli(
    capsys: pytest.CaptureFixture[str], r: Rig, *argv: str, sleep: Any = None
) -> tuple[int, str, str]:
    code = main(
        [*argv, "--function", "ticker", *(OPERATOR if argv[1] in ASKED_BY else [])],
        clock=r.clock,
        environ=ENV,
        invoke=TickerInvoker(r),
        sleep=sleep,
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_schedule_create_list_show_delete(capsys: pytest.CaptureFixture[str]) -> None:
    r = rig(CRON)
    code, out, err = cli(
        capsys,
        r,
        "schedule",
        "create",
        "once",
        "--at",
        "2026-11-30T16:00:00Z",
        "--service",
        "once-fn",
        "--parameters",
        '{"n": 1}',
    )
    assert code == 0, err
    assert out.splitlines()[-1] == "1 schedule created by jane.doe."
    assert "once  one-time  2026-11-30T16:00:00Z  once-fn  next 2026-11-30T16:00:00Z" in out
    code, out, _ = cli(capsys, r, "schedule", "list")
    assert code == 0 and out.splitlines()[-1] == "1 runtime schedule."
    code, out, _ = cli(capsys, r, "schedule", "show", "once")
    assert code == 0 and 'parameters   {"n": 1}' in out and "operator     jane.doe" in out
    code, out, _ = cli(capsys, r, "schedule", "delete", "once")
    assert (code, out) == (0, "Runtime schedule once deleted by jane.doe.\n")
    code, _, err = cli(capsys, r, "schedule", "show", "once")
    assert code == 1 and "no runtime schedule 'once'" in err


def test_schedule_create_from_a_file_is_all_or_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = rig(CRON)
    good = tmp_path / "schedules.yaml"
    good.write_text(
        "schedules:\n"
        "  - {name: a, at: '2026-11-30T15:00:00Z', service: fn}\n"
        "  - {name: b, cron: '0 0 6 * * ?', timezone: Europe/Paris, service: fn,"
        " retry: {retries: 2}}\n"
    )
    code, out, err = cli(capsys, r, "schedule", "create", "--file", str(good))
    assert code == 0, err and out.splitlines()[-1] == "2 schedules created by jane.doe."
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {name: c, at: '2026-11-30T15:00:00Z', service: fn}\n- {name: a, at: x}\n")
    code, out, err = cli(capsys, r, "schedule", "create", "--file", str(bad))
    assert code == 1 and out == ""
    assert "nothing created - entry 2: schedule a: at 'x' is not an instant" in err
    assert len(r.claims.pending_deferred("schedule")) == 2


def test_backfill_draws_its_progress_until_the_last_firing_is_dispatched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = rig(CRON, start="2026-11-30T15:00:00Z")

    def sleep(seconds: float) -> None:  # a tick a minute while the CLI waits
        r.clock.advance(60)
        r.ticker.tick(r.clock.now().replace(second=0))

    code, out, err = cli(
        capsys,
        r,
        "backfill",
        "export",
        *WINDOW,
        "--rate",
        "2",
        sleep=sleep,
    )
    assert code == 0, err
    first, last = out.splitlines()
    assert first.startswith("Backfill export@backfill-2026-11-30T15:00:00.000Z-")
    assert first.endswith(
        ": 6 firings of export from 2026-11-30T13:00:00Z to "
        "2026-11-30T14:00:00Z, 2 a minute, by jane.doe."
    )
    assert last.endswith(": all 6 firings dispatched or found run.")
    frames = [f.strip() for f in err.split("\r") if f.strip()]
    assert frames[0] == "[" + "." * 30 + "] 0/6, next due 2026-11-30T15:00:00Z"
    assert frames[-1] == "[" + "#" * 30 + "] 6/6"
    assert len(frames) >= 3
    backfilled = [c[1] for c in r.dispatcher.calls if c[2].get("backfill")]
    assert len(backfilled) == 6 and len(set(backfilled)) == 6


def test_backfill_status_and_a_refused_window(capsys: pytest.CaptureFixture[str]) -> None:
    r = rig(CRON, start="2026-11-30T15:00:00Z")
    code, out, _ = cli(
        capsys,
        r,
        "backfill",
        "export",
        *WINDOW,
        "--no-wait",
    )
    assert code == 0
    code, out, _ = cli(capsys, r, "backfill", "status", "export")
    assert (
        code == 0
        and "0/6 done" in out
        and out.splitlines()[-1] == ("1 backfill of export with firings left.")
    )
    code, out, err = cli(
        capsys,
        r,
        "backfill",
        "export",
        "--from",
        "2026-11-30T13:00:00Z",
        "--to",
        "2026-12-30T14:00:00Z",
    )
    assert code == 1 and "is in the future" in err
    code, out, err = cli(capsys, r, "backfill", "export", "--from", "2026-11-30T13:00:00Z")
    assert code == 2 and "give the window: --from INSTANT --to INSTANT" in err


def test_history_notes_say_attempt_and_backfill() -> None:
    from mini_scheduler.claims.records import RunRecord
    from mini_scheduler.cli.render import run_note
    from mini_scheduler.model import RunStatus

    def run(firing_id: str, **more: Any) -> RunRecord:
        return RunRecord(firing_id, "export", "2026-11-30T13:00:00Z", RunStatus.SUCCEEDED, **more)

    assert run_note(run("export@2026-11-30T13:00:00Z")) == "-"
    assert run_note(run("export@2026-11-30T13:00:00Z#3")) == "attempt 3"
    assert run_note(run("export@2026-11-30T13:00:00Z", backfill=True)) == "backfill"
    replaced = run(
        "export@2026-11-30T13:00:00Z", backfill=True, replaced_skip={"reason": "misfire_grace"}
    )
    assert run_note(replaced) == "backfill (was SKIPPED: misfire_grace)"


# -- rerun ----------------------------------------------------------------------------------------


def test_rerun_runs_a_past_firing_again_through_the_ticker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = rig(CRON, start="2026-11-30T14:00:00Z")
    r.dispatcher.failing.add("export-fn")
    r.tick("2026-11-30T14:00:00Z")
    r.dispatcher.failing.clear()
    r.clock.set(r.clock.now().replace(minute=5))
    code, out, err = cli(
        capsys, r, "rerun", "export@2026-11-30T14:00:00Z", *OPERATOR, "--parameters", '{"a": 1}'
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(
        "Firing export@2026-11-30T14:00:00Z run again by jane.doe: DISPATCHED - firing "
        "export@manual-2026-11-30T14:05:00.000Z-"
    )
    assert "  reruns         export@2026-11-30T14:00:00Z" in lines
    ((_, _, payload, _),) = r.dispatcher.calls
    assert (payload["scheduledTime"], payload["reruns"], payload["parameters"]) == (
        "2026-11-30T14:00:00Z",
        "export@2026-11-30T14:00:00Z",
        {"a": 1},
    )


@pytest.mark.parametrize(
    ("firing", "message"),
    [
        ("export", "'export' is not a firing id of mini-scheduler"),
        ("export@2026-12-01T00:00:00Z", "is later than now: nothing to run again"),
    ],
)
def test_rerun_refuses_what_is_not_a_past_firing_before_asking(
    capsys: pytest.CaptureFixture[str], firing: str, message: str
) -> None:
    r = rig(CRON, start="2026-11-30T14:00:00Z")
    invoker = TickerInvoker(r)
    code = main(
        ["rerun", firing, *OPERATOR, "--function", "ticker"],
        clock=r.clock,
        environ=ENV,
        invoke=invoker,
    )
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("mini-scheduler rerun: ") and message in err
    assert invoker.events == []


def test_rerun_refuses_parameters_no_target_takes_before_asking(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mini_scheduler.jobs.limits import parameters_limit

    r = rig(CRON, start="2026-11-30T14:00:00Z")
    invoker = TickerInvoker(r)
    blob = json.dumps({"blob": "x" * parameters_limit("lambda")})
    argv = ["rerun", "export@2026-11-30T14:00:00Z", *OPERATOR, "--parameters", blob]
    code = main(
        [*argv, "--function", "ticker"],
        clock=r.clock,
        environ=ENV,
        invoke=invoker,
    )
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("mini-scheduler rerun: parameters: parameters take ")
    assert f"more than the {parameters_limit('lambda')} a Lambda target allows" in err
    assert invoker.events == []


def test_rerun_of_an_unknown_job_is_the_ticker_s_refusal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = rig(CRON, start="2026-11-30T14:00:00Z")
    code, out, err = cli(capsys, r, "rerun", "exprot@2026-11-30T14:00:00Z", *OPERATOR)
    assert (code, out) == (1, "")
    assert err == (
        "mini-scheduler rerun: the ticker refused it: unknown job 'exprot': no job of that name "
        "in cron.yaml, nor a runtime schedule (a one-time schedule that has fired is gone: create "
        "it again)\n"
    )
    assert r.dispatcher.calls == []


# -- schedule create checks locally, list and show read the store (issue 25, item 6) ----------


def test_schedule_create_refuses_a_bad_entry_before_asking_the_ticker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = rig(CRON)
    asked = TickerInvoker(r)
    bad = [
        (("--cron", "0 0 25 * * ?", "--service", "report-fn"), "Bad hour in "),
        (
            ("--cron", "0 0 * * * ?", "--timezone", "Europe/Londn", "--service", "report-fn"),
            "Europe/Londn",
        ),
        (("--at", "2020-01-01T00:00:00Z", "--service", "report-fn"), "is not in the future"),
        (("--at", "2027-01-01T00:00:00Z", "--service", "http://x y"), "service"),
        (
            ("--at", "2027-01-01T00:00:00Z", "--service", "report-fn", "--retry", '{"backof": 2}'),
            "retry.backof",
        ),
        (("--at", "2027-01-01T00:00:00Z", "--service", "report-fn", "--timeout", "0"), "timeout"),
    ]
    for flags, said in bad:
        code = main(
            ["schedule", "create", "once", *flags, "--function", "ticker", *OPERATOR],
            clock=r.clock,
            environ=ENV,
            invoke=asked,
        )
        _, err = capsys.readouterr()
        assert code == 1, (flags, err)  # as the ticker's refusal was
        assert "nothing created - entry 1: schedule once:" in err and said in err, (flags, err)
    assert asked.events == []  # no round trip
    assert r.claims.pending_deferred("schedule") == []


def test_schedule_create_takes_retry_and_timeout_as_cron_yaml_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = rig(CRON)
    asked = TickerInvoker(r)
    for name, retry in (("three", "3"), ("mapped", '{"retries": 2, "backoff": 30}')):
        code = main(
            [
                *("schedule", "create", name, "--at", "2027-01-01T00:00:00Z"),
                *("--service", "report-fn", "--retry", retry, "--timeout", "120"),
                *("--function", "ticker", *OPERATOR),
            ],
            clock=r.clock,
            environ=ENV,
            invoke=asked,
        )
        assert code == 0, capsys.readouterr().err
    sent = [event["schedules"][0] for event in asked.events]
    assert [(e["retry"], e["timeout"]) for e in sent] == [
        ({"retries": 3}, 120),
        ({"retries": 2, "backoff": 30}, 120),
    ]
    jobs = {s.name: s.job for s in Schedules(r.claims, cron=None, origin="test").all()}
    assert jobs["three"].retry is not None and jobs["three"].retry.retries == 3
    assert jobs["mapped"].timeout == 120
    code = main(["schedule", "create", "x", "--retry", "many"], environ=ENV)
    assert code == 2 and "--retry: not a number of retries" in capsys.readouterr().err


def test_schedule_list_and_show_read_the_table_without_invoking(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    Schedules(aws.store(), cron=None, origin="test").create(
        [{"name": "once", "at": "2027-01-01T00:00:00Z", "service": "report-fn"}],
        operator="jane.doe",
        now=NOW,
    )
    never = FakeInvoker(answer={"status": "rejected", "error": "not to be asked"})
    env = {"AWS_REGION": "us-east-1", "STATE_TABLE": TABLE}
    listed = cli_aws(capsys, "schedule", "list", environ=env, invoke=never)
    assert listed.code == 0, listed.err
    assert listed.lines[-1] == "1 runtime schedule."
    shown = cli_aws(capsys, "schedule", "show", "once", "--json", environ=env, invoke=never)
    assert shown.code == 0, shown.err
    assert shown.json()["operator"] == "jane.doe"
    assert shown.json()["nextFiring"] == "2027-01-01T00:00:00Z"
    missing = cli_aws(capsys, "schedule", "show", "twice", environ=env, invoke=never)
    assert missing.code == 1 and "no runtime schedule 'twice'" in missing.err
    assert never.calls == []
